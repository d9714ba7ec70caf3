//! [`ObjStoreBackend`]: dataio's backend contract over object_store clients.
//!
//! Every ABI call parses the URI (`scheme://bucket/key`), spawns the request
//! on the plugin runtime and returns at once; the task answers the core's
//! [`Reply`]. Object stores have no directories, so a "directory" is a key
//! prefix followed by `/`: `head` and `exists` answer for one when objects
//! lie below it, listings report common prefixes with `is_dir`.

use crate::client::{Inner, Target};
use crate::config::StoreConfig;
use crate::runtime;
use crate::writer::{PendingWrite, WriterCell};
use dataio_abi::{caps, status, AbiError, Dst, ExportBackend, Meta, Reply, WriterHandle};
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt};
use std::future::Future;
use std::sync::Arc;

/// A backend for one scheme; one object_store client per bucket, built on
/// first use (and rebuilt in a forked child).
pub struct ObjStoreBackend {
    inner: Arc<Inner>,
}

impl ObjStoreBackend {
    /// Checks the configuration by building a client for a probe bucket
    /// name, so that a bad endpoint or key fails at registration.
    pub fn new(cfg: StoreConfig) -> Result<Self, AbiError> {
        let inner = Inner::new(cfg);
        // Azure may take the account from the URI (`container@account`).
        let probe = if inner.cfg.kind == crate::Kind::Azure { "dataio-probe@dataioprobe" } else { "dataio-probe" };
        inner.cfg.build(probe).map_err(|e| {
            AbiError::new(
                status::INVALID_ARGUMENT,
                inner.cfg.redactor.clean(&format!("bad {} configuration: {e}", inner.name)),
            )
        })?;
        Ok(ObjStoreBackend { inner: Arc::new(inner) })
    }

    /// Runs `op` on the plugin runtime and answers `reply` with its result.
    fn run<T, F, Fut>(&self, reply: Reply<T>, op: F)
    where
        T: dataio_abi::ReplyValue + Send + 'static,
        F: FnOnce(Arc<Inner>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, AbiError>> + Send + 'static,
    {
        let inner = self.inner.clone();
        runtime::spawn(async move { reply.result(op(inner).await) });
    }
}

fn key_path(key: &str) -> Result<Path, object_store::Error> {
    Ok(Path::parse(key)?)
}

impl Inner {
    /// Whether any object lies below `key/` (the bucket root when empty). A
    /// missing bucket is an error, so its message can say so.
    async fn has_children(&self, store: &dyn ObjectStore, key: &str) -> Result<bool, object_store::Error> {
        let prefix = if key.is_empty() { None } else { Some(key_path(key)?) };
        let mut listing = store.list(prefix.as_ref());
        match listing.next().await {
            None => Ok(false),
            Some(Ok(_)) => Ok(true),
            Some(Err(e)) => Err(e),
        }
    }

    fn not_found(&self, t: &Target) -> AbiError {
        AbiError::new(
            status::NOT_FOUND,
            format!("no such object ({} {:?}, key {:?})", self.cfg.kind.bucket_word(), t.bucket, t.key),
        )
    }

    async fn head(&self, uri: &str) -> Result<Meta, AbiError> {
        let t = self.target(uri)?;
        let store = self.client(&t.bucket)?;
        if !t.key.is_empty() && !uri.ends_with('/') {
            let path = key_path(&t.key).map_err(|e| self.err(&t, e))?;
            match store.head(&path).await {
                Ok(m) => return Ok(self.meta(&t.bucket, &m)),
                Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(self.err(&t, e)),
            }
        }
        match self.has_children(&*store, &t.key).await {
            Ok(true) => Ok(self.dir_meta(&t.bucket, &t.key)),
            Ok(false) if t.key.is_empty() => Ok(self.dir_meta(&t.bucket, "")),
            Ok(false) => Err(self.not_found(&t)),
            Err(e) => Err(self.err(&t, e)),
        }
    }

