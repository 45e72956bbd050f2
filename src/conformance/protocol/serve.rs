//! The serving side of the adapter protocol (built with the `cli` feature): [`serve`]
//! answers the suite's hello with an ack and each request line with the adapter's answer.

use std::io::{self, BufRead, Write};

use serde::Deserialize;
use serde_json::{Value, json};

use super::super::Adapter;
use super::{PROTOCOL, VERSION};
/// The longest line either side reads, in bytes: a limit, so a runaway peer is an error
/// rather than an out-of-memory abort.
use crate::limits::PEER_LINE_BYTES_MAX as MAX_LINE_BYTES;
use crate::process::read_line;

/// A request envelope as `serve` reads it; `id` is echoed whatever it is.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Envelope {
    id: Value,
    #[serde(deserialize_with = "crate::json::present")]
    request: Option<Value>,
}

/// The ack an adapter answers a hello with (`version`, the implementation's own, is
/// optional).
pub(crate) fn ack(name: &str, version: Option<&str>) -> Value {
    let mut implementation = json!({"name": name});
    if let (Some(v), Some(obj)) = (version, implementation.as_object_mut()) {
        obj.insert("version".into(), v.into());
    }
    json!({"protocol": PROTOCOL, "version": VERSION, "implementation": implementation})
}

/// Serve `adapter` over the protocol: read the hello from `input`, ack it (naming
/// `adapter.name()`), then answer one response line per request line until `input` ends. Never aborts on a bad line: a
/// malformed envelope gets `{"id": …, "protocolError": "…"}`. Returns `Err` only when
/// `input` or `output` fails.
pub(crate) fn serve(
    input: &mut impl BufRead,
    output: &mut impl Write,
    adapter: &mut dyn Adapter,
) -> io::Result<()> {
    let send = |output: &mut dyn Write, v: &Value| -> io::Result<()> {
        let text = serde_json::to_string(v).map_err(io::Error::other)?;
        writeln!(output, "{text}")?;
        output.flush()
    };
    let mut greeted = false;
    loop {
        let Some(line) = read_line(input, MAX_LINE_BYTES)? else {
            return Ok(());
        };
        let line = match line.into_text() {
            Ok(t) if t.trim().is_empty() => continue,
            other => other,
        };
        if !greeted {
            match line.and_then(|l| check_hello(&l)) {
                Ok(()) => {
                    greeted = true;
                    // Over this protocol `run` / `replay` are self-reported whatever
                    // answers them (D-102): the served profile leaves them out, so the
                    // suite reports those cases not applicable instead of failing them.
                    let profile = adapter
                        .capabilities()
                        .without("op.run")
                        .without("op.replay");
                    let mut ack = ack(&adapter.name(), None);
                    ack["capabilities"] = json!(profile.to_names());
                    send(output, &ack)?;
                    continue;
                }
                Err(e) => {
                    // A peer that does not speak the protocol gets one refusal, then we stop.
                    return send(output, &json!({"protocol": PROTOCOL, "error": e}));
                }
            }
        }
        let message = line
            .and_then(|l| serde_json::from_str::<Value>(&l).map_err(|e| format!("not JSON: {e}")));
        let reply = match message {
            Err(e) => json!({"id": Value::Null, "protocolError": e}),
            // Not an envelope at all (an array, a number): answered with a null id.
            Ok(m) => match Envelope::deserialize(m).unwrap_or_default() {
                Envelope {
                    id: id @ Value::Number(_),
                    request: Some(request),
                } if id.is_u64() => match adapter.handle(&request) {
                    Ok(response) => json!({"id": id, "response": response}),
                    Err(e) => json!({"id": id, "protocolError": e.to_string()}),
                },
                Envelope { id, .. } => json!({"id": id, "protocolError":
                    "expected {\"id\": <non-negative integer>, \"request\": {…}}"}),
            },
        };
        send(output, &reply)?;
    }
}

fn check_hello(line: &str) -> Result<(), String> {
    let v: Value =
        serde_json::from_str(line).map_err(|e| format!("expected a hello, got non-JSON: {e}"))?;
    if v.get("protocol").and_then(Value::as_str) != Some(PROTOCOL) {
        return Err(format!(
            "expected a hello {{\"protocol\": \"{PROTOCOL}\", \"version\": {VERSION}}}"
        ));
    }
    match v.get("version").and_then(Value::as_u64) {
        Some(VERSION) => Ok(()),
        other => Err(format!(
            "unsupported protocol version {}; this adapter speaks {VERSION}",
            other.map_or_else(|| "(none)".to_owned(), |v| v.to_string())
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{hello, parse_ack, request};
    use super::*;
    use crate::conformance::Reference;

    fn serve_lines(input: &str) -> Vec<Value> {
        let mut out = Vec::new();
        serve(
            &mut io::Cursor::new(input.as_bytes()),
            &mut out,
            &mut Reference,
        )
        .expect("in-memory io");
        String::from_utf8(out)
            .expect("utf-8")
            .lines()
            .map(|l| serde_json::from_str(l).expect("every line is JSON"))
            .collect()
    }

    #[test]
    fn serve_acks_then_answers_in_order_and_survives_bad_lines() {
        let hello = hello().to_string();
        let input = format!(
            "{hello}\n\n{}\nnot json\n{{\"id\": \"x\"}}\n{}\n",
            request(1, &json!({"op": "nope"})),
            request(7, &json!({"op": "plan", "workflow": {}})),
        );
        let out = serve_lines(&input);
        assert_eq!(out.len(), 5, "{out:?}");
        let name = parse_ack(&out[0].to_string()).expect("ack parses");
        assert_eq!(name, Reference.name());
        assert_eq!(out[1]["id"], 1);
        assert_eq!(out[1]["response"]["error"]["code"], "bad_request");
        assert_eq!(out[2]["id"], Value::Null);
        assert!(out[2]["protocolError"].is_string());
        assert_eq!(out[3]["id"], "x");
        assert!(out[3]["protocolError"].is_string());
        assert_eq!(out[4]["id"], 7);
        // After bad lines, a request still gets the op service's own answer.
        assert_eq!(
            out[4]["response"],
            crate::service::handle(&json!({"op": "plan", "workflow": {}}))
        );
    }

    #[test]
    fn serve_refuses_a_wrong_hello_once() {
        for first in [
            "hello",
            r#"{"protocol":"other"}"#,
            r#"{"protocol":"w6w-adapter","version":2}"#,
        ] {
            let out = serve_lines(&format!("{first}\n{}\n", request(1, &json!({}))));
            assert_eq!(out.len(), 1, "{first}");
            let err = parse_ack(&out[0].to_string()).expect_err("refusal");
            assert!(err.contains("refused"), "{err}");
        }
    }

    #[test]
    fn acks_are_checked() {
        assert_eq!(
            parse_ack(r#"{"protocol":"w6w-adapter","version":1,"implementation":{"name":"h"}}"#),
            Ok("h".to_owned())
        );
        assert_eq!(
            parse_ack(&ack("h", Some("1.2")).to_string()),
            Ok("h 1.2".to_owned())
        );
        for bad in [
            "",
            "{}",
            r#"{"protocol":"w6w-adapter","version":2,"implementation":{"name":"h"}}"#,
            r#"{"protocol":"w6w-adapter","version":1}"#,
            r#"{"protocol":"w6w-adapter","version":1,"implementation":{"name":""}}"#,
        ] {
            assert!(parse_ack(bad).is_err(), "{bad}");
        }
    }
}
