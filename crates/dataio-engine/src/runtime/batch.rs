//! Batch assembly. A batch's fixed-shape slots are one preallocated buffer;
//! each record's task writes its own row (disjoint ranges, no lock). When the
//! last row lands, `finish` compacts away failed rows (skip mode), stacks
//! variable-shape slots when they agree, and produces the [`Batch`].

use super::record::Context;
use crate::base::error::Error;
use crate::base::tensor::{pooled, AlignedBuf, DType, Tensor};
use crate::plan::{Plan, Stack};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// One row's identity.
#[derive(Clone)]
pub struct RowMeta {
    pub index: u64,
    pub position: u64,
    pub key: String,
    pub context: Option<Context>,
}

enum SlotBuf {
    Static { shape: Vec<usize>, dtype: DType, row_bytes: usize, buf: Arc<AlignedBuf> },
    Dynamic,
}

/// A slot's value in a finished batch.
#[derive(Debug, Clone)]
pub enum SlotValue {
    /// One contiguous tensor, rows first.
    Stacked(Tensor),
    /// One entry per row; `None` where an optional slot was inactive or empty.
    List(Vec<Option<Tensor>>),
}

pub struct Batch {
    pub seq: u64,
    pub keys: Vec<String>,
    pub indices: Vec<u64>,
    pub contexts: Vec<Option<Context>>,
    pub slots: Vec<(String, SlotValue)>,
    /// Row errors of skipped rows.
    pub errors: Vec<Error>,
    /// This rank's schedule position after the batch's last record.
    pub end_position: u64,
}

impl std::fmt::Debug for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch")
            .field("seq", &self.seq)
            .field("keys", &self.keys)
            .field("slots", &self.slots)
            .field("errors", &self.errors)
            .finish()
    }
}

pub struct BatchBuilder {
    pub seq: u64,
    pub rows: Vec<RowMeta>,
    pub end_position: u64,
    slots: Vec<SlotBuf>,
    slot_names: Vec<String>,
    stack: Vec<Stack>,
    dynamic: Mutex<Vec<Vec<Option<Tensor>>>>,
    /// Per slot, per row: the static row was written.
    written: Mutex<Vec<Vec<bool>>>,
    errors: Mutex<Vec<Option<Error>>>,
    remaining: AtomicUsize,
}

// SAFETY: the static buffers are written through disjoint row ranges by the
// one task that owns each row (see `row_mut`), and read only in `finish`,
// after every task has finished (the `remaining` counter hit zero).
unsafe impl Sync for BatchBuilder {}

impl BatchBuilder {
    pub fn new(seq: u64, plan: &Plan, rows: Vec<RowMeta>, end_position: u64) -> Self {
        let n = rows.len();
        let slots = plan
            .slots
            .iter()
            .map(|s| match (&s.static_shape, s.dtype) {
                (Some(shape), Some(dtype)) => {
                    let row_bytes = shape.iter().product::<usize>() * dtype.size();
                    SlotBuf::Static { shape: shape.clone(), dtype, row_bytes, buf: Arc::new(pooled(row_bytes * n)) }
                }
                _ => SlotBuf::Dynamic,
            })
            .collect();
        BatchBuilder {
            seq,
            rows,
            end_position,
            slots,
            slot_names: plan.slots.iter().map(|s| s.name.clone()).collect(),
            stack: plan.slots.iter().map(|s| s.stack).collect(),
            dynamic: Mutex::new(vec![vec![None; n]; plan.slots.len()]),
            written: Mutex::new(vec![vec![false; n]; plan.slots.len()]),
            errors: Mutex::new((0..n).map(|_| None).collect()),
            remaining: AtomicUsize::new(n),
        }
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The static shape of a slot, when it has one.
    pub fn static_shape(&self, slot: usize) -> Option<&[usize]> {
        match &self.slots[slot] {
            SlotBuf::Static { shape, .. } => Some(shape),
            SlotBuf::Dynamic => None,
        }
    }

    /// The row's region of a static slot's buffer.
    ///
    /// # Safety
    /// Only the task that owns `row` may call this, and only before it calls `row_done`.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn row_mut(&self, slot: usize, row: usize) -> Option<&mut [u8]> {
        match &self.slots[slot] {
            // SAFETY: rows are disjoint and owned by one task (caller's promise).
            SlotBuf::Static { row_bytes, buf, .. } => Some(unsafe { buf.slice_mut(row * row_bytes, *row_bytes) }),
            SlotBuf::Dynamic => None,
        }
    }

    pub fn mark_written(&self, slot: usize, row: usize) {
        self.written.lock().unwrap()[slot][row] = true;
    }

