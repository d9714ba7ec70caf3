//! Native ops from plugin packages (the op ABI in `dataio-abi`'s `ops`):
//! decoders and transforms that run on the CPU pool without the GIL, as the
//! built-in ones do.
//!
//! The binding layer adopts each table a plugin hands over ([`register`]);
//! a slot's plugin op ([`crate::plan::Step::External`],
//! [`crate::plan::Decoder::External`]) runs here when its name is
//! registered, and through the binding's Python ops otherwise.

use crate::base::error::{Error, Result};
use crate::base::tensor::{DType, Tensor};
use crate::io::backend::Backend;
use dataio_abi::ops::{
    check_op_table, check_op_v2_table, flags, kind, HostV2, OpCallV1, OpOutV1, OpV1, OpV2, ReaderV1, TensorV1,
};
use dataio_abi::{status, Str};
use serde_json::{Map, Value as Json};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, OnceLock, RwLock};

/// The largest output one call may allocate.
pub const MAX_OUTPUT_BYTES: u64 = 4 << 30;

/// An adopted op table; released when the last user drops it.
pub struct NativeOp {
    table: Table,
    name: String,
    kind: u32,
    flags: u32,
    /// What a version 2 op declares it takes (a transform) and outputs:
    /// every call is held to both.
    takes: Declared,
    gives: Declared,
}

/// A dtype and rank an op declares (`None`: any).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Declared {
    pub dtype: Option<String>,
    pub ndim: Option<usize>,
}

impl Declared {
    /// From `{"dtype": "uint8"|null, "ndim": n|null}` (anything else: any).
    fn from_json(v: Option<&Json>) -> Declared {
        let Some(v) = v else { return Declared::default() };
        Declared {
            dtype: v.get("dtype").and_then(Json::as_str).map(str::to_string),
            ndim: v.get("ndim").and_then(Json::as_u64).map(|n| n as usize),
        }
    }

    fn admits(&self, t: &Tensor) -> bool {
        self.dtype.as_deref().is_none_or(|d| d == t.dtype.name()) && self.ndim.is_none_or(|n| n == t.shape.len())
    }

    /// "float32 with 2 dimensions", as the plan's check words it.
    fn words(&self) -> String {
        let ndim = self.ndim.map(|n| n.to_string()).unwrap_or_else(|| "any number of".into());
        format!("{} with {ndim} dimensions", self.dtype.as_deref().unwrap_or("any dtype"))
    }
}

/// The table of an op, by ABI version.
enum Table {
    V1(*mut OpV1),
    V2(*mut OpV2),
}

/// What a version 2 table declares about its op, as JSON text (see
/// `dataio_abi::ops::OpV2`): doc, parameters, Python hooks, output.
#[derive(Debug, Clone)]
pub struct Declaration {
    pub name: String,
    pub kind: u32,
    pub flags: u32,
    pub doc: String,
    pub params: String,
    pub hooks: String,
    pub output: String,
}

/// An op with its parameters parsed for one plan (version 2: the plugin's
/// state; version 1: the parameters' JSON text, written once).
pub struct Prepared {
    op: Arc<NativeOp>,
    state: State,
}

enum State {
    Json(String),
    V2(*mut c_void),
}

// SAFETY: the plugin's state is immutable after prepare and read from any
// thread by `run`, as the ABI requires.
unsafe impl Send for Prepared {}
// SAFETY: as above.
unsafe impl Sync for Prepared {}

impl Drop for Prepared {
    fn drop(&mut self) {
        if let (State::V2(state), Table::V2(t)) = (&self.state, &self.op.table) {
            // SAFETY: a state this table's prepare made, dropped once, here.
            unsafe { ((**t).drop_state)((**t).ctx, *state) };
        }
    }
}

/// What a ranged decoder reads its input from: an object through its
/// backend, or bytes in memory.
pub trait RangeSource {
    fn size(&self) -> u64;
    /// Fills `dst` from `offset` (within `size`).
    fn read_at(&self, offset: u64, dst: &mut [u8]) -> Result<()>;
    /// Where the bytes live ("" for bytes in memory).
    fn uri(&self) -> &str {
        ""
    }
    /// The object's version: its etag, else its mtime ("" when unknown).
    fn version(&self) -> &str {
        ""
    }
}

/// Bytes already in memory, read by range.
pub struct InMemory<'a>(pub &'a [u8]);

