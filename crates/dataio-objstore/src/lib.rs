//! Object-store backends for dataio's cloud plugins.
//!
//! One data path for `s3://` (and S3-compatible stores such as R2), `gs://`
//! and `az://`: the [`object_store`] crate's clients, exported to the core as
//! a `dataio.backend.v1` table ([`dataio_abi::ExportBackend`]). Every request
//! runs on this crate's own tokio runtime ([`runtime`]), because a plugin's
//! `cdylib` cannot share the core's (docs/arch.md, "Boundary change"); the
//! core's IO threads only await the completions.
//!
//! The Python side of each plugin resolves configuration and credentials with
//! the platform's SDK and calls [`python::init_module`]'s `backend()` with a
//! plain config mapping; short-lived credentials come back through a
//! [`TokenSource`] the Python side provides, asked only when the cached token
//! nears its expiry — never per request.

mod backend;
mod client;
mod config;
mod credentials;
mod errors;
pub mod runtime;
mod writer;

#[cfg(feature = "python")]
pub mod python;

pub use backend::ObjStoreBackend;
pub use config::{Kind, StoreConfig};
pub use credentials::{Token, TokenSource};
pub use errors::Redactor;
