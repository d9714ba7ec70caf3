//! Runs one slot's program on one record: decode, the fused image chain (or
//! generic tensor steps), and the write into the batch buffer.

use super::native_ops::{self, CallKey, NativeOp, Prepared};
use super::record::{Record, Value};
use crate::base::error::{Error, Result, RowContext};
use crate::base::rng::{key, Stream};
use crate::base::tensor::{read_scalar, write_scalar, AlignedBuf, DType, Tensor};
use crate::kernels::image::finish::Finish;
use crate::kernels::image::geometry::{render, render_ref, render_with, Geo};
use crate::kernels::image::{self, jpeg, Pixels, PixelsRef};
use crate::plan::ops::Dim;
use crate::plan::{Cmp, Decoder, ExtParams, ImageMode, Param, Pred, SlotProgram, Step};
use bytes::Bytes;
use serde_json::{Map, Value as Json};
use std::borrow::Cow;
use std::sync::Arc;

/// Plugin ops the binding layer runs (Python, with the GIL).
pub trait ExternalOps: Send + Sync {
    fn decode(&self, name: &str, data: &[u8], params: &Map<String, Json>) -> Result<Tensor>;
    fn transform(&self, name: &str, input: Tensor, params: &Map<String, Json>) -> Result<Tensor>;
}

/// What a slot's field gives the decoder.
#[derive(Debug, Clone)]
pub enum SlotInput {
    /// Bytes read from a URI or given inline.
    Data(Bytes),
    /// A scalar field value (for `decode_bytes` on numbers and bools).
    Scalar(Value),
    /// An object a ranged plugin decoder reads by range itself.
    Object(Arc<dyn native_ops::RangeSource + Send + Sync>),
}

impl std::fmt::Debug for dyn native_ops::RangeSource + Send + Sync {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RangeSource({} bytes)", self.size())
    }
}

/// The result of a slot for one record.
#[derive(Debug)]
pub enum SlotOut {
    /// Written into the batch row the caller passed.
    Written,
    Tensor(Tensor),
}

/// Keys the random streams of one sample.
#[derive(Debug, Clone, Copy)]
pub struct SampleKey {
    pub seed: u64,
    pub epoch: u64,
    pub index: u64,
    pub slot: u64,
}

impl SampleKey {
    pub fn stream(&self, op_path: u64) -> Stream {
        Stream::new(self.seed, self.epoch, self.index, key(&[self.slot, op_path]))
    }
}

pub fn eval_field_pred(pred: &Pred, record: &Record) -> bool {
    match pred {
        Pred::Col { field, cmp, value } => {
            let v = record.get(field).unwrap_or(&Value::Null);
            match cmp {
                Cmp::IsNull => v.is_null(),
                Cmp::IsNotNull => !v.is_null(),
                Cmp::Eq => v.eq_json(value),
                Cmp::Ne => !v.eq_json(value),
                Cmp::IsIn => value.as_array().is_some_and(|a| a.iter().any(|j| v.eq_json(j))),
                Cmp::Lt => v.cmp_json(value).is_some_and(|o| o.is_lt()),
                Cmp::Le => v.cmp_json(value).is_some_and(|o| o.is_le()),
                Cmp::Gt => v.cmp_json(value).is_some_and(|o| o.is_gt()),
                Cmp::Ge => v.cmp_json(value).is_some_and(|o| o.is_ge()),
            }
        }
        Pred::Shape { .. } => false,
        Pred::And { and: v } => v.iter().all(|p| eval_field_pred(p, record)),
        Pred::Or { or: v } => v.iter().any(|p| eval_field_pred(p, record)),
        Pred::Not { not: p } => !eval_field_pred(p, record),
    }
}

fn eval_shape_pred(pred: &Pred, shape: &[usize], record: &Record) -> bool {
    match pred {
        Pred::Shape { axis, cmp, value } => {
            let n = shape.len() as i64;
            let ax = if *axis < 0 { axis + n } else { *axis };
            let Some(&d) = (ax >= 0 && ax < n).then(|| &shape[ax as usize]) else { return false };
            let d = d as f64;
            match cmp {
                Cmp::Eq => d == *value,
                Cmp::Ne => d != *value,
                Cmp::Lt => d < *value,
                Cmp::Le => d <= *value,
                Cmp::Gt => d > *value,
                Cmp::Ge => d >= *value,
                _ => false,
            }
        }
        Pred::Col { .. } => eval_field_pred(pred, record),
        Pred::And { and: v } => v.iter().all(|p| eval_shape_pred(p, shape, record)),
        Pred::Or { or: v } => v.iter().any(|p| eval_shape_pred(p, shape, record)),
        Pred::Not { not: p } => !eval_shape_pred(p, shape, record),
    }
}

