//! The dataio backend ABI, version 1.
//!
//! A plugin's native module hands the core a `PyCapsule` named
//! [`CAPSULE_NAME`] whose pointer is a `*const BackendV1`. The core checks
//! `abi_version` and `struct_size` (the handshake), then calls the table from
//! its IO threads without the GIL.
//!
//! Rules of the edge:
//! * Every operation is asynchronous: the call returns at once and the plugin
//!   calls the [`Completion`] exactly once, from any thread, when done.
//! * Buffers belong to the side that allocated them. The core passes
//!   destination buffers in (`read_range`); anything the plugin returns
//!   (`read_all`) carries a release callback ([`OwnedBuf`]). Strings and
//!   metadata handed to a callback are valid only during that callback.
//! * No panic crosses the edge: [`export`] wraps every entry point in
//!   `catch_unwind`, and the core does the same for its callbacks.
//!
//! Plugins written in Rust implement [`ExportBackend`] and call [`export`];
//! the core adapts a table back into its `Backend` trait (`dataio-engine`'s
//! `abi_backend` module). Native decoders and transforms have their own
//! table, in [`ops`].

use std::ffi::{c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

pub mod host;
pub mod http;
pub mod ops;

pub const ABI_VERSION: u32 = 1;
pub const CAPSULE_NAME: &CStr = c"dataio.backend.v1";

/// Status codes carried by a completion.
pub mod status {
    pub const OK: i32 = 0;
    pub const NOT_FOUND: i32 = 1;
    pub const PERMISSION_DENIED: i32 = 2;
    pub const INVALID_ARGUMENT: i32 = 3;
    pub const OUT_OF_RANGE: i32 = 4;
    /// Worth retrying (throttling, connection reset, 5xx).
    pub const TRANSIENT: i32 = 5;
    pub const BACKEND: i32 = 6;
    pub const UNSUPPORTED: i32 = 7;
    pub const IS_A_DIRECTORY: i32 = 8;
    pub const TIMEOUT: i32 = 9;
    /// The plugin panicked; the message says where.
    pub const PANIC: i32 = 10;
    /// Input bytes an op cannot read (truncated, corrupt, unsupported).
    pub const CORRUPT: i32 = 11;
}

/// Capability bits of [`BackendV1::capabilities`].
pub mod caps {
    pub const WRITE: u32 = 1;
    pub const DELETE: u32 = 2;
    pub const LIST: u32 = 4;
    pub const RANGED_READ: u32 = 8;
}

/// A borrowed UTF-8 string.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Str {
    pub ptr: *const u8,
    pub len: usize,
}

impl Str {
    pub fn new(s: &str) -> Self {
        Str { ptr: s.as_ptr(), len: s.len() }
    }
    /// # Safety
    /// `ptr` must point to `len` bytes of UTF-8 valid for `'a`.
    pub unsafe fn as_str<'a>(&self) -> &'a str {
        if self.len == 0 {
            return "";
        }
        // SAFETY: the caller promises ptr/len describe live UTF-8 bytes.
        unsafe { std::str::from_utf8_unchecked(std::slice::from_raw_parts(self.ptr, self.len)) }
    }
}

/// Called once when an operation finishes. `msg` (UTF-8) is valid only
/// during the call and is empty on success.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Completion {
    pub func: unsafe extern "C" fn(user: *mut c_void, status: i32, msg: Str),
    pub user: *mut c_void,
}

// SAFETY: a completion is a function pointer plus an opaque token the core
// made for exactly one call; the core's callback is thread-safe.
unsafe impl Send for Completion {}

/// Metadata of one object; strings valid only during the callback that receives it.
#[repr(C)]
pub struct ObjectMetaV1 {
    pub uri: Str,
    pub size: u64,
    /// Seconds since the epoch; NaN when unknown.
    pub mtime: f64,
    /// Empty when unknown.
    pub etag: Str,
    pub is_dir: u8,
}

pub type MetaSink = unsafe extern "C" fn(sink: *mut c_void, meta: *const ObjectMetaV1);

/// A buffer the plugin allocated; the core calls `release(owner)` when done.
#[repr(C)]
pub struct OwnedBuf {
    pub ptr: *const u8,
    pub len: usize,
    pub owner: *mut c_void,
    pub release: Option<unsafe extern "C" fn(owner: *mut c_void)>,
}

