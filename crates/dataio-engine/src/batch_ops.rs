//! Native batch transforms (run on a finished batch, without the GIL).

/// Names the plan compiler accepts.
pub const KNOWN: &[&str] = &[];
