//! The process the engine runs in: its worker pools (one CPU pool, one IO
//! runtime) and the probes of the host behind the capability report.
//! Depends on nothing else in the engine.

pub mod pools;
pub mod probe;