/// The function table. Every `uri` is a full URI (`s3://bucket/key`).
#[repr(C)]
pub struct BackendV1 {
    pub abi_version: u32,
    /// `size_of::<BackendV1>()` as the plugin compiled it.
    pub struct_size: u32,
    pub capabilities: u32,
    pub name: Str,
    pub ctx: *mut c_void,
    pub head:
        unsafe extern "C" fn(ctx: *mut c_void, uri: Str, sink: MetaSink, sink_user: *mut c_void, done: Completion),
    /// Fills exactly `size` bytes at `dst` (valid until `done`).
    pub read_range:
        unsafe extern "C" fn(ctx: *mut c_void, uri: Str, offset: u64, size: u64, dst: *mut u8, done: Completion),
    pub read_all: unsafe extern "C" fn(ctx: *mut c_void, uri: Str, out: *mut OwnedBuf, done: Completion),
    /// Stores an opaque writer handle in `*out` before completing.
    pub writer_open: unsafe extern "C" fn(ctx: *mut c_void, uri: Str, out: *mut *mut c_void, done: Completion),
    /// `data` is valid until `done`.
    pub writer_write:
        unsafe extern "C" fn(ctx: *mut c_void, writer: *mut c_void, data: *const u8, len: usize, done: Completion),
    /// Consumes the writer. The etag is delivered through `sink` as an ObjectMetaV1.
    pub writer_commit: unsafe extern "C" fn(
        ctx: *mut c_void,
        writer: *mut c_void,
        sink: MetaSink,
        sink_user: *mut c_void,
        done: Completion,
    ),
    /// Consumes the writer; nothing becomes visible.
    pub writer_abort: unsafe extern "C" fn(ctx: *mut c_void, writer: *mut c_void, done: Completion),
    pub list: unsafe extern "C" fn(
        ctx: *mut c_void,
        prefix: Str,
        recursive: u8,
        sink: MetaSink,
        sink_user: *mut c_void,
        done: Completion,
    ),
    pub exists: unsafe extern "C" fn(ctx: *mut c_void, uri: Str, out: *mut u8, done: Completion),
    pub delete: unsafe extern "C" fn(ctx: *mut c_void, uri: Str, done: Completion),
    /// The core is done with the table; free `ctx` and the table.
    pub release: unsafe extern "C" fn(ctx: *mut c_void, table: *mut BackendV1),
}

// SAFETY: the table is immutable after export and the plugin promises its
// functions are callable from any thread.
unsafe impl Send for BackendV1 {}
// SAFETY: as for `Send` above: immutable after export, functions callable from any thread.
unsafe impl Sync for BackendV1 {}