/// The chain resolved for one sample: geometry applied to `geo`, the
/// non-geometry tail, and whatever follows a plugin op.
struct Resolved {
    geo: Geo,
    tail: Vec<Step>,
    external: Option<(String, ExtParams)>,
    rest: Vec<Step>,
}

struct Walker<'a> {
    key: SampleKey,
    record: &'a Record,
    channels: usize,
    r: Resolved,
    stopped: bool,
}

impl Walker<'_> {
    fn shape(&self) -> Vec<usize> {
        let (h, w, c) = (self.r.geo.h as usize, self.r.geo.w as usize, self.channels);
        let chw = Finish::from_steps(self.r.tail.iter()).map(|f| f.chw).unwrap_or(false);
        if chw {
            vec![c, h, w]
        } else {
            vec![h, w, c]
        }
    }

    fn walk(&mut self, steps: &[Step], path: u64) -> Result<()> {
        for (i, step) in steps.iter().enumerate() {
            if self.stopped {
                self.r.rest.push(step.clone());
                continue;
            }
            let op_path = key(&[path, i as u64]);
            match step {
                Step::Branch { pred, then, otherwise } => {
                    let take = eval_shape_pred(pred, &self.shape(), self.record);
                    let (branch, tag) = if take { (then, 1) } else { (otherwise, 2) };
                    self.walk(branch, key(&[op_path, tag]))?;
                }
                Step::External { name, params } => {
                    self.r.external = Some((name.clone(), params.clone()));
                    self.stopped = true;
                }
                s if s.is_geometry() => {
                    let k = self.key;
                    let s = resolve_cols(s, self.record)?;
                    self.r.geo.apply(&s, &mut || k.stream(op_path))?;
                }
                other => self.r.tail.push(other.clone()),
            }
        }
        Ok(())
    }
}

/// An integer field of the record feeding parameter `param` of `op`.
fn record_int(record: &Record, field: &str, op: &str, param: &str) -> Result<i64> {
    let what = || format!("{param}=dataio.col({field:?})");
    match record.get(field) {
        Some(Value::Int(i)) => Ok(*i),
        Some(Value::Float(f)) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(*f as i64),
        None | Some(Value::Null) => {
            Err(Error::decode(op, format!("{}: the record has no field {field:?} (or it is None)", what())))
        }
        Some(other) => {
            Err(Error::decode(op, format!("{}: field {field:?} must be an integer, got {}", what(), other.display())))
        }
    }
}

/// The step with its per-record parameters (`dataio.col`) read from the
/// record; the step itself when it has none.
fn resolve_cols<'a>(step: &'a Step, record: &Record) -> Result<Cow<'a, Step>> {
    if step.cols().is_empty() {
        return Ok(Cow::Borrowed(step));
    }
    let op = step.name();
    let dim = |p: &Param<Dim>, name: &str| -> Result<Param<Dim>> {
        match p {
            Param::Fixed(_) => Ok(p.clone()),
            Param::Col(f) => {
                let n = record_int(record, f, op, name)?;
                Dim::check(n)
                    .map(|v| Param::Fixed(Dim(v)))
                    .map_err(|e| Error::decode(op, format!("{name}=dataio.col({f:?}): field {f:?} {e}")))
            }
        }
    };
    let int = |p: &Param<i64>, name: &str| -> Result<Param<i64>> {
        match p {
            Param::Fixed(_) => Ok(p.clone()),
            Param::Col(f) => record_int(record, f, op, name).map(Param::Fixed),
        }
    };
    let mut s = step.clone();
    match &mut s {
        Step::Resize(r) => (r.h, r.w) = (dim(&r.h, "h")?, dim(&r.w, "w")?),
        Step::ResizeShort(r) => {
            r.size = dim(&r.size, "size")?;
            r.max_size = r.max_size.as_ref().map(|m| dim(m, "max_size")).transpose()?;
        }
        Step::ResizeLong(r) => r.size = dim(&r.size, "size")?,
        Step::CenterCrop(c) => (c.h, c.w) = (dim(&c.h, "h")?, dim(&c.w, "w")?),
        Step::Crop(c) => {
            (c.top, c.left) = (int(&c.top, "top")?, int(&c.left, "left")?);
            (c.h, c.w) = (dim(&c.h, "h")?, dim(&c.w, "w")?);
        }
        Step::RandomCrop(c) => (c.h, c.w) = (dim(&c.h, "h")?, dim(&c.w, "w")?),
        Step::RandomResizedCrop(c) => (c.h, c.w) = (dim(&c.h, "h")?, dim(&c.w, "w")?),
        _ => {}
    }
    Ok(Cow::Owned(s))
}

