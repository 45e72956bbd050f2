//! The scenario loader: any JSON is a scenario or a list of problems with pointers.
#![no_main]

use libfuzzer_sys::fuzz_target;
use w6w_sim::sim::parse_scenario;

fuzz_target!(|data: &[u8]| {
    let Ok(doc) = w6w_sim::__internals::json::parse_bytes(data) else {
        return;
    };
    if let Err(errors) = parse_scenario(&doc) {
        assert!(
            !errors.is_empty(),
            "a refused scenario names at least one problem"
        );
    }
});