/// Checks the handshake fields of a table.
///
/// # Safety
/// `table` must be null or point to a readable `BackendV1`-prefixed struct.
pub unsafe fn check_table(table: *const BackendV1) -> Result<(), String> {
    if table.is_null() {
        return Err("the capsule holds a null backend table".into());
    }
    // SAFETY: non-null and, by the caller's promise, readable for the header fields.
    let t = unsafe { &*table };
    if t.abi_version != ABI_VERSION {
        return Err(format!(
            "backend ABI version {} is not supported (this dataio speaks v{ABI_VERSION})",
            t.abi_version
        ));
    }
    if (t.struct_size as usize) < std::mem::size_of::<BackendV1>() {
        return Err(format!(
            "backend table is {} bytes, v{ABI_VERSION} needs {}",
            t.struct_size,
            std::mem::size_of::<BackendV1>()
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Plugin side: export a Rust implementation as a table.

/// An error a plugin reports: a status code and a message (never a secret).
#[derive(Debug, Clone)]
pub struct AbiError {
    pub status: i32,
    pub message: String,
}

impl AbiError {
    pub fn new(status: i32, message: impl Into<String>) -> Self {
        AbiError { status, message: message.into() }
    }
}

/// Owned metadata on the plugin side.
#[derive(Debug, Clone, Default)]
pub struct Meta {
    pub uri: String,
    pub size: u64,
    pub mtime: Option<f64>,
    pub etag: Option<String>,
    pub is_dir: bool,
}

/// Delivers one result back to the core, exactly once. Dropping it without
/// calling `ok`/`err` reports an error, so the core never waits forever.
pub struct Reply<T: ReplyValue> {
    done: Option<Completion>,
    slot: T::Slot,
}

/// Where a reply's value goes.
pub trait ReplyValue: Sized {
    type Slot: Send;
    /// # Safety
    /// `slot` must be the live destination the core passed for this call.
    unsafe fn deliver(self, slot: &Self::Slot);
}

impl<T: ReplyValue> Reply<T> {
    pub fn ok(mut self, value: T) {
        // SAFETY: the slot is the core's destination for this very call,
        // alive until the completion below runs.
        unsafe { value.deliver(&self.slot) };
        let done = self.done.take().expect("reply used twice");
        // SAFETY: calling the core's completion exactly once.
        unsafe { (done.func)(done.user, status::OK, Str::new("")) };
    }
    pub fn err(mut self, e: AbiError) {
        let done = self.done.take().expect("reply used twice");
        // SAFETY: calling the core's completion exactly once; the message
        // outlives the call.
        unsafe { (done.func)(done.user, e.status, Str::new(&e.message)) };
    }
    pub fn result(self, r: Result<T, AbiError>) {
        match r {
            Ok(v) => self.ok(v),
            Err(e) => self.err(e),
        }
    }
}

impl<T: ReplyValue> Drop for Reply<T> {
    fn drop(&mut self) {
        if let Some(done) = self.done.take() {
            let msg = "the plugin dropped a request without answering it";
            // SAFETY: the completion has not been called yet.
            unsafe { (done.func)(done.user, status::BACKEND, Str::new(msg)) };
        }
    }
}

/// `()` replies carry nothing.
impl ReplyValue for () {
    type Slot = ();
    unsafe fn deliver(self, _: &()) {}
}

/// A sink pointer the core owns.
#[derive(Clone, Copy)]
pub struct SinkSlot {
    sink: MetaSink,
    user: *mut c_void,
}
// SAFETY: the core's sinks are thread-safe and live until completion.
unsafe impl Send for SinkSlot {}

impl SinkSlot {
    fn emit(&self, m: &Meta) {
        let etag = m.etag.clone().unwrap_or_default();
        let raw = ObjectMetaV1 {
            uri: Str::new(&m.uri),
            size: m.size,
            mtime: m.mtime.unwrap_or(f64::NAN),
            etag: Str::new(&etag),
            is_dir: m.is_dir as u8,
        };
        // SAFETY: the core's sink, called with a struct valid for the call.
        unsafe { (self.sink)(self.user, &raw) };
    }
}

impl ReplyValue for Meta {
    type Slot = SinkSlot;
    unsafe fn deliver(self, slot: &SinkSlot) {
        slot.emit(&self);
    }
}

impl ReplyValue for Vec<Meta> {
    type Slot = SinkSlot;
    unsafe fn deliver(self, slot: &SinkSlot) {
        for m in &self {
            slot.emit(m);
        }
    }
}

pub struct BoolSlot(*mut u8);
// SAFETY: points into the core's request state, alive until completion.
unsafe impl Send for BoolSlot {}
impl ReplyValue for bool {
    type Slot = BoolSlot;
    unsafe fn deliver(self, slot: &BoolSlot) {
        // SAFETY: see BoolSlot.
        unsafe { *slot.0 = self as u8 };
    }
}

pub struct BufSlot(*mut OwnedBuf);
// SAFETY: points into the core's request state, alive until completion.
unsafe impl Send for BufSlot {}
impl ReplyValue for Vec<u8> {
    type Slot = BufSlot;
    unsafe fn deliver(self, slot: &BufSlot) {
        let boxed: Box<Vec<u8>> = Box::new(self);
        let (ptr, len) = (boxed.as_ptr(), boxed.len());
        unsafe extern "C" fn release_vec(owner: *mut c_void) {
            // SAFETY: `owner` is the Box<Vec<u8>> leaked below, released once.
            drop(unsafe { Box::from_raw(owner as *mut Vec<u8>) });
        }
        // SAFETY: see BufSlot.
        unsafe {
            *slot.0 = OwnedBuf { ptr, len, owner: Box::into_raw(boxed) as *mut c_void, release: Some(release_vec) };
        }
    }
}

/// A writer handle produced by `writer_open`.
pub struct WriterSlot(*mut *mut c_void);
// SAFETY: points into the core's request state, alive until completion.
unsafe impl Send for WriterSlot {}
pub struct WriterHandle(pub Box<dyn std::any::Any + Send>);
impl ReplyValue for WriterHandle {
    type Slot = WriterSlot;
    unsafe fn deliver(self, slot: &WriterSlot) {
        let boxed: Box<Box<dyn std::any::Any + Send>> = Box::new(self.0);
        // SAFETY: see WriterSlot.
        unsafe { *slot.0 = Box::into_raw(boxed) as *mut c_void };
    }
}

/// A destination the core owns: valid until the reply is sent.
pub struct Dst {
    pub ptr: *mut u8,
    pub len: usize,
}
// SAFETY: the core keeps the buffer alive and untouched until completion.
unsafe impl Send for Dst {}
impl Dst {
    /// # Safety
    /// Only before the reply for this request has been sent.
    pub unsafe fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: the core promised `len` writable bytes until completion.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

/// What a plugin implements. Each method must answer its `Reply` exactly once
/// (dropping it answers with an error). Methods may answer on another thread.
pub trait ExportBackend: Send + Sync + 'static {
    fn name(&self) -> &str;
    fn capabilities(&self) -> u32;
    fn head(&self, uri: String, reply: Reply<Meta>);
    fn read_range(&self, uri: String, offset: u64, dst: Dst, reply: Reply<()>);
    fn read_all(&self, uri: String, reply: Reply<Vec<u8>>);
    fn writer_open(&self, uri: String, reply: Reply<WriterHandle>);
    /// `data` stays valid until the reply.
    fn writer_write(&self, writer: &mut WriterHandle, data: Dst, reply: Reply<()>);
    fn writer_commit(&self, writer: WriterHandle, reply: Reply<Meta>);
    fn writer_abort(&self, writer: WriterHandle, reply: Reply<()>);
    fn list(&self, prefix: String, recursive: bool, reply: Reply<Vec<Meta>>);
    fn exists(&self, uri: String, reply: Reply<bool>);
    fn delete(&self, uri: String, reply: Reply<()>);
}

struct Exported {
    imp: Box<dyn ExportBackend>,
    name: String,
}

fn reply<T: ReplyValue>(done: Completion, slot: T::Slot) -> Reply<T> {
    Reply { done: Some(done), slot }
}

fn guard(done: Completion, what: &str, f: impl FnOnce()) {
    if catch_unwind(AssertUnwindSafe(f)).is_err() {
        // The Reply was dropped while unwinding and has already answered;
        // answering again would be a double completion. Only log.
        eprintln!("dataio-abi: plugin panicked in {what}");
        let _ = done;
    }
}

/// # Safety
/// `ctx` must be the `Exported` this module made.
unsafe fn imp<'a>(ctx: *mut c_void) -> &'a Exported {
    // SAFETY: `ctx` was produced by `export` and lives until `release`.
    unsafe { &*(ctx as *const Exported) }
}

unsafe extern "C" fn x_head(ctx: *mut c_void, uri: Str, sink: MetaSink, user: *mut c_void, done: Completion) {
    // SAFETY: ABI contract: `uri` is valid for this call.
    let uri = unsafe { uri.as_str() }.to_string();
    // SAFETY: `ctx` is the `Exported` that `export` made; it lives until `release`.
    guard(done, "head", || unsafe { imp(ctx) }.imp.head(uri, reply(done, SinkSlot { sink, user })));
}
unsafe extern "C" fn x_read_range(ctx: *mut c_void, uri: Str, offset: u64, size: u64, dst: *mut u8, done: Completion) {
    // SAFETY: ABI contract: `uri` is valid for this call.
    let uri = unsafe { uri.as_str() }.to_string();
    let dst = Dst { ptr: dst, len: size as usize };
    // SAFETY: `ctx` is the `Exported` that `export` made; it lives until `release`.
    guard(done, "read_range", || unsafe { imp(ctx) }.imp.read_range(uri, offset, dst, reply(done, ())));
}
unsafe extern "C" fn x_read_all(ctx: *mut c_void, uri: Str, out: *mut OwnedBuf, done: Completion) {
    // SAFETY: ABI contract: `uri` is valid for this call.
    let uri = unsafe { uri.as_str() }.to_string();
    // SAFETY: `ctx` is the `Exported` that `export` made; it lives until `release`.
    guard(done, "read_all", || unsafe { imp(ctx) }.imp.read_all(uri, reply(done, BufSlot(out))));
}
unsafe extern "C" fn x_writer_open(ctx: *mut c_void, uri: Str, out: *mut *mut c_void, done: Completion) {
    // SAFETY: ABI contract: `uri` is valid for this call.
    let uri = unsafe { uri.as_str() }.to_string();
    // SAFETY: `ctx` is the `Exported` that `export` made; it lives until `release`.
    guard(done, "writer_open", || unsafe { imp(ctx) }.imp.writer_open(uri, reply(done, WriterSlot(out))));
}
unsafe extern "C" fn x_writer_write(
    ctx: *mut c_void,
    writer: *mut c_void,
    data: *const u8,
    len: usize,
    done: Completion,
) {
    // SAFETY: `writer` is the Box<Box<dyn Any>> made by WriterHandle::deliver,
    // used by one call at a time per the core's contract.
    let handle = unsafe { &mut *(writer as *mut Box<dyn std::any::Any + Send>) };
    let mut wh = WriterHandle(std::mem::replace(handle, Box::new(())));
    let dst = Dst { ptr: data as *mut u8, len };
    // SAFETY: `ctx` is the `Exported` that `export` made; it lives until `release`.
    guard(done, "writer_write", || unsafe { imp(ctx) }.imp.writer_write(&mut wh, dst, reply(done, ())));
    *handle = wh.0;
}
unsafe extern "C" fn x_writer_commit(
    ctx: *mut c_void,
    writer: *mut c_void,
    sink: MetaSink,
    user: *mut c_void,
    done: Completion,
) {
    // SAFETY: ownership of the handle box comes back to us here, once.
    let handle = unsafe { Box::from_raw(writer as *mut Box<dyn std::any::Any + Send>) };
    guard(done, "writer_commit", || {
        // SAFETY: `ctx` is the `Exported` that `export` made; it lives until `release`.
        unsafe { imp(ctx) }.imp.writer_commit(WriterHandle(*handle), reply(done, SinkSlot { sink, user }))
    });
}
unsafe extern "C" fn x_writer_abort(ctx: *mut c_void, writer: *mut c_void, done: Completion) {
    // SAFETY: ownership of the handle box comes back to us here, once.
    let handle = unsafe { Box::from_raw(writer as *mut Box<dyn std::any::Any + Send>) };
    // SAFETY: `ctx` is the `Exported` that `export` made; it lives until `release`.
    guard(done, "writer_abort", || unsafe { imp(ctx) }.imp.writer_abort(WriterHandle(*handle), reply(done, ())));
}
unsafe extern "C" fn x_list(
    ctx: *mut c_void,
    prefix: Str,
    recursive: u8,
    sink: MetaSink,
    user: *mut c_void,
    done: Completion,
) {
    // SAFETY: ABI contract: `prefix` is valid for this call.
    let prefix = unsafe { prefix.as_str() }.to_string();
    // SAFETY: `ctx` is the `Exported` that `export` made; it lives until `release`.
    guard(done, "list", || unsafe { imp(ctx) }.imp.list(prefix, recursive != 0, reply(done, SinkSlot { sink, user })));
}
unsafe extern "C" fn x_exists(ctx: *mut c_void, uri: Str, out: *mut u8, done: Completion) {
    // SAFETY: ABI contract: `uri` is valid for this call.
    let uri = unsafe { uri.as_str() }.to_string();
    // SAFETY: `ctx` is the `Exported` that `export` made; it lives until `release`.
    guard(done, "exists", || unsafe { imp(ctx) }.imp.exists(uri, reply(done, BoolSlot(out))));
}
unsafe extern "C" fn x_delete(ctx: *mut c_void, uri: Str, done: Completion) {
    // SAFETY: ABI contract: `uri` is valid for this call.
    let uri = unsafe { uri.as_str() }.to_string();
    // SAFETY: `ctx` is the `Exported` that `export` made; it lives until `release`.
    guard(done, "delete", || unsafe { imp(ctx) }.imp.delete(uri, reply(done, ())));
}
unsafe extern "C" fn x_release(ctx: *mut c_void, table: *mut BackendV1) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: both were leaked by `export` and are released exactly once.
        unsafe {
            drop(Box::from_raw(ctx as *mut Exported));
            drop(Box::from_raw(table));
        }
    }));
}

/// Exports `backend` as a v1 table. Ownership passes to whoever calls
/// `release` on it (the core, when the capsule's backend is dropped).
pub fn export(backend: impl ExportBackend) -> *mut BackendV1 {
    let name = backend.name().to_string();
    let capabilities = backend.capabilities();
    let ctx = Box::into_raw(Box::new(Exported { imp: Box::new(backend), name }));
    // SAFETY: ctx is a fresh, valid Box pointer.
    let name = Str::new(unsafe { &(*ctx).name });
    Box::into_raw(Box::new(BackendV1 {
        abi_version: ABI_VERSION,
        struct_size: std::mem::size_of::<BackendV1>() as u32,
        capabilities,
        name,
        ctx: ctx as *mut c_void,
        head: x_head,
        read_range: x_read_range,
        read_all: x_read_all,
        writer_open: x_writer_open,
        writer_write: x_writer_write,
        writer_commit: x_writer_commit,
        writer_abort: x_writer_abort,
        list: x_list,
        exists: x_exists,
        delete: x_delete,
        release: x_release,
    }))
}
