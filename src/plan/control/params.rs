//! Plan-time control params (CTRL-1, CTRL-6…8, PLAN-7 membership lists): what each control
//! declares, checked where it is literal and left for run time where it is an expression.

use serde_json::{Map, Value};

use super::*;

impl Analyser<'_, '_> {
    /// Parse one control's params and claim its sub-block members.
    pub(super) fn control(&mut self, i: usize, kind: ControlKind) {
        let empty = Map::new();
        let with = self.steps[i].with.unwrap_or(&empty);
        let params = match kind {
            ControlKind::If => self.if_params(i, with),
            ControlKind::Foreach => self.foreach_params(i, with),
            ControlKind::Parallel => self.parallel_params(i, with),
            ControlKind::Wait => ControlParams::Wait(self.wait(i, with)),
            ControlKind::Aggregate => ControlParams::Aggregate {
                mode: self.mode(i, kind, with),
            },
            ControlKind::Merge => {
                let mode = self.mode(i, kind, with);
                self.merge_entries(i, with, mode);
                ControlParams::Merge { mode }
            }
        };
        self.control_of[i] = Some(self.controls.len());
        self.controls.push(ControlStep {
            step: i,
            kind,
            params,
        });
    }

    /// An if's params: a condition, and no branch blocks (CTRL-6).
    fn if_params(&mut self, i: usize, with: &Map<String, Value>) -> ControlParams {
        if !with.contains_key("condition") {
            self.invalid(
                Self::with_path(i, "condition"),
                format!(
                    "if step {} needs a condition param (a boolean, usually an expression)",
                    self.name(i)
                ),
            );
        }
        for key in ["then", "else"] {
            if with.contains_key(key) {
                self.invalid(
                    Self::with_path(i, key),
                    format!(
                        "if step {} has a {key:?} param, but if has no branch blocks here: route with edges from the if step (a false condition skips all of them)",
                        self.name(i)
                    ),
                );
            }
        }
        ControlParams::If
    }

    /// A foreach's params: its items, its parallelism and its body block.
    fn foreach_params(&mut self, i: usize, with: &Map<String, Value>) -> ControlParams {
        match with.get("items") {
            None => self.invalid(
                Self::with_path(i, "items"),
                format!(
                    "foreach step {} needs an items param (an array)",
                    self.name(i)
                ),
            ),
            Some(v) if is_run_time(v) || v.is_array() => {}
            Some(v) => self.invalid(
                Self::with_path(i, "items"),
                format!(
                    "foreach step {}'s items must be an array or an expression, not {}",
                    self.name(i),
                    json_kind(v)
                ),
            ),
        }
        let parallelism = match with.get("parallelism") {
            None => PlanValue::Known(1),
            Some(v) if is_run_time(v) => PlanValue::AtRunTime,
            Some(Value::Number(n)) if whole_at_least_one(n) => PlanValue::Known(whole_u64(n)),
            Some(v) => {
                self.invalid(
                    Self::with_path(i, "parallelism"),
                    format!(
                        "foreach step {}'s parallelism must be a positive integer, not {}",
                        self.name(i),
                        show_value(v)
                    ),
                );
                PlanValue::Known(1)
            }
        };
        let list = self.id_list(i, with, "body", &format!("/steps/{i}/with/body"));
        let body = self.claim(i, SubBlockKind::Body, list);
        ControlParams::Foreach { body, parallelism }
    }

    /// A parallel's params: its strategy and its branch blocks.
    fn parallel_params(&mut self, i: usize, with: &Map<String, Value>) -> ControlParams {
        let strategy = match with.get("strategy") {
            None => PlanValue::Known(ParallelStrategy::All),
            Some(v) if is_run_time(v) => PlanValue::AtRunTime,
            Some(Value::String(s)) if s == "all" => PlanValue::Known(ParallelStrategy::All),
            Some(Value::String(s)) if s == "race" => PlanValue::Known(ParallelStrategy::Race),
            Some(Value::String(s)) if s == "any" => PlanValue::Known(ParallelStrategy::Any),
            Some(v) => {
                self.invalid(
                    Self::with_path(i, "strategy"),
                    format!(
                        "parallel step {}'s strategy must be \"all\", \"race\" or \"any\", not {}",
                        self.name(i),
                        show_value(v)
                    ),
                );
                PlanValue::Known(ParallelStrategy::All)
            }
        };
        let lists = self.branch_lists(i, with);
        let branches = lists
            .into_iter()
            .enumerate()
            .map(|(b, list)| self.claim(i, SubBlockKind::Branch(b), list))
            .collect();
        ControlParams::Parallel { branches, strategy }
    }

