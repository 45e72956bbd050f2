//! The engine's own failure codes: the `code` of a [`crate::model::StepError`] the engine
//! decides itself (a control's bad params, a call past the depth bound, a refused
//! schedule), never one a host or action reports.

/// Stable codes of the step failures the engine decides. Codes are never renamed; new
/// ones are appended. `as_str` is the wire spelling (reports and held-out cases read it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EngineCode {
    /// CTRL-2…8, CALL-1: a control's or call's resolved params are not usable.
    ParamInvalid,
    /// CTRL-1: a `@w6w/control` step the plan has no canonical control for.
    UnknownControl,
    /// CALL-1: a `@w6w/call` action other than `call`.
    UnknownAction,
    /// CALL-2: the composition depth bound ([`super::CALL_DEPTH_MAX`]).
    CallDepthExceeded,
    /// CTRL-7: the host refused a `wait`'s schedule.
    ScheduleFailed,
    /// A step's output nests deeper than [`crate::limits::MAX_NESTING_DEPTH`].
    LimitExceeded,
    /// ERR-1: a failed record without an error (unreachable by construction).
    StepFailed,
}

impl EngineCode {
    /// Every code, in declaration order.
    pub const ALL: [EngineCode; 7] = [
        EngineCode::ParamInvalid,
        EngineCode::UnknownControl,
        EngineCode::UnknownAction,
        EngineCode::CallDepthExceeded,
        EngineCode::ScheduleFailed,
        EngineCode::LimitExceeded,
        EngineCode::StepFailed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EngineCode::ParamInvalid => "param_invalid",
            EngineCode::UnknownControl => "unknown_control",
            EngineCode::UnknownAction => "unknown_action",
            EngineCode::CallDepthExceeded => "call_depth_exceeded",
            EngineCode::ScheduleFailed => "schedule_failed",
            EngineCode::LimitExceeded => "limit_exceeded",
            EngineCode::StepFailed => "step_failed",
        }
    }
}

impl std::fmt::Display for EngineCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<EngineCode> for String {
    fn from(code: EngineCode) -> String {
        code.as_str().to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::EngineCode;

    /// The wire spellings are a contract: reports, snapshots and held-out cases compare
    /// them byte for byte.
    #[test]
    fn codes_keep_their_wire_spelling() {
        let spelled: Vec<&str> = EngineCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(
            spelled,
            [
                "param_invalid",
                "unknown_control",
                "unknown_action",
                "call_depth_exceeded",
                "schedule_failed",
                "limit_exceeded",
                "step_failed",
            ]
        );
        for c in EngineCode::ALL {
            assert_eq!(String::from(c), c.to_string());
        }
    }
}
