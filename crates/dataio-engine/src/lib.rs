//! dataio's engine: everything that runs without Python.
//!
//! Layers, bottom up: [`error`] and [`uri`]; the storage contract in
//! [`backend`] with the local backend in [`local`] and the C-ABI adapter in
//! [`abi_backend`]; the process-wide [`pools`]; [`archive`] helpers; host
//! [`probe`]s for the capability report.

pub mod abi_backend;
pub mod archive;
pub mod backend;
pub mod error;
pub mod exec;
pub mod formats;
pub mod guard;
pub mod image;
pub mod local;
pub mod plan;
pub mod pools;
pub mod probe;
pub mod ranges;
pub mod rng;
pub mod shards;
pub mod tensor;
pub mod testing;
pub mod uri;

pub use error::{Error, ErrorKind, Result, RowContext};

/// The engine's version (the package version; all packages move in lockstep).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
