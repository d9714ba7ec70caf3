//! The op schema: every built-in op's parameters as a typed structure.
//!
//! This module is the one place an op's parameters are written down: their
//! names, types, defaults, ranges, which ones accept a per-record
//! `dataio.col(...)`, and their documentation. The plan compiler
//! deserializes each op node into its structure (unknown and ill-typed
//! parameters are refused there, naming the parameter), and [`op_table`]
//! exports the same structures as JSON Schema for the Python layer, which
//! builds its factories' validation and the docs' op list from it.

use super::{Decoder, Layout, Param, Step};
use crate::base::error::{Error, Result};
use crate::base::tensor::DType;
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{json, Map, Value as Json};
use std::borrow::Cow;

/// The largest image side a plan may ask for.
pub const MAX_DIM: u32 = 1 << 24;

/// A number newtype: checked when deserialized, with its JSON Schema.
macro_rules! checked {
    ($(#[$doc:meta])* $name:ident($inner:ty), $schema:tt, |$v:ident| $check:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Serialize)]
        #[serde(transparent)]
        pub struct $name(pub $inner);

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                let $v = Json::deserialize(d)?;
                let checked: std::result::Result<$inner, String> = $check;
                checked.map($name).map_err(D::Error::custom)
            }
        }

        impl JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }
            fn inline_schema() -> bool {
                true
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!($schema)
            }
        }
    };
}

impl Dim {
    /// Checks a size read from a record (per-record parameters).
    pub fn check(n: i64) -> std::result::Result<u32, String> {
        if n >= 1 && n <= MAX_DIM as i64 {
            Ok(n as u32)
        } else {
            Err(format!("must be an integer in 1..={MAX_DIM}, got {n}"))
        }
    }
}

checked!(
    /// A size in pixels, `1..=MAX_DIM`.
    Dim(u32), {"type": "integer", "minimum": 1, "maximum": MAX_DIM},
    |v| v.as_i64().ok_or_else(|| format!("must be a positive integer, got {v}")).and_then(Dim::check)
);

checked!(
    /// A positive count (`max_pixels`, a batch size, ...).
    Positive(u64), {"type": "integer", "minimum": 1},
    |v| v.as_u64().filter(|&n| n > 0).ok_or_else(|| format!("must be a positive integer, got {v}"))
);

checked!(
    /// An integer of at least 2 (`num_classes`).
    AtLeastTwo(u64), {"type": "integer", "minimum": 2},
    |v| v.as_u64().filter(|&n| n >= 2).ok_or_else(|| format!("must be an integer >= 2, got {v}"))
);

checked!(
    /// A probability in `[0, 1]`.
    Probability(f64), {"type": "number", "minimum": 0, "maximum": 1},
    |v| v.as_f64().filter(|p| (0.0..=1.0).contains(p)).ok_or_else(|| format!("must be in [0, 1], got {v}"))
);

checked!(
    /// A positive number (`alpha`).
    PositiveF64(f64), {"type": "number", "exclusiveMinimum": 0},
    |v| v.as_f64().filter(|&a| a > 0.0).ok_or_else(|| format!("must be a positive number, got {v}"))
);

checked!(
    /// A `(low, high)` pair with `0 < low <= high`.
    Range((f64, f64)), {"type": "array", "items": {"type": "number", "exclusiveMinimum": 0}, "minItems": 2, "maxItems": 2},
    |v| match v.as_array().filter(|a| a.len() == 2).and_then(|a| Some((a[0].as_f64()?, a[1].as_f64()?))) {
        Some((lo, hi)) if lo > 0.0 && lo <= hi => Ok((lo, hi)),
        Some((lo, hi)) => Err(format!("must satisfy 0 < low <= high, got ({lo}, {hi})")),
        None => Err(format!("must be a pair of numbers, got {v}")),
    }
);