fn resolve(steps: &[Step], w: u32, h: u32, channels: usize, key: SampleKey, record: &Record) -> Result<Resolved> {
    let mut walker = Walker {
        key,
        record,
        channels,
        r: Resolved { geo: Geo::new(w, h), tail: Vec::new(), external: None, rest: Vec::new() },
        stopped: false,
    };
    walker.walk(steps, 0)?;
    Ok(walker.r)
}

/// Where a sample's output goes: a row of the batch buffer, or a new tensor.
pub struct Dest<'a> {
    pub row: Option<&'a mut [u8]>,
    pub expect_shape: Option<&'a [usize]>,
}

fn emit(finish: &Finish, px: &Pixels, hflip: bool, vflip: bool, dest: Dest<'_>) -> Result<SlotOut> {
    emit_with(finish, px, false, hflip, vflip, dest)
}

/// [`emit`]; `rgbx` says `px` holds RGB pixels 4 bytes apart (the tail
/// [`Finish::takes_rgbx`]).
fn emit_with(finish: &Finish, px: &Pixels, rgbx: bool, hflip: bool, vflip: bool, dest: Dest<'_>) -> Result<SlotOut> {
    let channels = if rgbx { 3 } else { px.channels };
    let shape = finish.shape(px.width, px.height, channels);
    let write = |row: &mut [u8]| {
        if rgbx {
            finish.write_rgbx(px, hflip, vflip, row)
        } else {
            finish.write(px, hflip, vflip, row)
        }
    };
    if let (Some(row), Some(expect)) = (dest.row, dest.expect_shape) {
        if shape != expect {
            return Err(Error::invalid(format!(
                "sample shape {shape:?} differs from the slot's static shape {expect:?}"
            )));
        }
        write(row)?;
        return Ok(SlotOut::Written);
    }
    let n = finish.nbytes(px.width, px.height, channels);
    let buf = AlignedBuf::new(n, false);
    // SAFETY: a fresh buffer owned here; fully written by `write`.
    write(unsafe { buf.slice_mut(0, n) })?;
    Ok(SlotOut::Tensor(Tensor { dtype: finish.dtype, shape, buf: Arc::new(buf), offset: 0 }))
}

/// Chooses the DCT scale `M/8`: the smallest that still leaves at least one
/// source pixel per output pixel on both axes (so the resample only ever
/// shrinks). Only 1/8, 1/4 and 1/2 are used: libjpeg-turbo has SIMD kernels
/// for those, while its other scaled IDCTs (3/8, 5/8, ...) are scalar and
/// measured slower than a full-size decode (scale 7/8: 327 images/s vs 641/s
/// at 8/8 on the benchmark photos, one core).
fn dct_num(geo: &Geo) -> u32 {
    if !geo.resized || geo.interp == crate::plan::Interp::Nearest {
        return 8;
    }
    let shrink = geo.shrink();
    [1u32, 2, 4].into_iter().find(|&m| shrink * m as f64 >= 8.0).unwrap_or(8)
}

/// `decode_image`'s parameters.
#[derive(Debug, Clone, Copy)]
struct ImageOptions {
    mode: ImageMode,
    max_pixels: u64,
    dct_scaling: bool,
    /// Apply the EXIF orientation tag (any format that carries one).
    exif: bool,
}

