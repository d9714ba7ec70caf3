//! The pipeline executor: records in, batches out.

pub mod batch;
pub mod batch_ops;
pub mod loader;
pub mod mix;
pub mod planner;
pub mod record;
pub mod schedule;
pub mod slot;
pub mod source;

pub use batch::{Batch, SlotValue};
pub use loader::{Loader, Next, Options, Stats};
pub use mix::{MixOrder, MixSpec, Part, Stop};
pub use planner::{PlannedBatch, PlannedRow, PlannedSource};
pub use record::{Record, Value};
pub use schedule::{Layout, Shard, ShardOrder};
pub use source::{RecordSource, VecSource};
