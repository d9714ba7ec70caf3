//! Op ABI version 2: an op declared once, in Rust.
//!
//! Version 1 handed the core a bare `run`; the op's name, parameters and
//! docs were written again on the Python side, and its parameters came to
//! every call as JSON text the op parsed again. A version 2 table carries
//! the declaration itself ([`OpV2::doc`], [`OpV2::params`], [`OpV2::hooks`],
//! [`OpV2::output`]), from which the core builds the op's Python signature,
//! its checks and its docs row; and the parameters are parsed **once per
//! plan** ([`OpV2::prepare`]) into the plugin's own typed value, which every
//! call then gets back ([`OpV2::run`]'s `state`).
//!
//! A plugin written in Rust implements [`Op`] (a serde + schemars parameter
//! struct, its doc comments the help) and lists its ops in
//! [`crate::export_ops!`]. Version 1 tables still load.

use super::{borrow_call, OpCallV1, OpOutV1, Output};
use crate::{status, AbiError, Str};
use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value as Json};
use std::ffi::{c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

pub const OP_ABI_V2: u32 = 2;
pub const OP_V2_CAPSULE_NAME: &CStr = c"dataio.op.v2";

/// What the core lends `prepare`: reads through dataio's storage backends.
#[repr(C)]
pub struct HostV2 {
    pub core: *mut c_void,
    /// Reads the whole object at `uri` (any scheme dataio reads: local, s3,
    /// gs, az, hf, http) and calls `put(sink, data, len)` once with its
    /// bytes, returning OK; or calls `put` once with the error message
    /// (UTF-8) and returns another status.
    pub fetch: unsafe extern "C" fn(
        core: *mut c_void,
        uri: Str,
        sink: *mut c_void,
        put: unsafe extern "C" fn(sink: *mut c_void, data: *const u8, len: usize),
    ) -> i32,
}

/// One op's version 2 table.
#[repr(C)]
pub struct OpV2 {
    pub abi_version: u32,
    /// `size_of::<OpV2>()` as the plugin compiled it.
    pub struct_size: u32,
    pub kind: u32,
    pub flags: u32,
    pub name: Str,
    /// What the op does, one paragraph (docs rows, `describe()`).
    pub doc: Str,
    /// The parameters as JSON, `{"params": {name: JSON Schema, ...},
    /// "required": [name, ...]}`, in declared (positional) order; each
    /// schema's `description` is the parameter's help, `default` its default.
    pub params: Str,
    /// Python hooks of the op, as JSON `{"prepare": "module:function",
    /// "companions": "module:function"}` (either may be absent).
    pub hooks: Str,
    /// What the op outputs and, for a transform, what it takes: JSON
    /// `{"dtype": "uint8"|null, "ndim": n|null, "input": {"dtype": ...,
    /// "ndim": ...}}` ("input" absent: any tensor). The plan checks each
    /// op against the declared output of the op before it, and the engine
    /// holds every call to both (a tensor the op does not take never
    /// reaches it; an output other than declared fails the row).
    pub output: Str,
    pub ctx: *mut c_void,
    /// Parses `params` (a JSON object, already checked by the core against
    /// [`OpV2::params`]) once per plan: stores the plugin's state in
    /// `*state` and returns OK, or calls `out.fail` and returns its status.
    /// `host` lends storage reads for side files (a tokenizer, a label map).
    pub prepare: unsafe extern "C" fn(
        ctx: *mut c_void,
        params: Str,
        host: *const HostV2,
        state: *mut *mut c_void,
        out: *const OpOutV1,
    ) -> i32,
    /// Runs on one sample with the prepared state (the call's `params` is "").
    pub run:
        unsafe extern "C" fn(ctx: *mut c_void, state: *const c_void, call: *const OpCallV1, out: *const OpOutV1) -> i32,
    /// Frees a state `prepare` made (once no call uses it).
    pub drop_state: unsafe extern "C" fn(ctx: *mut c_void, state: *mut c_void),
    /// The core is done with the table; free `ctx` and the table.
    pub release: unsafe extern "C" fn(ctx: *mut c_void, table: *mut OpV2),
}

// SAFETY: immutable after export; the plugin promises every entry point is
// callable from any thread at once.
unsafe impl Send for OpV2 {}
// SAFETY: as for `Send` above.
unsafe impl Sync for OpV2 {}

/// Checks the handshake fields of a version 2 table.
///
/// # Safety
/// `table` must be null or point to a readable `OpV2`-prefixed struct.
pub unsafe fn check_op_v2_table(table: *const OpV2) -> Result<(), String> {
    if table.is_null() {
        return Err("the capsule holds a null op table".into());
    }
    // SAFETY: non-null and, by the caller's promise, readable.
    let t = unsafe { &*table };
    super::check_header((t.abi_version, OP_ABI_V2), (t.struct_size, std::mem::size_of::<OpV2>()), t.kind)
}

// ---------------------------------------------------------------------------
// Plugin side

/// Storage reads lent to [`Op::prepare`].
pub struct Host<'a> {
    raw: &'a HostV2,
}

