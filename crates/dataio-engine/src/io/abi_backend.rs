//! Adapts a plugin's v1 C table (`dataio-abi`) into the engine's [`Backend`].
//!
//! Each call boxes its out-slots with a one-shot sender, hands the box to the
//! plugin as the completion token, and awaits the answer. If the awaiting
//! future is dropped early, the box (and any buffer the plugin is filling)
//! stays alive until the plugin completes, so a slow plugin can never write
//! into freed memory.

use crate::base::error::{Error, Result};
use crate::io::backend::{Backend, Capabilities, ObjectMeta, ObjectWriter, PutResult};
use async_trait::async_trait;
use bytes::Bytes;
use dataio_abi::{caps, status, BackendV1, Completion, ObjectMetaV1, OwnedBuf, Str};
use futures::channel::oneshot;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex};

/// A plugin's table, released when the last user drops it.
pub struct AbiBackend {
    table: *mut BackendV1,
    name: String,
}

// SAFETY: `check_table` verified the handshake; the ABI requires the plugin's
// functions to be callable from any thread, and the table is never mutated.
unsafe impl Send for AbiBackend {}
// SAFETY: as for `Send` above: an immutable table of thread-safe functions.
unsafe impl Sync for AbiBackend {}

impl Drop for AbiBackend {
    fn drop(&mut self) {
        // SAFETY: we own the table (transferred by `from_raw`) and release it once.
        unsafe { ((*self.table).release)((*self.table).ctx, self.table) };
    }
}

impl AbiBackend {
    /// Takes ownership of a table after checking its version and size.
    ///
    /// # Safety
    /// `table` must be a table a plugin made for this purpose and nobody else
    /// may release it.
    pub unsafe fn from_raw(table: *mut BackendV1) -> Result<Self> {
        // SAFETY: forwarded from the caller.
        unsafe { dataio_abi::check_table(table) }.map_err(Error::invalid)?;
        // SAFETY: checked non-null and readable above.
        let name = unsafe { (*table).name.as_str() }.to_string();
        Ok(AbiBackend { table, name })
    }

    fn t(&self) -> &BackendV1 {
        // SAFETY: valid for our lifetime, see `from_raw`.
        unsafe { &*self.table }
    }
}

struct Pending<S> {
    state: S,
    tx: Option<oneshot::Sender<(i32, String, S)>>,
}

unsafe extern "C" fn complete<S: Send>(user: *mut c_void, code: i32, msg: Str) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `user` is the Box<Pending<S>> leaked by `call`; the ABI
        // guarantees one completion per call, so we reclaim it exactly once.
        let req = unsafe { Box::from_raw(user as *mut Pending<S>) };
        // SAFETY: the message is valid for the duration of this callback.
        let msg = unsafe { msg.as_str() }.to_string();
        let Pending { state, tx } = *req;
        if let Some(tx) = tx {
            let _ = tx.send((code, msg, state));
        }
    }));
}

unsafe extern "C" fn collect_meta(user: *mut c_void, meta: *const ObjectMetaV1) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `user` points at the Vec inside a live Pending state, and
        // `meta` is valid for this call (ABI contract).
        let (out, m) = unsafe { (&mut *(user as *mut Vec<ObjectMeta>), &*meta) };
        // SAFETY: strings inside `m` are valid during the callback.
        let (uri, etag) = unsafe { (m.uri.as_str().to_string(), m.etag.as_str().to_string()) };
        out.push(ObjectMeta {
            uri,
            size: m.size,
            mtime: if m.mtime.is_nan() { None } else { Some(m.mtime) },
            etag: if etag.is_empty() { None } else { Some(etag) },
            is_dir: m.is_dir != 0,
        });
    }));
}

/// Starts one ABI call with `state` as its out-slots. Synchronous on purpose:
/// no raw pointer of the call is held across an `.await`.
fn start<S: Send + 'static>(state: S, begin: impl FnOnce(*mut S, Completion)) -> oneshot::Receiver<(i32, String, S)> {
    let (tx, rx) = oneshot::channel();
    let req = Box::into_raw(Box::new(Pending { state, tx: Some(tx) }));
    // SAFETY: `req` is a live box until `complete` reclaims it.
    let state_ptr = unsafe { &mut (*req).state as *mut S };
    begin(state_ptr, Completion { func: complete::<S>, user: req as *mut c_void });
    rx
}

