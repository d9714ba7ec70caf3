//! The dataio op ABI: native decoders and transforms shipped in plugin
//! packages.
//!
//! **Version 2** (`ops/v2.rs`, capsule `dataio.op.v2`, what plugins write):
//! each op is declared once in Rust ([`Op`]: name, doc, kind, flags, a
//! serde + schemars parameter struct, Python hooks, output), its table
//! carries that declaration, and its parameters are parsed once per plan
//! ([`OpV2::prepare`]). [`crate::export_ops!`] writes the module's capsule
//! factory; `dataio.plugins.NativeOpsPlugin` registers every op from it.
//!
//! **Version 1** (this file's `OpV1`, capsule [`OP_CAPSULE_NAME`]) still
//! loads: a bare `run` given the parameters as JSON text, registered from
//! Python with its name, kind and parameter types (`register("name",
//! capsule, kind=..., params=...)`). The call, the output and the ranged
//! reader below are shared by both versions.
//!
//! The core checks `abi_version` and `struct_size` (the handshake) and that
//! the table's name is the registered one, then calls `run` from its CPU
//! pool, without the GIL, from many threads at once.
//!
//! Rules of the edge:
//! * `run` is synchronous and reentrant: one call per sample, on any thread.
//! * The core owns the output: the op asks for it once through
//!   [`OpOutV1::alloc`] (dtype name and shape) and fills exactly that many
//!   bytes; the core hands it on to the batch. Input bytes, the input tensor,
//!   the parameters and every string are valid only during the call.
//! * Randomness comes from the call's key (`seed`, `epoch`, `index`,
//!   `stream`), never from a global generator: the same key gives the same
//!   result on any worker, after a resume and on Ray ([`Key::draw`]).
//! * Failures are a status code and a message through [`OpOutV1::fail`]:
//!   [`crate::status::INVALID_ARGUMENT`] for a bad parameter or input shape,
//!   [`crate::status::CORRUPT`] for input bytes the op cannot read. The core
//!   adds the record, slot, URI and op to the message.
//! * No panic crosses the edge: the exported entry points wrap every call in
//!   `catch_unwind`.

use crate::{status, AbiError, Str};
use std::ffi::{c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

mod v2;
pub use v2::*;

pub const OP_ABI_VERSION: u32 = 1;
pub const OP_CAPSULE_NAME: &CStr = c"dataio.op.v1";

/// What an op does: [`OpV1::kind`].
pub mod kind {
    /// Bytes (the slot's field, read from its URI or given inline) to a tensor.
    pub const DECODE: u32 = 1;
    /// A tensor to a tensor.
    pub const TRANSFORM: u32 = 2;
}

/// Bits of [`OpV1::flags`].
pub mod flags {
    /// A decoder that reads its input by range: when the slot's field is a
    /// URI, the core does not read the object first but gives the call a
    /// [`super::ReaderV1`] over it (a video decoder reads one GOP of a large
    /// file). Bytes already in memory (inline, a tar shard member) come as
    /// `data`, with a reader over them.
    pub const RANGED_INPUT: u32 = 1;
    /// A decoder of text values: when the slot's field is a string, the
    /// call's `data` is the string's UTF-8 bytes, not the object a string
    /// field otherwise names (a caption, a jsonl document's text).
    pub const TEXT_INPUT: u32 = 2;
}

/// Ranged reads of a decoder's input (see [`flags::RANGED_INPUT`]).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ReaderV1 {
    /// The input's size in bytes.
    pub size: u64,
    pub core: *mut c_void,
    /// Fills exactly `len` bytes at `dst` from `offset` (`offset + len <=
    /// size`) and returns OK, or returns another status (the core keeps the
    /// reason and reports it if the op then fails). None when the call has
    /// no reader (a transform, or a decoder without RANGED_INPUT).
    pub read: Option<unsafe extern "C" fn(core: *mut c_void, offset: u64, len: u64, dst: *mut u8) -> i32>,
}

/// A C-contiguous tensor the core lends an op for one call.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TensorV1 {
    /// numpy's name: "uint8", "float32", ...
    pub dtype: Str,
    pub ndim: u32,
    pub shape: *const u64,
    pub data: *const u8,
    pub len: usize,
}

