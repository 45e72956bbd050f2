//! The `{{ }}` template parser in both modes, plus the serializer round trip: never
//! panics, and render mode never yields a secret part (ENV-6).
#![no_main]

use libfuzzer_sys::fuzz_target;
use w6w_sim::__internals::expr::{
    Mode, Part, parse_root_anchored, parse_template, serialize_template,
};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for mode in [Mode::Editor, Mode::Render] {
        if let Ok(parsed) = parse_template(text, mode) {
            if mode == Mode::Render {
                assert!(
                    !parsed.parts.iter().any(|p| matches!(p, Part::Secret(_))),
                    "render mode produced a secret part"
                );
            }
            let _ = serialize_template(&parsed.parts);
        }
    }
    let _ = parse_root_anchored(text);
});