/// Per-record parameters: `{"$col": "field"}` in the plan JSON.
impl<'de, T: DeserializeOwned> Deserialize<'de> for Param<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let v = Json::deserialize(d)?;
        if let Some(o) = v.as_object() {
            if let Some(field) = o.get("$col") {
                return match (field.as_str(), o.len()) {
                    (Some(f), 1) if !f.is_empty() => Ok(Param::Col(f.to_string())),
                    _ => Err(D::Error::custom(format!("a per-record parameter is {{\"$col\": field}}, got {v}"))),
                };
            }
        }
        T::deserialize(v).map(Param::Fixed).map_err(D::Error::custom)
    }
}

impl<T: Serialize> Serialize for Param<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Param::Fixed(v) => v.serialize(s),
            Param::Col(f) => json!({ "$col": f }).serialize(s),
        }
    }
}

/// A per-record parameter's schema is its value's, marked `"col": true`.
impl<T: JsonSchema> JsonSchema for Param<T> {
    fn schema_name() -> Cow<'static, str> {
        format!("Col_{}", T::schema_name()).into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut s = T::json_schema(generator);
        s.insert("col".into(), true.into());
        s
    }
}

/// Resampling filters (Pillow's, as torchvision uses them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Interp {
    Nearest,
    #[default]
    Bilinear,
    Bicubic,
    Lanczos,
    Area,
}

/// Color mode of a decoded image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ImageMode {
    #[default]
    #[serde(alias = "RGB")]
    Rgb,
    #[serde(alias = "L", alias = "grey")]
    Gray,
    #[serde(alias = "RGBA")]
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

/// Output layout of `normalize`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub enum LayoutName {
    #[default]
    #[serde(alias = "chw")]
    CHW,
    #[serde(alias = "hwc")]
    HWC,
    // A clip's [C, T, H, W] (video models' layout); an image's is CHW.
    #[serde(alias = "cthw")]
    CTHW,
}

/// Named normalizations: (mean, std) per RGB channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    #[default]
    Imagenet,
    Clip,
    Symmetric,
    Unit,
}

impl Preset {
    pub fn mean_std(self) -> (Vec<f32>, Vec<f32>) {
        match self {
            Preset::Imagenet => (vec![0.485, 0.456, 0.406], vec![0.229, 0.224, 0.225]),
            Preset::Clip => {
                (vec![0.481_454_66, 0.457_827_5, 0.408_210_73], vec![0.268_629_54, 0.261_302_6, 0.275_777_1])
            }
            Preset::Symmetric => (vec![0.5, 0.5, 0.5], vec![0.5, 0.5, 0.5]),
            Preset::Unit => (vec![0.0, 0.0, 0.0], vec![1.0, 1.0, 1.0]),
        }
    }
}

/// `normalize`'s statistics: a preset name, or `(mean, std)` (numbers or
/// equal-length lists, std non-zero).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum MeanStd {
    Preset(Preset),
    Values(Vec<f32>, Vec<f32>),
}

impl Default for MeanStd {
    fn default() -> Self {
        MeanStd::Preset(Preset::Imagenet)
    }
}

impl<'de> Deserialize<'de> for MeanStd {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let v = Json::deserialize(d)?;
        if let Some(name) = v.as_str() {
            return Preset::deserialize(Json::String(name.to_string())).map(MeanStd::Preset).map_err(|_| {
                D::Error::custom(format!(
                    "unknown normalization {name:?} (imagenet, clip, symmetric, unit, or (mean, std))"
                ))
            });
        }
        let list = |x: &Json| -> Option<Vec<f32>> {
            match x {
                Json::Number(n) => Some(vec![n.as_f64()? as f32]),
                Json::Array(a) => a.iter().map(|e| e.as_f64().map(|f| f as f32)).collect(),
                _ => None,
            }
        };
        let pair = v.as_array().filter(|a| a.len() == 2).map(|a| (list(&a[0]), list(&a[1])));
        match pair {
            Some((Some(m), Some(s))) if !m.is_empty() && m.len() == s.len() && s.iter().all(|&x| x != 0.0) => {
                Ok(MeanStd::Values(m, s))
            }
            _ => Err(D::Error::custom("mean and std must be numbers or equal-length lists, std non-zero")),
        }
    }
}

