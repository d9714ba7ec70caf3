//! The runtime: records in, batches out. [`planner`] turns a seed, an
//! epoch, a shard and a start position into the batches of an epoch
//! ([`order`] holds the orders and layouts, [`schedule`] takes one rank's
//! positions of them, [`mix`] interleaves sources); [`loader`]
//! runs them on the pools — fetch through [`crate::io`], per-slot programs
//! through the [`crate::kernels`] ([`slot`]), collation ([`batch`],
//! [`batch_ops`]) — and delivers them in order or as they finish, with the
//! resume position kept by [`delivery`]; [`pack`] turns token documents into
//! packed sequences (`dataio.pack`). [`shards`] are record sources over
//! WebDataset tar and TFRecord shards.
//!
//! The top layer: depends on every other.

pub mod batch;
pub mod batch_ops;
pub mod delivery;
pub mod loader;
pub mod native_ops;
pub mod pack;
pub mod planner;
pub mod record;
pub mod shards;
pub mod slot;
pub mod source;

pub use batch::{Batch, SlotValue};
pub use delivery::Delivery;
pub use loader::{Loader, Next, ObjectMetas, Options, Stats};
pub use planner::{PlanOptions, PlannedBatch, PlannedRow, PlannedSource};
pub use record::{Record, Value};
pub use source::{RecordSource, VecSource};
