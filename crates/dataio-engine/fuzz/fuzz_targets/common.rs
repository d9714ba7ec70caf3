//! What every target shares: a panic that the engine's guard caught is still
//! a finding when it was raised in the engine's own code (third-party
//! decoders are allowed to panic on hostile bytes: the guard exists for
//! them), and every error must carry a message.

#![allow(dead_code)]

use dataio_engine::Error;

/// Fails the run when `e` is a guarded panic raised inside dataio-engine.
pub fn check(e: &Error) {
    let msg = e.to_string();
    assert!(!msg.trim().is_empty(), "an error without a message: {e:?}");
    let guarded = msg.contains("raised an internal error") || msg.contains("the parser failed on it");
    let ours = msg.contains("dataio-engine/src/") || msg.contains(" at src/");
    assert!(!(guarded && ours), "the engine's own code panicked on this input: {msg}");
}

/// `check` on the error of `r`, if any.
pub fn checked<T>(r: dataio_engine::Result<T>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            check(&e);
            None
        }
    }
}
