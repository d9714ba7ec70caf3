//! The plan IR on the native side: parsed from the JSON the Python DSL
//! emits, validated once, and compiled into per-slot programs with their
//! static output shapes.
//!
//! JSON shape (version 1):
//! ```json
//! {"version": 1,
//!  "slots": [{"name": "image", "field": "image", "optional": false, "stack": "auto",
//!             "active_when": PRED | null,
//!             "ops": [{"op": "decode_image", "params": {"mode": "rgb"}},
//!                     {"op": "when", "pred": PRED, "then": [OP...], "otherwise": [OP...]}]}],
//!  "shape": {"kind": "batch", "size": 64, "drop_last": false, "prefetch": 4}
//!         | {"kind": "group_by", "key": "batch_id", "prefetch": 4},
//!  "batch_ops": [{"op": "mixup", "params": {...}}],
//!  "external_ops": ["my_plugin_op"]}
//! ```
//! A parameter may be `{"$col": "field"}`: a per-record value.
//! PRED is `{"col": f, "cmp": "eq"|"ne"|"lt"|"le"|"gt"|"ge"|"is_null"|"is_not_null"|"is_in", "value": v}`,
//! `{"shape": axis, "cmp": .., "value": n}`, `{"and": [..]}`, `{"or": [..]}` or `{"not": P}`.

