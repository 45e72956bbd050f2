//! The session salt of the engine seam (D-215): what the suite hands a candidate engine
//! and the engine must carry into its records is marked with a value drawn from the run's
//! seed — an object output, a run's trigger and each loaded record's output gain the key
//! `"x-w6w-session"`, an action error's message the text mark ` ‹x-w6w-session:VALUE›` —
//! and every line the candidate writes must carry back this session's value, or none.
//!
//! Owns: [`OutputSalt`] — the marks (an `invoke` or `invokeCallable` answer, the `run`
//! message's trigger, a `state.load` answer) and their removal from everything the
//! candidate writes (a key in an object, the same member inside a text where a template
//! stringified the output, a text mark), before the simulator, its store or the report
//! see it. Invariant: the simulator and the report only ever see unsalted values, so reports
//! stay byte-identical across sessions; a value salted by another session is refused: a
//! recorded transcript carries the recording session's salt in every output it recorded.

use serde_json::Value;

use crate::conformance::generate::SplitMix64;

/// The key every object output carries on the wire.
pub(crate) const SALT_KEY: &str = "x-w6w-session";

/// Around the salt in a text (an error message): ` ‹x-w6w-session:VALUE›`.
const MARK_OPEN: char = '‹';
const MARK_CLOSE: char = '›';

/// One run's salt, shared by all its process lives (`None`: this run is not salted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OutputSalt {
    value: Option<String>,
}

impl OutputSalt {
    /// The salt drawn from a run's seed.
    #[cfg(test)]
    pub(crate) fn new(run_seed: u64) -> Self {
        OutputSalt::avoiding(run_seed, std::iter::empty())
    }

