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

#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
mod backend;
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
mod client;
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
mod config;
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
mod credentials;
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
mod errors;
pub mod runtime;
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
mod writer;

#[cfg(feature = "http")]
pub mod http;

#[cfg(feature = "python")]
pub mod python;

#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
pub use backend::ObjStoreBackend;
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
pub use config::{Kind, StoreConfig};
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
pub use credentials::{Token, TokenSource};
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
pub use errors::Redactor;

#[cfg(not(any(feature = "s3", feature = "gcs", feature = "azure", feature = "http")))]
compile_error!("dataio-objstore needs a store family: enable its s3, gcs, azure or http feature");
