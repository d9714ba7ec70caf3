//! `dataio_nativeops._native`: three native ops behind the op ABI
//! (`dataio_abi::ops`), as a third-party decoder plugin writes them:
//!
//! * `decode_pgm` — binary PGM (`P5`, maxval <= 255) to uint8 `[H, W, 1]`,
//!   refusing anything else with a CORRUPT status and images over
//!   `max_pixels` (default 2^24) with INVALID_ARGUMENT;
//! * `native_invert` — `255 - x` on a uint8 tensor of any shape;
//! * `native_jitter` — one keyed offset in `[-amount, amount]` per sample
//!   added to every value (saturating): its draw comes from the call's key,
//!   so it is the same on any worker and after a resume;
//! * `decode_pgm_ranged` — `decode_pgm` reading its input by range
//!   (`flags::RANGED_INPUT`): the header's first bytes, then the pixels,
//!   never the rest of the object.

use dataio_abi::ops::{flags, kind, Call, ExportOp, Output};
use dataio_abi::{status, AbiError};
use pyo3::prelude::*;

fn corrupt(msg: impl Into<String>) -> AbiError {
    AbiError::new(status::CORRUPT, msg)
}

fn invalid(msg: impl Into<String>) -> AbiError {
    AbiError::new(status::INVALID_ARGUMENT, msg)
}

fn param_i64(call: &Call<'_>, name: &str, default: i64) -> Result<i64, AbiError> {
    let v: serde_json::Value = serde_json::from_str(call.params).map_err(|e| invalid(format!("params: {e}")))?;
    match v.get(name) {
        None | Some(serde_json::Value::Null) => Ok(default),
        Some(x) => x.as_i64().ok_or_else(|| invalid(format!("{name} must be an integer, got {x}"))),
    }
}

/// The uint8 input of a transform.
fn u8_input<'a>(call: &'a Call<'_>, op: &str) -> Result<(&'a [u64], &'a [u8]), AbiError> {
    let t = call.input.as_ref().ok_or_else(|| invalid(format!("{op} is a transform: it needs a tensor")))?;
    if t.dtype != "uint8" {
        return Err(invalid(format!("{op} needs a uint8 tensor, got {}", t.dtype)));
    }
    Ok((&t.shape, t.data))
}

struct DecodePgm;

/// The next whitespace-delimited ASCII number of a PGM header.
fn header_number(data: &[u8], at: &mut usize, what: &str) -> Result<u64, AbiError> {
    while *at < data.len() && data[*at].is_ascii_whitespace() {
        *at += 1;
    }
    let start = *at;
    while *at < data.len() && data[*at].is_ascii_digit() && *at - start < 10 {
        *at += 1;
    }
    if start == *at {
        return Err(corrupt(format!("the PGM header has no {what} at byte {start}")));
    }
    let text = std::str::from_utf8(&data[start..*at]).expect("ASCII digits");
    text.parse().map_err(|_| corrupt(format!("the PGM {what} {text} is out of range")))
}

/// The PGM header of `data` (which may hold only the file's first bytes):
/// (width, height, offset of the pixels).
fn pgm_header(data: &[u8], call: &Call<'_>) -> Result<(u64, u64, usize), AbiError> {
    if !data.starts_with(b"P5") {
        return Err(corrupt("not a binary PGM (no 'P5' magic)"));
    }
    let mut at = 2;
    let w = header_number(data, &mut at, "width")?;
    let h = header_number(data, &mut at, "height")?;
    let maxval = header_number(data, &mut at, "maxval")?;
    if maxval == 0 || maxval > 255 {
        return Err(corrupt(format!("maxval {maxval}: only 8-bit PGM (maxval 1..=255) is read")));
    }
    if w == 0 || h == 0 {
        return Err(corrupt(format!("an empty image ({w}x{h})")));
    }
    let max_pixels = param_i64(call, "max_pixels", 1 << 24)?;
    if w.saturating_mul(h) > max_pixels.max(0) as u64 {
        return Err(invalid(format!("{w}x{h} is over max_pixels={max_pixels}")));
    }
    // One whitespace byte ends the header.
    if at >= data.len() || !data[at].is_ascii_whitespace() {
        return Err(corrupt("the PGM header does not end in whitespace"));
    }
    Ok((w, h, at + 1))
}

