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

pub mod ops;

use crate::base::error::{Error, Result};
use crate::base::tensor::DType;
use serde::Deserialize;
use serde_json::{Map, Value as Json};
use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

pub use ops::{BatchOp, ImageMode, Interp};

/// A parameter that is either fixed in the plan or read from the record.
#[derive(Debug, Clone, PartialEq)]
pub enum Param<T> {
    Fixed(T),
    Col(String),
}

impl<T: Copy> Param<T> {
    /// The fixed value, or `None` for a per-record one.
    pub fn fixed(&self) -> Option<T> {
        match self {
            Param::Fixed(v) => Some(*v),
            Param::Col(_) => None,
        }
    }
}

impl<T> Param<T> {
    pub fn col(&self) -> Option<&str> {
        match self {
            Param::Col(c) => Some(c),
            Param::Fixed(_) => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Decoder {
    Image { mode: ImageMode, max_pixels: u64, dct_scaling: bool, exif: bool },
    Bytes,
    Npy,
    Safetensors { tensor_key: Param<String> },
    External { name: String, params: ExtParams },
}

/// A plugin op's parameters as the plan gives them, and the cell where the
/// runtime keeps them parsed by the op, once for the plan (a native op's
/// prepared state; `runtime::native_ops::Prepared`). Clones of a step share
/// the cell; equality and debug output see the parameters only.
#[derive(Clone, Default)]
pub struct ExtParams {
    pub map: Map<String, Json>,
    pub prepared: Arc<OnceLock<Arc<dyn std::any::Any + Send + Sync>>>,
}

impl ExtParams {
    pub fn new(map: Map<String, Json>) -> Self {
        ExtParams { map, prepared: Arc::default() }
    }
}

impl std::ops::Deref for ExtParams {
    type Target = Map<String, Json>;
    fn deref(&self) -> &Map<String, Json> {
        &self.map
    }
}

impl PartialEq for ExtParams {
    fn eq(&self, other: &Self) -> bool {
        self.map == other.map
    }
}

impl std::fmt::Debug for ExtParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.map.fmt(f)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Chw,
    Hwc,
    /// Channels first across a clip: `[C, T, H, W]` (an image: CHW).
    Cthw,
}

/// One transform of a slot chain. Geometry ops keep their typed parameter
/// structures (see [`ops`]); their sizes may be per-record ([`Param::Col`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Resize(ops::Resize),
    ResizeShort(ops::ResizeShort),
    ResizeLong(ops::ResizeLong),
    CenterCrop(ops::CenterCrop),
    Crop(ops::Crop),
    RandomCrop(ops::RandomCrop),
    RandomResizedCrop(ops::RandomResizedCrop),
    HFlip {
        p: f64,
    },
    VFlip {
        p: f64,
    },
    Normalize {
        mean: Vec<f32>,
        std: Vec<f32>,
        layout: Layout,
    },
    ToChw,
    Cast {
        dtype: DType,
    },
    /// The slot's last step: uint8 pixels to an image file's bytes.
    EncodeImage(ops::EncodeImage),
    Branch {
        pred: Pred,
        then: Vec<Step>,
        otherwise: Vec<Step>,
    },
    External {
        name: String,
        params: ExtParams,
    },
}

impl Step {
    pub fn name(&self) -> &str {
        match self {
            Step::Resize(_) => "resize",
            Step::ResizeShort(_) => "resize_short",
            Step::ResizeLong(_) => "resize_long",
            Step::CenterCrop(_) => "center_crop",
            Step::Crop(_) => "crop",
            Step::RandomCrop(_) => "random_crop",
            Step::RandomResizedCrop(_) => "random_resized_crop",
            Step::HFlip { .. } => "hflip",
            Step::VFlip { .. } => "vflip",
            Step::Normalize { .. } => "normalize",
            Step::ToChw => "to_chw",
            Step::Cast { .. } => "cast",
            Step::EncodeImage(_) => "encode_image",
            Step::Branch { .. } => "when",
            Step::External { name, .. } => name,
        }
    }

    pub fn is_geometry(&self) -> bool {
        matches!(
            self,
            Step::Resize(_)
                | Step::ResizeShort(_)
                | Step::ResizeLong(_)
                | Step::CenterCrop(_)
                | Step::Crop(_)
                | Step::RandomCrop(_)
                | Step::RandomResizedCrop(_)
                | Step::HFlip { .. }
                | Step::VFlip { .. }
        )
    }

