//! Bytes in and out, by URI. [`uri`] parses; [`backend`] is the storage
//! contract every scheme implements; [`local`] and [`abi_backend`] (a plugin
//! behind the C ABI) are implementations, and [`registry`] maps a URI to one.
//! [`ranges`] reads many byte ranges of one object in few requests;
//! [`archive`] reads gzip and tar over bytes already fetched; [`testing`] is
//! an in-memory backend behind the C ABI, for the ABI's own tests.
//!
//! Depends on [`crate::base`] and [`crate::host`] only.

pub mod abi_backend;
pub mod archive;
pub mod backend;
pub mod local;
pub mod ranges;
pub mod registry;
pub mod testing;
pub mod uri;
