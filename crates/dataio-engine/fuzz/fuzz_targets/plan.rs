//! The plan JSON parser and compiler (what the Python front sends, and what
//! a checkpoint or a Ray task carries).
#![no_main]
mod common;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Some(plan) = common::checked(dataio_engine::plan::compile(text)) {
        // A compiled plan compiles again to the same signature.
        assert!(!plan.signature.is_empty());
        let again = dataio_engine::plan::compile(text).expect("compiles twice");
        assert_eq!(again.signature, plan.signature);
    }
});