impl JsonSchema for MeanStd {
    fn schema_name() -> Cow<'static, str> {
        "MeanStd".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let preset = Preset::json_schema(generator);
        json_schema!({"anyOf": [preset, {"type": "array", "minItems": 2, "maxItems": 2}]})
    }
}

/// A dtype by name (`"float32"`, `"bfloat16"`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DTypeName(pub DType);

impl Serialize for DTypeName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.0.name())
    }
}

impl<'de> Deserialize<'de> for DTypeName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        DType::parse(&s).map(DTypeName).map_err(D::Error::custom)
    }
}

impl JsonSchema for DTypeName {
    fn schema_name() -> Cow<'static, str> {
        "DType".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let names: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
        json_schema!({"type": "string", "enum": names})
    }
}

fn yes() -> bool {
    true
}

fn default_max_pixels() -> Positive {
    // Pillow's own decompression-bomb limit.
    Positive(178_956_970)
}

fn default_p() -> Probability {
    Probability(0.5)
}

fn default_scale() -> Range {
    Range((0.08, 1.0))
}

fn default_ratio() -> Range {
    Range((3.0 / 4.0, 4.0 / 3.0))
}

// ---------------------------------------------------------------------------
// Decoders

/// JPEG/PNG/WebP/GIF/BMP/TIFF to HWC uint8 (alpha dropped for "rgb", 16-bit scaled to 8), EXIF orientation applied.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecodeImage {
    /// color mode of the output
    #[serde(default)]
    pub mode: ImageMode,
    /// refuse larger images (decompression bombs)
    #[serde(default = "default_max_pixels")]
    pub max_pixels: Positive,
    /// let JPEG decode at a reduced scale when a later resize shrinks
    #[serde(default = "yes")]
    pub dct_scaling: bool,
    /// turn the image upright by its EXIF orientation tag (JPEG, PNG, WebP, TIFF)
    #[serde(default = "yes")]
    pub apply_exif_orientation: bool,
}

/// Raw bytes as a 1-D uint8 tensor; numbers and bools as scalars.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecodeBytes {}

/// A `.npy` payload to its array.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecodeNpy {}

/// One tensor of a safetensors file.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecodeSafetensors {
    /// name of the tensor
    pub tensor_key: Param<String>,
}

// ---------------------------------------------------------------------------
// Transforms

/// Resize to exactly h x w.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Resize {
    /// output height
    pub h: Param<Dim>,
    /// output width
    pub w: Param<Dim>,
    /// resampling filter
    #[serde(default)]
    pub interpolation: Interp,
    /// low-pass filter when shrinking
    #[serde(default = "yes")]
    pub antialias: bool,
}

/// Scale so the short side is `size` (the long side keeps the aspect ratio, truncated).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResizeShort {
    /// target short side
    pub size: Param<Dim>,
    /// resampling filter
    #[serde(default)]
    pub interpolation: Interp,
    /// low-pass filter when shrinking
    #[serde(default = "yes")]
    pub antialias: bool,
    /// cap on the long side
    #[serde(default)]
    pub max_size: Option<Param<Dim>>,
}

/// Scale so the long side is `size`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResizeLong {
    /// target long side
    pub size: Param<Dim>,
    /// resampling filter
    #[serde(default)]
    pub interpolation: Interp,
    /// low-pass filter when shrinking
    #[serde(default = "yes")]
    pub antialias: bool,
}

/// The central h x w window (zero-padded when the image is smaller).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CenterCrop {
    /// window height
    pub h: Param<Dim>,
    /// window width
    pub w: Param<Dim>,
}

