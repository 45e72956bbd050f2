//! The w6w adapter protocol, version 1: JSON lines over a process's stdin/stdout.
//!
//! Owns: the message shapes both sides agree on (see `docs/adapter-protocol.md`) and, with
//! the `cli` feature, `serve` (`protocol/serve.rs`), which exposes any adapter through the
//! protocol — `w6w-sim adapter serve` is `serve` over the [`super::Reference`] adapter.
//! Refuses to know about processes; the client side is [`super::ProcessAdapter`].

use serde::Deserialize;
use serde_json::{Value, json};

use crate::process::clip;

#[cfg(feature = "cli")] // only `w6w-sim adapter serve` serves
mod serve;
#[cfg(feature = "cli")]
pub(crate) use serve::serve;

/// The `protocol` field of the hello and the ack.
pub(crate) const PROTOCOL: &str = "w6w-adapter";
/// The protocol version this crate speaks.
pub(crate) const VERSION: u64 = 1;
/// An adapter's answer to a request as the suite reads it: `response`, or a
/// `protocolError` (either may be `null`, which still counts as given).
#[derive(Debug, Deserialize)]
pub(crate) struct Reply {
    pub(crate) id: u64,
    #[serde(default, deserialize_with = "crate::json::present")]
    pub(crate) response: Option<Value>,
    #[serde(
        default,
        rename = "protocolError",
        deserialize_with = "crate::json::present"
    )]
    pub(crate) protocol_error: Option<Value>,
}

/// The hello the suite sends first.
pub(crate) fn hello() -> Value {
    json!({"protocol": PROTOCOL, "version": VERSION,
           "suite": {"name": "w6w-sim", "version": env!("CARGO_PKG_VERSION")}})
}

/// A request envelope.
pub(crate) fn request(id: u64, request: &Value) -> Value {
    json!({"id": id, "request": request})
}

/// Check an ack line; returns the implementation's display name (`name version`).
pub(crate) fn parse_ack(line: &str) -> Result<String, String> {
    let v: Value = serde_json::from_str(line)
        .map_err(|e| format!("the first line is not JSON ({e}): {}", clip(line)))?;
    if v.get("protocol").and_then(Value::as_str) != Some(PROTOCOL) {
        return Err(format!(
            "the first line is not an ack (no \"protocol\": \"{PROTOCOL}\"): {}",
            clip(line)
        ));
    }
    if let Some(e) = v.get("error") {
        let msg = e.as_str().map_or_else(|| e.to_string(), str::to_owned);
        return Err(format!("the adapter refused the hello: {msg}"));
    }
    if v.get("version").and_then(Value::as_u64) != Some(VERSION) {
        return Err(format!(
            "the ack names version {}, this suite speaks version {VERSION}",
            v.get("version")
                .map_or_else(|| "nothing".into(), Value::to_string)
        ));
    }
    let imp = v.get("implementation");
    let Some(name) = imp
        .and_then(|i| i.get("name"))
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    else {
        return Err(format!(
            "the ack needs \"implementation\": {{\"name\": …}}: {}",
            clip(line)
        ));
    };
    Ok(
        match imp.and_then(|i| i.get("version")).and_then(Value::as_str) {
            Some(version) if !version.is_empty() => format!("{name} {version}"),
            _ => name.to_owned(),
        },
    )
}

/// The optional `capabilities` of an ack (a JSON array of names, see
/// [`super::Capabilities`]): `None` when absent (the adapter claims everything).
pub(crate) fn ack_capabilities(line: &str) -> Result<Option<super::Capabilities>, String> {
    let v: Value = serde_json::from_str(line).map_err(|e| format!("the ack is not JSON: {e}"))?;
    match v.get("capabilities") {
        None | Some(Value::Null) => Ok(None),
        Some(c) => serde_json::from_value(c.clone()).map(Some).map_err(|e| {
            format!("the ack's \"capabilities\" are not a list of capability names: {e}")
        }),
    }
}