    async fn exists(&self, uri: &str) -> Result<bool, AbiError> {
        match self.head(uri).await {
            Ok(_) => Ok(true),
            Err(e) if e.status == status::NOT_FOUND => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn object(&self, uri: &str) -> Result<(Target, Arc<dyn ObjectStore>, Path), AbiError> {
        let t = self.target(uri)?;
        if t.key.is_empty() || uri.ends_with('/') {
            return Err(AbiError::new(status::IS_A_DIRECTORY, format!("{uri} names a prefix, not an object")));
        }
        let store = self.client(&t.bucket)?;
        let path = key_path(&t.key).map_err(|e| self.err(&t, e))?;
        Ok((t, store, path))
    }

    /// Fills `dst` with exactly `dst.len` bytes from `offset`, streaming the
    /// body straight into the caller's buffer.
    async fn read_range(&self, uri: &str, offset: u64, mut dst: Dst) -> Result<(), AbiError> {
        let (t, store, path) = self.object(uri)?;
        let len = dst.len as u64;
        if len == 0 {
            let size = store.head(&path).await.map_err(|e| self.err(&t, e))?.size;
            if offset > size {
                return Err(out_of_range(offset, len, size));
            }
            return Ok(());
        }
        let options = GetOptions { range: Some(GetRange::Bounded(offset..offset + len)), ..Default::default() };
        let result = match store.get_opts(&path, options).await {
            Ok(r) => r,
            Err(e) => {
                let mapped = self.err(&t, e);
                if mapped.status == status::OUT_OF_RANGE || mapped.status == status::BACKEND {
                    // Say how long the object is when the store refused the range.
                    if let Ok(m) = store.head(&path).await {
                        if offset + len > m.size {
                            return Err(out_of_range(offset, len, m.size));
                        }
                    }
                }
                return Err(mapped);
            }
        };
        if result.range.end - result.range.start != len {
            return Err(out_of_range(offset, len, result.meta.size));
        }
        // SAFETY: the core keeps `dst` alive and untouched until we reply,
        // which happens only after this function returns.
        let out = unsafe { dst.as_mut_slice() };
        let mut filled = 0usize;
        let mut body = result.into_stream();
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| self.err(&t, e))?;
            let end = filled + chunk.len();
            if end > out.len() {
                return Err(AbiError::new(
                    status::BACKEND,
                    format!("the store sent more than the {len} bytes asked for"),
                ));
            }
            out[filled..end].copy_from_slice(&chunk);
            filled = end;
        }
        if filled != out.len() {
            return Err(AbiError::new(status::TRANSIENT, format!("the body ended after {filled} of {len} bytes")));
        }
        Ok(())
    }

    async fn read_all(&self, uri: &str) -> Result<Vec<u8>, AbiError> {
        let (t, store, path) = self.object(uri)?;
        let result = store.get(&path).await.map_err(|e| self.err(&t, e))?;
        let mut out = Vec::with_capacity(result.meta.size as usize);
        let mut body = result.into_stream();
        while let Some(chunk) = body.next().await {
            out.extend_from_slice(&chunk.map_err(|e| self.err(&t, e))?);
        }
        Ok(out)
    }

    async fn list(&self, prefix: &str, recursive: bool) -> Result<Vec<Meta>, AbiError> {
        let t = self.target(prefix)?;
        let store = self.client(&t.bucket)?;
        let base = if t.key.is_empty() { None } else { Some(key_path(&t.key).map_err(|e| self.err(&t, e))?) };
        let mut out: Vec<Meta> = if recursive {
            let metas: Vec<object_store::ObjectMeta> =
                store.list(base.as_ref()).try_collect().await.map_err(|e| self.err(&t, e))?;
            metas.iter().map(|m| self.meta(&t.bucket, m)).collect()
        } else {
            let listing = store.list_with_delimiter(base.as_ref()).await.map_err(|e| self.err(&t, e))?;
            let mut v: Vec<Meta> = listing.objects.iter().map(|m| self.meta(&t.bucket, m)).collect();
            v.extend(listing.common_prefixes.iter().map(|p| self.dir_meta(&t.bucket, p.as_ref())));
            v
        };
        if out.is_empty() && !t.key.is_empty() {
            // Not a prefix: perhaps the object itself, else nothing at all.
            if let Some(path) = &base {
                match store.head(path).await {
                    Ok(m) => out.push(self.meta(&t.bucket, &m)),
                    Err(object_store::Error::NotFound { .. }) => return Err(self.not_found(&t)),
                    Err(e) => return Err(self.err(&t, e)),
                }
            }
        }
        out.sort_by(|a, b| a.uri.cmp(&b.uri));
        Ok(out)
    }

