//! `dataio_nativeops._native`: four native ops behind the op ABI
//! (`dataio_abi::ops`, version 2), as a third-party decoder plugin writes
//! them. Each op is declared once, here: its name, doc and parameters (a
//! serde + schemars struct); the Python side registers whatever
//! `export_ops!` lists (`dataio.plugins.NativeOpsPlugin`).
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

use dataio_abi::ops::{flags, kind, Call, NoParams, Op, Output};
use dataio_abi::{status, AbiError};
use pyo3::prelude::*;
use serde::Deserialize;

fn corrupt(msg: impl Into<String>) -> AbiError {
    AbiError::new(status::CORRUPT, msg)
}

fn invalid(msg: impl Into<String>) -> AbiError {
    AbiError::new(status::INVALID_ARGUMENT, msg)
}

/// The parameters of the PGM decoders.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
struct PgmParams {
    /// Images with more pixels than this are refused.
    #[schemars(range(min = 1))]
    max_pixels: u64,
}

impl Default for PgmParams {
    fn default() -> Self {
        PgmParams { max_pixels: 1 << 24 }
    }
}

/// A transform's input: uint8, as the op declares (`INPUT_DTYPE`), so the
/// engine has refused any other dtype before the call.
fn u8_input<'a>(call: &'a Call<'_>, op: &str) -> Result<(&'a [u64], &'a [u8]), AbiError> {
    let t = call.input.as_ref().ok_or_else(|| invalid(format!("{op} is a transform: it needs a tensor")))?;
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
fn pgm_header(data: &[u8], p: &PgmParams) -> Result<(u64, u64, usize), AbiError> {
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
    if w.saturating_mul(h) > p.max_pixels {
        return Err(invalid(format!("{w}x{h} is over max_pixels={}", p.max_pixels)));
    }
    // One whitespace byte ends the header.
    if at >= data.len() || !data[at].is_ascii_whitespace() {
        return Err(corrupt("the PGM header does not end in whitespace"));
    }
    Ok((w, h, at + 1))
}

impl Op for DecodePgm {
    const NAME: &'static str = "decode_pgm";
    const DOC: &'static str = "Binary PGM (P5, 8-bit) to uint8 [H, W, 1].";
    const KIND: u32 = kind::DECODE;
    const OUTPUT_DTYPE: &'static str = "uint8";
    const OUTPUT_NDIM: i32 = 3;
    type Params = PgmParams;
    fn run(&self, p: &PgmParams, call: &Call<'_>, out: &mut Output<'_>) -> Result<(), AbiError> {
        let data = call.data;
        let (w, h, at) = pgm_header(data, p)?;
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

impl Op for DecodePgmRanged {
    const NAME: &'static str = "decode_pgm_ranged";
    const DOC: &'static str = "decode_pgm, reading the header and the pixels by range, never the rest of the object.";
    const KIND: u32 = kind::DECODE;
    const FLAGS: u32 = flags::RANGED_INPUT;
    const OUTPUT_DTYPE: &'static str = "uint8";
    const OUTPUT_NDIM: i32 = 3;
    type Params = PgmParams;
    fn run(&self, p: &PgmParams, call: &Call<'_>, out: &mut Output<'_>) -> Result<(), AbiError> {
        // The core's reader over the object, or the bytes in memory: one path.
        let reader = call.source();
        let mut head = vec![0u8; HEADER_READ.min(reader.size()) as usize];
        reader.read_at(0, &mut head)?;
        let (w, h, at) = pgm_header(&head, p)?;
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

impl Op for Invert {
    const NAME: &'static str = "native_invert";
    const DOC: &'static str = "255 - x on a uint8 tensor of any shape.";
    const KIND: u32 = kind::TRANSFORM;
    const OUTPUT_DTYPE: &'static str = "uint8";
    const INPUT_DTYPE: &'static str = "uint8";
    type Params = NoParams;
    fn run(&self, _: &NoParams, call: &Call<'_>, out: &mut Output<'_>) -> Result<(), AbiError> {
        let (shape, src) = u8_input(call, Self::NAME)?;
        for (d, s) in out.alloc("uint8", shape)?.iter_mut().zip(src) {
            *d = 255 - s;
        }
        Ok(())
    }
}

struct Jitter;

/// The parameters of native_jitter.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
struct JitterParams {
    /// The largest offset either way.
    amount: u8,
}

impl Default for JitterParams {
    fn default() -> Self {
        JitterParams { amount: 8 }
    }
}

impl Op for Jitter {
    const NAME: &'static str = "native_jitter";
    const DOC: &'static str =
        "Adds one keyed offset in [-amount, amount] to every value of a uint8 tensor (saturating).";
    const KIND: u32 = kind::TRANSFORM;
    const OUTPUT_DTYPE: &'static str = "uint8";
    const INPUT_DTYPE: &'static str = "uint8";
    type Params = JitterParams;
    fn run(&self, p: &JitterParams, call: &Call<'_>, out: &mut Output<'_>) -> Result<(), AbiError> {
        let amount = p.amount as i64;
        let (shape, src) = u8_input(call, Self::NAME)?;
        let span = 2 * amount as u64 + 1;
        let offset = (call.key.draw(0) % span) as i64 - amount;
        for (d, &s) in out.alloc("uint8", shape)?.iter_mut().zip(src) {
            *d = (s as i64 + offset).clamp(0, 255) as u8;
        }
        Ok(())
    }
}

dataio_abi::export_ops!(DecodePgm, DecodePgmRanged, Invert, Jitter);

#[pymodule(gil_used = false, name = "_native")]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(ops, m)?)
}