/// A fixed h x w window at (top, left) (zero-padded outside the image).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Crop {
    /// window top row (may be negative)
    pub top: Param<i64>,
    /// window left column (may be negative)
    pub left: Param<i64>,
    /// window height
    pub h: Param<Dim>,
    /// window width
    pub w: Param<Dim>,
}

/// A uniformly placed h x w window.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RandomCrop {
    /// window height
    pub h: Param<Dim>,
    /// window width
    pub w: Param<Dim>,
}

/// A random area/aspect crop resized to h x w (Inception-style, torchvision's draws).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RandomResizedCrop {
    /// output height
    pub h: Param<Dim>,
    /// output width
    pub w: Param<Dim>,
    /// range of the crop's share of the image area
    #[serde(default = "default_scale")]
    pub scale: Range,
    /// range of the crop's aspect ratio (w / h)
    #[serde(default = "default_ratio")]
    pub ratio: Range,
    /// resampling filter
    #[serde(default)]
    pub interpolation: Interp,
    /// low-pass filter when shrinking
    #[serde(default = "yes")]
    pub antialias: bool,
}

/// Mirror with probability p.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Flip {
    /// probability of the flip
    #[serde(default = "default_p")]
    pub p: Probability,
}

/// (x / 255 - mean) / std to float32, CHW by default.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Normalize {
    /// a preset name or (mean, std)
    #[serde(default)]
    pub mean_std: MeanStd,
    /// output layout
    #[serde(default)]
    pub layout: LayoutName,
}

/// HWC to CHW without changing the dtype.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToChw {}

/// Convert the dtype.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Cast {
    /// target dtype
    pub dtype: DTypeName,
}

/// The file format `encode_image` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ImageFormat {
    #[default]
    #[serde(alias = "jpg")]
    Jpeg,
    Png,
    Webp,
}

impl ImageFormat {
    /// The file extension a shard member of this format takes.
    pub fn extension(self) -> &'static str {
        match self {
            ImageFormat::Jpeg => "jpg",
            ImageFormat::Png => "png",
            ImageFormat::Webp => "webp",
        }
    }
}

checked!(
    /// A JPEG quality, `1..=100`.
    Quality(u8), {"type": "integer", "minimum": 1, "maximum": 100},
    |v| v.as_u64().filter(|q| (1..=100).contains(q)).map(|q| q as u8).ok_or_else(|| format!("must be an integer in 1..=100, got {v}"))
);

fn default_quality() -> Quality {
    Quality(90)
}

/// uint8 pixels to the bytes of an image file (JPEG through libjpeg-turbo, lossless PNG, lossless WebP); a slot's last op.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EncodeImage {
    /// file format: jpeg, png or webp
    #[serde(default)]
    pub format: ImageFormat,
    /// JPEG quality (PNG and WebP are lossless)
    #[serde(default = "default_quality")]
    pub quality: Quality,
}

// ---------------------------------------------------------------------------
// Batch transforms

/// Mixes each sample with its neighbour (torchvision v2 MixUp / CutMix); labels become mixed one-hot rows.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Mix {
    /// Beta(alpha, alpha) draws the mixing weight
    pub alpha: PositiveF64,
    /// number of classes of the integer labels
    pub num_classes: AtLeastTwo,
    /// the image slot
    #[serde(default = "image_slot")]
    pub slot: String,
    /// the label slot
    #[serde(default = "label_slot")]
    pub label: String,
}

/// Pads a variable-length slot along its first axis (its last, for rows that differ only there: audio `[C, N]`) to one tensor, plus `<slot>_lengths`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PadToLongest {
    /// the slot to pad
    pub slot: String,
    /// the padding value
    #[serde(default)]
    pub value: f64,
    /// pad to at least this many elements along the padded axis (a fixed shape when no row is longer)
    #[serde(default)]
    pub length: Option<u64>,
    /// the axis to pad: 0 (the first of a row) or -1 (the last: audio `[C, N]`); by default the first, or the last for rows that differ only there
    #[serde(default)]
    pub axis: Option<i8>,
}