impl RangeSource for InMemory<'_> {
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
    fn read_at(&self, offset: u64, dst: &mut [u8]) -> Result<()> {
        let at = offset as usize;
        let src = self.0.get(at..at + dst.len()).ok_or_else(|| Error::invalid("read past the end"))?;
        dst.copy_from_slice(src);
        Ok(())
    }
}

/// An object a ranged decoder reads through its backend: the size and
/// version of one `head` (or known already), every range's bytes reported
/// to `counted` (the loader's `bytes_read`, a verb's own count).
pub struct StoreObject {
    backend: Arc<dyn Backend>,
    uri: String,
    size: u64,
    version: String,
    counted: Arc<dyn Fn(u64) + Send + Sync>,
}

impl StoreObject {
    /// The object at `uri` of `size` bytes, at `version`.
    pub fn new(
        backend: Arc<dyn Backend>,
        uri: String,
        size: u64,
        version: String,
        counted: Arc<dyn Fn(u64) + Send + Sync>,
    ) -> Self {
        StoreObject { backend, uri, size, version, counted }
    }

    /// The size and version of the object at `uri`: one `head`.
    pub fn head(backend: &dyn Backend, uri: &str) -> Result<(u64, String)> {
        let meta = crate::host::pools::block_on(backend.head(uri))?;
        Ok((meta.size, object_version(meta.etag.as_deref(), meta.mtime)))
    }
}

/// What identifies the version of an object: its etag, else its mtime
/// (`"mtime:<t>"`), else "" (unknown).
pub fn object_version(etag: Option<&str>, mtime: Option<f64>) -> String {
    etag.map(str::to_string).or_else(|| mtime.map(|t| format!("mtime:{t}"))).unwrap_or_default()
}

impl RangeSource for StoreObject {
    fn size(&self) -> u64 {
        self.size
    }
    fn uri(&self) -> &str {
        &self.uri
    }
    fn version(&self) -> &str {
        &self.version
    }
    fn read_at(&self, offset: u64, dst: &mut [u8]) -> Result<()> {
        let n = crate::host::pools::block_on(self.backend.read_into(&self.uri, offset, dst))?;
        (self.counted)(n as u64);
        if n != dst.len() {
            return Err(Error::corrupt(
                &self.uri,
                "object",
                format!("{n} bytes at {offset} where {} were asked", dst.len()),
            ));
        }
        Ok(())
    }
}

struct ReadState<'a> {
    source: &'a dyn RangeSource,
    /// The first failed read, reported in place of the op's message.
    error: Option<Error>,
}

