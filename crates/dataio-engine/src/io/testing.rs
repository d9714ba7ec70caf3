//! An in-memory backend exported through the C ABI, used to prove the ABI end
//! to end (cargo tests here, and the Python conformance suite through
//! `dataio._native._abi_memory_backend`). Answers on a separate thread, as a
//! real asynchronous plugin would.

use dataio_abi::{caps, status, AbiError, Dst, ExportBackend, Meta, Reply, WriterHandle};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

#[derive(Default, Clone)]
pub struct MemExport {
    objects: Arc<Mutex<BTreeMap<String, Vec<u8>>>>,
}

struct PendingWrite {
    uri: String,
    data: Vec<u8>,
}

fn not_found(uri: &str) -> AbiError {
    AbiError::new(status::NOT_FOUND, format!("no object {uri}"))
}

fn meta(uri: &str, data: &[u8]) -> Meta {
    Meta {
        uri: uri.to_string(),
        size: data.len() as u64,
        mtime: None,
        etag: Some(format!("{:016x}", data.len() as u64 ^ 0x5eed)),
        is_dir: false,
    }
}

impl ExportBackend for MemExport {
    fn name(&self) -> &str {
        "abi-memory"
    }
    fn capabilities(&self) -> u32 {
        caps::WRITE | caps::DELETE | caps::LIST | caps::RANGED_READ
    }
    fn head(&self, uri: String, reply: Reply<Meta>) {
        let objects = self.objects.clone();
        std::thread::spawn(move || {
            let r = objects.lock().unwrap().get(&uri).map(|d| meta(&uri, d)).ok_or_else(|| not_found(&uri));
            reply.result(r);
        });
    }
    fn read_range(&self, uri: String, offset: u64, mut dst: Dst, reply: Reply<()>) {
        let objects = self.objects.clone();
        std::thread::spawn(move || {
            let guard = objects.lock().unwrap();
            let r = match guard.get(&uri) {
                None => Err(not_found(&uri)),
                Some(d) => {
                    let end = offset as usize + dst.len;
                    if end > d.len() {
                        Err(AbiError::new(status::OUT_OF_RANGE, format!("[{offset}, {end}) beyond {}", d.len())))
                    } else {
                        // SAFETY: we have not replied yet, so the core's buffer is live.
                        unsafe { dst.as_mut_slice() }.copy_from_slice(&d[offset as usize..end]);
                        Ok(())
                    }
                }
            };
            drop(guard);
            reply.result(r);
        });
    }
    fn read_all(&self, uri: String, reply: Reply<Vec<u8>>) {
        let r = self.objects.lock().unwrap().get(&uri).cloned().ok_or_else(|| not_found(&uri));
        reply.result(r);
    }
    fn writer_open(&self, uri: String, reply: Reply<WriterHandle>) {
        if uri.ends_with('/') {
            return reply.err(AbiError::new(status::INVALID_ARGUMENT, "a write destination must name an object"));
        }
        reply.ok(WriterHandle(Box::new(PendingWrite { uri, data: Vec::new() })));
    }
    fn writer_write(&self, writer: &mut WriterHandle, mut data: Dst, reply: Reply<()>) {
        let w = writer.0.downcast_mut::<PendingWrite>().expect("foreign writer handle");
        // SAFETY: the core keeps `data` alive until we reply.
        w.data.extend_from_slice(unsafe { data.as_mut_slice() });
        reply.ok(());
    }
    fn writer_commit(&self, writer: WriterHandle, reply: Reply<Meta>) {
        let w = writer.0.downcast::<PendingWrite>().expect("foreign writer handle");
        let m = meta(&w.uri, &w.data);
        self.objects.lock().unwrap().insert(w.uri, w.data);
        reply.ok(m);
    }
    fn writer_abort(&self, _writer: WriterHandle, reply: Reply<()>) {
        reply.ok(());
    }
    fn list(&self, prefix: String, recursive: bool, reply: Reply<Vec<Meta>>) {
        let objects = self.objects.lock().unwrap();
        let dir = if prefix.ends_with('/') { prefix.clone() } else { format!("{prefix}/") };
        let mut out = Vec::new();
        let mut dirs = std::collections::BTreeSet::new();
        for (k, v) in objects.range(prefix.clone()..) {
            if !k.starts_with(&prefix) {
                break;
            }
            if k == &prefix {
                out.push(meta(k, v));
                continue;
            }
            let Some(rest) = k.strip_prefix(&dir) else {
                continue;
            };
            match rest.split_once('/') {
                Some((d, _)) if !recursive => {
                    dirs.insert(format!("{dir}{d}"));
                }
                _ => out.push(meta(k, v)),
            }
        }
        out.extend(dirs.into_iter().map(|d| Meta { uri: d, is_dir: true, ..Default::default() }));
        if out.is_empty() {
            return reply.err(not_found(&prefix));
        }
        reply.ok(out);
    }
    fn exists(&self, uri: String, reply: Reply<bool>) {
        let objects = self.objects.lock().unwrap();
        let dir = format!("{}/", uri.trim_end_matches('/'));
        reply.ok(objects.contains_key(&uri) || objects.keys().any(|k| k.starts_with(&dir)));
    }
    fn delete(&self, uri: String, reply: Reply<()>) {
        let r = self.objects.lock().unwrap().remove(&uri).map(|_| ()).ok_or_else(|| not_found(&uri));
        reply.result(r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::error::ErrorKind;
    use crate::io::abi_backend::{AbiBackend, AbiBackendRef};
    use crate::io::backend::Backend;
    use bytes::Bytes;
    use std::sync::Arc;

    #[test]
    fn a_table_round_trips_every_operation() {
        let table = dataio_abi::export(MemExport::default());
        // SAFETY: a fresh table from `export`, owned by the adapter from here on.
        let b = AbiBackendRef(Arc::new(unsafe { AbiBackend::from_raw(table) }.unwrap()));
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
        rt.block_on(async {
            assert_eq!(b.name(), "abi-memory");
            assert!(b.capabilities().write);
            let put = b.put("mem://b/x/a.bin", Bytes::from_static(b"0123456789")).await.unwrap();
            assert_eq!(put.size, 10);
            assert_eq!(&b.read_all("mem://b/x/a.bin").await.unwrap()[..], b"0123456789");
            assert_eq!(&b.read_range("mem://b/x/a.bin", 3, 4).await.unwrap()[..], b"3456");
            let mut buf = [0u8; 5];
            b.read_into("mem://b/x/a.bin", 5, &mut buf).await.unwrap();
            assert_eq!(&buf, b"56789");
            assert_eq!(b.head("mem://b/x/a.bin").await.unwrap().size, 10);
            let e = b.head("mem://b/nope").await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::NotFound);
            assert!(e.to_string().contains("mem://b/nope"));
            let mut w = b.open_writer("mem://b/x/y/c.bin").await.unwrap();
            w.write(Bytes::from_static(b"ab")).await.unwrap();
            w.write(Bytes::from_static(b"cd")).await.unwrap();
            assert!(!b.exists("mem://b/x/y/c.bin").await.unwrap(), "invisible before commit");
            w.commit().await.unwrap();
            assert_eq!(&b.read_all("mem://b/x/y/c.bin").await.unwrap()[..], b"abcd");
            let listing = b.list("mem://b/x/", false).await.unwrap();
            assert_eq!(listing.len(), 2);
            assert!(listing.iter().any(|m| m.is_dir && m.uri == "mem://b/x/y"));
            assert_eq!(b.list("mem://b/x/", true).await.unwrap().len(), 2);
            let hits = crate::io::backend::glob(&b, "mem://b/**/*.bin").await.unwrap();
            assert_eq!(hits.len(), 2);
            b.delete("mem://b/x/a.bin").await.unwrap();
            assert!(!b.exists("mem://b/x/a.bin").await.unwrap());
            let mut w = b.open_writer("mem://b/z").await.unwrap();
            w.write(Bytes::from_static(b"zz")).await.unwrap();
            w.abort().await.unwrap();
            assert!(!b.exists("mem://b/z").await.unwrap());
        });
    }

    #[test]
    fn a_wrong_version_is_refused_in_the_handshake() {
        let table = dataio_abi::export(MemExport::default());
        // SAFETY: we own the fresh table; we restore the version before releasing it.
        unsafe { (*table).abi_version = 99 };
        // SAFETY: a table `export` made; refused, so not taken over.
        let err = unsafe { AbiBackend::from_raw(table) }.err().unwrap();
        assert!(err.to_string().contains("ABI version 99"), "{err}");
        // SAFETY: still ours: restored to the right version, then handed over once.
        unsafe {
            (*table).abi_version = dataio_abi::ABI_VERSION;
            drop(AbiBackend::from_raw(table).unwrap());
        }
    }
}