fn run_image(
    data: &[u8],
    opts: ImageOptions,
    steps: &[Step],
    key: SampleKey,
    record: &Record,
    external: Option<&dyn ExternalOps>,
    dest: Dest<'_>,
) -> Result<SlotOut> {
    let ImageOptions { mode, max_pixels, dct_scaling, exif } = opts;
    let channels = mode.channels();
    let (pixels, origin, scale, resolved) = if jpeg::is_jpeg(data) {
        let mut resolved = None;
        let (mut header, dec) = jpeg::decode(data, image::jpeg_mode(mode), max_pixels, |h| {
            let orientation = if exif { h.orientation } else { 1 };
            let transposed = orientation >= 5;
            let (w, hh) = if transposed { (h.height, h.width) } else { (h.width, h.height) };
            let r = resolve(steps, w, hh, channels, key, record)?;
            let m = if dct_scaling { dct_num(&r.geo) } else { 8 };
            let roi = if orientation == 1 && r.external.is_none() {
                let (x, y, rw, rh) = r.geo.source_region(w, hh);
                // Full-size coordinates to scaled ones (rounding outward).
                let (sx, sy) = (x * m / 8, y * m / 8);
                let ex = ((x + rw) * m).div_ceil(8);
                let ey = ((y + rh) * m).div_ceil(8);
                Some((sx, sy, ex - sx, ey - sy))
            } else {
                None
            };
            // RGBX when the 4-channel resampler and the RGBX normalize
            // kernel carry it all the way to the output (see DecodePlan).
            let rgbx = mode == ImageMode::Rgb
                && r.geo.resized
                && r.external.is_none()
                && Finish::from_steps(r.tail.iter()).is_ok_and(|f| f.takes_rgbx());
            // Fancy (triangle) chroma upsampling stays on even when the
            // window is shrunk: replication was 5-17% cheaper on full-size
            // decodes but moved colored edges by up to 20 levels against
            // PIL's decode (docs/benchmark.md, "decoding less").
            let fancy = true;
            resolved = Some(r);
            Ok(jpeg::DecodePlan { scale_num: m, roi, rgbx, fancy_upsampling: fancy })
        })?;
        let r = resolved.expect("resolved in the plan callback");
        if !exif {
            header.orientation = 1;
        }
        let (sw, sh) = dec.scaled_size;
        let px = Pixels { width: dec.width, height: dec.height, channels: dec.channels, data: dec.data };
        let px = image::orient(px, header.orientation);
        let transposed = header.orientation >= 5;
        let (fw, fh) = if transposed { (header.height, header.width) } else { (header.width, header.height) };
        let (ow, oh) = if transposed { (sh, sw) } else { (sw, sh) };
        let scale = (fw as f64 / ow as f64, fh as f64 / oh as f64);
        let origin = (dec.origin.0 as f64 * scale.0, dec.origin.1 as f64 * scale.1);
        (px, origin, scale, r)
    } else {
        let (px, orientation) = image::decode_other(data, mode, max_pixels)?;
        let px = if exif { image::orient(px, orientation) } else { px };
        let r = resolve(steps, px.width, px.height, channels, key, record)?;
        (px, (0.0, 0.0), (1.0, 1.0), r)
    };
    let identity = !resolved.geo.resized
        && resolved.geo.valid_px() == (0, 0, resolved.geo.w, resolved.geo.h)
        && resolved.geo.ox == 0.0
        && resolved.geo.oy == 0.0
        && (resolved.geo.w, resolved.geo.h) == (pixels.width, pixels.height)
        && scale == (1.0, 1.0);
    let finish = Finish::from_steps(resolved.tail.iter())?;
    if pixels.channels == 4 && mode == ImageMode::Rgb {
        // Decoded as RGBX (the plan asked for it): resample 4-channel, no
        // alpha, and normalize straight from the padded pixels.
        let out = render_with(&resolved.geo, &pixels, origin, scale, false)?;
        image::recycle(pixels.data);
        let r = emit_with(&finish, &out, true, resolved.geo.hflip, resolved.geo.vflip, dest);
        image::recycle(out.data);
        return r;
    }
    let out = if identity {
        pixels
    } else {
        let out = render(&resolved.geo, &pixels, origin, scale)?;
        image::recycle(pixels.data);
        out
    };
    match resolved.external {
        None => {
            let r = emit(&finish, &out, resolved.geo.hflip, resolved.geo.vflip, dest);
            image::recycle(out.data);
            r
        }
        Some((name, params)) => {
            let staged =
                emit(&finish, &out, resolved.geo.hflip, resolved.geo.vflip, Dest { row: None, expect_shape: None })?;
            let SlotOut::Tensor(t) = staged else { unreachable!("no row was given") };
            let t =
                plugin_transform(external, &name, t, &params, key, record).map_err(|e| plugin_op_failed(&name, e))?;
            finish_tensor(t, &resolved.rest, key, record, external, dest)
        }
    }
}

/// The key of a native plugin op's draws: the sample's, with a stream per
/// (slot, op name).
fn native_key(key: SampleKey, name: &str) -> CallKey {
    let named = dataio_abi::host::fnv1a(name.as_bytes());
    CallKey {
        seed: Some(key.seed),
        epoch: key.epoch,
        index: key.index,
        stream: crate::base::rng::key(&[key.slot, named]),
    }
}