unsafe extern "C" fn put_vec(sink: *mut c_void, data: *const u8, len: usize) {
    // SAFETY: `sink` is the Vec `Host::fetch` passed; data/len live for this call.
    let v = unsafe { &mut *(sink as *mut Vec<u8>) };
    if len > 0 && !data.is_null() {
        // SAFETY: as above.
        v.extend_from_slice(unsafe { std::slice::from_raw_parts(data, len) });
    }
}

impl Host<'_> {
    /// The bytes of the object at `uri`, read through dataio's backends
    /// (the same URIs a pipeline reads), without Python.
    pub fn fetch(&self, uri: &str) -> Result<Vec<u8>, AbiError> {
        let mut buf: Vec<u8> = Vec::new();
        // SAFETY: the core's host table, valid for the prepare call; `put_vec` fills `buf`.
        let code =
            unsafe { (self.raw.fetch)(self.raw.core, Str::new(uri), &mut buf as *mut Vec<u8> as *mut c_void, put_vec) };
        if code == status::OK {
            Ok(buf)
        } else {
            Err(AbiError::new(code, String::from_utf8_lossy(&buf).into_owned()))
        }
    }
}

/// The parameters of an op that takes none: every keyword is refused.
#[derive(Debug, Clone, Copy, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

/// A native op, declared once: its name, doc, kind and parameters (a
/// serde + schemars struct whose field docs are the parameters' help and
/// whose `#[serde(default)]` values are their defaults).
///
/// ```ignore
/// /// Binary PGM to uint8 [H, W, 1].
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// #[serde(default, deny_unknown_fields)]
/// struct PgmParams {
///     /// Refuse images with more pixels than this.
///     max_pixels: u64,
/// }
/// impl Default for PgmParams { fn default() -> Self { PgmParams { max_pixels: 1 << 24 } } }
///
/// struct DecodePgm;
/// impl dataio_abi::ops::Op for DecodePgm {
///     const NAME: &'static str = "decode_pgm";
///     const DOC: &'static str = "Binary PGM (P5, 8-bit) to uint8 [H, W, 1].";
///     const KIND: u32 = dataio_abi::ops::kind::DECODE;
///     type Params = PgmParams;
///     fn run(&self, p: &PgmParams, call: &Call<'_>, out: &mut Output<'_>) -> Result<(), AbiError> { ... }
/// }
/// ```
pub trait Op: Send + Sync + 'static {
    /// The name users call it by (`slot(...).<NAME>(...)`): written here only.
    const NAME: &'static str;
    /// What it does, one paragraph.
    const DOC: &'static str;
    /// [`super::kind::DECODE`] or [`super::kind::TRANSFORM`].
    const KIND: u32;
    /// [`super::flags`] bits.
    const FLAGS: u32 = 0;
    /// A Python function `"module:function"` turning the parameters as
    /// written into JSON ones before they are checked (a `tokenizers`
    /// object to a file path), or "".
    const PREPARE_HOOK: &'static str = "";
    /// A Python function `"module:function"` adding companion slots or
    /// batch transforms where a pipeline names this decoder, or "".
    const COMPANIONS_HOOK: &'static str = "";
    /// The dtype of every output (`"uint8"`), or "" when it varies.
    const OUTPUT_DTYPE: &'static str = "";
    /// The rank of every output, or -1 when it varies.
    const OUTPUT_NDIM: i32 = -1;
    /// A transform's input dtype (`"float32"`), or "" for any: another
    /// is refused at plan time when the op before declares it, else by
    /// the engine before `run` (the row error names what it got).
    const INPUT_DTYPE: &'static str = "";
    /// A transform's input rank, or -1 for any (checked as `INPUT_DTYPE`).
    const INPUT_NDIM: i32 = -1;
    /// The parameters: a struct deserialized from the plan's JSON once per plan.
    type Params: DeserializeOwned + schemars::JsonSchema + Send + Sync + 'static;

    /// Checks the parsed parameters once per plan and loads what they name
    /// (through `host`, as the pipeline reads its data). A failure here is
    /// the plan's error, before any sample is read.
    fn prepare(&self, _params: &Self::Params, _host: &Host<'_>) -> Result<(), AbiError> {
        Ok(())
    }

    /// Runs on one sample: allocate the output with `out.alloc` and fill it.
    fn run(&self, params: &Self::Params, call: &super::Call<'_>, out: &mut Output<'_>) -> Result<(), AbiError>;
}