    /// A literal, non-empty array of step ids at `path`; bad entries are reported and
    /// left out (each kept entry carries its list position).
    pub(super) fn id_list<'v>(
        &mut self,
        i: usize,
        with: &'v Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Vec<(usize, &'v str)> {
        let what = format!("{} step {}'s {key}", self.kind_name(i), self.name(i));
        match with.get(key) {
            None => {
                self.invalid(
                    path,
                    format!("{what} is missing: list the ids of the steps it owns"),
                );
                Vec::new()
            }
            Some(v) => self.ids_in(v, path, &what),
        }
    }

    pub(super) fn kind_name(&self, i: usize) -> &'static str {
        self.steps[i]
            .control
            .and_then(ControlKind::from_action)
            .map_or("control", ControlKind::as_str)
    }

    pub(super) fn ids_in<'v>(
        &mut self,
        v: &'v Value,
        path: &str,
        what: &str,
    ) -> Vec<(usize, &'v str)> {
        if is_run_time(v) {
            self.invalid(
                path,
                format!("{what} must be literal JSON: sub-block membership is fixed at plan time, so it cannot be an expression"),
            );
            return Vec::new();
        }
        let Value::Array(items) = v else {
            self.invalid(
                path,
                format!(
                    "{what} must be a non-empty array of step ids, not {}",
                    json_kind(v)
                ),
            );
            return Vec::new();
        };
        if items.is_empty() {
            self.invalid(
                path,
                format!("{what} is empty; a sub-block needs at least one step"),
            );
        }
        let mut out = Vec::with_capacity(items.len());
        for (k, item) in items.iter().enumerate() {
            match item {
                Value::String(s) => out.push((k, s.as_str())),
                other => self.invalid(
                    format!("{path}/{k}"),
                    format!(
                        "{what} must hold step ids (strings), not {}",
                        json_kind(other)
                    ),
                ),
            }
        }
        out
    }

    pub(super) fn branch_lists<'v>(
        &mut self,
        i: usize,
        with: &'v Map<String, Value>,
    ) -> Vec<Vec<(usize, &'v str)>> {
        let path = format!("/steps/{i}/with/branches");
        let what = format!("parallel step {}'s branches", self.name(i));
        let branches = match with.get("branches") {
            None => {
                self.invalid(
                    &path,
                    format!("{what} are missing: list each branch's step ids"),
                );
                return Vec::new();
            }
            Some(v) if is_run_time(v) => {
                self.invalid(
                    &path,
                    format!("{what} must be literal JSON: sub-block membership is fixed at plan time, so it cannot be an expression"),
                );
                return Vec::new();
            }
            Some(Value::Array(b)) => b,
            Some(other) => {
                self.invalid(
                    &path,
                    format!(
                        "{what} must be a non-empty array of arrays of step ids, not {}",
                        json_kind(other)
                    ),
                );
                return Vec::new();
            }
        };
        if branches.is_empty() {
            self.invalid(&path, format!("{what} are empty; give at least one branch"));
        }
        branches
            .iter()
            .enumerate()
            .map(|(b, branch)| {
                let what = format!("{what}[{b}]");
                self.ids_in(branch, &format!("{path}/{b}"), &what)
            })
            .collect()
    }

    /// CTRL-7: exactly one of `duration` and `until`, parsed when literal.
    pub(super) fn wait(&mut self, i: usize, with: &Map<String, Value>) -> WaitSpec {
        let name = self.name(i);
        let (duration, until) = (with.get("duration"), with.get("until"));
        match (duration, until) {
            (Some(_), Some(_)) => {
                self.invalid(
                    Self::with_path(i, "until"),
                    format!("wait step {name} gives both duration and until; give exactly one"),
                );
                WaitSpec::Duration {
                    delay_ms: PlanValue::AtRunTime,
                }
            }
            (None, None) => {
                self.invalid(
                    format!("/steps/{i}/with"),
                    format!("wait step {name} needs exactly one of duration (an ISO-8601 duration such as \"PT5M\") or until (an RFC 3339 timestamp)"),
                );
                WaitSpec::Duration {
                    delay_ms: PlanValue::AtRunTime,
                }
            }
            (Some(v), None) => WaitSpec::Duration {
                delay_ms: self.time_param(i, "duration", v, parse_duration_ms),
            },
            (None, Some(v)) => WaitSpec::Until {
                at_ms: self.time_param(i, "until", v, parse_timestamp_ms),
            },
        }
    }

    pub(super) fn time_param<T>(
        &mut self,
        i: usize,
        key: &str,
        v: &Value,
        parse: fn(&str) -> Result<T, String>,
    ) -> PlanValue<T> {
        if is_run_time(v) {
            return PlanValue::AtRunTime;
        }
        let problem = match v {
            Value::String(s) => match parse(s) {
                Ok(t) => return PlanValue::Known(t),
                Err(reason) => format!("{key} {} {reason}", show_value(v)),
            },
            other => format!("{key} must be a string, not {}", json_kind(other)),
        };
        let name = self.name(i);
        self.invalid(
            Self::with_path(i, key),
            format!("wait step {name}'s {problem}"),
        );
        PlanValue::AtRunTime
    }

    /// CTRL-8: `mode` is "array" (the default) or "object".
    pub(super) fn mode(
        &mut self,
        i: usize,
        kind: ControlKind,
        with: &Map<String, Value>,
    ) -> PlanValue<JoinMode> {
        match with.get("mode") {
            None => PlanValue::Known(JoinMode::Array),
            Some(v) if is_run_time(v) => PlanValue::AtRunTime,
            Some(Value::String(s)) if s == "array" => PlanValue::Known(JoinMode::Array),
            Some(Value::String(s)) if s == "object" => PlanValue::Known(JoinMode::Object),
            Some(v) => {
                self.invalid(
                    Self::with_path(i, "mode"),
                    format!(
                        "{} step {}'s mode must be \"array\" or \"object\", not {}",
                        kind.as_str(),
                        self.name(i),
                        show_value(v)
                    ),
                );
                PlanValue::AtRunTime
            }
        }
    }

    /// CTRL-8: literal `merge.entries` — an array of objects; in object mode every literal
    /// key is a non-empty string used once.
    pub(super) fn merge_entries(
        &mut self,
        i: usize,
        with: &Map<String, Value>,
        mode: PlanValue<JoinMode>,
    ) {
        let Some(entries) = with.get("entries") else {
            return;
        };
        if is_run_time(entries) {
            return;
        }
        let path = Self::with_path(i, "entries");
        let name = self.name(i);
        let Value::Array(entries) = entries else {
            self.invalid(
                path,
                format!(
                    "merge step {name}'s entries must be an array of {{ key?, value }}, not {}",
                    json_kind(entries)
                ),
            );
            return;
        };
        let object_mode = mode == PlanValue::Known(JoinMode::Object);
        let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for (k, entry) in entries.iter().enumerate() {
            let entry_path = format!("{path}/{k}");
            if is_run_time(entry) {
                continue;
            }
            let Value::Object(entry) = entry else {
                self.invalid(
                    entry_path,
                    format!(
                        "merge step {name}'s entries must be objects {{ key?, value }}, not {}",
                        json_kind(entry)
                    ),
                );
                continue;
            };
            let key_path = format!("{entry_path}/key");
            self.merge_key(&name, k, key_path, entry.get("key"), object_mode, &mut seen);
        }
    }

    /// The key of merge step entry `k` at `key_path`: a string, distinct and not empty in
    /// object mode (`seen` holds the keys of earlier entries), or an expression.
    fn merge_key<'e>(
        &mut self,
        name: &str,
        k: usize,
        key_path: String,
        key: Option<&'e Value>,
        object_mode: bool,
        seen: &mut std::collections::HashMap<&'e str, usize>,
    ) {
        match key {
            Some(v) if is_run_time(v) => {}
            Some(Value::String(key)) if object_mode && key.is_empty() => self.invalid(
                key_path,
                format!("merge step {name}'s entry {k} has an empty key; object mode needs a name for every entry"),
            ),
            Some(Value::String(key)) if object_mode => {
                if let Some(&first) = seen.get(key.as_str()) {
                    self.invalid(
                        key_path,
                        format!("merge step {name}'s entry {k} repeats key {key:?} of entry {first}; object mode needs distinct keys"),
                    );
                } else {
                    seen.insert(key, k);
                }
            }
            Some(Value::String(_)) => {}
            None if object_mode => self.invalid(
                key_path,
                format!("merge step {name}'s entry {k} has no key; object mode needs a name for every entry"),
            ),
            None => {}
            Some(other) => self.invalid(
                key_path,
                format!("merge step {name}'s entry keys must be strings, not {}", json_kind(other)),
            ),
    }
    }
}