    /// The salt drawn from a run's seed, for a run with these secrets. An engine scrubs
    /// its secrets out of every key and text it writes, so a salt a secret could touch
    /// would come back mangled: the value is drawn again until no secret is inside it, and
    /// a run with a secret inside the key or the mark is not salted at all.
    pub(crate) fn avoiding<'a>(
        run_seed: u64,
        secrets: impl IntoIterator<Item = &'a Value>,
    ) -> Self {
        let mut texts = Vec::new();
        secret_texts(secrets, &mut texts);
        let touches = |text: &str| texts.iter().any(|t| text.contains(t.as_str()));
        let fixed = format!("{MARK_OPEN}{SALT_KEY}:{MARK_CLOSE}");
        if touches(&fixed) {
            return OutputSalt { value: None };
        }
        let mut rng = SplitMix64::new(run_seed ^ 0x73_61_6c_74);
        let value = (0..16)
            .map(|_| format!("s{:016x}", rng.next_u64()))
            .find(|v| !touches(v));
        OutputSalt { value }
    }

    /// Salt an action's output (an object gains the key; anything else is left alone).
    pub(crate) fn output(&self, v: &mut Value) {
        if let (Value::Object(m), Some(value)) = (v, &self.value) {
            m.insert(SALT_KEY.into(), Value::String(value.clone()));
        }
    }

    /// Salt an action's error: its message gains this session's mark (an error without a
    /// message is left alone).
    pub(crate) fn error(&self, e: &mut Value) {
        if let (Some(Value::String(message)), Some(value)) = (e.get_mut("message"), &self.value) {
            message.push_str(&format!(" {MARK_OPEN}{SALT_KEY}:{value}{MARK_CLOSE}"));
        }
    }

    /// Salt a run's trigger (an object gains the key) and every step record's output and
    /// input in a RunState the suite hands the candidate (the main graph's `steps` and every
    /// running frame's records).
    pub(crate) fn state(&self, state: &mut Value) {
        let Value::Object(m) = state else {
            return;
        };
        if let Some(trigger) = m.get_mut("trigger") {
            self.output(trigger);
        }
        for (key, records) in m.iter_mut() {
            if key != "steps" && !key.starts_with(crate::model::FRAME_PREFIX) {
                continue;
            }
            for record in records
                .as_object_mut()
                .into_iter()
                .flat_map(|r| r.values_mut())
            {
                // A record's recorded input is carried, never computed on: a reused record
                // brings it back as it was handed out.
                for field in ["output", "input"] {
                    if let Some(v) = record.get_mut(field) {
                        self.output(v);
                    }
                }
            }
        }
    }

    /// Take this session's salt out of everything the candidate wrote; `Err` names where
    /// another session's salt was found.
    pub(crate) fn unsalt(&self, v: &mut Value) -> Result<(), String> {
        self.walk(v, &mut String::new())
    }

    fn is(&self, v: &str) -> bool {
        self.value.as_deref() == Some(v)
    }

    fn walk(&self, v: &mut Value, pointer: &mut String) -> Result<(), String> {
        match v {
            Value::Object(m) => {
                if let Some(found) = m.get(SALT_KEY) {
                    if !found.as_str().is_some_and(|f| self.is(f)) {
                        return Err(self.foreign(pointer));
                    }
                    m.shift_remove(SALT_KEY);
                }
                for (k, item) in m.iter_mut() {
                    let len = pointer.len();
                    pointer.push('/');
                    pointer.push_str(&k.replace('~', "~0").replace('/', "~1"));
                    self.walk(item, pointer)?;
                    pointer.truncate(len);
                }
                Ok(())
            }
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    let len = pointer.len();
                    pointer.push('/');
                    pointer.push_str(itoa::Buffer::new().format(i));
                    self.walk(item, pointer)?;
                    pointer.truncate(len);
                }
                Ok(())
            }
            Value::String(s) if s.contains(SALT_KEY) => match self.unsalt_text(s) {
                Some(clean) => {
                    *s = clean;
                    Ok(())
                }
                None => Err(self.foreign(pointer)),
            },
            _ => Ok(()),
        }
    }

    /// `text` without every ` ‹x-w6w-session:VALUE›` mark of this salt; `None` when a
    /// mark carries another value.
    fn unmark(&self, text: &str) -> Option<String> {
        let open = format!("{MARK_OPEN}{SALT_KEY}:");
        if !text.contains(&open) {
            return Some(text.to_owned());
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find(&open) {
            let value_start = &rest[at + open.len()..];
            let end = value_start.find(MARK_CLOSE)?;
            if !self.is(&value_start[..end]) {
                return None;
            }
            out.push_str(rest[..at].strip_suffix(' ').unwrap_or(&rest[..at]));
            rest = &value_start[end + MARK_CLOSE.len_utf8()..];
        }
        out.push_str(rest);
        Some(out)
    }

    fn foreign(&self, pointer: &str) -> String {
        format!(
            "an action output at {} carries {SALT_KEY:?} with a value this session never \
             sent (every output a session hands an engine is salted anew: is a recorded \
             transcript being replayed?)",
            if pointer.is_empty() { "/" } else { pointer }
        )
    }

    /// `text` without every `"x-w6w-session": "<this salt>"` member a stringified output
    /// left in it (with the comma that joined it to its object, any spacing); `None` when
    /// a member carries another value.
    fn unsalt_text(&self, text: &str) -> Option<String> {
        let unmarked = self.unmark(text)?;
        let quoted_key = format!("\"{SALT_KEY}\"");
        let mut out = String::with_capacity(unmarked.len());
        let mut rest = unmarked.as_str();
        while let Some(at) = rest.find(&quoted_key) {
            let after_key = &rest[at + quoted_key.len()..];
            let value_start = after_key.trim_start().strip_prefix(':')?.trim_start();
            let value = value_start.strip_prefix('"')?;
            let end = value.find('"')?;
            if !self.is(&value[..end]) {
                return None;
            }
            let mut tail = &value[end + 1..];
            let mut head = rest[..at].trim_end();
            // The member's comma: the one before it, else the one after it.
            if let Some(h) = head.strip_suffix(',') {
                head = h;
            } else if let Some(t) = tail.trim_start().strip_prefix(',') {
                tail = t.trim_start();
            }
            out.push_str(head);
            rest = tail;
        }
        out.push_str(rest);
        Some(out)
    }
}

