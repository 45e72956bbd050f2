//! META normalisation (WF 2026-10-12, META-1…3).
//!
//! Owns: turning a host's raw `onExecuted` report into a [`StepMeta`] or nothing.
//! Invariant: reads only the report — never the invoke result or output keys (META-1).

use serde_json::Value;

use crate::model::StepMeta;

/// META-2: the cap on each meta string, in UTF-16 code units (the RFC's "characters" are
/// a TypeScript `string.length`; for ASCII the two agree). 256 is kept, 257 is over.
pub(crate) const META_STRING_UTF16_MAX: usize = 256;

fn capped(value: Option<&Value>) -> Option<String> {
    let s = value?.as_str()?;
    (s.encode_utf16().count() <= META_STRING_UTF16_MAX).then(|| s.to_owned())
}

/// META-1/META-2: keep exactly `app`, `version`, `action`, `connectionId`.
///
/// A report lacking a string `app`, `version` or `action` of at most 256 characters is
/// discarded (`None`); a `connectionId` that is missing, not a string or over the cap
/// becomes `null`. Every other key is dropped.
pub(crate) fn normalize_meta(raw: &Value) -> Option<StepMeta> {
    let report = raw.as_object()?;
    Some(StepMeta {
        app: capped(report.get("app"))?,
        version: capped(report.get("version"))?,
        action: capped(report.get("action"))?,
        connection_id: capped(report.get("connectionId")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn normalisation_rules() {
        let full = json!({"app": "a", "version": "1", "action": "x", "connectionId": "c",
                          "token": "t0p"});
        let m = normalize_meta(&full).expect("kept");
        assert_eq!(m.connection_id.as_deref(), Some("c"));
        assert_eq!(
            serde_json::to_value(&m).expect("json"),
            json!({"app": "a", "version": "1", "action": "x", "connectionId": "c"})
        );
        let no_conn = normalize_meta(&json!({"app": "a", "version": "1", "action": "x",
                                              "connectionId": 7}))
        .expect("kept");
        assert_eq!(no_conn.connection_id, None);
        assert_eq!(
            normalize_meta(&json!({"app": "a", "action": "x"})),
            None,
            "no version"
        );
        assert_eq!(
            normalize_meta(&json!({"app": 1, "version": "1", "action": "x"})),
            None
        );
        assert_eq!(normalize_meta(&json!("meta")), None);
        let s256 = "v".repeat(256);
        let s257 = "v".repeat(257);
        assert!(normalize_meta(&json!({"app": s256, "version": "1", "action": "x"})).is_some());
        assert!(normalize_meta(&json!({"app": s257, "version": "1", "action": "x"})).is_none());
        let long_conn = normalize_meta(&json!({"app": "a", "version": "1", "action": "x",
                                               "connectionId": s257}))
        .expect("kept");
        assert_eq!(long_conn.connection_id, None);
    }
}