    /// The record fields this step reads per record (`dataio.col`), with the
    /// parameter each feeds: `(parameter, field)`.
    pub fn cols(&self) -> Vec<(&'static str, &str)> {
        let params: Vec<(&'static str, Option<&str>)> = match self {
            Step::Resize(r) => vec![("h", r.h.col()), ("w", r.w.col())],
            Step::ResizeShort(r) => {
                vec![("size", r.size.col()), ("max_size", r.max_size.as_ref().and_then(Param::col))]
            }
            Step::ResizeLong(r) => vec![("size", r.size.col())],
            Step::CenterCrop(c) => vec![("h", c.h.col()), ("w", c.w.col())],
            Step::Crop(c) => vec![("top", c.top.col()), ("left", c.left.col()), ("h", c.h.col()), ("w", c.w.col())],
            Step::RandomCrop(c) => vec![("h", c.h.col()), ("w", c.w.col())],
            Step::RandomResizedCrop(c) => vec![("h", c.h.col()), ("w", c.w.col())],
            _ => Vec::new(),
        };
        params.into_iter().filter_map(|(name, field)| Some((name, field?))).collect()
    }

    /// The output size `(h, w)` a geometry step fixes, when it fixes one
    /// statically; `None` for a per-record size.
    fn static_size(&self) -> Option<Option<(usize, usize)>> {
        let hw = |h: &Param<ops::Dim>, w: &Param<ops::Dim>| match (h.fixed(), w.fixed()) {
            (Some(h), Some(w)) => Some((h.0 as usize, w.0 as usize)),
            _ => None,
        };
        match self {
            Step::Resize(r) => Some(hw(&r.h, &r.w)),
            Step::CenterCrop(c) => Some(hw(&c.h, &c.w)),
            Step::Crop(c) => Some(hw(&c.h, &c.w)),
            Step::RandomCrop(c) => Some(hw(&c.h, &c.w)),
            Step::RandomResizedCrop(c) => Some(hw(&c.h, &c.w)),
            Step::ResizeShort(_) | Step::ResizeLong(_) => Some(None),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
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

/// A predicate: on record fields (`cond.col`, evaluated before any read) or
/// on the decoded sample's shape (`cond.shape`, evaluated in the fused walk).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum Pred {
    Col {
        #[serde(rename = "col")]
        field: String,
        cmp: Cmp,
        #[serde(default)]
        value: Json,
    },
    Shape {
        #[serde(rename = "shape")]
        axis: i64,
        cmp: Cmp,
        value: f64,
    },
    And {
        and: Vec<Pred>,
    },
    Or {
        or: Vec<Pred>,
    },
    Not {
        not: Box<Pred>,
    },
}

impl Pred {
    pub fn uses_shape(&self) -> bool {
        match self {
            Pred::Shape { .. } => true,
            Pred::Col { .. } => false,
            Pred::And { and: v } | Pred::Or { or: v } => v.iter().any(Pred::uses_shape),
            Pred::Not { not } => not.uses_shape(),
        }
    }

    pub fn fields(&self, out: &mut BTreeSet<String>) {
        match self {
            Pred::Col { field, .. } => {
                out.insert(field.clone());
            }
            Pred::Shape { .. } => {}
            Pred::And { and: v } | Pred::Or { or: v } => v.iter().for_each(|p| p.fields(out)),
            Pred::Not { not } => not.fields(out),
        }
    }

    /// Parses and checks what serde cannot: shape predicates compare numbers,
    /// `is_in` takes a list.
    fn parse(v: &Json, where_: &str) -> Result<Pred> {
        let p: Pred =
            serde_json::from_value(v.clone()).map_err(|_| Error::Plan(format!("{where_}: not a predicate: {v}")))?;
        p.check(where_)?;
        Ok(p)
    }

    fn check(&self, where_: &str) -> Result<()> {
        match self {
            Pred::Col { cmp: Cmp::IsIn, value, .. } if !value.is_array() => {
                Err(Error::Plan(format!("{where_}: is_in needs a list of values")))
            }
            Pred::Shape { cmp: Cmp::IsNull | Cmp::IsNotNull | Cmp::IsIn, .. } => {
                Err(Error::Plan(format!("{where_}: shape predicates compare numbers (eq/ne/lt/le/gt/ge)")))
            }
            Pred::And { and: v } | Pred::Or { or: v } => v.iter().try_for_each(|p| p.check(where_)),
            Pred::Not { not } => not.check(where_),
            _ => Ok(()),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stack {
    #[default]
    Auto,
    #[serde(alias = "list")]
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
    Batch {
        size: usize,
        drop_last: bool,
    },
    /// One batch per distinct key, in first-arrival order, with at most
    /// `max_open_groups` groups open (see `exec::planner::Grouped`).
    GroupBy {
        key: String,
        max_open_groups: usize,
    },
}

/// Open groups `group_by` holds when the plan does not say.
pub const DEFAULT_MAX_OPEN_GROUPS: usize = 64;

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
// The plan JSON as written by the Python DSL (see the module docs).

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanJson {
    version: Option<u64>,
    #[serde(default)]
    slots: Vec<SlotJson>,
    shape: Option<ShapeJson>,
    #[serde(default)]
    batch_ops: Vec<OpJson>,
    #[serde(default)]
    external_ops: BTreeSet<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SlotJson {
    name: String,
    field: Option<String>,
    #[serde(default)]
    optional: bool,
    #[serde(default)]
    stack: Stack,
    active_when: Option<Json>,
    #[serde(default)]
    ops: Vec<OpJson>,
}

/// An op node: `{"op": name, "params": {...}}`, or a branch
/// `{"op": "when", "pred": P, "then": [...], "otherwise": [...]}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OpJson {
    op: String,
    #[serde(default)]
    params: Map<String, Json>,
    pred: Option<Json>,
    #[serde(default)]
    then: Vec<OpJson>,
    #[serde(default)]
    otherwise: Vec<OpJson>,
}

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum ShapeJson {
    Batch {
        size: ops::Positive,
        #[serde(default)]
        drop_last: bool,
        prefetch: Option<u64>,
    },
    GroupBy {
        key: String,
        max_open_groups: Option<ops::Positive>,
        prefetch: Option<u64>,
    },
}

struct Ctx<'a> {
    slot: &'a str,
    op: &'a str,
    index: usize,
}

impl Ctx<'_> {
    fn err(&self, msg: impl std::fmt::Display) -> Error {
        Error::Plan(format!("slot {:?}, op #{} {}: {msg}", self.slot, self.index, self.op))
    }
}

const START_WITH_A_DECODER: &str = "start it with decode_image(), decode_bytes(), decode_npy() or decode_safetensors()";

fn parse_decoder(ctx: &Ctx, node: &OpJson, external: &BTreeSet<String>) -> Result<Decoder> {
    match ops::decoder(&node.op, &node.params) {
        Some(parsed) => parsed.map_err(|e| ctx.err(e)),
        None if external.contains(&node.op) => {
            Ok(Decoder::External { name: node.op.clone(), params: ExtParams::new(node.params.clone()) })
        }
        None if node.op.starts_with("decode") => Err(ctx.err(format!("unknown decoder {:?}", node.op))),
        None => Err(Error::Plan(format!(
            "slot {:?} has no decoder: its first op is {:?}; {START_WITH_A_DECODER}",
            ctx.slot, node.op
        ))),
    }
}

fn parse_step(ctx: &Ctx, node: &OpJson, external: &BTreeSet<String>) -> Result<Step> {
    if node.op == "when" {
        let pred = Pred::parse(node.pred.as_ref().unwrap_or(&Json::Null), &format!("slot {:?}, when", ctx.slot))?;
        let branch = |ops: &[OpJson]| ops.iter().map(|n| parse_step(ctx, n, external)).collect::<Result<Vec<_>>>();
        return Ok(Step::Branch { pred, then: branch(&node.then)?, otherwise: branch(&node.otherwise)? });
    }
    let ctx = Ctx { op: &node.op, ..*ctx };
    if node.op.starts_with("decode_") {
        return Err(ctx.err("a slot has exactly one decoder, and it comes first"));
    }
    match ops::step(&node.op, &node.params) {
        Some(parsed) => parsed.map_err(|e| ctx.err(e)),
        None if external.contains(&node.op) => {
            Ok(Step::External { name: node.op.clone(), params: ExtParams::new(node.params.clone()) })
        }
        None => Err(ctx.err(format!("unknown op {:?}", node.op))),
    }
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
        if let Some(size) = s.static_size() {
            (st.h, st.w) = match size {
                Some((h, w)) => (Some(h), Some(w)),
                None => (None, None),
            };
            continue;
        }
        match s {
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
                st.chw = *layout != Layout::Hwc;
            }
            Step::ToChw => st.chw = true,
            Step::Cast { dtype } => st.dtype = *dtype,
            Step::EncodeImage(_) => {
                if st.normalized || st.dtype != DType::U8 || st.chw {
                    return Err(Error::Plan(format!(
                        "slot {slot:?}, op encode_image: it encodes uint8 HWC pixels; drop the normalize/cast/to_chw before it"
                    )));
                }
                (st.h, st.w) = (None, None);
            }
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
            _ => {} // flips keep the size
        }
    }
    Ok(st)
}

/// `encode_image` turns pixels into a file's bytes: nothing may follow it,
/// and it is not taken inside a `when` branch (both branches would have to
/// encode).
fn check_encode_last(steps: &[Step], slot: &str, top: bool) -> Result<()> {
    for (i, s) in steps.iter().enumerate() {
        match s {
            Step::EncodeImage(_) if !top || i + 1 != steps.len() => {
                return Err(Error::Plan(format!(
                    "slot {slot:?}, op encode_image: it must be the slot's last op, outside any when()"
                )))
            }
            Step::Branch { then, otherwise, .. } => {
                check_encode_last(then, slot, false)?;
                check_encode_last(otherwise, slot, false)?;
            }
            _ => {}
        }
    }
    Ok(())
}

fn has_external(steps: &[Step]) -> bool {
    steps.iter().any(|s| match s {
        Step::External { .. } => true,
        Step::Branch { then, otherwise, .. } => has_external(then) || has_external(otherwise),
        _ => false,
    })
}

fn step_fields(steps: &[Step], out: &mut BTreeSet<String>) {
    for s in steps {
        match s {
            Step::Branch { pred, then, otherwise } => {
                pred.fields(out);
                step_fields(then, out);
                step_fields(otherwise, out);
            }
            Step::External { params, .. } => col_params(params, out),
            other => out.extend(other.cols().into_iter().map(|(_, f)| f.to_string())),
        }
    }
}

/// The fields a plugin op's `{"$col": field}` parameters read.
fn col_params(params: &serde_json::Map<String, Json>, out: &mut BTreeSet<String>) {
    for v in params.values() {
        if let Some(f) = v.as_object().filter(|o| o.len() == 1).and_then(|o| o.get("$col")).and_then(Json::as_str) {
            out.insert(f.to_string());
        }
    }
}

fn compile_slot(sj: &SlotJson, external: &BTreeSet<String>, fields: &mut BTreeSet<String>) -> Result<SlotProgram> {
    let name = sj.name.clone();
    let field = sj.field.clone().unwrap_or_else(|| name.clone());
    fields.insert(field.clone());
    let active_when = match &sj.active_when {
        None | Some(Json::Null) => None,
        Some(p) => {
            let pred = Pred::parse(p, &format!("slot {name:?}, active_when"))?;
            if pred.uses_shape() {
                return Err(Error::Plan(format!(
                    "slot {name:?}: active_when runs before any read, so it can test fields only, not shapes"
                )));
            }
            if !sj.optional {
                return Err(Error::Plan(format!(
                    "slot {name:?}: active_when needs an optional slot (dataio.slot({name:?}, optional=True))"
                )));
            }
            pred.fields(fields);
            Some(pred)
        }
    };
    let first =
        sj.ops.first().ok_or_else(|| Error::Plan(format!("slot {name:?} has no decoder: {START_WITH_A_DECODER}")))?;
    let decoder = parse_decoder(&Ctx { slot: &name, op: &first.op, index: 0 }, first, external)?;
    if let Decoder::Safetensors { tensor_key: Param::Col(c) } = &decoder {
        fields.insert(c.clone());
    }
    if let Decoder::External { params, .. } = &decoder {
        col_params(params, fields);
    }
    let steps = sj
        .ops
        .iter()
        .enumerate()
        .skip(1)
        .map(|(i, node)| parse_step(&Ctx { slot: &name, op: &node.op, index: i }, node, external))
        .collect::<Result<Vec<_>>>()?;
    step_fields(&steps, fields);
    check_encode_last(&steps, &name, true)?;
    let encodes = matches!(steps.last(), Some(Step::EncodeImage(_)));
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
            let shape = if encodes { None } else { shape };
            (
                shape,
                if encodes {
                    Some(DType::U8)
                } else if has_external(&steps) {
                    None
                } else {
                    Some(st.dtype)
                },
            )
        }
        // A plugin decoder's output may be an image: a uint8 HWC result
        // enters the fused image chain at run time, anything else meets a
        // typed error there naming the op that needs an image.
        Decoder::External { .. } => (None, None),
        _ => {
            for s in &steps {
                if !matches!(s, Step::Cast { .. } | Step::External { .. } | Step::EncodeImage(_)) {
                    return Err(Error::Plan(format!(
                        "slot {name:?}, op {}: image ops need decode_image(); this slot decodes {}",
                        s.name(),
                        first.op
                    )));
                }
            }
            (None, None)
        }
    };
    Ok(SlotProgram {
        name,
        field,
        optional: sj.optional,
        stack: sj.stack,
        active_when,
        decoder,
        steps,
        static_shape,
        dtype,
    })
}