    async fn delete(&self, uri: &str) -> Result<(), AbiError> {
        let (t, store, path) = self.object(uri)?;
        // Stores answer a DELETE of a missing key with success; dataio's
        // contract is FileNotFoundError.
        match store.head(&path).await {
            Ok(_) => {}
            Err(object_store::Error::NotFound { .. }) => return Err(self.not_found(&t)),
            Err(e) => return Err(self.err(&t, e)),
        }
        store.delete(&path).await.map_err(|e| self.err(&t, e))
    }
}

fn out_of_range(offset: u64, len: u64, size: u64) -> AbiError {
    AbiError::new(
        status::OUT_OF_RANGE,
        format!("byte range [{offset}, {}) lies beyond the end of the object ({size} bytes)", offset + len),
    )
}

fn cell(writer: &WriterHandle) -> Result<WriterCell, AbiError> {
    writer
        .0
        .downcast_ref::<WriterCell>()
        .cloned()
        .ok_or_else(|| AbiError::new(status::INVALID_ARGUMENT, "not a writer of this backend"))
}

impl ExportBackend for ObjStoreBackend {
    fn name(&self) -> &str {
        &self.inner.name
    }

    fn capabilities(&self) -> u32 {
        caps::WRITE | caps::DELETE | caps::LIST | caps::RANGED_READ
    }

    fn head(&self, uri: String, reply: Reply<Meta>) {
        self.run(reply, move |b| async move { b.head(&uri).await });
    }

    fn read_range(&self, uri: String, offset: u64, dst: Dst, reply: Reply<()>) {
        self.run(reply, move |b| async move { b.read_range(&uri, offset, dst).await });
    }

    fn read_all(&self, uri: String, reply: Reply<Vec<u8>>) {
        self.run(reply, move |b| async move { b.read_all(&uri).await });
    }

    fn writer_open(&self, uri: String, reply: Reply<WriterHandle>) {
        self.run(reply, move |b| async move {
            let (t, store, path) = b.object(&uri)?;
            let pending = PendingWrite::new(b.clone(), store, path, t.bucket, t.key);
            let cell: WriterCell = Arc::new(tokio::sync::Mutex::new(pending));
            Ok(WriterHandle(Box::new(cell)))
        });
    }

    fn writer_write(&self, writer: &mut WriterHandle, mut data: Dst, reply: Reply<()>) {
        let cell = match cell(writer) {
            Ok(c) => c,
            Err(e) => return reply.err(e),
        };
        self.run(reply, move |_| async move {
            let mut w = cell.lock().await;
            // SAFETY: the core keeps `data` alive until we reply, after this.
            let bytes = unsafe { data.as_mut_slice() };
            w.write(bytes).await
        });
    }

    fn writer_commit(&self, writer: WriterHandle, reply: Reply<Meta>) {
        let cell = match cell(&writer) {
            Ok(c) => c,
            Err(e) => return reply.err(e),
        };
        self.run(reply, move |_| async move { cell.lock().await.commit().await });
    }

    fn writer_abort(&self, writer: WriterHandle, reply: Reply<()>) {
        let cell = match cell(&writer) {
            Ok(c) => c,
            Err(e) => return reply.err(e),
        };
        self.run(reply, move |_| async move { cell.lock().await.abort().await });
    }

    fn list(&self, prefix: String, recursive: bool, reply: Reply<Vec<Meta>>) {
        self.run(reply, move |b| async move { b.list(&prefix, recursive).await });
    }

    fn exists(&self, uri: String, reply: Reply<bool>) {
        self.run(reply, move |b| async move { b.exists(&uri).await });
    }

    fn delete(&self, uri: String, reply: Reply<()>) {
        self.run(reply, move |b| async move { b.delete(&uri).await });
    }
}
