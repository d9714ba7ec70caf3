//! The resume position: the rank position after the longest contiguous
//! prefix of delivered batches.
//!
//! Batches are numbered in plan order (`seq`) and each ends at a rank
//! position. Delivered in plan order, the position follows each batch. With
//! `order="completion"` a batch may be delivered before an earlier one: the
//! position then waits at the gap, so a job resumed from it replays the
//! batches after the gap rather than losing the one that was missing. The
//! native loader and every executor plugin (through
//! `dataio.contract.DeliveryTracker`) keep their position with this type.

use std::collections::BTreeMap;

#[derive(Debug, Clone)]
pub struct Delivery {
    position: u64,
    next_seq: u64,
    /// End positions of batches delivered past the prefix, by seq.
    ahead: BTreeMap<u64, u64>,
}

impl Delivery {
    /// Starts at rank position `start`, expecting batch `first_seq` next.
    pub fn new(start: u64, first_seq: u64) -> Self {
        Delivery { position: start, next_seq: first_seq, ahead: BTreeMap::new() }
    }

    /// Records that batch `seq`, ending at `end_position`, reached the consumer.
    /// A seq below the prefix (delivered twice) changes nothing.
    pub fn delivered(&mut self, seq: u64, end_position: u64) {
        if seq < self.next_seq {
            return;
        }
        self.ahead.insert(seq, end_position);
        while let Some(end) = self.ahead.remove(&self.next_seq) {
            self.position = end;
            self.next_seq += 1;
        }
    }

    /// The rank position a resumed job starts from.
    pub fn position(&self) -> u64 {
        self.position
    }

    /// Batches delivered past the first one still missing.
    pub fn ahead(&self) -> usize {
        self.ahead.len()
    }

    /// End positions of the batches delivered past the first one still missing.
    pub fn ahead_ends(&self) -> Vec<u64> {
        self.ahead.values().copied().collect()
    }

    /// The first batch not yet delivered, in plan order.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }
}

#[cfg(test)]
mod tests {
    use super::Delivery;

    #[test]
    fn in_order_delivery_follows_each_batch() {
        let mut d = Delivery::new(10, 0);
        assert_eq!(d.position(), 10);
        d.delivered(0, 14);
        d.delivered(1, 18);
        assert_eq!((d.position(), d.ahead(), d.next_seq()), (18, 0, 2));
    }

    #[test]
    fn a_batch_delivered_ahead_waits_for_the_gap() {
        let mut d = Delivery::new(0, 0);
        d.delivered(1, 8);
        d.delivered(2, 12);
        assert_eq!((d.position(), d.ahead()), (0, 2));
        d.delivered(0, 4);
        assert_eq!((d.position(), d.ahead()), (12, 0));
    }

    #[test]
    fn seqs_start_where_a_resumed_plan_starts_and_repeats_are_ignored() {
        let mut d = Delivery::new(100, 5);
        d.delivered(5, 104);
        d.delivered(5, 104);
        d.delivered(3, 1);
        assert_eq!((d.position(), d.ahead(), d.next_seq()), (104, 0, 6));
    }
}
