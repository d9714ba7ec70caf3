//! Streaming writes: bytes are buffered until `part_size`; a write that stays
//! below it is one atomic PUT at commit, a larger one becomes a multipart
//! upload whose parts go up while the caller keeps writing (at most
//! `max_part_uploads` in flight). Nothing is visible before commit: an
//! aborted (or failed) multipart upload is aborted on the store.

use crate::client::Inner;
use crate::errors::Place;
use dataio_abi::{AbiError, Meta};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayloadMut, WriteMultipart};
use std::sync::Arc;

enum State {
    Buffering(PutPayloadMut),
    Uploading(WriteMultipart),
    Closed,
}

/// The state behind one writer handle. The core makes one call at a time per
/// writer, so the lock is never contended; it exists because each call's
/// work runs on the plugin runtime after the ABI call has returned.
pub(crate) struct PendingWrite {
    pub(crate) inner: Arc<Inner>,
    pub(crate) store: Arc<dyn ObjectStore>,
    pub(crate) path: Path,
    pub(crate) bucket: String,
    pub(crate) key: String,
    written: u64,
    state: State,
}

pub(crate) type WriterCell = Arc<tokio::sync::Mutex<PendingWrite>>;

impl PendingWrite {
    pub(crate) fn new(inner: Arc<Inner>, store: Arc<dyn ObjectStore>, path: Path, bucket: String, key: String) -> Self {
        PendingWrite { inner, store, path, bucket, key, written: 0, state: State::Buffering(PutPayloadMut::new()) }
    }

    fn err(&self, e: object_store::Error) -> AbiError {
        let place = Place { bucket_word: self.inner.cfg.kind.bucket_word(), bucket: &self.bucket, key: &self.key };
        crate::errors::map(e, &place, &self.inner.cfg.redactor)
    }

    pub(crate) async fn write(&mut self, data: &[u8]) -> Result<(), AbiError> {
        let part_size = self.inner.cfg.part_size;
        let max_parts = self.inner.cfg.max_part_uploads;
        match &mut self.state {
            State::Closed => return Err(AbiError::new(dataio_abi::status::INVALID_ARGUMENT, "the writer is closed")),
            State::Buffering(buf) => {
                buf.extend_from_slice(data);
                if buf.content_length() >= part_size {
                    let buffered = std::mem::take(buf).freeze();
                    let upload = match self.store.put_multipart(&self.path).await {
                        Ok(u) => u,
                        Err(e) => {
                            self.state = State::Closed;
                            return Err(self.err(e));
                        }
                    };
                    let mut mp = WriteMultipart::new_with_chunk_size(upload, part_size);
                    for chunk in &buffered {
                        mp.put(chunk.clone());
                    }
                    self.state = State::Uploading(mp);
                }
            }
            State::Uploading(mp) => mp.write(data),
        }
        self.written += data.len() as u64;
        if let State::Uploading(mp) = &mut self.state {
            if let Err(e) = mp.wait_for_capacity(max_parts).await {
                return Err(self.err(e));
            }
        }
        Ok(())
    }

    pub(crate) async fn commit(&mut self) -> Result<Meta, AbiError> {
        let result = match std::mem::replace(&mut self.state, State::Closed) {
            State::Closed => return Err(AbiError::new(dataio_abi::status::INVALID_ARGUMENT, "the writer is closed")),
            State::Buffering(buf) => self.store.put(&self.path, buf.freeze()).await,
            State::Uploading(mp) => mp.finish().await,
        };
        let put = result.map_err(|e| self.err(e))?;
        Ok(Meta {
            uri: self.inner.uri_of(&self.bucket, &self.key),
            size: self.written,
            mtime: None,
            etag: put.e_tag.map(|t| t.trim_matches('"').to_string()),
            is_dir: false,
        })
    }

    pub(crate) async fn abort(&mut self) -> Result<(), AbiError> {
        match std::mem::replace(&mut self.state, State::Closed) {
            State::Uploading(mp) => mp.abort().await.map_err(|e| self.err(e)),
            State::Buffering(_) | State::Closed => Ok(()),
        }
    }
}

impl Drop for PendingWrite {
    fn drop(&mut self) {
        // A writer dropped mid-upload (neither committed nor aborted) must
        // not leave its parts behind.
        if let State::Uploading(mp) = std::mem::replace(&mut self.state, State::Closed) {
            crate::runtime::spawn(async move {
                let _ = mp.abort().await;
            });
        }
    }
}