/// One call of an op on one sample.
#[repr(C)]
pub struct OpCallV1 {
    /// DECODE: the slot's bytes. TRANSFORM: empty.
    pub data: *const u8,
    pub len: usize,
    /// TRANSFORM: the input tensor. DECODE: empty (ndim 0, no data).
    pub input: TensorV1,
    /// The op's parameters as a JSON object (validated by the core against
    /// the types the plugin declared when it registered the op).
    pub params: Str,
    /// The run's seed (meaningless when `seeded` is 0), the epoch, the
    /// record's index and a stream id unique to this op in this slot.
    pub seed: u64,
    pub seeded: u8,
    pub epoch: u64,
    pub index: u64,
    pub stream: u64,
    /// Where the bytes came from, for messages ("" when given inline).
    pub uri: Str,
    /// Ranged reads of the input (RANGED_INPUT decoders).
    pub reader: ReaderV1,
    /// The version of the object at `uri` the reader reads, as the store
    /// gives it (its etag, else its mtime; "" when unknown): with `uri` and
    /// the reader's size it keys anything a plugin derives from the object
    /// and keeps (an index of its frames).
    pub version: Str,
}

/// How an op hands back its output or its failure.
#[repr(C)]
pub struct OpOutV1 {
    pub core: *mut c_void,
    /// Allocates the output tensor once per call: returns a writable buffer
    /// of exactly `prod(shape) * itemsize` bytes, or null (an unknown dtype,
    /// a second call, a size past the core's limit), in which case the op
    /// returns the status the core then reports.
    pub alloc: unsafe extern "C" fn(core: *mut c_void, dtype: Str, ndim: u32, shape: *const u64) -> *mut u8,
    /// Records why the call failed; `run` then returns `status`.
    pub fail: unsafe extern "C" fn(core: *mut c_void, status: i32, msg: Str),
}

/// One op's table.
#[repr(C)]
pub struct OpV1 {
    pub abi_version: u32,
    /// `size_of::<OpV1>()` as the plugin compiled it.
    pub struct_size: u32,
    /// [`kind::DECODE`] or [`kind::TRANSFORM`].
    pub kind: u32,
    /// [`flags`] bits.
    pub flags: u32,
    pub name: Str,
    pub ctx: *mut c_void,
    /// Runs the op; returns [`crate::status::OK`] with the output allocated
    /// and filled, or another status after calling `out.fail`.
    pub run: unsafe extern "C" fn(ctx: *mut c_void, call: *const OpCallV1, out: *const OpOutV1) -> i32,
    /// The core is done with the table; free `ctx` and the table.
    pub release: unsafe extern "C" fn(ctx: *mut c_void, table: *mut OpV1),
}

// SAFETY: the table is immutable after export and the plugin promises `run`
// is callable from any thread, concurrently.
unsafe impl Send for OpV1 {}
// SAFETY: as for `Send` above.
unsafe impl Sync for OpV1 {}

/// Checks the handshake fields of an op table.
///
/// # Safety
/// `table` must be null or point to a readable `OpV1`-prefixed struct.
pub unsafe fn check_op_table(table: *const OpV1) -> Result<(), String> {
    if table.is_null() {
        return Err("the capsule holds a null op table".into());
    }
    // SAFETY: non-null and, by the caller's promise, readable for the header fields.
    let t = unsafe { &*table };
    check_header((t.abi_version, OP_ABI_VERSION), (t.struct_size, std::mem::size_of::<OpV1>()), t.kind)
}

