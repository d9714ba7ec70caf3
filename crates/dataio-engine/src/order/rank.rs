//! Which rank of which world reads: [`Rank`] (id, world size, padding),
//! checked, and how many records it gets of an epoch.

use crate::base::error::{Error, Result};

/// One rank of a world of `of` ranks (`dataio`'s `shard={"id", "of", "pad"}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rank {
    pub id: u64,
    pub of: u64,
    pub pad: bool,
}

impl Default for Rank {
    fn default() -> Self {
        Rank { id: 0, of: 1, pad: false }
    }
}

impl Rank {
    pub fn check(&self) -> Result<()> {
        if self.of == 0 {
            return Err(Error::invalid("shard: 'of' (the world size) must be >= 1"));
        }
        if self.id >= self.of {
            return Err(Error::invalid(format!(
                "shard: id {} is out of range for a world of {} (ids are 0..{})",
                self.id,
                self.of,
                self.of - 1
            )));
        }
        Ok(())
    }

    /// Records this rank gets in an epoch of `n`.
    pub fn count(&self, n: u64) -> u64 {
        if self.pad {
            n.div_ceil(self.of)
        } else if self.id < n {
            (n - self.id).div_ceil(self.of)
        } else {
            0
        }
    }
}
