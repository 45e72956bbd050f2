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

use std::cell::RefCell;
use std::collections::BTreeMap;

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
    /// Per step id handed a salted object output: `true` while every output handed for
    /// that id was (an invocation the suite left unsalted clears it). A checkpoint must
    /// carry the salt back in such a step's object output (D-223).
    carried: RefCell<BTreeMap<String, bool>>,
    /// Per step id, the code of the last action error handed with this salt's mark in its
    /// message (`None` after one handed unmarked): a record of that step failing with that
    /// code must carry the mark back (D-223).
    marked: RefCell<BTreeMap<String, Option<String>>>,
}

impl OutputSalt {
    /// No salt: a run one of whose secrets touches the key or the mark.
    fn default() -> Self {
        OutputSalt {
            value: None,
            carried: RefCell::default(),
            marked: RefCell::default(),
        }
    }

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
            return OutputSalt::default();
        }
        let mut rng = SplitMix64::new(run_seed ^ 0x73_61_6c_74);
        let value = (0..16)
            .map(|_| format!("s{:016x}", rng.next_u64()))
            .find(|v| !touches(v));
        OutputSalt {
            value,
            carried: RefCell::default(),
            marked: RefCell::default(),
        }
    }

    /// Salt the output handed for step `step_id` (an invocation's answer), and remember
    /// that its record must carry the salt back; `salted: false` records an output handed
    /// unsalted (a secret-derived invocation the engine seals), after which that step's
    /// records are not asked to.
    pub(crate) fn step_output(&self, step_id: &str, v: &mut Value, salted: bool) {
        let salted = salted && v.is_object() && self.value.is_some();
        if salted {
            self.output(v);
        }
        let mut carried = self.carried.borrow_mut();
        let all = carried.entry(step_id.to_owned()).or_insert(true);
        *all &= salted;
    }

    /// Mark the action error handed for step `step_id` (`salted: false`: handed unmarked,
    /// a secret-derived invocation), and remember which code its record must carry the
    /// mark back with.
    pub(crate) fn step_error(&self, step_id: &str, e: &mut Value, salted: bool) {
        let marked =
            salted && self.value.is_some() && e.get("message").is_some_and(Value::is_string);
        if marked {
            self.error(e);
        }
        let code = e.get("code").and_then(Value::as_str).map(str::to_owned);
        self.marked
            .borrow_mut()
            .insert(step_id.to_owned(), code.filter(|_| marked));
    }

    /// D-223: every step record a checkpoint writes whose step was handed salted object
    /// outputs only must carry the salt in an object `output` — an output is the action's
    /// return value exactly. Checked on the line as the candidate wrote it, before
    /// [`OutputSalt::unsalt`]; `Err` names the step. A replayer that strips the salt of
    /// the session it recorded from its lines is caught here.
    pub(crate) fn check_carried(&self, msg: &Value) -> Result<(), String> {
        let Some(patch) = msg
            .get("args")
            .and_then(|a| a.get("patch"))
            .and_then(Value::as_object)
        else {
            return Ok(());
        };
        let carried = self.carried.borrow();
        let marked = self.marked.borrow();
        let mark = format!("{MARK_OPEN}{SALT_KEY}:");
        for (key, records) in patch {
            if key != "steps" && !key.starts_with(crate::model::FRAME_PREFIX) {
                continue;
            }
            for (step, record) in records.as_object().into_iter().flatten() {
                if let (Some(Some(code)), Some(error)) = (marked.get(step), record.get("error"))
                    && error.get("code").and_then(Value::as_str) == Some(code.as_str())
                    && !error.to_string().contains(&mark)
                {
                    return Err(format!(
                        "a checkpoint records step {step:?}'s {code:?} error without the \
                         session mark its message was handed with: an action's error is \
                         recorded as the action gave it (is a recorded transcript being \
                         replayed with its salt stripped?)"
                    ));
                }
                let Some(Value::Object(output)) = record.get("output") else {
                    continue;
                };
                if carried.get(step) == Some(&true) && !output.contains_key(SALT_KEY) {
                    return Err(format!(
                        "a checkpoint records step {step:?}'s output without the {SALT_KEY:?} \
                         key every output this session handed for it carried: an output is \
                         the action's return value exactly (is a recorded transcript being \
                         replayed with its salt stripped?)"
                    ));
                }
            }
        }
        Ok(())
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
            for (step, record) in records.as_object_mut().into_iter().flatten() {
                // A record's recorded input is carried, never computed on: a reused record
                // brings it back as it was handed out.
                if let Some(v) = record.get_mut("output") {
                    self.step_output(step, v, true);
                }
                if let Some(v) = record.get_mut("input") {
                    self.output(v);
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

    fn checkpoint(steps: Value) -> Value {
        json!({"type": "call", "member": "state.checkpoint", "args": {"patch": {"runId": "r",
               "steps": steps}}})
    }

    /// D-223: a record carries back the salt of what the step was handed.
    #[test]
    fn a_checkpoint_must_carry_back_what_it_was_handed() {
        let salt = OutputSalt::new(3);
        let mut out = json!({"id": 1});
        salt.step_output("a", &mut out, true);
        let mut err = json!({"code": "boom", "message": "down"});
        salt.step_error("b", &mut err, true);
        // Carried back as handed: fine.
        let honest = checkpoint(json!({"a": {"status": "succeeded", "output": out},
                                        "b": {"status": "failed", "error": err}}));
        assert_eq!(salt.check_carried(&honest), Ok(()));
        // Stripped: refused, naming the step.
        let stripped = checkpoint(json!({"a": {"output": {"id": 1}}}));
        assert!(
            salt.check_carried(&stripped)
                .is_err_and(|e| e.contains("\"a\""))
        );
        let unmarked = checkpoint(json!({"b": {"error": {"code": "boom", "message": "down"}}}));
        assert!(
            salt.check_carried(&unmarked)
                .is_err_and(|e| e.contains("\"b\""))
        );
        // An error the engine computed (another code) and a step handed nothing: not asked.
        let other = checkpoint(json!({"b": {"error": {"code": "timeout"}}, "c": {"output": {}}}));
        assert_eq!(salt.check_carried(&other), Ok(()));
        // A step once handed an unsalted output (secret-derived, sealed) is not asked again.
        let mut sealed = json!({"tok": "x"});
        salt.step_output("a", &mut sealed, false);
        assert_eq!(sealed, json!({"tok": "x"}));
        assert_eq!(salt.check_carried(&stripped), Ok(()));
    }

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