/// The declared parameters of `T` as [`OpV2::params`] gives them: the
/// JSON Schema of the struct's fields (in declared order, each with its
/// type, `default` and `description`) and the required ones, the form the
/// core's own op table has.
pub fn param_list<T: schemars::JsonSchema>() -> Json {
    let mut g = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let schema = g.root_schema_for::<T>().to_value();
    json!({
        "params": schema.get("properties").cloned().unwrap_or_else(|| json!({})),
        "required": schema.get("required").cloned().unwrap_or_else(|| json!([])),
    })
}

struct Exported<T: Op> {
    op: T,
    name: Box<str>,
    doc: Box<str>,
    params: Box<str>,
    hooks: Box<str>,
    output: Box<str>,
}

/// Builds the version 2 table of `op`; the core releases it (hand it over in
/// a capsule named [`OP_V2_CAPSULE_NAME`]: [`crate::export_ops!`] writes the factory).
pub fn export_op_v2<T: Op>(op: T) -> *mut OpV2 {
    let mut hooks = Map::new();
    for (k, v) in [("prepare", T::PREPARE_HOOK), ("companions", T::COMPANIONS_HOOK)] {
        if !v.is_empty() {
            hooks.insert(k.into(), v.into());
        }
    }
    let mut output = json!({
        "dtype": (!T::OUTPUT_DTYPE.is_empty()).then_some(T::OUTPUT_DTYPE),
        "ndim": (T::OUTPUT_NDIM >= 0).then_some(T::OUTPUT_NDIM),
    });
    if !T::INPUT_DTYPE.is_empty() || T::INPUT_NDIM >= 0 {
        output["input"] = json!({
            "dtype": (!T::INPUT_DTYPE.is_empty()).then_some(T::INPUT_DTYPE),
            "ndim": (T::INPUT_NDIM >= 0).then_some(T::INPUT_NDIM),
        });
    }
    let e = Box::new(Exported {
        op,
        name: T::NAME.into(),
        doc: T::DOC.into(),
        params: param_list::<T::Params>().to_string().into(),
        hooks: Json::Object(hooks).to_string().into(),
        output: output.to_string().into(),
    });
    let (name, doc, params, hooks, output) =
        (Str::new(&e.name), Str::new(&e.doc), Str::new(&e.params), Str::new(&e.hooks), Str::new(&e.output));
    Box::into_raw(Box::new(OpV2 {
        abi_version: OP_ABI_V2,
        struct_size: std::mem::size_of::<OpV2>() as u32,
        kind: T::KIND,
        flags: T::FLAGS,
        name,
        doc,
        params,
        hooks,
        output,
        ctx: Box::into_raw(e) as *mut c_void,
        prepare: prepare_exported::<T>,
        run: run_exported::<T>,
        drop_state: drop_state_exported::<T>,
        release: release_exported::<T>,
    }))
}

/// The message of a caught panic.
fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
}

