//! The manifest of action declarations YML-3 validates arguments against:
//! `{"actions": {"connector.action": {"input": <JSON Schema>, "retry"?: RetryPolicy}}}` from `--manifest FILE` or a scenario's `manifest` key.
//!
//! Owns: compiling each input schema once with the `jsonschema` crate (no hand-written
//! checks) and answering "are these arguments valid?" with every violation's JSON Pointer.
//! YML-3's "no unknown fields" is enforced even when a schema forgets to say so: a root
//! object schema with `properties` and no `additionalProperties`, `patternProperties` or
//! `unevaluatedProperties` is compiled with `additionalProperties: false` (D-33).
//! Invariant: no network or file access (the crate's remote/file resolution is not built).

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// One declared action.
pub struct ActionDecl {
    validator: Option<jsonschema::Validator>,
    /// The manifest's default retry policy for the action (YML-12).
    pub retry: Option<Value>,
}

/// Parsed action declarations.
#[derive(Default)]
pub struct Manifest {
    actions: BTreeMap<String, ActionDecl>,
}

impl std::fmt::Debug for Manifest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Manifest")
            .field("actions", &self.actions.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Manifest {
    /// Parse a manifest; every problem as `pointer: message`.
    pub fn from_json(doc: &Value) -> Result<Manifest, Vec<String>> {
        let mut problems = Vec::new();
        let Some(root) = doc.as_object() else {
            return Err(vec![
                "/: a manifest is an object {\"actions\": {\"connector.action\": {\"input\": SCHEMA}}}".into(),
            ]);
        };
        for k in root.keys().filter(|k| k.as_str() != "actions") {
            problems.push(format!("/{k}: unknown key; a manifest has \"actions\""));
        }
        let mut actions = BTreeMap::new();
        match root.get("actions") {
            None => {}
            Some(Value::Object(decls)) => {
                for (name, decl) in decls {
                    let at = format!("/actions/{}", crate::model::pointer_token(name));
                    match compile(decl, &at) {
                        Ok(d) => {
                            actions.insert(name.clone(), d);
                        }
                        Err(mut e) => problems.append(&mut e),
                    }
                }
            }
            Some(_) => {
                problems.push("/actions: must be an object keyed by connector.action".into())
            }
        }
        if problems.is_empty() {
            Ok(Manifest { actions })
        } else {
            Err(problems)
        }
    }

    /// The declaration of `action`, if the manifest has one.
    pub fn action(&self, action: &str) -> Option<&ActionDecl> {
        self.actions.get(action)
    }
}

impl ActionDecl {
    /// Every violation of the input schema as `(instance JSON Pointer, message)`.
    pub fn check(&self, args: &Value) -> Vec<(String, String)> {
        match &self.validator {
            None => Vec::new(),
            Some(v) => v
                .iter_errors(args)
                .map(|e| (e.instance_path().as_str().to_owned(), e.to_string()))
                .collect(),
        }
    }
}

fn compile(decl: &Value, at: &str) -> Result<ActionDecl, Vec<String>> {
    let Some(o) = decl.as_object() else {
        return Err(vec![format!(
            "{at}: an action declaration is an object {{\"input\": SCHEMA}}"
        )]);
    };
    let mut problems = Vec::new();
    for k in o.keys() {
        if !matches!(k.as_str(), "input" | "retry") {
            problems.push(format!("{at}/{k}: unknown key; expected input, retry"));
        }
    }
    let validator = match o.get("input") {
        None => None,
        Some(schema) => {
            let schema = closed(schema);
            match jsonschema::validator_for(&schema) {
                Ok(v) => Some(v),
                Err(e) => {
                    problems.push(format!("{at}/input: not a valid JSON Schema: {e}"));
                    None
                }
            }
        }
    };
    let retry = o.get("retry").cloned();
    if let Some(r) = &retry {
        // The same well-formedness rules as any RetryPolicy (MODEL-4).
        let probe = json!({"manifestVersion": "2", "id": "m", "name": "m",
            "steps": [{"id": "s", "uses": {"app": "a", "action": "b"}, "retry": r}]});
        if let Err(errors) = crate::validate::validate_workflow(&probe, Default::default()) {
            for e in errors {
                let field = e.path.trim_start_matches("/steps/0/retry");
                problems.push(format!("{at}/retry{field}: {}", e.message));
            }
        }
    }
    if problems.is_empty() {
        Ok(ActionDecl { validator, retry })
    } else {
        Err(problems)
    }
}

/// D-33: close a root object schema that lists `properties` but says nothing about others.
fn closed(schema: &Value) -> Value {
    let mut s = schema.clone();
    if let Value::Object(m) = &mut s
        && m.contains_key("properties")
        && !m.contains_key("additionalProperties")
        && !m.contains_key("patternProperties")
        && !m.contains_key("unevaluatedProperties")
    {
        m.insert("additionalProperties".into(), Value::Bool(false));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> Manifest {
        Manifest::from_json(&json!({"actions": {"helpdesk.new_ticket": {"input": {
            "type": "object",
            "required": ["queue", "subject"],
            "properties": {
                "queue": {"enum": ["tier1", "tier2"]},
                "subject": {"type": "string"},
                "priority": {"type": "integer"}
            }
        }}}}))
        .expect("valid manifest")
    }

    #[test]
    fn required_unknown_types_and_enums_are_checked() {
        let m = manifest();
        let a = m.action("helpdesk.new_ticket").expect("declared");
        assert!(
            a.check(&json!({"queue": "tier1", "subject": "s"}))
                .is_empty()
        );
        let errs = a.check(&json!({"queue": "tier9", "priority": "high", "extra": 1}));
        let paths: Vec<&str> = errs.iter().map(|(p, _)| p.as_str()).collect();
        assert!(paths.contains(&"/queue"), "{errs:?}");
        assert!(paths.contains(&"/priority"), "{errs:?}");
        assert_eq!(
            errs.len(),
            4,
            "enum, type, missing subject, unknown extra: {errs:?}"
        );
    }

    #[test]
    fn bad_manifests_are_refused_with_paths() {
        let e = Manifest::from_json(&json!({"actions": {"a.b": {"input": {"type": 5}, "retry": {"maxAttempts": 0}}}, "x": 1}))
            .expect_err("bad");
        assert_eq!(e.len(), 3, "{e:?}");
        assert!(
            e.iter()
                .any(|m| m.starts_with("/actions/a.b/retry/maxAttempts")),
            "{e:?}"
        );
    }
}