/// Native op `op` with `params` parsed for this plan: once, kept in the
/// step's cell, unless a parameter is per-record (`dataio.col(field)`),
/// when the record's values are parsed for this call.
fn prepared(op: &Arc<NativeOp>, params: &ExtParams, record: &Record) -> Result<Arc<Prepared>> {
    if has_cols(params) {
        return Ok(Arc::new(op.prepare(&*record_params(op.name(), params, record)?)?));
    }
    if let Some(p) = params.prepared.get().and_then(|p| p.clone().downcast::<Prepared>().ok()) {
        if std::ptr::eq(p.op(), &**op) {
            return Ok(p);
        }
    }
    let p = Arc::new(op.prepare(params)?);
    let _ = params.prepared.set(p.clone());
    Ok(p)
}

/// Prepares every native plugin op of `plan` whose parameters are fixed
/// (no `dataio.col(...)`), once, before any record is read: a parameter the
/// op refuses or a side file it cannot load fails the loader's start, not
/// every row. A store's error (a missing tokenizer file) stays typed; the
/// op's own refusal names the slot and the op.
pub fn prepare_native_ops(plan: &crate::plan::Plan) -> Result<()> {
    fn step_ops<'a>(steps: &'a [Step], out: &mut Vec<(&'a str, &'a ExtParams)>) {
        for s in steps {
            match s {
                Step::External { name, params } => out.push((name, params)),
                Step::Branch { then, otherwise, .. } => {
                    step_ops(then, out);
                    step_ops(otherwise, out);
                }
                _ => {}
            }
        }
    }
    for slot in &plan.slots {
        let mut ops = Vec::new();
        if let Decoder::External { name, params } = &slot.decoder {
            ops.push((name.as_str(), params));
        }
        step_ops(&slot.steps, &mut ops);
        for (name, params) in ops {
            let Some(op) = native_ops::get(name) else { continue };
            if has_cols(params) {
                continue;
            }
            prepared(&op, params, &Record::new(Vec::new())).map_err(|e| match e {
                Error::InvalidArgument(m) | Error::Plan(m) => {
                    Error::Plan(format!("slot {:?}, {}", slot.name, m.strip_prefix("invalid plan: ").unwrap_or(&m)))
                }
                other => other,
            })?;
        }
    }
    Ok(())
}

/// Runs plugin decoder `name`: natively (no GIL) when a plugin registered a
/// native table for it, else through the binding's Python ops.
fn plugin_decode(
    external: Option<&dyn ExternalOps>,
    name: &str,
    data: &[u8],
    params: &ExtParams,
    key: SampleKey,
    record: &Record,
) -> Result<Tensor> {
    if let Some(op) = native_ops::get(name) {
        return prepared(&op, params, record)?.decode(data, native_key(key, name), "");
    }
    let ext =
        external.ok_or_else(|| Error::invalid(format!("decoder {name} needs its plugin, which is not loaded here")))?;
    ext.decode(name, data, params)
}

/// Runs plugin transform `name` (see [`plugin_decode`]).
fn plugin_transform(
    external: Option<&dyn ExternalOps>,
    name: &str,
    input: Tensor,
    params: &ExtParams,
    key: SampleKey,
    record: &Record,
) -> Result<Tensor> {
    if let Some(op) = native_ops::get(name) {
        return prepared(&op, params, record)?.transform(&input, native_key(key, name), "");
    }
    let ext =
        external.ok_or_else(|| Error::invalid(format!("op {name} needs its plugin, which is not loaded here")))?;
    ext.transform(name, input, params)
}

/// `{"$col": field}`: a parameter given as `dataio.col(field)`.
fn col_field(v: &Json) -> Option<&str> {
    v.as_object().filter(|o| o.len() == 1).and_then(|o| o.get("$col")).and_then(Json::as_str)
}

fn has_cols(params: &Map<String, Json>) -> bool {
    params.values().any(|v| col_field(v).is_some())
}

