//! One `w6w-sim eval` line, as raw bytes: exactly one JSON response with an `ok`, or an
//! `error` carrying `code` and `message` — whatever the line (issue 12 item 6).
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let line = w6w_sim::__internals::service::handle_bytes(data);
    let response: Value = match serde_json::from_str(&line) {
        Ok(v) => v,
        Err(e) => panic!("the response is not JSON ({e}): {line}"),
    };
    if let Some(err) = response.get("error") {
        assert!(err.get("code").is_some_and(Value::is_string), "{line}");
        assert!(err.get("message").is_some_and(Value::is_string), "{line}");
    } else {
        assert!(response.get("ok").is_some(), "{line}");
    }
});
