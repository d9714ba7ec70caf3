//! The orders of sized sources and what they are built on: which rank of
//! which world and host reads ([`Rank`]), how a source is stored
//! ([`Layout`]), the two-level order of a sharded source ([`ShardOrder`]),
//! and the host partition of that order ([`assign`], [`HostOrder`]). The
//! schedule (one rank's positions, [`Schedule`]) and the mix (draws over
//! sources, [`MixOrder`]) build on them. The layer depends on `base` only;
//! one file per idea, each type exported once, here.
//!
//! ## The host partition
//!
//! A sharded source read by many hosts would have every host fetch every
//! shard if ranks took interleaved positions of one global order (each
//! window of that order holds samples of a few shards, and every rank takes
//! a share of every window): store traffic x hosts. Instead the shards are
//! assigned to a fixed number `C` of *canonical hosts* (partitions, by
//! sample count, fixed for a seed: [`assign`]); each partition has its own
//! two-level order ([`ShardOrder::partition`]), and each physical host reads
//! only its partitions' shards:
//!
//! * `C` a multiple of the host count `H`: host `h` reads partitions
//!   `h, h + H, ...`, merged round-robin; its `L` local ranks take
//!   interleaved positions of that stream. Each shard is fetched by one host.
//! * `H` a multiple of `C`: the `H / C` hosts of partition `p` (hosts
//!   `p, p + C, ...`) share its stream, their ranks interleaved. Exact, but
//!   each shard of `p` is then fetched by each of those hosts.
//! * Otherwise (say 4 -> 3 hosts) every rank takes interleaved positions of
//!   all partitions merged: every sample once, shards fetched by many hosts.
//!
//! The progress of an epoch is what each partition has consumed
//! ([`HostOrder::progress`]): a resume on the same layout continues each
//! rank's position; a resume on another host count continues each
//! partition from where it stood, so the rest of the epoch holds exactly
//! the samples the old layout would have delivered. With one canonical
//! host and one physical host this is the two-level order of the whole
//! source, position for position (tested).

mod hosts;
mod layout;
mod mix;
mod rank;
mod schedule;
mod shard_order;
#[cfg(test)]
mod tests;

pub use hosts::{assign, HostOrder, Hosts};
pub use layout::Layout;
pub use mix::{MixOrder, MixSpec, Part, Stop};
pub use rank::Rank;
pub use schedule::Schedule;
pub use shard_order::ShardOrder;