/// A native plugin op's parameters for one record: each `{"$col": field}`
/// (a `dataio.col(field)` in the pipeline) becomes the record's value of
/// that field; a missing field fails the row naming the op and parameter.
fn record_params<'a>(name: &str, params: &'a Map<String, Json>, record: &Record) -> Result<Cow<'a, Map<String, Json>>> {
    if !has_cols(params) {
        return Ok(Cow::Borrowed(params));
    }
    let mut out = params.clone();
    for (param, v) in out.iter_mut() {
        let Some(field) = col_field(v).map(str::to_string) else { continue };
        *v = match record.get(&field) {
            Some(Value::Null) | None => {
                return Err(Error::decode(
                    name,
                    format!("the record has no field {field:?} ({param}=dataio.col({field:?}))"),
                ))
            }
            Some(Value::Bool(b)) => Json::Bool(*b),
            Some(Value::Int(i)) => Json::from(*i),
            Some(Value::Float(f)) => Json::from(*f),
            Some(Value::Str(s)) => Json::String(s.clone()),
            Some(Value::Bytes(_)) => {
                return Err(Error::decode(name, format!("field {field:?} holds bytes, not a value for {param}")))
            }
        };
    }
    Ok(Cow::Owned(out))
}

/// A plugin op's failure, tagged with the op's name: the loader fills in the
/// rest of the row context (record, slot, URI) and keeps this op, where it
/// would otherwise name the slot's decoder.
fn plugin_op_failed(name: &str, e: Error) -> Error {
    e.in_row(RowContext { op: name.to_string(), ..Default::default() })
}

/// Steps after a plugin op: a uint8 HWC result re-enters the fused image
/// path; anything else accepts only casts and further plugin ops.
fn finish_tensor(
    t: Tensor,
    steps: &[Step],
    key: SampleKey,
    record: &Record,
    external: Option<&dyn ExternalOps>,
    dest: Dest<'_>,
) -> Result<SlotOut> {
    if steps.is_empty() {
        return place(t, dest);
    }
    if t.dtype == DType::U8
        && t.shape.len() == 3
        && (1..=4).contains(&t.shape[2])
        && steps.iter().any(|s| s.is_geometry() || matches!(s, Step::Normalize { .. } | Step::ToChw))
    {
        let px = PixelsRef {
            width: t.shape[1] as u32,
            height: t.shape[0] as u32,
            channels: t.shape[2] as u32,
            data: t.bytes(),
        };
        let r = resolve(steps, px.width, px.height, px.channels as usize, key, record)?;
        if r.external.is_some() {
            return Err(Error::invalid("only one plugin op per image chain is supported"));
        }
        let out = render_ref(&r.geo, px, (0.0, 0.0), (1.0, 1.0), true)?;
        let finish = Finish::from_steps(r.tail.iter())?;
        return emit(&finish, &out, r.geo.hflip, r.geo.vflip, dest);
    }
    // A clip, uint8 [T, H, W, C] (a video decoder's): the image chain runs
    // on every frame with one set of draws for the whole clip (the same
    // crop and flip on each frame), giving [T, ...the frame's shape], or
    // with normalize(layout="CTHW") [C, T, H, W].
    if t.dtype == DType::U8
        && t.shape.len() == 4
        && (1..=4).contains(&t.shape[3])
        && steps.iter().any(|s| s.is_geometry() || matches!(s, Step::Normalize { .. } | Step::ToChw))
    {
        let (frames, h, w, c) = (t.shape[0], t.shape[1], t.shape[2], t.shape[3]);
        let r = resolve(steps, w as u32, h as u32, c, key, record)?;
        if r.external.is_some() {
            return Err(Error::invalid("only one plugin op per image chain is supported"));
        }
        let finish = Finish::from_steps(r.tail.iter())?;
        let src = t.bytes();
        let frame_bytes = h * w * c;
        let mut out: Option<(Vec<usize>, usize, AlignedBuf)> = None;
        let mut chw_frame = Vec::new();
        for i in 0..frames {
            // Each frame is resampled where it lies in the clip.
            let px = PixelsRef {
                width: w as u32,
                height: h as u32,
                channels: c as u32,
                data: &src[i * frame_bytes..(i + 1) * frame_bytes],
            };
            let frame = render_ref(&r.geo, px, (0.0, 0.0), (1.0, 1.0), true)?;
            let (_, n, buf) = out.get_or_insert_with(|| {
                let n = finish.nbytes(frame.width, frame.height, frame.channels);
                let mut shape = finish.shape(frame.width, frame.height, frame.channels);
                shape.insert(usize::from(finish.cthw), frames);
                (shape, n, crate::base::tensor::pooled(n * frames))
            });
            if finish.cthw {
                // Frame i's channel plane ch goes to [ch, i]: planes of n / C bytes.
                chw_frame.resize(*n, 0);
                finish.write(&frame, r.geo.hflip, r.geo.vflip, &mut chw_frame)?;
                let planes = frame.channels as usize;
                let plane = *n / planes;
                for (ch, src) in chw_frame.chunks_exact(plane).enumerate() {
                    // SAFETY: a fresh buffer owned here; each (ch, i) plane is written once.
                    unsafe { buf.slice_mut((ch * frames + i) * plane, plane) }.copy_from_slice(src);
                }
            } else {
                // SAFETY: a fresh buffer owned here; frame i writes its own n bytes.
                finish.write(&frame, r.geo.hflip, r.geo.vflip, unsafe { buf.slice_mut(i * *n, *n) })?;
            }
            image::recycle(frame.data);
        }
        let Some((shape, _, buf)) = out else {
            return Err(Error::invalid("an empty clip (0 frames) meets image ops"));
        };
        return place(Tensor { dtype: finish.dtype, shape, buf: Arc::new(buf), offset: 0 }, dest);
    }
    let mut t = t;
    for s in steps {
        t = match s {
            Step::Cast { dtype } => cast(&t, *dtype),
            Step::External { name, params } => {
                plugin_transform(external, name, t, params, key, record).map_err(|e| plugin_op_failed(name, e))?
            }
            // The op that refused names itself and what it got (a plugin
            // decoder's float32 [N, 3] is not pixels).
            other => {
                return Err(Error::decode(
                    other.name(),
                    format!(
                        "needs a uint8 HWC image (or a [T, H, W, C] clip), got {} {:?} from the op before it",
                        t.dtype.name(),
                        t.shape
                    ),
                ))
            }
        };
    }
    place(t, dest)
}