/// The checks every op table's header passes: its ABI version, a struct at
/// least as large as this side's, a known kind.
fn check_header((version, want): (u32, u32), (size, need): (u32, usize), op_kind: u32) -> Result<(), String> {
    if version != want {
        return Err(format!("op ABI version {version} is not the v{want} this capsule's name promises"));
    }
    if (size as usize) < need {
        return Err(format!("op table is {size} bytes, v{want} needs {need}"));
    }
    if op_kind != kind::DECODE && op_kind != kind::TRANSFORM {
        return Err(format!("op kind {op_kind} is neither DECODE (1) nor TRANSFORM (2)"));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Plugin side: export a Rust implementation as a table.

/// The key of a call's random draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    pub seed: Option<u64>,
    pub epoch: u64,
    pub index: u64,
    pub stream: u64,
}

impl Key {
    /// A 64-bit value of the key and `salt`, uniform and fixed for the key
    /// (splitmix64 over the fields): the building block of keyed draws.
    pub fn draw(&self, salt: u64) -> u64 {
        let mut h = 0x6a09_e667_f3bc_c909u64;
        for v in [self.seed.unwrap_or(0), self.seed.is_some() as u64, self.epoch, self.index, self.stream, salt] {
            h = splitmix(h ^ v);
        }
        h
    }
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A call as the plugin sees it.
pub struct Call<'a> {
    /// DECODE: the slot's bytes.
    pub data: &'a [u8],
    /// TRANSFORM: the input tensor.
    pub input: Option<TensorRef<'a>>,
    /// The parameters, as JSON text.
    pub params: &'a str,
    pub key: Key,
    pub uri: &'a str,
    /// Ranged reads of the input (decoders that set [`flags::RANGED_INPUT`]).
    pub reader: Option<Reader<'a>>,
    /// The object's version (etag, else mtime; "" when unknown): see [`OpCallV1::version`].
    pub version: &'a str,
    /// `data` by range, for [`Call::source`].
    memory: InMemory<'a>,
}

/// Ranged reads of a decoder's input.
pub struct Reader<'a> {
    raw: ReaderV1,
    _call: std::marker::PhantomData<&'a ()>,
}

/// A decoder's input read by range, whatever holds it: the core's reader
/// over an object ([`Reader`]) or bytes in memory ([`InMemory`]).
/// [`Call::source`] gives the call's; a plugin writes no adapter of its own.
pub trait RangeRead {
    /// The input's size in bytes.
    fn size(&self) -> u64;
    /// Fills `dst` from `offset`; a range past the end is `OUT_OF_RANGE`.
    fn read_at(&self, offset: u64, dst: &mut [u8]) -> Result<(), AbiError>;
}

fn out_of_range(offset: u64, len: usize, size: u64) -> AbiError {
    AbiError::new(status::OUT_OF_RANGE, format!("read of {len} bytes at {offset} past the end ({size} bytes)"))
}

impl RangeRead for Reader<'_> {
    fn size(&self) -> u64 {
        self.raw.size
    }

    fn read_at(&self, offset: u64, dst: &mut [u8]) -> Result<(), AbiError> {
        let end = offset.checked_add(dst.len() as u64).filter(|&e| e <= self.raw.size);
        if end.is_none() {
            return Err(out_of_range(offset, dst.len(), self.raw.size));
        }
        let read = self.raw.read.ok_or_else(|| AbiError::new(status::UNSUPPORTED, "no reader"))?;
        // SAFETY: the core's reader, valid for the call, filling exactly dst.len() bytes.
        let code = unsafe { read(self.raw.core, offset, dst.len() as u64, dst.as_mut_ptr()) };
        if code == status::OK {
            Ok(())
        } else {
            Err(AbiError::new(code, format!("reading {} bytes at {offset} failed", dst.len())))
        }
    }
}

/// Bytes in memory, read by range.
pub struct InMemory<'a>(pub &'a [u8]);

impl RangeRead for InMemory<'_> {
    fn size(&self) -> u64 {
        self.0.len() as u64
    }

    fn read_at(&self, offset: u64, dst: &mut [u8]) -> Result<(), AbiError> {
        let src = usize::try_from(offset)
            .ok()
            .and_then(|at| self.0.get(at..at.checked_add(dst.len())?))
            .ok_or_else(|| out_of_range(offset, dst.len(), self.0.len() as u64))?;
        dst.copy_from_slice(src);
        Ok(())
    }
}

impl<'a> Call<'a> {
    /// The decoder's input by range: the core's reader when the call has
    /// one ([`flags::RANGED_INPUT`] over an object), else the call's bytes.
    pub fn source(&self) -> &dyn RangeRead {
        match &self.reader {
            Some(r) => r,
            None => &self.memory,
        }
    }
}

/// A borrowed input tensor.
pub struct TensorRef<'a> {
    pub dtype: &'a str,
    pub shape: Vec<u64>,
    pub data: &'a [u8],
}

/// Where the plugin writes its output.
pub struct Output<'a> {
    out: &'a OpOutV1,
    taken: bool,
}