/// Parses, validates and compiles a plan. `external_ops` names the plugin
/// (Python) ops the binding layer can run.
pub fn compile(json: &str) -> Result<Plan> {
    let root: Json = serde_json::from_str(json).map_err(|e| Error::Plan(format!("plan is not valid JSON: {e}")))?;
    if !root.is_object() {
        return Err(Error::Plan("plan must be an object".into()));
    }
    let pj: PlanJson =
        serde_path_to_error::deserialize(&root).map_err(|e| Error::Plan(format!("{}: {}", e.path(), e.inner())))?;
    match pj.version {
        Some(1) => {}
        other => return Err(Error::Plan(format!("unsupported plan version {other:?} (this dataio reads version 1)"))),
    }
    if pj.slots.is_empty() {
        return Err(Error::Plan("a pipeline needs at least one slot".into()));
    }
    let mut slots = Vec::new();
    let mut fields = BTreeSet::new();
    let mut names = BTreeSet::new();
    for sj in &pj.slots {
        if !names.insert(sj.name.clone()) {
            return Err(Error::Plan(format!("two slots are named {:?}", sj.name)));
        }
        slots.push(compile_slot(sj, &pj.external_ops, &mut fields)?);
    }
    let shape_json = pj.shape.ok_or_else(|| {
        Error::Plan("a pipeline needs exactly one shape stage: batch(), collate() or group_by()".into())
    })?;
    let (shape, prefetch) = match shape_json {
        ShapeJson::Batch { size, drop_last, prefetch } => (Shape::Batch { size: size.0 as usize, drop_last }, prefetch),
        ShapeJson::GroupBy { key, max_open_groups, prefetch } => {
            fields.insert(key.clone());
            let max_open_groups = max_open_groups.map(|n| n.0 as usize).unwrap_or(DEFAULT_MAX_OPEN_GROUPS);
            (Shape::GroupBy { key, max_open_groups }, prefetch)
        }
    };
    let batch_ops =
        pj.batch_ops.iter().map(|node| ops::batch_op(&node.op, &node.params)).collect::<Result<Vec<_>>>()?;
    fields.insert("key".to_string());
    let canonical = serde_json::to_string(&canonicalize(&root)).unwrap_or_default();
    let signature = hex::encode(&blake3::hash(canonical.as_bytes()).as_bytes()[..16]);
    Ok(Plan {
        slots,
        shape,
        prefetch: prefetch.unwrap_or(2).max(1) as usize,
        batch_ops,
        fields: fields.into_iter().collect(),
        signature,
    })
}

/// Sorted keys; prefetch and max_open_groups removed: neither changes what a
/// plan yields (too few open groups is an error, never other batches).
fn canonicalize(v: &Json) -> Json {
    match v {
        Json::Object(m) => {
            let mut keys: Vec<&String> =
                m.keys().filter(|k| !matches!(k.as_str(), "prefetch" | "max_open_groups")).collect();
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
