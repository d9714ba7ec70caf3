//! dataio-rdma: one-sided RDMA over libfabric, in plain Rust.
//!
//! * [`fabric`] loads libfabric with dlopen on first use and wraps the C shim
//!   (`csrc/fabric_shim.c`) that calls libfabric's inline API through its ops
//!   tables.
//! * [`server::Server`] registers a region (anonymous memory or a read-only
//!   file map) and answers handshakes; [`client::Client`] connects, checks
//!   every range against the region, and moves bytes with pipelined
//!   `fi_read` / `fi_write` straight into or out of the caller's buffer.
//! * [`wire`] is the handshake; [`diagnose`] the host report.
//!
//! The Python layer (`packages/dataio-rdma`, `dataio_rdma._native`) only
//! converts types and releases the GIL.

pub mod client;
pub mod diagnose;
pub mod error;
pub mod fabric;
mod ffi;
pub mod region;
pub mod server;
pub mod wire;

pub use client::{Client, ConnectOptions, Transferred};
pub use error::{Error, ErrorKind, Result};
pub use fabric::{live_registrations, Memory, Op};
pub use region::Region;
pub use server::{ServeOptions, Server};