pub fn cast(t: &Tensor, dtype: DType) -> Tensor {
    if t.dtype == dtype {
        return t.clone();
    }
    let n = t.numel();
    let (si, di) = (t.dtype.size(), dtype.size());
    let buf = AlignedBuf::new(n * di, false);
    // SAFETY: fresh buffer owned here, fully written below.
    let out = unsafe { buf.slice_mut(0, n * di) };
    let src = t.bytes();
    for i in 0..n {
        write_scalar(dtype, read_scalar(t.dtype, &src[i * si..(i + 1) * si]), &mut out[i * di..(i + 1) * di]);
    }
    Tensor { dtype, shape: t.shape.clone(), buf: Arc::new(buf), offset: 0 }
}

fn place(t: Tensor, dest: Dest<'_>) -> Result<SlotOut> {
    match (dest.row, dest.expect_shape) {
        (Some(row), Some(expect)) => {
            if t.shape != expect || row.len() != t.nbytes() {
                return Err(Error::invalid(format!(
                    "sample shape {:?} differs from the slot's static shape {expect:?}",
                    t.shape
                )));
            }
            row.copy_from_slice(t.bytes());
            Ok(SlotOut::Written)
        }
        _ => Ok(SlotOut::Tensor(t)),
    }
}

/// Runs `slot` on one record's input. Third-party decoding runs guarded: a
/// panic in it is a `DecodeError` of the slot's decoder (see [`crate::base::guard`]).
pub fn run_slot(
    slot: &SlotProgram,
    input: SlotInput,
    record: &Record,
    key: SampleKey,
    external: Option<&dyn ExternalOps>,
    dest: Dest<'_>,
) -> Result<SlotOut> {
    crate::base::guard::decoding(decoder_name(&slot.decoder), || {
        run_slot_unguarded(slot, input, record, key, external, dest)
    })
}

fn run_slot_unguarded(
    slot: &SlotProgram,
    input: SlotInput,
    record: &Record,
    key: SampleKey,
    external: Option<&dyn ExternalOps>,
    dest: Dest<'_>,
) -> Result<SlotOut> {
    // `encode_image` is a slot's last step (the plan checks it): the chain
    // before it runs as usual into a staged tensor, which is then encoded.
    let Some((Step::EncodeImage(enc), steps)) = slot.steps.split_last() else {
        return run_steps(slot, &slot.steps, input, record, key, external, dest);
    };
    let staged = run_steps(slot, steps, input, record, key, external, Dest { row: None, expect_shape: None })?;
    let SlotOut::Tensor(t) = staged else { unreachable!("no row was given") };
    let bytes = encode_tensor(&t, enc)?;
    place(Tensor::from_vec_u8(vec![bytes.len()], &bytes), dest)
}