/// Reports `r` through `out`: OK, or the failure's status after `out.fail`.
///
/// # Safety
/// `out` must be the core's output table of the running call.
unsafe fn report(name: &str, r: std::thread::Result<Result<(), AbiError>>, out: &OpOutV1) -> i32 {
    let e = match r {
        Ok(Ok(())) => return status::OK,
        Ok(Err(e)) => e,
        Err(p) => AbiError::new(status::PANIC, format!("op {name} panicked: {}", panic_message(p))),
    };
    // SAFETY: the core's failure callback, with a message valid for the call.
    unsafe { (out.fail)(out.core, e.status, Str::new(&e.message)) };
    if e.status == status::OK {
        status::BACKEND
    } else {
        e.status
    }
}

fn params_error(op: &str) -> AbiError {
    AbiError::new(status::INVALID_ARGUMENT, format!("op {op}: the parameters are not a JSON object"))
}

unsafe extern "C" fn prepare_exported<T: Op>(
    ctx: *mut c_void,
    params: Str,
    host: *const HostV2,
    state: *mut *mut c_void,
    out: *const OpOutV1,
) -> i32 {
    // SAFETY: the core passes this table's ctx, and params, host, state and
    // out valid for the call.
    let (me, text, host, out) = unsafe { (&*(ctx as *const Exported<T>), params.as_str(), &*host, &*out) };
    let r = catch_unwind(AssertUnwindSafe(|| -> Result<(), AbiError> {
        let text = if text.trim().is_empty() { "{}" } else { text };
        let p: T::Params = parse_params(&me.name, text)?;
        me.op.prepare(&p, &Host { raw: host })?;
        // SAFETY: the core's slot for the state pointer.
        unsafe { *state = Box::into_raw(Box::new(p)) as *mut c_void };
        Ok(())
    }));
    // SAFETY: the core's output table for this call.
    unsafe { report(&me.name, r, out) }
}

/// `text` as `P`, a failure naming the parameter that does not fit.
fn parse_params<P: DeserializeOwned>(op: &str, text: &str) -> Result<P, AbiError> {
    let value: Json = serde_json::from_str(text).map_err(|_| params_error(op))?;
    let obj = value.as_object().ok_or_else(|| params_error(op))?;
    match serde_json::from_value::<P>(value.clone()) {
        Ok(p) => Ok(p),
        Err(e) => {
            let inner = e.to_string();
            let msg = if let Some(rest) = inner.strip_prefix("unknown field `") {
                let name = rest.split('`').next().unwrap_or(rest);
                format!("unknown parameter {name}=")
            } else if let Some(rest) = inner.strip_prefix("missing field `") {
                let name = rest.split('`').next().unwrap_or(rest);
                format!("missing required parameter {name}=")
            } else {
                // Name the parameter whose value alone fails, when one does.
                let culprit = obj.keys().find(|k| {
                    let mut one = obj.clone();
                    one.remove(k.as_str());
                    serde_json::from_value::<P>(Json::Object(one)).is_ok()
                });
                match culprit {
                    Some(k) => format!("{k}={}: {inner}", obj[k]),
                    None => inner,
                }
            };
            Err(AbiError::new(status::INVALID_ARGUMENT, format!("op {op}: {msg}")))
        }
    }
}

unsafe extern "C" fn run_exported<T: Op>(
    ctx: *mut c_void,
    state: *const c_void,
    call: *const OpCallV1,
    out: *const OpOutV1,
) -> i32 {
    // SAFETY: the core passes this table's ctx, a state its prepare made and
    // a call and output valid for the duration of this function.
    let (me, p, call, out) = unsafe { (&*(ctx as *const Exported<T>), &*(state as *const T::Params), &*call, &*out) };
    let r = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the core lends these buffers and strings for the call.
        let c = unsafe { borrow_call(call) };
        let mut o = Output { out, taken: false };
        me.op.run(p, &c, &mut o)
    }));
    // SAFETY: the core's output table for this call.
    unsafe { report(&me.name, r, out) }
}

unsafe extern "C" fn drop_state_exported<T: Op>(_ctx: *mut c_void, state: *mut c_void) {
    if !state.is_null() {
        // SAFETY: made by prepare_exported from a Box<T::Params>, dropped once.
        drop(unsafe { Box::from_raw(state as *mut T::Params) });
    }
}