/// Waits for the completion of a call made by [`start`].
async fn finish<S>(rx: oneshot::Receiver<(i32, String, S)>) -> (i32, String, Option<S>) {
    match rx.await {
        Ok((code, msg, state)) => (code, msg, Some(state)),
        Err(_) => (status::BACKEND, "the plugin dropped the request".into(), None),
    }
}

fn to_error(code: i32, msg: String, uri: &str) -> Error {
    // The error names the URI; a plugin's message that starts with it too
    // would name it twice.
    let msg = match msg.strip_prefix(uri).and_then(|m| m.strip_prefix(": ")) {
        Some(rest) => rest.to_string(),
        None => msg,
    };
    let uri = uri.to_string();
    match code {
        status::NOT_FOUND => Error::NotFound { uri, detail: msg },
        status::PERMISSION_DENIED => Error::PermissionDenied { uri, detail: msg },
        status::INVALID_ARGUMENT => Error::InvalidArgument(format!("{uri}: {msg}")),
        status::OUT_OF_RANGE => Error::RangeNotSatisfiable { uri, detail: msg },
        status::TRANSIENT => Error::Backend { uri, detail: msg, transient: true },
        status::UNSUPPORTED => Error::Unsupported { uri, what: msg },
        status::IS_A_DIRECTORY => Error::IsADirectory { uri },
        status::TIMEOUT => Error::Timeout { what: format!("{uri}: {msg}"), seconds: f64::NAN },
        _ => Error::Backend { uri, detail: msg, transient: false },
    }
}

fn check(code: i32, msg: String, uri: &str) -> Result<()> {
    if code == status::OK {
        Ok(())
    } else {
        Err(to_error(code, msg, uri))
    }
}

/// Keeps a caller's buffer borrowed until the plugin has finished with it,
/// even if the awaiting future is dropped.
struct DoneGate(Arc<(Mutex<bool>, Condvar)>);
impl Drop for DoneGate {
    fn drop(&mut self) {
        let (lock, cv) = &*self.0;
        let mut done = lock.lock().unwrap();
        while !*done {
            done = cv.wait(done).unwrap();
        }
    }
}

struct AbiWriter {
    backend: Arc<AbiBackend>,
    handle: *mut c_void,
    uri: String,
}
// SAFETY: the handle is only used by one call at a time (we take &mut self).
unsafe impl Send for AbiWriter {}

#[async_trait]
impl ObjectWriter for AbiWriter {
    async fn write(&mut self, data: Bytes) -> Result<()> {
        let rx = {
            let t = self.backend.t();
            let (ctx, f, handle) = (t.ctx, t.writer_write, self.handle);
            // `data` lives in the state, so it outlives the plugin's use of it.
            start(data, |s, done| {
                // SAFETY: `s` points at the Bytes kept alive until completion.
                let d = unsafe { &*s };
                // SAFETY: the ABI call (dataio-abi's contract): `handle` is the plugin's open writer and `d` stays alive in the pending state until `done` runs.
                unsafe { f(ctx, handle, d.as_ptr(), d.len(), done) }
            })
        };
        let (code, msg, _) = finish(rx).await;
        check(code, msg, &self.uri)
    }
    async fn commit(self: Box<Self>) -> Result<PutResult> {
        let rx = {
            let t = self.backend.t();
            let (ctx, f, handle) = (t.ctx, t.writer_commit, self.handle);
            // SAFETY: the ABI call (dataio-abi's contract): `handle` is the open writer, handed back once; `s` (a metadata Vec) lives in the pending state until `done` runs.
            start(Vec::<ObjectMeta>::new(), |s, done| unsafe { f(ctx, handle, collect_meta, s as *mut c_void, done) })
        };
        let (code, msg, state) = finish(rx).await;
        check(code, msg, &self.uri)?;
        let meta = state.and_then(|v| v.into_iter().next()).unwrap_or(ObjectMeta {
            uri: self.uri.clone(),
            size: 0,
            mtime: None,
            etag: None,
            is_dir: false,
        });
        Ok(PutResult { etag: meta.etag.unwrap_or_default(), size: meta.size })
    }
    async fn abort(self: Box<Self>) -> Result<()> {
        let rx = {
            let t = self.backend.t();
            let (ctx, f, handle) = (t.ctx, t.writer_abort, self.handle);
            // SAFETY: the ABI call (dataio-abi's contract): `handle` is the open writer, handed back once.
            start((), |_, done| unsafe { f(ctx, handle, done) })
        };
        let (code, msg, _) = finish(rx).await;
        check(code, msg, &self.uri)
    }
}

