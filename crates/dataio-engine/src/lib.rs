//! dataio's engine: everything that runs without Python.
//!
//! One folder per layer; a layer uses only the layers above it in this list
//! (checked by `tests/layers.rs`):
//!
//! * [`base`]: the error type, the guard around third-party code, tensors
//!   and their buffers, keyed randomness;
//! * [`host`]: the process-wide worker pools and the host probes;
//! * [`io`]: URIs, the storage contract and its local, C-ABI and registry
//!   parts, ranged reads, gzip and tar;
//! * [`plan`]: the pipeline IR — the op table and the compiled per-slot
//!   programs;
//! * [`order`]: which rank reads which records, in which order: ranks,
//!   layouts, the two-level shard order, the host partition, one rank's
//!   schedule and the mix of sources (keyed, deterministic; `base` only);
//! * [`kernels`]: image decode and geometry, the record formats;
//! * [`runtime`]: planner, loader, delivery and shard sources — records in,
//!   batches out.

pub mod base;
pub mod host;
pub mod io;
pub mod kernels;
pub mod order;
pub mod plan;
pub mod runtime;

pub use base::error::{Error, ErrorKind, Result, RowContext};

/// The engine's version (the package version; all packages move in lockstep).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
