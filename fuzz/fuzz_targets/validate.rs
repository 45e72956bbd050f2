//! Save-time validation and planning of any JSON document: every problem is an error
//! value with a path, never a panic; an accepted document plans.
#![no_main]

use libfuzzer_sys::fuzz_target;
use w6w_sim::{ValidateOptions, validate_workflow};

fuzz_target!(|data: &[u8]| {
    let Ok(doc) = w6w_sim::__internals::json::parse_bytes(data) else {
        return;
    };
    for runnable in [false, true] {
        if let Ok(workflow) = validate_workflow(&doc, ValidateOptions { runnable }) {
            let _ = w6w_sim::plan(&workflow);
        }
    }
});