    pub fn put_tensor(&self, slot: usize, row: usize, t: Tensor) {
        self.dynamic.lock().unwrap()[slot][row] = Some(t);
    }

    pub fn fail(&self, row: usize, e: Error) {
        self.errors.lock().unwrap()[row] = Some(e);
    }

    /// Marks a row finished; true for the row that completes the batch.
    pub fn row_done(&self) -> bool {
        self.remaining.fetch_sub(1, Ordering::AcqRel) == 1
    }

    /// Builds the batch. `skip`: failed rows are dropped and reported; else
    /// the first failure is returned as the batch's error.
    ///
    /// Call once, from the task whose `row_done` returned true (every row
    /// task has finished writing by then).
    pub fn finish(&self, skip: bool) -> Result<Batch, Error> {
        let errors = std::mem::take(&mut *self.errors.lock().unwrap());
        let ok: Vec<bool> = errors.iter().map(Option::is_none).collect();
        let mut row_errors: Vec<Error> = errors.into_iter().flatten().collect();
        if !skip && !row_errors.is_empty() {
            return Err(row_errors.swap_remove(0));
        }
        let keep: Vec<usize> = (0..ok.len()).filter(|&i| ok[i]).collect();
        let mut dynamic = std::mem::take(&mut *self.dynamic.lock().unwrap());
        let written = std::mem::take(&mut *self.written.lock().unwrap());
        let mut slots = Vec::with_capacity(self.slots.len());
        for (si, sb) in self.slots.iter().enumerate() {
            let name = self.slot_names[si].clone();
            let value = match sb {
                SlotBuf::Static { shape, dtype, row_bytes, buf } => {
                    let (dtype, row_bytes) = (*dtype, *row_bytes);
                    let all_written = keep.iter().all(|&r| written[si][r]);
                    // Compact kept rows to the front (rows only move down).
                    for (dst, &src) in keep.iter().enumerate() {
                        if dst != src {
                            // SAFETY: every task has finished; we own the buffer.
                            unsafe {
                                std::ptr::copy(
                                    buf.as_ptr().add(src * row_bytes),
                                    buf.as_mut_ptr().add(dst * row_bytes),
                                    row_bytes,
                                )
                            };
                        }
                    }
                    let buf = buf.clone();
                    if all_written {
                        let mut full = vec![keep.len()];
                        full.extend(shape);
                        SlotValue::Stacked(Tensor { dtype, shape: full, buf, offset: 0 })
                    } else {
                        SlotValue::List(
                            keep.iter()
                                .enumerate()
                                .map(|(dst, &src)| {
                                    written[si][src].then(|| Tensor {
                                        dtype,
                                        shape: shape.clone(),
                                        buf: buf.clone(),
                                        offset: dst * row_bytes,
                                    })
                                })
                                .collect(),
                        )
                    }
                }
                SlotBuf::Dynamic => {
                    let rows: Vec<Option<Tensor>> = keep.iter().map(|&r| dynamic[si][r].take()).collect();
                    stack_or_list(rows, self.stack[si])
                }
            };
            slots.push((name, value));
        }
        let rows: Vec<RowMeta> = keep.iter().map(|&r| self.rows[r].clone()).collect();
        Ok(Batch {
            seq: self.seq,
            keys: rows.iter().map(|r| r.key.clone()).collect(),
            indices: rows.iter().map(|r| r.index).collect(),
            contexts: rows.into_iter().map(|r| r.context).collect(),
            slots,
            errors: row_errors,
            end_position: self.end_position,
        })
    }
}

/// Stacks rows that agree in dtype and shape into one tensor; else a list.
fn stack_or_list(rows: Vec<Option<Tensor>>, stack: Stack) -> SlotValue {
    let first = rows.first().and_then(|r| r.as_ref());
    let uniform = stack == Stack::Auto
        && first.is_some()
        && rows.iter().all(|r| matches!((r, first), (Some(t), Some(f)) if t.dtype == f.dtype && t.shape == f.shape));
    if !uniform {
        return SlotValue::List(rows);
    }
    let f = first.unwrap();
    let row_bytes = f.nbytes();
    let buf = pooled(row_bytes * rows.len());
    for (i, r) in rows.iter().enumerate() {
        // SAFETY: fresh buffer we own; disjoint rows.
        unsafe { buf.slice_mut(i * row_bytes, row_bytes) }.copy_from_slice(r.as_ref().unwrap().bytes());
    }
    let mut shape = vec![rows.len()];
    shape.extend(&f.shape);
    SlotValue::Stacked(Tensor { dtype: f.dtype, shape, buf: Arc::new(buf), offset: 0 })
}