fn image_slot() -> String {
    "image".into()
}

fn label_slot() -> String {
    "label".into()
}

/// A native batch transform (runs on a finished batch; see `exec::batch_ops`).
#[derive(Debug, Clone, PartialEq)]
pub enum BatchOp {
    Mixup(Mix),
    Cutmix(Mix),
    PadToLongest(PadToLongest),
}

impl BatchOp {
    pub fn name(&self) -> &'static str {
        match self {
            BatchOp::Mixup(_) => "mixup",
            BatchOp::Cutmix(_) => "cutmix",
            BatchOp::PadToLongest(_) => "pad_to_longest",
        }
    }
}

// ---------------------------------------------------------------------------
// Parsing and the exported table

/// What an op is: its JSON name, kind, whether it draws random numbers.
struct OpInfo {
    name: &'static str,
    kind: &'static str,
    random: bool,
    schema: fn(&mut SchemaGenerator) -> Schema,
}

fn schema_of<T: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    g.root_schema_for::<T>()
}

macro_rules! ops {
    ($($name:literal $kind:literal $random:literal => $ty:ty),* $(,)?) => {
        const OPS: &[OpInfo] = &[$(OpInfo { name: $name, kind: $kind, random: $random, schema: schema_of::<$ty> }),*];
    };
}

ops! {
    "decode_image" "decode" false => DecodeImage,
    "decode_bytes" "decode" false => DecodeBytes,
    "decode_npy" "decode" false => DecodeNpy,
    "decode_safetensors" "decode" false => DecodeSafetensors,
    "resize" "transform" false => Resize,
    "resize_short" "transform" false => ResizeShort,
    "resize_long" "transform" false => ResizeLong,
    "center_crop" "transform" false => CenterCrop,
    "crop" "transform" false => Crop,
    "random_crop" "transform" true => RandomCrop,
    "random_resized_crop" "transform" true => RandomResizedCrop,
    "hflip" "transform" true => Flip,
    "vflip" "transform" true => Flip,
    "normalize" "transform" false => Normalize,
    "to_chw" "transform" false => ToChw,
    "cast" "transform" false => Cast,
    "encode_image" "transform" false => EncodeImage,
    "mixup" "batch" true => Mix,
    "cutmix" "batch" true => Mix,
    "pad_to_longest" "batch" false => PadToLongest,
}

/// Whether `name` is a built-in op (decoder or transform) of slot chains.
pub fn is_builtin(name: &str) -> bool {
    OPS.iter().any(|o| o.name == name && o.kind != "batch")
}

/// The built-in batch transforms' names.
pub fn batch_op_names() -> Vec<&'static str> {
    OPS.iter().filter(|o| o.kind == "batch").map(|o| o.name).collect()
}

/// Deserializes `params` into `T`, naming the parameter that is wrong.
fn params<T: DeserializeOwned>(params: &Map<String, Json>) -> std::result::Result<T, String> {
    let v = Json::Object(params.clone());
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        // serde says "unknown field `x`, expected one of ..."; keep our wording.
        if let Some(rest) = inner.strip_prefix("unknown field `") {
            let name = rest.split('`').next().unwrap_or(rest);
            return format!("unknown parameter {name:?}");
        }
        if let Some(rest) = inner.strip_prefix("missing field `") {
            let name = rest.split('`').next().unwrap_or(rest);
            return format!("missing required parameter {name:?}");
        }
        if path == "." || path.is_empty() {
            inner
        } else {
            format!("{path} {inner}")
        }
    })
}

/// A slot's decoder from its op node.
pub fn decoder(name: &str, p: &Map<String, Json>) -> Option<std::result::Result<Decoder, String>> {
    Some(match name {
        "decode_image" => params::<DecodeImage>(p).map(|d| Decoder::Image {
            mode: d.mode,
            max_pixels: d.max_pixels.0,
            dct_scaling: d.dct_scaling,
            exif: d.apply_exif_orientation,
        }),
        "decode_bytes" => params::<DecodeBytes>(p).map(|_| Decoder::Bytes),
        "decode_npy" => params::<DecodeNpy>(p).map(|_| Decoder::Npy),
        "decode_safetensors" => {
            params::<DecodeSafetensors>(p).map(|d| Decoder::Safetensors { tensor_key: d.tensor_key })
        }
        _ => return None,
    })
}