unsafe extern "C" fn read_input(core: *mut c_void, offset: u64, len: u64, dst: *mut u8) -> i32 {
    // SAFETY: `core` is the ReadState of the running call (see `NativeOp::call`).
    let st = unsafe { &mut *(core as *mut ReadState<'_>) };
    if offset.checked_add(len).is_none_or(|end| end > st.source.size()) || (len > 0 && dst.is_null()) {
        return status::OUT_OF_RANGE;
    }
    if len == 0 {
        return status::OK;
    }
    // SAFETY: the op passes a buffer of `len` writable bytes, by the ABI.
    let buf = unsafe { std::slice::from_raw_parts_mut(dst, len as usize) };
    match st.source.read_at(offset, buf) {
        Ok(()) => status::OK,
        Err(e) => {
            let code = if e.is_transient() { status::TRANSIENT } else { status::BACKEND };
            st.error.get_or_insert(e);
            code
        }
    }
}

// SAFETY: the ABI requires `run` to be callable from any thread at once and
// the table to be immutable after export.
unsafe impl Send for NativeOp {}
// SAFETY: as above.
unsafe impl Sync for NativeOp {}

impl Drop for NativeOp {
    fn drop(&mut self) {
        // SAFETY: the table was adopted once (register) and is released once, here.
        unsafe {
            match self.table {
                Table::V1(t) => ((*t).release)((*t).ctx, t),
                Table::V2(t) => ((*t).release)((*t).ctx, t),
            }
        }
    }
}

fn registry() -> &'static RwLock<HashMap<String, Arc<NativeOp>>> {
    static OPS: OnceLock<RwLock<HashMap<String, Arc<NativeOp>>>> = OnceLock::new();
    OPS.get_or_init(Default::default)
}

/// Adopts the table a plugin exported as op `name` (decode or transform, as
/// registered): checks the handshake and that the table names the same op
/// and kind. The same table registered again is a no-op.
///
/// # Safety
/// `table` must come from a capsule named `dataio.op.v1` whose ownership
/// passes to the core with this call (the capsule has no destructor).
pub unsafe fn register(name: &str, expect_decode: bool, table: *mut OpV1) -> Result<()> {
    // SAFETY: forwarded from the caller.
    unsafe { check_op_table(table) }.map_err(|e| Error::invalid(format!("op {name}: {e}")))?;
    // SAFETY: checked readable above.
    let (own, k) = unsafe { ((*table).name.as_str().to_string(), (*table).kind) };
    if own != name {
        return Err(Error::invalid(format!("op {name}: the plugin's table is named {own:?}")));
    }
    let want = if expect_decode { kind::DECODE } else { kind::TRANSFORM };
    if k != want {
        let says = |k: u32| if k == kind::DECODE { "decode" } else { "transform" };
        return Err(Error::invalid(format!(
            "op {name}: registered as kind={:?} but its table says {:?}",
            says(want),
            says(k)
        )));
    }
    let mut ops = registry().write().unwrap_or_else(|p| p.into_inner());
    if let Some(old) = ops.get(name) {
        if matches!(old.table, Table::V1(t) if t == table) {
            return Ok(());
        }
    }
    // SAFETY: checked readable above.
    let op_flags = unsafe { (*table).flags };
    let op = NativeOp {
        table: Table::V1(table),
        name: own,
        kind: k,
        flags: op_flags,
        takes: Declared::default(),
        gives: Declared::default(),
    };
    ops.insert(name.to_string(), Arc::new(op));
    Ok(())
}

/// What the version 2 table at `table` declares (its handshake checked).
///
/// # Safety
/// `table` must come from a capsule named `dataio.op.v2` and be alive.
pub unsafe fn declaration(table: *const OpV2) -> Result<Declaration> {
    // SAFETY: forwarded from the caller.
    unsafe { check_op_v2_table(table) }.map_err(|e| Error::invalid(format!("native op: {e}")))?;
    // SAFETY: checked readable above; its strings live as long as the table.
    let t = unsafe { &*table };
    // SAFETY: as above.
    let text = |s: &Str| unsafe { s.as_str() }.to_string();
    Ok(Declaration {
        name: text(&t.name),
        kind: t.kind,
        flags: t.flags,
        doc: text(&t.doc),
        params: text(&t.params),
        hooks: text(&t.hooks),
        output: text(&t.output),
    })
}

/// Adopts a version 2 table: the op is registered under the name it
/// declares, which must be `name` (the one the registry checked).
///
/// # Safety
/// `table` must come from a capsule named `dataio.op.v2` whose ownership
/// passes to the core with this call.
pub unsafe fn register_v2(name: &str, table: *mut OpV2) -> Result<()> {
    // SAFETY: forwarded from the caller.
    let d = unsafe { declaration(table) }?;
    if d.name != name {
        return Err(Error::invalid(format!("op {name}: the plugin's table is named {:?}", d.name)));
    }
    let mut ops = registry().write().unwrap_or_else(|p| p.into_inner());
    if let Some(old) = ops.get(name) {
        if matches!(old.table, Table::V2(t) if t == table) {
            return Ok(());
        }
    }
    let output: Json = serde_json::from_str(&d.output).unwrap_or(Json::Null);
    let op = NativeOp {
        table: Table::V2(table),
        name: d.name,
        kind: d.kind,
        flags: d.flags,
        takes: Declared::from_json(output.get("input")),
        gives: Declared::from_json(Some(&output)),
    };
    ops.insert(name.to_string(), Arc::new(op));
    Ok(())
}

/// Forgets op `name` (its table is released once no call uses it).
pub fn unregister(name: &str) -> bool {
    registry().write().unwrap_or_else(|p| p.into_inner()).remove(name).is_some()
}

/// The native op registered as `name`.
pub fn get(name: &str) -> Option<Arc<NativeOp>> {
    registry().read().unwrap_or_else(|p| p.into_inner()).get(name).cloned()
}

/// Names of the registered native ops.
pub fn names() -> Vec<String> {
    let mut v: Vec<String> = registry().read().unwrap_or_else(|p| p.into_inner()).keys().cloned().collect();
    v.sort();
    v
}

/// The key of one call's random draws.
#[derive(Debug, Clone, Copy)]
pub struct CallKey {
    pub seed: Option<u64>,
    pub epoch: u64,
    pub index: u64,
    pub stream: u64,
}

struct OutState {
    tensor: Option<Tensor>,
    failure: Option<(i32, String)>,
}

unsafe extern "C" fn alloc_out(core: *mut c_void, dtype: Str, ndim: u32, shape: *const u64) -> *mut u8 {
    // SAFETY: `core` is the OutState of the running call (see `NativeOp::call`).
    let st = unsafe { &mut *(core as *mut OutState) };
    if st.tensor.is_some() {
        return std::ptr::null_mut();
    }
    // SAFETY: a live UTF-8 string for the call, by the ABI.
    let Ok(dt) = DType::parse(unsafe { dtype.as_str() }) else { return std::ptr::null_mut() };
    let dims: Vec<usize> = if ndim == 0 || shape.is_null() {
        Vec::new()
    } else {
        // SAFETY: `ndim` dims at `shape`, live for the call, by the ABI.
        unsafe { std::slice::from_raw_parts(shape, ndim as usize) }.iter().map(|&d| d as usize).collect()
    };
    let bytes = dims.iter().try_fold(dt.size() as u64, |acc, &d| acc.checked_mul(d as u64));
    let Some(n) = bytes.filter(|&n| n <= MAX_OUTPUT_BYTES) else { return std::ptr::null_mut() };
    // Pooled: a clip decoder's output is tens of MB, fresh pages each call.
    let buf = Arc::new(crate::base::tensor::pooled(n as usize));
    let ptr = buf.as_mut_ptr();
    st.tensor = Some(Tensor { dtype: dt, shape: dims, buf, offset: 0 });
    ptr
}

unsafe extern "C" fn fail_out(core: *mut c_void, code: i32, msg: Str) {
    // SAFETY: as in alloc_out.
    let st = unsafe { &mut *(core as *mut OutState) };
    // SAFETY: `msg` is live UTF-8 for the call, by the ABI.
    st.failure = Some((code, unsafe { msg.as_str() }.to_string()));
}

/// The first failed read of a prepare call, reported in place of the op's message.
struct FetchState {
    error: Option<Error>,
}

unsafe extern "C" fn host_fetch(
    core: *mut c_void,
    uri: Str,
    sink: *mut c_void,
    put: unsafe extern "C" fn(sink: *mut c_void, data: *const u8, len: usize),
) -> i32 {
    // SAFETY: `core` is the FetchState of the running prepare call, and
    // `uri` live UTF-8 for the call, by the ABI.
    let (st, uri) = unsafe { (&mut *(core as *mut FetchState), uri.as_str()) };
    let read = crate::io::registry::backend_for(uri)
        .and_then(|(b, _)| crate::host::pools::block_on(async move { b.read_all(uri).await }));
    match read {
        Ok(bytes) => {
            // SAFETY: the plugin's sink, called once with bytes live for the call.
            unsafe { put(sink, bytes.as_ptr(), bytes.len()) };
            status::OK
        }
        Err(e) => {
            let msg = e.to_string();
            // SAFETY: as above.
            unsafe { put(sink, msg.as_ptr(), msg.len()) };
            let code = if e.is_transient() { status::TRANSIENT } else { status::BACKEND };
            st.error.get_or_insert(e);
            code
        }
    }
}

impl NativeOp {
    /// Parses `params` for one plan: a version 2 op parses them into its own
    /// state here, once (checking them, and loading any side file they
    /// name); a version 1 op gets their JSON text, written once.
    pub fn prepare(self: &Arc<Self>, params: &Map<String, Json>) -> Result<Prepared> {
        let text = serde_json::to_string(params).map_err(|e| Error::invalid(e.to_string()))?;
        let t = match self.table {
            Table::V1(_) => return Ok(Prepared { op: self.clone(), state: State::Json(text) }),
            Table::V2(t) => t,
        };
        let mut fetches = FetchState { error: None };
        let host = HostV2 { core: &mut fetches as *mut FetchState as *mut c_void, fetch: host_fetch };
        let mut st = OutState { tensor: None, failure: None };
        let out = OpOutV1 { core: &mut st as *mut OutState as *mut c_void, alloc: alloc_out, fail: fail_out };
        let mut state: *mut c_void = std::ptr::null_mut();
        // SAFETY: an adopted table; text, host, state and out live for the call.
        let code = unsafe { ((*t).prepare)((*t).ctx, Str::new(&text), &host, &mut state, &out) };
        if code == status::OK && st.failure.is_none() {
            return Ok(Prepared { op: self.clone(), state: State::V2(state) });
        }
        // A failed read of a side file is the store's error (typed, with its URI).
        if let Some(e) = fetches.error {
            return Err(e);
        }
        let (c, msg) = st.failure.unwrap_or((code, format!("status {code} without a message")));
        let msg = if msg.starts_with(&format!("op {}", self.name)) { msg } else { format!("op {}: {msg}", self.name) };
        Err(match c {
            status::INVALID_ARGUMENT => Error::invalid(msg),
            _ => Error::Plan(msg),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn is_decoder(&self) -> bool {
        self.kind == kind::DECODE
    }

    /// What the op declares it takes (a transform's input).
    pub fn takes(&self) -> &Declared {
        &self.takes
    }

    /// What the op declares every output is.
    pub fn gives(&self) -> &Declared {
        &self.gives
    }

    /// Whether this decoder reads its input by range (the loader then hands
    /// it a URI's object unread; see [`NativeOp::decode_ranged`]).
    pub fn reads_ranges(&self) -> bool {
        self.kind == kind::DECODE && self.flags & flags::RANGED_INPUT != 0
    }

    /// Whether this decoder takes a string field's text itself as its bytes
    /// (`flags::TEXT_INPUT`), not the object the string names.
    pub fn takes_text(&self) -> bool {
        self.kind == kind::DECODE && self.flags & flags::TEXT_INPUT != 0
    }
}

impl Prepared {
    pub fn op(&self) -> &NativeOp {
        &self.op
    }

    /// Decodes `data` (read from `uri`) into a tensor.
    pub fn decode(&self, data: &[u8], key: CallKey, uri: &str) -> Result<Tensor> {
        if self.op.reads_ranges() {
            return self.decode_ranged(Some(data), &InMemory(data), key, uri);
        }
        self.call(data, no_tensor(), None, key, uri)
    }

    /// Decodes an input it reads by range from `source` (`data`: the same
    /// bytes when they are in memory).
    pub fn decode_ranged(
        &self,
        data: Option<&[u8]>,
        source: &dyn RangeSource,
        key: CallKey,
        uri: &str,
    ) -> Result<Tensor> {
        self.call(data.unwrap_or(&[]), no_tensor(), Some(source), key, uri)
    }

    /// Transforms `input` into a new tensor; an input other than the op
    /// declares it takes is refused before the op sees it.
    pub fn transform(&self, input: &Tensor, key: CallKey, uri: &str) -> Result<Tensor> {
        if !self.op.takes.admits(input) {
            return Err(Error::invalid(format!(
                "{} takes {}, got {} {:?}",
                self.op.name,
                self.op.takes.words(),
                input.dtype.name(),
                input.shape
            )));
        }
        let shape: Vec<u64> = input.shape.iter().map(|&d| d as u64).collect();
        let bytes = input.bytes();
        let t = TensorV1 {
            dtype: Str::new(input.dtype.name()),
            ndim: shape.len() as u32,
            shape: shape.as_ptr(),
            data: bytes.as_ptr(),
            len: bytes.len(),
        };
        self.call(&[], t, None, key, uri)
    }

    fn call(
        &self,
        data: &[u8],
        input: TensorV1,
        source: Option<&dyn RangeSource>,
        key: CallKey,
        uri: &str,
    ) -> Result<Tensor> {
        let params = match &self.state {
            State::Json(text) => text.as_str(),
            State::V2(_) => "",
        };
        let version = source.map(|s| s.version()).unwrap_or("");
        let mut reads = source.map(|source| ReadState { source, error: None });
        let reader = match reads.as_mut() {
            Some(st) => ReaderV1 {
                size: st.source.size(),
                core: st as *mut ReadState<'_> as *mut c_void,
                read: Some(read_input),
            },
            None => ReaderV1 { size: 0, core: std::ptr::null_mut(), read: None },
        };
        let call = OpCallV1 {
            data: data.as_ptr(),
            len: data.len(),
            input,
            params: Str::new(params),
            seed: key.seed.unwrap_or(0),
            seeded: key.seed.is_some() as u8,
            epoch: key.epoch,
            index: key.index,
            stream: key.stream,
            uri: Str::new(uri),
            reader,
            version: Str::new(version),
        };
        let mut st = OutState { tensor: None, failure: None };
        let out = OpOutV1 { core: &mut st as *mut OutState as *mut c_void, alloc: alloc_out, fail: fail_out };
        // SAFETY: an adopted table; every pointer in `call` and `out` lives
        // until the call returns, as the ABI requires.
        let code = unsafe {
            match (&self.op.table, &self.state) {
                (Table::V2(t), State::V2(state)) => ((**t).run)((**t).ctx, *state, &call, &out),
                (Table::V1(t), _) => ((**t).run)((**t).ctx, &call, &out),
                (Table::V2(_), State::Json(_)) => unreachable!("a version 2 op is always prepared"),
            }
        };
        match (code, st.tensor, st.failure) {
            (status::OK, Some(t), None) if self.op.gives.admits(&t) => Ok(t),
            (status::OK, Some(t), None) => Err(Error::invalid(format!(
                "{} returned {} {:?}, but it declares {} (a bug of the op's plugin)",
                self.op.name,
                t.dtype.name(),
                t.shape,
                self.op.gives.words()
            ))),
            (status::OK, None, None) => Err(Error::decode(&self.op.name, "the plugin op returned no output")),
            (_, _, failure) => {
                // A failed read of the input is the store's error (typed, with its URI).
                if let Some(e) = reads.and_then(|r| r.error) {
                    return Err(e);
                }
                let (c, msg) = failure.unwrap_or((code, format!("status {code} without a message")));
                let c = if code != status::OK { code } else { c };
                Err(match c {
                    // One prefix for a refusal and a decode failure: "<op>: ...".
                    status::INVALID_ARGUMENT if msg.starts_with(&self.op.name) => Error::invalid(msg),
                    status::INVALID_ARGUMENT => Error::invalid(format!("{}: {msg}", self.op.name)),
                    _ => Error::decode(&self.op.name, msg),
                })
            }
        }
    }
}

fn no_tensor() -> TensorV1 {
    TensorV1 { dtype: Str::new(""), ndim: 0, shape: std::ptr::null(), data: std::ptr::null(), len: 0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dataio_abi::ops::{export_op, Call, ExportOp, Output};
    use dataio_abi::AbiError;

    struct Invert;
    impl ExportOp for Invert {
        fn name(&self) -> &str {
            "test_invert"
        }
        fn kind(&self) -> u32 {
            kind::TRANSFORM
        }
        fn run(&self, call: &Call<'_>, out: &mut Output<'_>) -> std::result::Result<(), AbiError> {
            let t = call.input.as_ref().ok_or_else(|| AbiError::new(status::INVALID_ARGUMENT, "no input"))?;
            if t.dtype != "uint8" {
                return Err(AbiError::new(status::INVALID_ARGUMENT, format!("needs uint8, got {}", t.dtype)));
            }
            let dst = out.alloc("uint8", &t.shape)?;
            for (d, s) in dst.iter_mut().zip(t.data) {
                *d = 255 - s;
            }
            Ok(())
        }
    }

    struct Keyed;
    impl ExportOp for Keyed {
        fn name(&self) -> &str {
            "test_keyed"
        }
        fn kind(&self) -> u32 {
            kind::DECODE
        }
        fn run(&self, call: &Call<'_>, out: &mut Output<'_>) -> std::result::Result<(), AbiError> {
            if call.data.is_empty() {
                return Err(AbiError::new(status::CORRUPT, "no bytes"));
            }
            if call.data == b"panic" {
                panic!("asked to");
            }
            let dst = out.alloc("uint64", &[2])?;
            dst[..8].copy_from_slice(&call.key.draw(0).to_le_bytes());
            dst[8..].copy_from_slice(&(call.data.len() as u64).to_le_bytes());
            Ok(())
        }
    }

    fn key(epoch: u64) -> CallKey {
        CallKey { seed: Some(1), epoch, index: 7, stream: 3 }
    }

    #[test]
    fn a_registered_table_runs_and_reports_failures_by_kind() {
        // SAFETY: fresh tables from export_op, handed over once each.
        unsafe {
            register("test_invert", false, export_op(Invert)).unwrap();
            register("test_keyed", true, export_op(Keyed)).unwrap();
        }
        let inv = get("test_invert").unwrap();
        let t = Tensor::from_vec_u8(vec![2, 2, 1], &[0, 10, 200, 255]);
        let out = inv.prepare(&Map::new()).unwrap().transform(&t, key(0), "mem://x").unwrap();
        assert_eq!(out.bytes(), &[255, 245, 55, 0]);
        let bad = Tensor::from_bytes(DType::F32, vec![1], &[0; 4]).unwrap();
        let e = inv.prepare(&Map::new()).unwrap().transform(&bad, key(0), "mem://x").unwrap_err();
        assert!(e.to_string().contains("needs uint8"), "{e}");

        let k = get("test_keyed").unwrap();
        let a = k.prepare(&Map::new()).unwrap().decode(b"abc", key(0), "mem://x").unwrap();
        assert_eq!(a.bytes(), k.prepare(&Map::new()).unwrap().decode(b"abc", key(0), "mem://x").unwrap().bytes());
        assert_ne!(a.bytes(), k.prepare(&Map::new()).unwrap().decode(b"abc", key(1), "mem://x").unwrap().bytes());
        let e = k.prepare(&Map::new()).unwrap().decode(b"", key(0), "mem://x").unwrap_err();
        assert!(e.to_string().contains("no bytes"), "{e}");
        let e = k.prepare(&Map::new()).unwrap().decode(b"panic", key(0), "mem://x").unwrap_err();
        assert!(e.to_string().contains("panicked: asked to"), "{e}");
        assert!(unregister("test_keyed") && get("test_keyed").is_none());
    }

    /// Parameters of the version 2 test op.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[serde(default, deny_unknown_fields)]
    struct AddParams {
        /// Added to every value.
        amount: u8,
        /// A file whose first byte is added too.
        extra: Option<String>,
        /// Filled by prepare from `extra`.
        #[serde(skip)]
        #[schemars(skip)]
        loaded: std::sync::OnceLock<u8>,
    }

    impl Default for AddParams {
        fn default() -> Self {
            AddParams { amount: 1, extra: None, loaded: Default::default() }
        }
    }

    static PREPARES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    struct Add;
    impl dataio_abi::ops::Op for Add {
        const NAME: &'static str = "test_add";
        const DOC: &'static str = "Adds amount.";
        const KIND: u32 = kind::TRANSFORM;
        type Params = AddParams;
        fn prepare(&self, p: &AddParams, host: &dataio_abi::ops::Host<'_>) -> std::result::Result<(), AbiError> {
            PREPARES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if let Some(uri) = &p.extra {
                let _ = p.loaded.set(host.fetch(uri)?.first().copied().unwrap_or(0));
            }
            Ok(())
        }
        fn run(&self, p: &AddParams, call: &Call<'_>, out: &mut Output<'_>) -> std::result::Result<(), AbiError> {
            let t = call.input.as_ref().ok_or_else(|| AbiError::new(status::INVALID_ARGUMENT, "no input"))?;
            let add = p.amount.wrapping_add(p.loaded.get().copied().unwrap_or(0));
            for (d, s) in out.alloc("uint8", &t.shape)?.iter_mut().zip(t.data) {
                *d = s.wrapping_add(add);
            }
            Ok(())
        }
    }

    static DECLARED_RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    /// Takes and gives uint8 [H, W]; returns a flat [H * W] when the first
    /// value is 99 (an op that breaks its own declaration).
    struct Declares;
    impl dataio_abi::ops::Op for Declares {
        const NAME: &'static str = "test_declares";
        const DOC: &'static str = "Copies a uint8 matrix.";
        const KIND: u32 = kind::TRANSFORM;
        const OUTPUT_DTYPE: &'static str = "uint8";
        const OUTPUT_NDIM: i32 = 2;
        const INPUT_DTYPE: &'static str = "uint8";
        const INPUT_NDIM: i32 = 2;
        type Params = dataio_abi::ops::NoParams;
        fn run(&self, _: &Self::Params, call: &Call<'_>, out: &mut Output<'_>) -> std::result::Result<(), AbiError> {
            DECLARED_RUNS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let t = call.input.as_ref().ok_or_else(|| AbiError::new(status::INVALID_ARGUMENT, "no input"))?;
            let flat = [t.data.len() as u64];
            let shape: &[u64] = if t.data.first() == Some(&99) { &flat } else { &t.shape };
            out.alloc("uint8", shape)?.copy_from_slice(t.data);
            Ok(())
        }
    }

    #[test]
    fn a_call_is_held_to_what_the_op_declares_it_takes_and_gives() {
        // SAFETY: a fresh table, handed over once.
        unsafe { register_v2("test_declares", dataio_abi::ops::export_op_v2(Declares)) }.unwrap();
        let op = get("test_declares").unwrap();
        let words = |d: &Declared| d.words();
        assert_eq!(
            (words(op.takes()), words(op.gives())),
            ("uint8 with 2 dimensions".into(), "uint8 with 2 dimensions".into())
        );
        let p = op.prepare(&Map::new()).unwrap();
        let runs = || DECLARED_RUNS.load(std::sync::atomic::Ordering::SeqCst);
        let before = runs();
        assert_eq!(p.transform(&Tensor::from_vec_u8(vec![2, 2], &[1, 2, 3, 4]), key(0), "").unwrap().shape, [2, 2]);
        for (t, got) in [
            (Tensor::from_bytes(DType::F32, vec![2, 2], &[0; 16]).unwrap(), "float32 [2, 2]"),
            (Tensor::from_vec_u8(vec![1, 2, 2], &[1, 2, 3, 4]), "uint8 [1, 2, 2]"),
        ] {
            let e = p.transform(&t, key(0), "").unwrap_err();
            assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
            assert_eq!(e.to_string(), format!("test_declares takes uint8 with 2 dimensions, got {got}"));
        }
        assert_eq!(runs() - before, 1, "a refused input reached the op");
        let e = p.transform(&Tensor::from_vec_u8(vec![2, 2], &[99, 2, 3, 4]), key(0), "").unwrap_err().to_string();
        assert_eq!(
            e,
            "test_declares returned uint8 [4], but it declares uint8 with 2 dimensions (a bug of the op's plugin)"
        );
        assert!(unregister("test_declares"));
    }

    #[test]
    fn a_version_2_op_is_prepared_once_and_reads_side_files_through_the_host() {
        let table = dataio_abi::ops::export_op_v2(Add);
        // SAFETY: a fresh table, alive; then handed over once.
        let d = unsafe { declaration(table) }.unwrap();
        assert_eq!((d.name.as_str(), d.doc.as_str()), ("test_add", "Adds amount."));
        let params: Json = serde_json::from_str(&d.params).unwrap();
        assert_eq!(params["params"]["amount"]["default"], 1);
        assert_eq!(params["params"].as_object().unwrap().len(), 2, "{params}");
        // SAFETY: as above.
        unsafe { register_v2("test_add", table) }.unwrap();
        let op = get("test_add").unwrap();

        let dir = tempfile::tempdir().unwrap();
        let side = dir.path().join("extra.bin");
        std::fs::write(&side, [10u8]).unwrap();
        let mut p = Map::new();
        p.insert("amount".into(), Json::from(2));
        p.insert("extra".into(), Json::from(side.to_str().unwrap()));
        let before = PREPARES.load(std::sync::atomic::Ordering::SeqCst);
        let prepared = op.prepare(&p).unwrap();
        let t = Tensor::from_vec_u8(vec![2], &[0, 5]);
        for _ in 0..3 {
            assert_eq!(prepared.transform(&t, key(0), "").unwrap().bytes(), &[12, 17]);
        }
        assert_eq!(PREPARES.load(std::sync::atomic::Ordering::SeqCst) - before, 1);

        p.insert("amount".into(), Json::from("lots"));
        let e = op.prepare(&p).err().unwrap().to_string();
        assert!(e.contains("op test_add: amount=\"lots\""), "{e}");
        p.insert("amount".into(), Json::from(1));
        p.insert("extra".into(), Json::from(dir.path().join("missing").to_str().unwrap()));
        let e = op.prepare(&p).err().unwrap();
        assert!(matches!(e, Error::NotFound { .. }), "{e}");
        assert!(unregister("test_add"));
    }

    #[test]
    fn a_table_of_another_name_or_kind_is_refused() {
        // SAFETY: fresh tables, handed over once each (refused ones leak, a test).
        unsafe {
            let e = register("other", false, export_op(Invert)).unwrap_err();
            assert!(e.to_string().contains("named \"test_invert\""), "{e}");
            let e = register("test_invert2", true, export_op(Invert)).unwrap_err();
            assert!(e.to_string().contains("table is named"), "{e}");
            let e = register("test_invert", true, export_op(Invert)).unwrap_err();
            assert!(e.to_string().contains("kind=\"decode\""), "{e}");
            let e = register("x", true, std::ptr::null_mut()).unwrap_err();
            assert!(e.to_string().contains("null op table"), "{e}");
        }
    }
}