impl ExportOp for DecodePgm {
    fn name(&self) -> &str {
        "decode_pgm"
    }
    fn kind(&self) -> u32 {
        kind::DECODE
    }
    fn run(&self, call: &Call<'_>, out: &mut Output<'_>) -> Result<(), AbiError> {
        let data = call.data;
        let (w, h, at) = pgm_header(data, call)?;
        let n = (w * h) as usize;
        let pixels = data.get(at..at + n).ok_or_else(|| {
            corrupt(format!("truncated: {w}x{h} needs {n} pixel bytes, {} are there", data.len().saturating_sub(at)))
        })?;
        out.alloc("uint8", &[h, w, 1])?.copy_from_slice(pixels);
        Ok(())
    }
}

struct DecodePgmRanged;

/// Header bytes read first: enough for any PGM header this reader accepts.
const HEADER_READ: u64 = 64;

impl ExportOp for DecodePgmRanged {
    fn name(&self) -> &str {
        "decode_pgm_ranged"
    }
    fn kind(&self) -> u32 {
        kind::DECODE
    }
    fn flags(&self) -> u32 {
        flags::RANGED_INPUT
    }
    fn run(&self, call: &Call<'_>, out: &mut Output<'_>) -> Result<(), AbiError> {
        let reader = call.reader.as_ref().ok_or_else(|| invalid("decode_pgm_ranged needs a reader"))?;
        let mut head = vec![0u8; HEADER_READ.min(reader.size()) as usize];
        reader.read_at(0, &mut head)?;
        let (w, h, at) = pgm_header(&head, call)?;
        let n = w * h;
        if (at as u64).saturating_add(n) > reader.size() {
            return Err(corrupt(format!(
                "truncated: {w}x{h} needs {n} pixel bytes after the header, the object has {}",
                reader.size()
            )));
        }
        let dst = out.alloc("uint8", &[h, w, 1])?;
        reader.read_at(at as u64, dst)
    }
}

struct Invert;

impl ExportOp for Invert {
    fn name(&self) -> &str {
        "native_invert"
    }
    fn kind(&self) -> u32 {
        kind::TRANSFORM
    }
    fn run(&self, call: &Call<'_>, out: &mut Output<'_>) -> Result<(), AbiError> {
        let (shape, src) = u8_input(call, "native_invert")?;
        for (d, s) in out.alloc("uint8", shape)?.iter_mut().zip(src) {
            *d = 255 - s;
        }
        Ok(())
    }
}

struct Jitter;

impl ExportOp for Jitter {
    fn name(&self) -> &str {
        "native_jitter"
    }
    fn kind(&self) -> u32 {
        kind::TRANSFORM
    }
    fn run(&self, call: &Call<'_>, out: &mut Output<'_>) -> Result<(), AbiError> {
        let amount = param_i64(call, "amount", 8)?;
        if !(0..=255).contains(&amount) {
            return Err(invalid(format!("amount must be in 0..=255, got {amount}")));
        }
        let (shape, src) = u8_input(call, "native_jitter")?;
        let span = 2 * amount as u64 + 1;
        let offset = (call.key.draw(0) % span) as i64 - amount;
        for (d, &s) in out.alloc("uint8", shape)?.iter_mut().zip(src) {
            *d = (s as i64 + offset).clamp(0, 255) as u8;
        }
        Ok(())
    }
}

dataio_abi::export_ops!("dataio-nativeops": "decode_pgm" => DecodePgm, "decode_pgm_ranged" => DecodePgmRanged, "native_invert" => Invert, "native_jitter" => Jitter);

#[pymodule(gil_used = false, name = "_native")]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(op, m)?)
}