unsafe extern "C" fn release_exported<T: Op>(ctx: *mut c_void, table: *mut OpV2) {
    // SAFETY: both were made by export_op_v2 and are released exactly once.
    unsafe {
        drop(Box::from_raw(ctx as *mut Exported<T>));
        drop(Box::from_raw(table));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Params of a test op.
    #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    #[serde(default, deny_unknown_fields)]
    struct P {
        /// How many points to keep.
        max_points: u32,
        /// Scale, when given.
        scale: Option<f64>,
        /// A mode.
        mode: Mode,
    }

    #[derive(Debug, Default, serde::Deserialize, serde::Serialize, schemars::JsonSchema, PartialEq)]
    #[serde(rename_all = "lowercase")]
    enum Mode {
        #[default]
        Fast,
        Exact,
    }

    impl Default for P {
        fn default() -> Self {
            P { max_points: 1024, scale: None, mode: Mode::Fast }
        }
    }

    #[test]
    fn the_param_list_keeps_order_types_help_and_defaults() {
        let list = param_list::<P>();
        let props = list["params"].as_object().unwrap();
        let names: Vec<&str> = props.keys().map(String::as_str).collect();
        assert_eq!(names, ["max_points", "scale", "mode"]);
        assert_eq!(props["max_points"]["type"], "integer");
        assert_eq!(props["max_points"]["description"], "How many points to keep.");
        assert_eq!(props["max_points"]["default"], 1024, "{list}");
        assert_eq!(list["required"], json!([]));
        assert!(param_list::<NoParams>()["params"].as_object().unwrap().is_empty());
    }

    #[test]
    fn a_parameter_that_does_not_fit_is_named() {
        let e = parse_params::<P>("decode_x", r#"{"max_points": "many"}"#).unwrap_err();
        assert_eq!(e.status, status::INVALID_ARGUMENT);
        assert!(e.message.starts_with("op decode_x: max_points=\"many\""), "{}", e.message);
        let e = parse_params::<P>("decode_x", r#"{"bogus": 1}"#).unwrap_err();
        assert_eq!(e.message, "op decode_x: unknown parameter bogus=");
        let e = parse_params::<NoParams>("invert", r#"{"radius": 2}"#).unwrap_err();
        assert_eq!(e.message, "op invert: unknown parameter radius=");
        let p = parse_params::<P>("decode_x", r#"{"mode": "exact"}"#).unwrap();
        assert_eq!((p.max_points, p.mode), (1024, Mode::Exact));
    }

    struct Takes<const IN: bool>;
    impl<const IN: bool> Op for Takes<IN> {
        const NAME: &'static str = "center";
        const DOC: &'static str = "Centers points.";
        const KIND: u32 = crate::ops::kind::TRANSFORM;
        const OUTPUT_DTYPE: &'static str = "float32";
        const INPUT_DTYPE: &'static str = if IN { "float32" } else { "" };
        const INPUT_NDIM: i32 = if IN { 2 } else { -1 };
        type Params = NoParams;
        fn run(&self, _: &NoParams, _: &crate::ops::Call<'_>, _: &mut Output<'_>) -> Result<(), AbiError> {
            Ok(())
        }
    }

    fn declared_output<T: Op>(op: T) -> Json {
        let table = export_op_v2(op);
        // SAFETY: a table just exported, released once below.
        let text = unsafe { (*table).output.as_str() }.to_string();
        // SAFETY: as above; the core's release, called once.
        unsafe { ((*table).release)((*table).ctx, table) };
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn the_declared_input_travels_with_the_output_only_when_declared() {
        let with = declared_output(Takes::<true>);
        assert_eq!(with, json!({"dtype": "float32", "ndim": null, "input": {"dtype": "float32", "ndim": 2}}));
        let without = declared_output(Takes::<false>);
        assert_eq!(without, json!({"dtype": "float32", "ndim": null}), "no \"input\": any tensor");
    }

    #[test]
    fn bytes_in_memory_read_by_range_refuse_a_range_past_the_end() {
        use crate::ops::{InMemory, RangeRead};
        let m = InMemory(b"0123456789");
        let mut buf = [0u8; 4];
        m.read_at(6, &mut buf).unwrap();
        assert_eq!(&buf, b"6789");
        assert_eq!(m.read_at(7, &mut buf).unwrap_err().status, status::OUT_OF_RANGE);
        assert_eq!(m.read_at(u64::MAX, &mut buf).unwrap_err().status, status::OUT_OF_RANGE);
    }
}