impl Output<'_> {
    /// The output buffer of a `dtype` tensor of `shape`: exactly its bytes.
    pub fn alloc(&mut self, dtype: &str, shape: &[u64]) -> Result<&mut [u8], AbiError> {
        if self.taken {
            return Err(AbiError::new(status::INVALID_ARGUMENT, "the output was allocated twice"));
        }
        self.taken = true;
        let size = itemsize(dtype)
            .ok_or_else(|| AbiError::new(status::INVALID_ARGUMENT, format!("unknown dtype {dtype:?}")))?;
        let n = shape
            .iter()
            .try_fold(size as u64, |acc, &d| acc.checked_mul(d))
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| AbiError::new(status::INVALID_ARGUMENT, format!("shape {shape:?} overflows")))?;
        // SAFETY: the core's allocator, called once with a shape valid for the call.
        let ptr = unsafe { (self.out.alloc)(self.out.core, Str::new(dtype), shape.len() as u32, shape.as_ptr()) };
        if ptr.is_null() {
            return Err(AbiError::new(
                status::INVALID_ARGUMENT,
                format!("the core refused an output of {dtype} {shape:?} ({n} bytes)"),
            ));
        }
        // SAFETY: the core returned a writable buffer of exactly n bytes, alive
        // until the call returns.
        Ok(unsafe { std::slice::from_raw_parts_mut(ptr, n) })
    }
}

/// Bytes per element of a dtype name the core accepts.
pub fn itemsize(dtype: &str) -> Option<usize> {
    Some(match dtype {
        "uint8" | "int8" | "bool" | "float8_e4m3fn" | "float8_e5m2" => 1,
        "uint16" | "int16" | "float16" | "bfloat16" => 2,
        "uint32" | "int32" | "float32" => 4,
        "uint64" | "int64" | "float64" => 8,
        _ => return None,
    })
}

/// A native op written in Rust.
pub trait ExportOp: Send + Sync + 'static {
    /// The name the op is registered under (`slot(...).<name>(...)`).
    fn name(&self) -> &str;
    /// [`kind::DECODE`] or [`kind::TRANSFORM`].
    fn kind(&self) -> u32;
    /// [`flags`] bits (none by default).
    fn flags(&self) -> u32 {
        0
    }
    /// Runs on one sample: allocate the output with `out.alloc` and fill it.
    fn run(&self, call: &Call<'_>, out: &mut Output<'_>) -> Result<(), AbiError>;
}

struct Exported<T: ExportOp> {
    op: T,
    name: Box<str>,
}

/// The capsule factory of a plugin's native module: a `#[pyfunction]`
/// `ops()` returning a fresh `dataio.op.v2` capsule of each listed op, in
/// order ([`v2::Op`]: each op's name, doc and parameters live in its
/// declaration and nowhere else). `dataio.plugins.NativeOpsPlugin(module)`
/// registers them all. The plugin crate depends on `pyo3` (the expansion
/// names it); add the function with `m.add_function(wrap_pyfunction!(ops, m)?)`.
/// A capsule nobody adopted releases its table when Python frees it.
///
/// ```ignore
/// dataio_abi::export_ops!(DecodeVideo, DecodeAudio, VideoInfo);
/// ```
#[macro_export]
macro_rules! export_ops {
    ($($op:expr),+ $(,)?) => {
        /// Fresh capsules of this module's native ops (their dataio.op.v2 tables), in declared order.
        #[pyo3::pyfunction]
        fn ops(py: pyo3::Python<'_>) -> pyo3::PyResult<Vec<pyo3::Py<pyo3::PyAny>>> {
            unsafe extern "C" fn release_unadopted(cap: *mut pyo3::ffi::PyObject) {
                // SAFETY: called by Python on a capsule this factory made; a
                // null context means the core never adopted the table.
                unsafe {
                    if pyo3::ffi::PyCapsule_GetContext(cap).is_null() {
                        let t = pyo3::ffi::PyCapsule_GetPointer(cap, $crate::ops::OP_V2_CAPSULE_NAME.as_ptr())
                            as *mut $crate::ops::OpV2;
                        if !t.is_null() {
                            ((*t).release)((*t).ctx, t);
                        }
                    }
                }
            }
            let tables = [$($crate::ops::export_op_v2($op)),+];
            tables
                .into_iter()
                .map(|table| {
                    // SAFETY: the name is a static C string; the table's
                    // ownership passes to whoever adopts the capsule (dataio,
                    // once), else back to the destructor.
                    unsafe {
                        let cap = pyo3::ffi::PyCapsule_New(
                            table.cast(),
                            $crate::ops::OP_V2_CAPSULE_NAME.as_ptr(),
                            Some(release_unadopted),
                        );
                        Ok(pyo3::Bound::from_owned_ptr_or_err(py, cap)?.unbind())
                    }
                })
                .collect()
        }
    };
}