/// `encode_image` on a staged tensor: uint8 `[H, W, C]` (C 1, 3 or 4) or `[H, W]`.
fn encode_tensor(t: &Tensor, enc: &crate::plan::ops::EncodeImage) -> Result<Vec<u8>> {
    let (h, w, c) = match t.shape[..] {
        [h, w] => (h, w, 1),
        [h, w, c] => (h, w, c),
        _ => (0, 0, 0),
    };
    if t.dtype != DType::U8 || c == 0 || h > u32::MAX as usize || w > u32::MAX as usize {
        return Err(Error::encode(
            "encode_image",
            format!("needs uint8 pixels [H, W, C] or [H, W], got {} {:?}", t.dtype.name(), t.shape),
        ));
    }
    let px = PixelsRef { width: w as u32, height: h as u32, channels: c as u32, data: t.bytes() };
    crate::kernels::image::encode::encode(px, enc)
}

#[allow(clippy::too_many_arguments)]
fn run_steps(
    slot: &SlotProgram,
    steps: &[Step],
    input: SlotInput,
    record: &Record,
    key: SampleKey,
    external: Option<&dyn ExternalOps>,
    dest: Dest<'_>,
) -> Result<SlotOut> {
    match (&slot.decoder, input) {
        (Decoder::Image { mode, max_pixels, dct_scaling, exif }, SlotInput::Data(data)) => {
            let opts = ImageOptions { mode: *mode, max_pixels: *max_pixels, dct_scaling: *dct_scaling, exif: *exif };
            run_image(&data, opts, steps, key, record, external, dest)
        }
        (Decoder::Image { .. }, SlotInput::Scalar(v)) => {
            Err(Error::decode("decode_image", format!("expected image bytes or a path, got the value {}", v.display())))
        }
        (Decoder::Bytes, SlotInput::Data(data)) => {
            finish_tensor(Tensor::from_vec_u8(vec![data.len()], &data), steps, key, record, external, dest)
        }
        (Decoder::Bytes, SlotInput::Scalar(v)) => {
            let t = match v {
                Value::Int(i) => Tensor::scalar_i64(i),
                Value::Float(f) => Tensor::scalar_f64(f),
                Value::Bool(b) => Tensor::scalar_bool(b),
                other => {
                    return Err(Error::decode("decode_bytes", format!("cannot make a tensor of {}", other.display())))
                }
            };
            finish_tensor(t, steps, key, record, external, dest)
        }
        (Decoder::Npy, SlotInput::Data(data)) => {
            finish_tensor(crate::kernels::formats::npy::decode(&data)?, steps, key, record, external, dest)
        }
        (Decoder::Safetensors { tensor_key }, SlotInput::Data(data)) => {
            let name = match tensor_key {
                Param::Fixed(s) => s.clone(),
                Param::Col(c) => match record.get(c) {
                    Some(Value::Str(s)) => s.clone(),
                    Some(other) => {
                        return Err(Error::decode(
                            "decode_safetensors",
                            format!("field {c:?} must be a string tensor name, got {}", other.display()),
                        ))
                    }
                    None => {
                        return Err(Error::decode(
                            "decode_safetensors",
                            format!("the record has no field {c:?} (tensor_key=dataio.col({c:?}))"),
                        ))
                    }
                },
            };
            finish_tensor(
                crate::kernels::formats::safetensors::decode(&data, &name)?,
                steps,
                key,
                record,
                external,
                dest,
            )
        }
        (Decoder::External { name, params }, SlotInput::Data(data)) => {
            let t = plugin_decode(external, name, &data, params, key, record).map_err(|e| plugin_op_failed(name, e))?;
            finish_tensor(t, steps, key, record, external, dest)
        }
        (Decoder::External { name, params }, SlotInput::Object(object)) => {
            let op = native_ops::get(name)
                .ok_or_else(|| Error::invalid(format!("decoder {name} needs its plugin, which is not loaded here")))?;
            let t = prepared(&op, params, record)
                .and_then(|p| p.decode_ranged(None, &*object, native_key(key, name), object.uri()))
                .map_err(|e| plugin_op_failed(name, e))?;
            finish_tensor(t, steps, key, record, external, dest)
        }
        (d, SlotInput::Object(_)) => {
            Err(Error::invalid(format!("{} reads whole bytes, not an object by range", decoder_name(d))))
        }
        (d, SlotInput::Scalar(v)) => {
            Err(Error::decode(decoder_name(d), format!("expected bytes or a path, got the value {}", v.display())))
        }
    }
}

pub fn decoder_name(d: &Decoder) -> &str {
    match d {
        Decoder::Image { .. } => "decode_image",
        Decoder::Bytes => "decode_bytes",
        Decoder::Npy => "decode_npy",
        Decoder::Safetensors { .. } => "decode_safetensors",
        Decoder::External { name, .. } => name,
    }
}