/// A transform step from its op node.
pub fn step(name: &str, p: &Map<String, Json>) -> Option<std::result::Result<Step, String>> {
    Some(match name {
        "resize" => params::<Resize>(p).map(Step::Resize),
        "resize_short" => params::<ResizeShort>(p).map(Step::ResizeShort),
        "resize_long" => params::<ResizeLong>(p).map(Step::ResizeLong),
        "center_crop" => params::<CenterCrop>(p).map(Step::CenterCrop),
        "crop" => params::<Crop>(p).map(Step::Crop),
        "random_crop" => params::<RandomCrop>(p).map(Step::RandomCrop),
        "random_resized_crop" => params::<RandomResizedCrop>(p).map(Step::RandomResizedCrop),
        "hflip" => params::<Flip>(p).map(|f| Step::HFlip { p: f.p.0 }),
        "vflip" => params::<Flip>(p).map(|f| Step::VFlip { p: f.p.0 }),
        "normalize" => params::<Normalize>(p).map(|n| {
            let (mean, std) = match n.mean_std {
                MeanStd::Preset(preset) => preset.mean_std(),
                MeanStd::Values(m, s) => (m, s),
            };
            let layout = match n.layout {
                LayoutName::CHW => Layout::Chw,
                LayoutName::HWC => Layout::Hwc,
                LayoutName::CTHW => Layout::Cthw,
            };
            Step::Normalize { mean, std, layout }
        }),
        "to_chw" => params::<ToChw>(p).map(|_| Step::ToChw),
        "cast" => params::<Cast>(p).map(|c| Step::Cast { dtype: c.dtype.0 }),
        "encode_image" => params::<EncodeImage>(p).map(Step::EncodeImage),
        _ => return None,
    })
}

/// A batch transform from its node.
pub fn batch_op(name: &str, p: &Map<String, Json>) -> Result<BatchOp> {
    let bad = |m: String| Error::Plan(format!("batch transform {name}: {m}"));
    match name {
        "mixup" => params::<Mix>(p).map(BatchOp::Mixup).map_err(bad),
        "cutmix" => params::<Mix>(p).map(BatchOp::Cutmix).map_err(bad),
        "pad_to_longest" => params::<PadToLongest>(p).map(BatchOp::PadToLongest).map_err(bad),
        other => {
            Err(Error::Plan(format!("unknown batch transform {other:?} (known: {})", batch_op_names().join(", "))))
        }
    }
}

/// Every built-in op as JSON: `[{"name", "kind" ("decode", "transform" or
/// "batch"), "random", "description", "params": {name: JSON Schema with
/// "default", "description", and "col": true where dataio.col(...) is
/// accepted}, "required": [names]}]`, plus the dtype names and
/// normalization presets. The Python layer builds its op validation from it.
pub fn op_table() -> Json {
    let mut g = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let ops: Vec<Json> = OPS
        .iter()
        .map(|o| {
            let schema = (o.schema)(&mut g).to_value();
            json!({
                "name": o.name,
                "kind": o.kind,
                "random": o.random,
                "description": schema.get("description").cloned().unwrap_or(Json::Null),
                "params": schema.get("properties").cloned().unwrap_or_else(|| json!({})),
                "required": schema.get("required").cloned().unwrap_or_else(|| json!([])),
            })
        })
        .collect();
    json!({
        "ops": ops,
        "dtypes": DType::ALL.iter().map(|d| d.name()).collect::<Vec<_>>(),
        "presets": ["imagenet", "clip", "symmetric", "unit"],
        "max_dim": MAX_DIM,
    })
}