/// The texts of a run's secrets: every string leaf, and every number as text.
fn secret_texts<'a>(secrets: impl IntoIterator<Item = &'a Value>, out: &mut Vec<String>) {
    for v in secrets {
        match v {
            Value::String(s) if !s.is_empty() => out.push(s.clone()),
            Value::Number(n) => out.push(n.to_string()),
            Value::Array(items) => secret_texts(items, out),
            Value::Object(m) => secret_texts(m.values(), out),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_output_is_salted_and_unsalted_wherever_it_travels() {
        let salt = OutputSalt::new(1);
        let mut out = json!({"id": 7, "name": "Ada"});
        salt.output(&mut out);
        assert_eq!(out.as_object().map(|m| m.len()), Some(3));
        let compact = out.to_string();
        let spaced = serde_json::to_string_pretty(&out).expect("json");
        let mut msg = json!({"args": {"patch": {"steps": {"a": {"output": out}}},
            "texts": [compact, format!("x {spaced} y"), "{\"k\":1}"]}});
        salt.unsalt(&mut msg).expect("this session's salt");
        assert_eq!(
            msg["args"]["patch"]["steps"]["a"]["output"],
            json!({"id": 7, "name": "Ada"})
        );
        assert_eq!(msg["args"]["texts"][0], r#"{"id":7,"name":"Ada"}"#);
        let pretty = msg["args"]["texts"][1].as_str().expect("text");
        assert!(
            !pretty.contains(SALT_KEY) && pretty.contains("\"name\": \"Ada\""),
            "{pretty}"
        );
        // Alone in its object, first or last: the JSON stays JSON.
        for text in [
            format!(
                r#"{{"{SALT_KEY}":"{}"}}"#,
                salt.value.as_deref().unwrap_or_default()
            ),
            format!(
                r#"{{"{SALT_KEY}": "{}", "a": 1}}"#,
                salt.value.as_deref().unwrap_or_default()
            ),
        ] {
            let mut v = json!(text);
            salt.unsalt(&mut v).expect("ours");
            let back: Value = serde_json::from_str(v.as_str().expect("text")).expect("json");
            assert!(back.get(SALT_KEY).is_none(), "{back}");
        }
    }

    #[test]
    fn another_sessions_salt_is_refused_with_its_pointer() {
        let (ours, theirs) = (OutputSalt::new(1), OutputSalt::new(2));
        let mut out = json!({"id": 7});
        theirs.output(&mut out);
        let mut msg = json!({"args": {"patch": {"steps": {"a": {"output": out.clone()}}}}});
        let err = ours.unsalt(&mut msg).expect_err("foreign");
        assert!(err.contains("/args/patch/steps/a/output"), "{err}");
        let mut text = json!({"t": out.to_string()});
        assert!(ours.unsalt(&mut text).is_err());
        let mut e = json!({"code": "boom", "message": "upstream down"});
        theirs.error(&mut e);
        assert!(
            ours.unsalt(&mut e).is_err(),
            "a message marked by another session"
        );
    }

    #[test]
    fn an_error_message_carries_the_mark_and_loses_it_on_the_way_back() {
        let salt = OutputSalt::new(4);
        let mut e = json!({"code": "boom", "message": "upstream down", "phase": "execute"});
        salt.error(&mut e);
        let marked = e["message"].as_str().expect("text").to_owned();
        assert!(
            marked.starts_with("upstream down ‹x-w6w-session:"),
            "{marked}"
        );
        let mut msg = json!({"error": e, "log": format!("step a failed: {marked}; retrying")});
        salt.unsalt(&mut msg).expect("ours");
        assert_eq!(msg["error"]["message"], "upstream down");
        assert_eq!(msg["log"], "step a failed: upstream down; retrying");
        let mut trigger = json!({"runId": "r", "trigger": {"type": "manual"}, "steps": {}});
        salt.state(&mut trigger);
        assert!(trigger["trigger"].get(SALT_KEY).is_some());
    }

    /// An engine scrubs its secrets out of keys and texts: a salt a secret could touch is
    /// drawn again, or (a secret inside the key) not used at all.
    #[test]
    fn a_salt_avoids_the_runs_secrets() {
        let plain = OutputSalt::new(5);
        let value = plain.value.clone().expect("salted");
        let piece = json!(&value[3..7]);
        let avoided = OutputSalt::avoiding(5, [&piece]);
        let other = avoided.value.expect("drawn again");
        assert!(
            !other.contains(piece.as_str().unwrap_or_default()),
            "{other}"
        );
        for short in [json!("x"), json!("session"), json!({"k": ["-w6w"]})] {
            let off = OutputSalt::avoiding(5, [&short]);
            assert_eq!(off.value, None, "{short}");
            let mut out = json!({"a": 1});
            off.output(&mut out);
            assert_eq!(out, json!({"a": 1}), "not salted");
        }
    }

    #[test]
    fn only_objects_and_step_outputs_are_salted() {
        let salt = OutputSalt::new(3);
        for mut scalar in [json!(1), json!("x"), json!([1, {"a": 1}]), Value::Null] {
            let before = scalar.clone();
            salt.output(&mut scalar);
            assert_eq!(scalar, before);
        }
        let mut state = json!({"runId": "r", "variables": {"v": {}},
            "steps": {"a": {"output": {"k": 1}}, "b": {"output": "[redacted]"}}});
        salt.state(&mut state);
        assert!(state["steps"]["a"]["output"].get(SALT_KEY).is_some());
        assert_eq!(state["steps"]["b"]["output"], "[redacted]");
        assert!(state["variables"]["v"].get(SALT_KEY).is_none());
    }
}
