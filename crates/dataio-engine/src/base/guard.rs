//! Third-party decoders and parsers run inside a guard.
//!
//! Image codecs, archive readers and format parsers are code we do not own;
//! a malformed or merely unusual file can make one of them panic. A panic
//! must never cross the API: a Python caller would get a
//! `pyo3_runtime.PanicException` (a `BaseException`, missed by
//! `except Exception`) and a Rust backtrace message on stderr. [`catch`]
//! turns a panic inside `f` into the typed error the caller builds from the
//! panic's message, and a panic hook installed once keeps guarded panics
//! quiet (unguarded ones — our own bugs — still print as usual).

use crate::base::error::{Error, Result};
use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    static MESSAGE: RefCell<Option<String>> = const { RefCell::new(None) };
}

static HOOK: Once = Once::new();

fn install_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if DEPTH.with(Cell::get) > 0 {
                let text = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic without a message".to_string());
                let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
                MESSAGE.with(|m| *m.borrow_mut() = Some(format!("{text}{at}")));
            } else {
                previous(info);
            }
        }));
    });
}

/// Runs `f`; a panic inside it becomes `on_panic(message)`.
pub fn catch<T>(on_panic: impl FnOnce(String) -> Error, f: impl FnOnce() -> Result<T>) -> Result<T> {
    install_hook();
    DEPTH.with(|d| d.set(d.get() + 1));
    let out = catch_unwind(AssertUnwindSafe(f));
    DEPTH.with(|d| d.set(d.get() - 1));
    out.unwrap_or_else(|payload| {
        let message = MESSAGE.with(|m| m.borrow_mut().take()).unwrap_or_else(|| {
            payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".to_string())
        });
        Err(on_panic(message))
    })
}

/// [`catch`] for a decoder op: the panic becomes a `DecodeError` of `op`
/// saying the input is one the decoder cannot handle.
pub fn decoding<T>(op: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch(|m| Error::decode(op, format!("the decoder failed on this input (it raised an internal error: {m})")), f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_the_callers_error_and_the_guard_unwinds_cleanly() {
        let e = decoding::<()>("decode_image", || panic!("assertion failed: buf.len() >= 7")).unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("decode_image: cannot decode:") && msg.contains("buf.len() >= 7"), "{msg}");
        assert_eq!(DEPTH.with(Cell::get), 0);
        assert_eq!(decoding("x", || Ok(5)).unwrap(), 5);
        let nested = catch(|m| Error::invalid(format!("outer: {m}")), || decoding::<u8>("inner", || panic!("deep")));
        assert!(nested.unwrap_err().to_string().contains("inner: cannot decode"));
    }
}