/// The backend type the registry stores for an ABI table.
pub struct AbiBackendRef(pub Arc<AbiBackend>);

#[async_trait]
impl Backend for AbiBackendRef {
    fn name(&self) -> &str {
        &self.0.name
    }
    fn capabilities(&self) -> Capabilities {
        let c = self.0.t().capabilities;
        Capabilities {
            write: c & caps::WRITE != 0,
            delete: c & caps::DELETE != 0,
            list: c & caps::LIST != 0,
            ranged_read: c & caps::RANGED_READ != 0,
            mapped: false,
        }
    }
    async fn head(&self, uri: &str) -> Result<ObjectMeta> {
        let rx = {
            let t = self.0.t();
            let (ctx, f) = (t.ctx, t.head);
            // SAFETY: the ABI call (dataio-abi's contract): `uri` is borrowed for the call only; `s` lives in the pending state until `done` runs.
            start(Vec::<ObjectMeta>::new(), |s, done| unsafe {
                f(ctx, Str::new(uri), collect_meta, s as *mut c_void, done)
            })
        };
        let (code, msg, state) = finish(rx).await;
        check(code, msg, uri)?;
        state.and_then(|v| v.into_iter().next()).ok_or_else(|| Error::Backend {
            uri: uri.into(),
            detail: "head returned no metadata".into(),
            transient: false,
        })
    }
    async fn read_range(&self, uri: &str, offset: u64, size: u64) -> Result<Bytes> {
        let rx = {
            let t = self.0.t();
            let (ctx, f) = (t.ctx, t.read_range);
            start(vec![0u8; size as usize], |s, done| {
                // SAFETY: the Vec lives in the pending state until completion.
                let ptr = unsafe { (*s).as_mut_ptr() };
                // SAFETY: the ABI call (dataio-abi's contract): `ptr` addresses the `size` bytes of the Vec kept in the pending state until `done` runs.
                unsafe { f(ctx, Str::new(uri), offset, size, ptr, done) }
            })
        };
        let (code, msg, state) = finish(rx).await;
        check(code, msg, uri)?;
        Ok(Bytes::from(state.unwrap_or_default()))
    }
    async fn read_into(&self, uri: &str, offset: u64, dst: &mut [u8]) -> Result<usize> {
        struct Flag(Arc<(Mutex<bool>, Condvar)>);
        impl Drop for Flag {
            fn drop(&mut self) {
                *self.0 .0.lock().unwrap() = true;
                self.0 .1.notify_all();
            }
        }
        let len = dst.len();
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        // Declared before the call starts: if this future is dropped early,
        // the gate blocks until the plugin has stopped writing into `dst`.
        let _wait = DoneGate(gate.clone());
        let rx = {
            let t = self.0.t();
            let (ctx, f) = (t.ctx, t.read_range);
            let ptr = dst.as_mut_ptr();
            // SAFETY: the ABI call (dataio-abi's contract): `ptr..ptr+len` is `dst`, which outlives the plugin's writes (if this future is dropped, `DoneGate` waits for completion).
            start(Flag(gate), |_, done| unsafe { f(ctx, Str::new(uri), offset, len as u64, ptr, done) })
        };
        let (code, msg, _) = finish(rx).await;
        check(code, msg, uri)?;
        Ok(len)
    }
    async fn read_all(&self, uri: &str) -> Result<Bytes> {
        let rx = {
            let t = self.0.t();
            let (ctx, f) = (t.ctx, t.read_all);
            struct Owned(OwnedBuf);
            // SAFETY: an OwnedBuf is a plain token until released.
            unsafe impl Send for Owned {}
            impl AsRef<[u8]> for Owned {
                fn as_ref(&self) -> &[u8] {
                    if self.0.len == 0 {
                        return &[];
                    }
                    // SAFETY: the plugin keeps `ptr..ptr+len` alive until release.
                    unsafe { std::slice::from_raw_parts(self.0.ptr, self.0.len) }
                }
            }
            impl Drop for Owned {
                fn drop(&mut self) {
                    if let Some(release) = self.0.release {
                        // SAFETY: released exactly once, with the plugin's owner token.
                        unsafe { release(self.0.owner) };
                    }
                }
            }
            let empty = Owned(OwnedBuf { ptr: std::ptr::null(), len: 0, owner: std::ptr::null_mut(), release: None });
            // SAFETY: the ABI call (dataio-abi's contract): the OwnedBuf slot `s` lives in the pending state until `done` runs; the plugin fills it once.
            start(empty, |s, done| unsafe { f(ctx, Str::new(uri), &mut (*s).0, done) })
        };
        let (code, msg, state) = finish(rx).await;
        check(code, msg, uri)?;
        Ok(state.map(Bytes::from_owner).unwrap_or_default())
    }
    async fn open_writer(&self, uri: &str) -> Result<Box<dyn ObjectWriter>> {
        let rx = {
            let t = self.0.t();
            let (ctx, f) = (t.ctx, t.writer_open);
            struct H(*mut c_void);
            // SAFETY: an opaque handle, only dereferenced by the plugin.
            unsafe impl Send for H {}
            // SAFETY: the ABI call (dataio-abi's contract): the handle slot `s` lives in the pending state until `done` runs.
            start(H(std::ptr::null_mut()), |s, done| unsafe { f(ctx, Str::new(uri), &mut (*s).0, done) })
        };
        let (code, msg, state) = finish(rx).await;
        check(code, msg, uri)?;
        let handle = state.map(|h| h.0).unwrap_or(std::ptr::null_mut());
        if handle.is_null() {
            return Err(Error::Backend {
                uri: uri.into(),
                detail: "writer_open returned no handle".into(),
                transient: false,
            });
        }
        Ok(Box::new(AbiWriter { backend: self.0.clone(), handle, uri: uri.to_string() }))
    }
    async fn list(&self, prefix: &str, recursive: bool) -> Result<Vec<ObjectMeta>> {
        let rx = {
            let t = self.0.t();
            let (ctx, f) = (t.ctx, t.list);
            // SAFETY: the ABI call (dataio-abi's contract): `prefix` is borrowed for the call only; `s` lives in the pending state until `done` runs.
            start(Vec::<ObjectMeta>::new(), |s, done| unsafe {
                f(ctx, Str::new(prefix), recursive as u8, collect_meta, s as *mut c_void, done)
            })
        };
        let (code, msg, state) = finish(rx).await;
        check(code, msg, prefix)?;
        Ok(state.unwrap_or_default())
    }
    async fn exists(&self, uri: &str) -> Result<bool> {
        let rx = {
            let t = self.0.t();
            let (ctx, f) = (t.ctx, t.exists);
            // SAFETY: the ABI call (dataio-abi's contract): `s` (one byte) lives in the pending state until `done` runs.
            start(0u8, |s, done| unsafe { f(ctx, Str::new(uri), s, done) })
        };
        let (code, msg, state) = finish(rx).await;
        check(code, msg, uri)?;
        Ok(state.unwrap_or(0) != 0)
    }
    async fn delete(&self, uri: &str) -> Result<()> {
        let rx = {
            let t = self.0.t();
            let (ctx, f) = (t.ctx, t.delete);
            // SAFETY: the ABI call (dataio-abi's contract): `uri` is borrowed for the call only.
            start((), |_, done| unsafe { f(ctx, Str::new(uri), done) })
        };
        let (code, msg, _) = finish(rx).await;
        check(code, msg, uri)
    }
}