use crate::error::{Error, Result};
use crate::tensor::DType;
use serde_json::{Map, Value as Json};
use std::collections::BTreeSet;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interp {
    Nearest,
    Bilinear,
    Bicubic,
    Lanczos,
    Area,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageMode {
    Rgb,
    Gray,
    Rgba,
}

impl ImageMode {
    pub fn channels(self) -> usize {
        match self {
            ImageMode::Rgb => 3,
            ImageMode::Gray => 1,
            ImageMode::Rgba => 4,
        }
    }
}

/// A parameter that is either fixed in the plan or read from the record.
#[derive(Debug, Clone, PartialEq)]
pub enum Param<T> {
    Fixed(T),
    Col(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Decoder {
    Image { mode: ImageMode, max_pixels: u64, dct_scaling: bool },
    Bytes,
    Npy,
    Safetensors { tensor_key: Param<String> },
    External { name: String, params: Map<String, Json> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Chw,
    Hwc,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Resize { h: u32, w: u32, interp: Interp, antialias: bool },
    ResizeShort { size: u32, interp: Interp, antialias: bool, max_size: Option<u32> },
    ResizeLong { size: u32, interp: Interp, antialias: bool },
    CenterCrop { h: u32, w: u32 },
    Crop { top: i64, left: i64, h: u32, w: u32 },
    RandomCrop { h: u32, w: u32 },
    RandomResizedCrop { h: u32, w: u32, scale: (f64, f64), ratio: (f64, f64), interp: Interp, antialias: bool },
    HFlip { p: f64 },
    VFlip { p: f64 },
    Normalize { mean: Vec<f32>, std: Vec<f32>, layout: Layout },
    ToChw,
    Cast { dtype: DType },
    Branch { pred: Pred, then: Vec<Step>, otherwise: Vec<Step> },
    External { name: String, params: Map<String, Json> },
}

impl Step {
    pub fn name(&self) -> &str {
        match self {
            Step::Resize { .. } => "resize",
            Step::ResizeShort { .. } => "resize_short",
            Step::ResizeLong { .. } => "resize_long",
            Step::CenterCrop { .. } => "center_crop",
            Step::Crop { .. } => "crop",
            Step::RandomCrop { .. } => "random_crop",
            Step::RandomResizedCrop { .. } => "random_resized_crop",
            Step::HFlip { .. } => "hflip",
            Step::VFlip { .. } => "vflip",
            Step::Normalize { .. } => "normalize",
            Step::ToChw => "to_chw",
            Step::Cast { .. } => "cast",
            Step::Branch { .. } => "when",
            Step::External { name, .. } => name,
        }
    }

    pub fn is_geometry(&self) -> bool {
        matches!(
            self,
            Step::Resize { .. }
                | Step::ResizeShort { .. }
                | Step::ResizeLong { .. }
                | Step::CenterCrop { .. }
                | Step::Crop { .. }
                | Step::RandomCrop { .. }
                | Step::RandomResizedCrop { .. }
                | Step::HFlip { .. }
                | Step::VFlip { .. }
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    IsNull,
    IsNotNull,
    IsIn,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Pred {
    Col { field: String, cmp: Cmp, value: Json },
    Shape { axis: i64, cmp: Cmp, value: f64 },
    And(Vec<Pred>),
    Or(Vec<Pred>),
    Not(Box<Pred>),
}

impl Pred {
    pub fn uses_shape(&self) -> bool {
        match self {
            Pred::Shape { .. } => true,
            Pred::Col { .. } => false,
            Pred::And(v) | Pred::Or(v) => v.iter().any(Pred::uses_shape),
            Pred::Not(p) => p.uses_shape(),
        }
    }

    pub fn fields(&self, out: &mut BTreeSet<String>) {
        match self {
            Pred::Col { field, .. } => {
                out.insert(field.clone());
            }
            Pred::Shape { .. } => {}
            Pred::And(v) | Pred::Or(v) => v.iter().for_each(|p| p.fields(out)),
            Pred::Not(p) => p.fields(out),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stack {
    Auto,
    Never,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SlotProgram {
    pub name: String,
    pub field: String,
    pub optional: bool,
    pub stack: Stack,
    pub active_when: Option<Pred>,
    pub decoder: Decoder,
    pub steps: Vec<Step>,
    /// The per-sample output shape when every record yields the same one.
    pub static_shape: Option<Vec<usize>>,
    /// The output dtype when known statically.
    pub dtype: Option<DType>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    Batch { size: usize, drop_last: bool },
    GroupBy { key: String },
}

#[derive(Debug, Clone, PartialEq)]
pub struct BatchOp {
    pub name: String,
    pub params: Map<String, Json>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub slots: Vec<SlotProgram>,
    pub shape: Shape,
    pub prefetch: usize,
    pub batch_ops: Vec<BatchOp>,
    /// Record fields the native side reads (slot fields, `$col` params, predicates, group key, "key").
    pub fields: Vec<String>,
    /// BLAKE3 of the canonical plan JSON: goes into checkpoints.
    pub signature: String,
}

// ---------------------------------------------------------------------------

struct Ctx<'a> {
    slot: &'a str,
    op: String,
    index: usize,
}

impl Ctx<'_> {
    fn err(&self, msg: impl std::fmt::Display) -> Error {
        Error::Plan(format!("slot {:?}, op #{} {}: {msg}", self.slot, self.index, self.op))
    }
}

fn obj<'a>(v: &'a Json, what: &str) -> Result<&'a Map<String, Json>> {
    v.as_object().ok_or_else(|| Error::Plan(format!("{what} must be an object")))
}

struct Params<'a> {
    ctx: &'a Ctx<'a>,
    map: &'a Map<String, Json>,
    used: std::cell::RefCell<BTreeSet<&'a str>>,
}

impl<'a> Params<'a> {
    fn get(&self, name: &'a str) -> Option<&'a Json> {
        self.used.borrow_mut().insert(name);
        self.map.get(name).filter(|v| !v.is_null())
    }
    fn u32(&self, name: &'a str, default: Option<u32>) -> Result<u32> {
        match self.get(name) {
            None => default.ok_or_else(|| self.ctx.err(format!("missing required parameter {name:?}"))),
            Some(v) => {
                let n =
                    v.as_u64().ok_or_else(|| self.ctx.err(format!("{name} must be a positive integer, got {v}")))?;
                if n == 0 || n > 1 << 24 {
                    return Err(self.ctx.err(format!("{name} must be in 1..=16777216, got {n}")));
                }
                Ok(n as u32)
            }
        }
    }
    fn i64(&self, name: &'a str) -> Result<i64> {
        self.get(name)
            .ok_or_else(|| self.ctx.err(format!("missing required parameter {name:?}")))?
            .as_i64()
            .ok_or_else(|| self.ctx.err(format!("{name} must be an integer")))
    }
    fn f64(&self, name: &'a str, default: f64) -> Result<f64> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => v.as_f64().ok_or_else(|| self.ctx.err(format!("{name} must be a number, got {v}"))),
        }
    }
    fn bool(&self, name: &'a str, default: bool) -> Result<bool> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => v.as_bool().ok_or_else(|| self.ctx.err(format!("{name} must be true or false, got {v}"))),
        }
    }
    fn str(&self, name: &'a str, default: &'a str) -> Result<&'a str> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => v.as_str().ok_or_else(|| self.ctx.err(format!("{name} must be a string, got {v}"))),
        }
    }
    fn pair(&self, name: &'a str, default: (f64, f64)) -> Result<(f64, f64)> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => {
                let a = v.as_array().filter(|a| a.len() == 2);
                let p = a.and_then(|a| Some((a[0].as_f64()?, a[1].as_f64()?)));
                let (lo, hi) = p.ok_or_else(|| self.ctx.err(format!("{name} must be a pair of numbers, got {v}")))?;
                if !(lo > 0.0 && lo <= hi) {
                    return Err(self.ctx.err(format!("{name} must satisfy 0 < low <= high, got ({lo}, {hi})")));
                }
                Ok((lo, hi))
            }
        }
    }
    fn interp(&self) -> Result<Interp> {
        Ok(match self.str("interpolation", "bilinear")? {
            "nearest" => Interp::Nearest,
            "bilinear" => Interp::Bilinear,
            "bicubic" => Interp::Bicubic,
            "lanczos" => Interp::Lanczos,
            "area" => Interp::Area,
            other => return Err(self.ctx.err(format!("unknown interpolation {other:?}"))),
        })
    }
    fn finish(&self) -> Result<()> {
        let used = self.used.borrow();
        for k in self.map.keys() {
            if !used.contains(k.as_str()) {
                return Err(self.ctx.err(format!("unknown parameter {k:?}")));
            }
        }
        Ok(())
    }
}

fn col_ref(v: &Json) -> Option<&str> {
    v.as_object().and_then(|o| o.get("$col")).and_then(Json::as_str)
}

pub fn mean_std(name: &str) -> Option<(Vec<f32>, Vec<f32>)> {
    match name {
        "imagenet" => Some((vec![0.485, 0.456, 0.406], vec![0.229, 0.224, 0.225])),
        "clip" => Some((vec![0.481_454_66, 0.457_827_5, 0.408_210_73], vec![0.268_629_54, 0.261_302_6, 0.275_777_1])),
        "symmetric" | "half" => Some((vec![0.5, 0.5, 0.5], vec![0.5, 0.5, 0.5])),
        "unit" => Some((vec![0.0, 0.0, 0.0], vec![1.0, 1.0, 1.0])),
        _ => None,
    }
}

fn parse_pred(v: &Json, where_: &str) -> Result<Pred> {
    let o = obj(v, where_)?;
    let cmp_of = |o: &Map<String, Json>| -> Result<Cmp> {
        Ok(match o.get("cmp").and_then(Json::as_str).unwrap_or("") {
            "eq" => Cmp::Eq,
            "ne" => Cmp::Ne,
            "lt" => Cmp::Lt,
            "le" => Cmp::Le,
            "gt" => Cmp::Gt,
            "ge" => Cmp::Ge,
            "is_null" => Cmp::IsNull,
            "is_not_null" => Cmp::IsNotNull,
            "is_in" => Cmp::IsIn,
            other => return Err(Error::Plan(format!("{where_}: unknown comparison {other:?}"))),
        })
    };
    if let Some(field) = o.get("col") {
        let field = field.as_str().ok_or_else(|| Error::Plan(format!("{where_}: col must be a field name")))?;
        let cmp = cmp_of(o)?;
        let value = o.get("value").cloned().unwrap_or(Json::Null);
        if cmp == Cmp::IsIn && !value.is_array() {
            return Err(Error::Plan(format!("{where_}: is_in needs a list of values")));
        }
        return Ok(Pred::Col { field: field.to_string(), cmp, value });
    }
    if let Some(axis) = o.get("shape") {
        let axis = axis.as_i64().ok_or_else(|| Error::Plan(format!("{where_}: shape axis must be an integer")))?;
        let cmp = cmp_of(o)?;
        if matches!(cmp, Cmp::IsNull | Cmp::IsNotNull | Cmp::IsIn) {
            return Err(Error::Plan(format!("{where_}: shape predicates compare numbers (eq/ne/lt/le/gt/ge)")));
        }
        let value = o
            .get("value")
            .and_then(Json::as_f64)
            .ok_or_else(|| Error::Plan(format!("{where_}: shape predicates need a number")))?;
        return Ok(Pred::Shape { axis, cmp, value });
    }
    for (k, ctor) in [("and", true), ("or", false)] {
        if let Some(list) = o.get(k) {
            let items = list.as_array().ok_or_else(|| Error::Plan(format!("{where_}: {k} takes a list")))?;
            let parsed = items.iter().map(|p| parse_pred(p, where_)).collect::<Result<Vec<_>>>()?;
            return Ok(if ctor { Pred::And(parsed) } else { Pred::Or(parsed) });
        }
    }
    if let Some(p) = o.get("not") {
        return Ok(Pred::Not(Box::new(parse_pred(p, where_)?)));
    }
    Err(Error::Plan(format!("{where_}: not a predicate: {v}")))
}

fn parse_decoder(ctx: &Ctx, name: &str, params: &Map<String, Json>, external: &BTreeSet<String>) -> Result<Decoder> {
    let p = Params { ctx, map: params, used: Default::default() };
    let d = match name {
        "decode_image" => {
            let mode = match p.str("mode", "rgb")? {
                "rgb" | "RGB" => ImageMode::Rgb,
                "gray" | "L" | "grey" => ImageMode::Gray,
                "rgba" | "RGBA" => ImageMode::Rgba,
                other => return Err(ctx.err(format!("mode must be 'rgb', 'gray' or 'rgba', got {other:?}"))),
            };
            let max_pixels = match p.get("max_pixels") {
                None => 178_956_970,
                Some(v) => {
                    v.as_u64().filter(|&n| n > 0).ok_or_else(|| ctx.err("max_pixels must be a positive integer"))?
                }
            };
            Decoder::Image { mode, max_pixels, dct_scaling: p.bool("dct_scaling", true)? }
        }
        "decode_bytes" => Decoder::Bytes,
        "decode_npy" => Decoder::Npy,
        "decode_safetensors" => {
            let key = p.get("tensor_key").ok_or_else(|| ctx.err("missing required parameter \"tensor_key\""))?;
            let tensor_key = match (key.as_str(), col_ref(key)) {
                (Some(s), _) => Param::Fixed(s.to_string()),
                (None, Some(c)) => Param::Col(c.to_string()),
                _ => return Err(ctx.err("tensor_key must be a string or dataio.col(...)")),
            };
            Decoder::Safetensors { tensor_key }
        }
        other if external.contains(other) => {
            return Ok(Decoder::External { name: other.to_string(), params: params.clone() });
        }
        other => return Err(ctx.err(format!("unknown decoder {other:?}"))),
    };
    p.finish()?;
    Ok(d)
}

fn parse_step(ctx: &Ctx, node: &Map<String, Json>, external: &BTreeSet<String>) -> Result<Step> {
    let name = node.get("op").and_then(Json::as_str).unwrap_or("");
    if name == "when" {
        let pred = parse_pred(node.get("pred").unwrap_or(&Json::Null), &format!("slot {:?}, when", ctx.slot))?;
        let branch = |key: &str| -> Result<Vec<Step>> {
            node.get(key)
                .and_then(Json::as_array)
                .map(|v| v.as_slice())
                .unwrap_or(&[])
                .iter()
                .map(|n| parse_step(ctx, obj(n, "op")?, external))
                .collect()
        };
        return Ok(Step::Branch { pred, then: branch("then")?, otherwise: branch("otherwise")? });
    }
    let empty = Map::new();
    let params = node.get("params").map(|v| obj(v, "params")).transpose()?.unwrap_or(&empty);
    let ctx = Ctx { slot: ctx.slot, op: name.to_string(), index: ctx.index };
    let p = Params { ctx: &ctx, map: params, used: Default::default() };
    let step = match name {
        "resize" => Step::Resize {
            h: p.u32("h", None)?,
            w: p.u32("w", None)?,
            interp: p.interp()?,
            antialias: p.bool("antialias", true)?,
        },
        "resize_short" => Step::ResizeShort {
            size: p.u32("size", None)?,
            interp: p.interp()?,
            antialias: p.bool("antialias", true)?,
            max_size: p.get("max_size").map(|_| p.u32("max_size", None)).transpose()?,
        },
        "resize_long" => {
            Step::ResizeLong { size: p.u32("size", None)?, interp: p.interp()?, antialias: p.bool("antialias", true)? }
        }
        "center_crop" => Step::CenterCrop { h: p.u32("h", None)?, w: p.u32("w", None)? },
        "crop" => Step::Crop { top: p.i64("top")?, left: p.i64("left")?, h: p.u32("h", None)?, w: p.u32("w", None)? },
        "random_crop" => Step::RandomCrop { h: p.u32("h", None)?, w: p.u32("w", None)? },
        "random_resized_crop" => Step::RandomResizedCrop {
            h: p.u32("h", None)?,
            w: p.u32("w", None)?,
            scale: p.pair("scale", (0.08, 1.0))?,
            ratio: p.pair("ratio", (3.0 / 4.0, 4.0 / 3.0))?,
            interp: p.interp()?,
            antialias: p.bool("antialias", true)?,
        },
        "hflip" | "vflip" => {
            let prob = p.f64("p", 0.5)?;
            if !(0.0..=1.0).contains(&prob) {
                return Err(ctx.err(format!("p must be in [0, 1], got {prob}")));
            }
            if name == "hflip" {
                Step::HFlip { p: prob }
            } else {
                Step::VFlip { p: prob }
            }
        }
        "normalize" => {
            let (mean, std) = match p.get("mean_std") {
                None => mean_std("imagenet").unwrap(),
                Some(Json::String(s)) => mean_std(s).ok_or_else(|| {
                    ctx.err(format!("unknown normalization {s:?} (imagenet, clip, symmetric, unit, or (mean, std))"))
                })?,
                Some(v) => {
                    let arr = v
                        .as_array()
                        .filter(|a| a.len() == 2)
                        .ok_or_else(|| ctx.err("mean_std must be a name or a (mean, std) pair"))?;
                    let list = |x: &Json| -> Option<Vec<f32>> {
                        match x {
                            Json::Number(n) => Some(vec![n.as_f64()? as f32]),
                            Json::Array(a) => a.iter().map(|e| e.as_f64().map(|f| f as f32)).collect(),
                            _ => None,
                        }
                    };
                    let (m, s) = (list(&arr[0]), list(&arr[1]));
                    match (m, s) {
                        (Some(m), Some(s)) if !m.is_empty() && m.len() == s.len() && s.iter().all(|&x| x != 0.0) => {
                            (m, s)
                        }
                        _ => return Err(ctx.err("mean and std must be numbers or equal-length lists, std non-zero")),
                    }
                }
            };
            let layout = match p.str("layout", "CHW")? {
                "CHW" | "chw" => Layout::Chw,
                "HWC" | "hwc" => Layout::Hwc,
                other => return Err(ctx.err(format!("layout must be 'CHW' or 'HWC', got {other:?}"))),
            };
            Step::Normalize { mean, std, layout }
        }
        "to_chw" => Step::ToChw,
        "cast" => Step::Cast { dtype: DType::parse(p.str("dtype", "")?).map_err(|e| ctx.err(e))? },
        other if external.contains(other) => {
            return Ok(Step::External { name: other.to_string(), params: params.clone() })
        }
        other => return Err(ctx.err(format!("unknown op {other:?}"))),
    };
    p.finish()?;
    Ok(step)
}

/// Static shape and dtype inference over image steps; `None` where data-dependent.
#[derive(Debug, Clone, PartialEq)]
struct Infer {
    h: Option<usize>,
    w: Option<usize>,
    c: usize,
    chw: bool,
    dtype: DType,
    normalized: bool,
}

fn infer(steps: &[Step], mut st: Infer, slot: &str) -> Result<Infer> {
    for (i, s) in steps.iter().enumerate() {
        if (st.normalized || st.dtype != DType::U8) && s.is_geometry() {
            return Err(Error::Plan(format!(
                "slot {slot:?}, op {}: geometry ops must come before normalize/cast (they run fused on uint8 pixels)",
                s.name()
            )));
        }
        if st.chw && s.is_geometry() {
            return Err(Error::Plan(format!("slot {slot:?}, op {}: geometry ops must come before to_chw", s.name())));
        }
        match s {
            Step::Resize { h, w, .. }
            | Step::CenterCrop { h, w }
            | Step::Crop { h, w, .. }
            | Step::RandomCrop { h, w }
            | Step::RandomResizedCrop { h, w, .. } => {
                st.h = Some(*h as usize);
                st.w = Some(*w as usize);
            }
            Step::ResizeShort { .. } | Step::ResizeLong { .. } => {
                st.h = None;
                st.w = None;
            }
            Step::HFlip { .. } | Step::VFlip { .. } => {}
            Step::Normalize { mean, layout, .. } => {
                if mean.len() != 1 && mean.len() != st.c {
                    return Err(Error::Plan(format!(
                        "slot {slot:?}, op normalize: {} means for {} channels",
                        mean.len(),
                        st.c
                    )));
                }
                st.normalized = true;
                st.dtype = DType::F32;
                st.chw = *layout == Layout::Chw;
            }
            Step::ToChw => st.chw = true,
            Step::Cast { dtype } => st.dtype = *dtype,
            Step::Branch { then, otherwise, .. } => {
                let a = infer(then, st.clone(), slot)?;
                let b = infer(otherwise, st.clone(), slot)?;
                if a.c != b.c || a.chw != b.chw || a.dtype != b.dtype || a.normalized != b.normalized {
                    return Err(Error::Plan(format!(
                        "slot {slot:?}, when #{i}: both branches must produce the same dtype and layout"
                    )));
                }
                st = Infer { h: if a.h == b.h { a.h } else { None }, w: if a.w == b.w { a.w } else { None }, ..a };
            }
            Step::External { .. } => {
                st.h = None;
                st.w = None;
            }
        }
    }
    Ok(st)
}

fn has_external(steps: &[Step]) -> bool {
    steps.iter().any(|s| match s {
        Step::External { .. } => true,
        Step::Branch { then, otherwise, .. } => has_external(then) || has_external(otherwise),
        _ => false,
    })
}

/// Parses, validates and compiles a plan. `external_ops` names the plugin
/// (Python) ops the binding layer can run.
pub fn compile(json: &str) -> Result<Plan> {
    let root: Json = serde_json::from_str(json).map_err(|e| Error::Plan(format!("plan is not valid JSON: {e}")))?;
    let root = obj(&root, "plan")?;
    match root.get("version").and_then(Json::as_u64) {
        Some(1) => {}
        other => return Err(Error::Plan(format!("unsupported plan version {other:?} (this dataio reads version 1)"))),
    }
    let external: BTreeSet<String> = root
        .get("external_ops")
        .and_then(Json::as_array)
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    let slots_json = root
        .get("slots")
        .and_then(Json::as_array)
        .ok_or_else(|| Error::Plan("a pipeline needs at least one slot".into()))?;
    if slots_json.is_empty() {
        return Err(Error::Plan("a pipeline needs at least one slot".into()));
    }
    let mut slots = Vec::new();
    let mut fields = BTreeSet::new();
    let mut names = BTreeSet::new();
    for sj in slots_json {
        let so = obj(sj, "slot")?;
        let name = so
            .get("name")
            .and_then(Json::as_str)
            .ok_or_else(|| Error::Plan("every slot needs a name".into()))?
            .to_string();
        if !names.insert(name.clone()) {
            return Err(Error::Plan(format!("two slots are named {name:?}")));
        }
        let field = so.get("field").and_then(Json::as_str).unwrap_or(&name).to_string();
        fields.insert(field.clone());
        let optional = so.get("optional").and_then(Json::as_bool).unwrap_or(false);
        let stack = match so.get("stack").and_then(Json::as_str).unwrap_or("auto") {
            "auto" => Stack::Auto,
            "never" | "list" => Stack::Never,
            other => return Err(Error::Plan(format!("slot {name:?}: stack must be 'auto' or 'never', got {other:?}"))),
        };
        let active_when = match so.get("active_when") {
            None | Some(Json::Null) => None,
            Some(p) => {
                let pred = parse_pred(p, &format!("slot {name:?}, active_when"))?;
                if pred.uses_shape() {
                    return Err(Error::Plan(format!(
                        "slot {name:?}: active_when runs before any read, so it can test fields only, not shapes"
                    )));
                }
                if !optional {
                    return Err(Error::Plan(format!(
                        "slot {name:?}: active_when needs an optional slot (dataio.slot({name:?}, optional=True))"
                    )));
                }
                pred.fields(&mut fields);
                Some(pred)
            }
        };
        let ops = so.get("ops").and_then(Json::as_array).map(|v| v.as_slice()).unwrap_or(&[]);
        let first = ops.first().ok_or_else(|| Error::Plan(format!("slot {name:?} has no decoder: start it with decode_image(), decode_bytes(), decode_npy() or decode_safetensors()")))?;
        let first = obj(first, "op")?;
        let dec_name = first.get("op").and_then(Json::as_str).unwrap_or("");
        let ctx = Ctx { slot: &name, op: dec_name.to_string(), index: 0 };
        let empty = Map::new();
        let dec_params = first.get("params").map(|v| obj(v, "params")).transpose()?.unwrap_or(&empty);
        let decoder = parse_decoder(&ctx, dec_name, dec_params, &external).map_err(|e| {
            if dec_name == "when" || !dec_name.starts_with("decode") && !external.contains(dec_name) {
                Error::Plan(format!("slot {name:?} has no decoder: its first op is {dec_name:?}; start it with decode_image(), decode_bytes(), decode_npy() or decode_safetensors()"))
            } else {
                e
            }
        })?;
        if let Decoder::Safetensors { tensor_key: Param::Col(c) } = &decoder {
            fields.insert(c.clone());
        }
        let mut steps = Vec::new();
        for (i, node) in ops.iter().enumerate().skip(1) {
            let node = obj(node, "op")?;
            let op_name = node.get("op").and_then(Json::as_str).unwrap_or("").to_string();
            if op_name.starts_with("decode_") {
                return Err(Error::Plan(format!(
                    "slot {name:?}, op #{i} {op_name}: a slot has exactly one decoder, and it comes first"
                )));
            }
            let ctx = Ctx { slot: &name, op: op_name, index: i };
            steps.push(parse_step(&ctx, node, &external)?);
        }
        let (static_shape, dtype) = match &decoder {
            Decoder::Image { mode, .. } => {
                let st = infer(
                    &steps,
                    Infer { h: None, w: None, c: mode.channels(), chw: false, dtype: DType::U8, normalized: false },
                    &name,
                )?;
                let shape = match (st.h, st.w, has_external(&steps)) {
                    (Some(h), Some(w), false) => Some(if st.chw { vec![st.c, h, w] } else { vec![h, w, st.c] }),
                    _ => None,
                };
                (shape, if has_external(&steps) { None } else { Some(st.dtype) })
            }
            _ => {
                for s in &steps {
                    if !matches!(s, Step::Cast { .. } | Step::External { .. }) {
                        return Err(Error::Plan(format!(
                            "slot {name:?}, op {}: image ops need decode_image(); this slot decodes {}",
                            s.name(),
                            dec_name
                        )));
                    }
                }
                (None, None)
            }
        };
        slots.push(SlotProgram { name, field, optional, stack, active_when, decoder, steps, static_shape, dtype });
    }
    let shape_json = obj(
        root.get("shape").ok_or_else(|| {
            Error::Plan("a pipeline needs exactly one shape stage: batch(), collate() or group_by()".into())
        })?,
        "shape",
    )?;
    let prefetch = shape_json.get("prefetch").and_then(Json::as_u64).unwrap_or(2).max(1) as usize;
    let shape = match shape_json.get("kind").and_then(Json::as_str) {
        Some("batch") => {
            let size = shape_json
                .get("size")
                .and_then(Json::as_u64)
                .filter(|&n| n > 0)
                .ok_or_else(|| Error::Plan("batch(size): size must be a positive integer".into()))?;
            Shape::Batch {
                size: size as usize,
                drop_last: shape_json.get("drop_last").and_then(Json::as_bool).unwrap_or(false),
            }
        }
        Some("group_by") => {
            let key = shape_json
                .get("key")
                .and_then(Json::as_str)
                .ok_or_else(|| Error::Plan("group_by(key): key must be a field name".into()))?;
            fields.insert(key.to_string());
            Shape::GroupBy { key: key.to_string() }
        }
        other => return Err(Error::Plan(format!("unknown shape stage {other:?}"))),
    };
    let batch_ops = root
        .get("batch_ops")
        .and_then(Json::as_array)
        .map(|v| v.as_slice())
        .unwrap_or(&[])
        .iter()
        .map(|b| {
            let o = obj(b, "batch op")?;
            let name = o.get("op").and_then(Json::as_str).unwrap_or("").to_string();
            if !crate::batch_ops::KNOWN.contains(&name.as_str()) {
                return Err(Error::Plan(format!(
                    "unknown batch transform {name:?} (known: {})",
                    crate::batch_ops::KNOWN.join(", ")
                )));
            }
            let params = o.get("params").and_then(Json::as_object).cloned().unwrap_or_default();
            let op = BatchOp { name, params };
            crate::batch_ops::validate(&op)?;
            Ok(op)
        })
        .collect::<Result<Vec<_>>>()?;
    fields.insert("key".to_string());
    let canonical = serde_json::to_string(&canonicalize(&Json::Object(root.clone()))).unwrap_or_default();
    let signature = hex::encode(&blake3::hash(canonical.as_bytes()).as_bytes()[..16]);
    Ok(Plan { slots, shape, prefetch, batch_ops, fields: fields.into_iter().collect(), signature })
}

/// Sorted keys, prefetch removed (prefetch does not change what a plan yields).
fn canonicalize(v: &Json) -> Json {
    match v {
        Json::Object(m) => {
            let mut keys: Vec<&String> = m.keys().filter(|k| k.as_str() != "prefetch").collect();
            keys.sort();
            Json::Object(keys.into_iter().map(|k| (k.clone(), canonicalize(&m[k]))).collect())
        }
        Json::Array(a) => Json::Array(a.iter().map(canonicalize).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IMAGENET: &str = r#"{"version":1,"slots":[{"name":"image","ops":[
        {"op":"decode_image","params":{"mode":"rgb"}},
        {"op":"resize_short","params":{"size":256}},
        {"op":"center_crop","params":{"h":224,"w":224}},
        {"op":"normalize","params":{"mean_std":"imagenet"}}]}],
        "shape":{"kind":"batch","size":64,"prefetch":4}}"#;

    #[test]
    fn the_spec_pipeline_compiles_to_a_static_chw_float_slot() {
        let p = compile(IMAGENET).unwrap();
        assert_eq!(p.slots[0].static_shape, Some(vec![3, 224, 224]));
        assert_eq!(p.slots[0].dtype, Some(DType::F32));
        assert_eq!(p.shape, Shape::Batch { size: 64, drop_last: false });
        assert_eq!(p.prefetch, 4);
        assert_eq!(p.signature.len(), 32);
    }

    #[test]
    fn the_signature_ignores_prefetch_and_key_order_but_not_ops() {
        let a = compile(IMAGENET).unwrap().signature;
        let b = compile(&IMAGENET.replace("\"prefetch\":4", "\"prefetch\":9")).unwrap().signature;
        let c = compile(&IMAGENET.replace("224", "192")).unwrap().signature;
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    fn err(json: &str) -> String {
        compile(json).unwrap_err().to_string()
    }

    #[test]
    fn bad_plans_name_the_stage() {
        let e = err(
            r#"{"version":1,"slots":[{"name":"x","ops":[{"op":"resize","params":{"h":2,"w":2}}]}],"shape":{"kind":"batch","size":2}}"#,
        );
        assert!(e.contains("has no decoder"), "{e}");
        let e = err(
            r#"{"version":1,"slots":[{"name":"x","ops":[{"op":"decode_image"},{"op":"blur"}]}],"shape":{"kind":"batch","size":2}}"#,
        );
        assert!(e.contains("slot \"x\", op #1 blur: unknown op"), "{e}");
        let e = err(
            r#"{"version":1,"slots":[{"name":"x","ops":[{"op":"decode_image"},{"op":"resize","params":{"h":"2","w":2}}]}],"shape":{"kind":"batch","size":2}}"#,
        );
        assert!(e.contains("h must be a positive integer"), "{e}");
        let e = err(
            r#"{"version":1,"slots":[{"name":"x","ops":[{"op":"decode_image","params":{"bogus":1}}]}],"shape":{"kind":"batch","size":2}}"#,
        );
        assert!(e.contains("unknown parameter \"bogus\""), "{e}");
        let e = err(
            r#"{"version":1,"slots":[{"name":"x","ops":[{"op":"decode_image"},{"op":"normalize"},{"op":"resize","params":{"h":2,"w":2}}]}],"shape":{"kind":"batch","size":2}}"#,
        );
        assert!(e.contains("before normalize"), "{e}");
        let e = err(r#"{"version":1,"slots":[{"name":"x","ops":[{"op":"decode_bytes"}]}]}"#);
        assert!(e.contains("exactly one shape stage"), "{e}");
        let e = err(
            r#"{"version":1,"slots":[{"name":"x","optional":false,"active_when":{"col":"m","cmp":"is_not_null"},"ops":[{"op":"decode_bytes"}]}],"shape":{"kind":"batch","size":1}}"#,
        );
        assert!(e.contains("optional"), "{e}");
    }

    #[test]
    fn branches_with_equal_outputs_stay_static() {
        let p = compile(
            r#"{"version":1,"slots":[{"name":"image","ops":[{"op":"decode_image"},
            {"op":"when","pred":{"shape":0,"cmp":"gt","value":512},
             "then":[{"op":"center_crop","params":{"h":512,"w":512}}],
             "otherwise":[{"op":"resize","params":{"h":512,"w":512}}]}]}],
            "shape":{"kind":"group_by","key":"batch_id"}}"#,
        )
        .unwrap();
        assert_eq!(p.slots[0].static_shape, Some(vec![512, 512, 3]));
        assert!(p.fields.contains(&"batch_id".to_string()));
    }
}
