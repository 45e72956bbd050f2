//! The JSONLogic compiler and evaluator, both dialects: any JSON rule compiles or is
//! refused with an error, and a compiled rule evaluates without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use w6w_sim::__internals::expr::{Dialect, Logic};

fuzz_target!(|data: &[u8]| {
    let Ok(rule) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let scope = json!({"vars": {"a": 1, "s": "text", "list": [1, "2", null, [3]], "o": {"k": true}},
                       "steps": {"x": {"output": {"v": [1, 2, 3]}}}});
    for dialect in [Dialect::W6w, Dialect::Extended] {
        if let Ok(logic) = Logic::compile(&rule, dialect) {
            let _ = logic.evaluate(&scope);
            let _ = logic.evaluate(&rule);
        }
    }
});