/// Builds the table of `op`; the core releases it (hand it over in a
/// capsule named [`OP_CAPSULE_NAME`]: [`export_ops!`] writes the factory).
pub fn export_op<T: ExportOp>(op: T) -> *mut OpV1 {
    let name: Box<str> = op.name().into();
    let kind = op.kind();
    let op_flags = op.flags();
    let ctx = Box::into_raw(Box::new(Exported { op, name })) as *mut c_void;
    // SAFETY: `ctx` was just made from a Box<Exported<T>> and lives until release.
    let name = unsafe { Str::new(&(*(ctx as *const Exported<T>)).name) };
    Box::into_raw(Box::new(OpV1 {
        abi_version: OP_ABI_VERSION,
        struct_size: std::mem::size_of::<OpV1>() as u32,
        kind,
        flags: op_flags,
        name,
        ctx,
        run: run_exported::<T>,
        release: release_exported::<T>,
    }))
}

unsafe extern "C" fn run_exported<T: ExportOp>(ctx: *mut c_void, call: *const OpCallV1, out: *const OpOutV1) -> i32 {
    // SAFETY: the core passes the ctx of this table and a call and output
    // valid for the duration of this function.
    let (me, call, out) = unsafe { (&*(ctx as *const Exported<T>), &*call, &*out) };
    let r = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the core lends these buffers and strings for the call.
        let c = unsafe { borrow_call(call) };
        let mut o = Output { out, taken: false };
        me.op.run(&c, &mut o)
    }));
    let e = match r {
        Ok(Ok(())) => return status::OK,
        Ok(Err(e)) => e,
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            AbiError::new(status::PANIC, format!("op {} panicked: {what}", me.name))
        }
    };
    // SAFETY: the core's failure callback, with a message valid for the call.
    unsafe { (out.fail)(out.core, e.status, Str::new(&e.message)) };
    if e.status == status::OK {
        status::BACKEND
    } else {
        e.status
    }
}

/// # Safety
/// Every pointer in `call` must be valid for the lengths it gives, for `'a`.
unsafe fn borrow_call<'a>(call: &'a OpCallV1) -> Call<'a> {
    let bytes = |p: *const u8, n: usize| -> &'a [u8] {
        if n == 0 || p.is_null() {
            &[]
        } else {
            // SAFETY: the caller promises p/n describe live bytes for 'a.
            unsafe { std::slice::from_raw_parts(p, n) }
        }
    };
    let t = &call.input;
    let input = (!t.data.is_null() || t.ndim > 0).then(|| TensorRef {
        // SAFETY: dtype is a live UTF-8 string for the call.
        dtype: unsafe { t.dtype.as_str() },
        shape: if t.ndim == 0 || t.shape.is_null() {
            Vec::new()
        } else {
            // SAFETY: `ndim` dims at `shape`, live for the call.
            unsafe { std::slice::from_raw_parts(t.shape, t.ndim as usize) }.to_vec()
        },
        data: bytes(t.data, t.len),
    });
    let data = bytes(call.data, call.len);
    Call {
        data,
        memory: InMemory(data),
        input,
        // SAFETY: live UTF-8 strings for the call.
        params: unsafe { call.params.as_str() },
        key: Key {
            seed: (call.seeded != 0).then_some(call.seed),
            epoch: call.epoch,
            index: call.index,
            stream: call.stream,
        },
        // SAFETY: as above.
        uri: unsafe { call.uri.as_str() },
        reader: call.reader.read.map(|_| Reader { raw: call.reader, _call: std::marker::PhantomData }),
        // SAFETY: as above.
        version: unsafe { call.version.as_str() },
    }
}

unsafe extern "C" fn release_exported<T: ExportOp>(ctx: *mut c_void, table: *mut OpV1) {
    // SAFETY: both were made by export_op and are released exactly once.
    unsafe {
        drop(Box::from_raw(ctx as *mut Exported<T>));
        drop(Box::from_raw(table));
    }
}
