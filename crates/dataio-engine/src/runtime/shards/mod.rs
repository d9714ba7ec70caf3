//! Datasets stored in shards: WebDataset tar (plain or gzip) and TFRecord
//! (plain or gzip) files, as one sized record source.
//!
//! * [`index`]: what a shard holds (its samples and where their bytes are),
//!   built once from the shard's bytes and kept on disk beside the shard's
//!   identity (URI, size, etag or mtime), so a second epoch or a restarted
//!   job never indexes again;
//! * [`cache`]: remote shards land in a local directory with a byte budget,
//!   shared by the processes of a host, written atomically, evicted least
//!   recently used, never while a reader holds them;
//! * [`source`]: the [`crate::runtime::RecordSource`] over many shards: its
//!   [`crate::order::Layout`] (samples per shard) lets the schedule shuffle
//!   two-level, and a bounded set of open shards serves `get` with slices of
//!   the shard's bytes (no copy, no Python object per sample).

pub mod cache;
pub mod index;
pub mod source;

pub use cache::{CacheStats, ShardCache};
pub use index::{Format, ShardIndex};
pub use source::{ShardSet, ShardSetOptions};
