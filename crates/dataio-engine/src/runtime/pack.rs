//! Sequence packing (`dataio.pack`): tokenized documents, in the order the
//! loader delivers them, into fixed-length sequences that keep document
//! boundaries, deterministic and resumable without replaying the epoch.
//!
//! The loader feeds the packer *blocks*: the documents of one internal
//! batch of `window` records, which starts at a schedule position that is a
//! multiple of `window` (or the resume point, itself a block start). Every
//! sequence records its [`Origin`] in those terms, and the resume point
//! after a batch is the origin of the next sequence not delivered:
//!
//! * `best_fit` packs each block on its own (best-fit decreasing over the
//!   block's documents), so a block's sequences are a function of its
//!   documents, the seed, the epoch and the block's position: resuming
//!   re-reads that one block and drops the sequences already delivered.
//! * `concat` cuts the stream of documents (each followed by its end token)
//!   every `seq_len` tokens: a sequence's origin is its first token, a
//!   document of a block and an offset in it; resuming re-reads from that
//!   block and drops what came before the token.
//!
//! Either way a checkpoint holds three integers and the documents a resumed
//! run reads again are at most the current block's (plus, for `concat`,
//! those of the sequence being filled), never the epoch before it.

use super::batch::SlotValue;
use crate::base::error::{Error, Result};
use crate::base::rng::Stream;
use crate::base::tensor::{DType, Tensor};
use std::collections::{BTreeSet, VecDeque};

/// A block's documents as the packer reads them, taken from the slot the
/// engine produced: an int64 document (the tokenizer's output) is read
/// where it lies, a row of a stacked slot as a view of it; another integer
/// dtype is converted to i64 once.
pub struct Documents(Vec<Option<DocIds>>);

enum DocIds {
    /// `len` i64 ids at element `start` of an int64 tensor.
    InPlace {
        t: Tensor,
        start: usize,
        len: usize,
    },
    Owned(Vec<i64>),
}

impl Documents {
    /// The documents of a batch's slot: one per row.
    pub fn of_slot(value: SlotValue) -> Result<Self> {
        match value {
            SlotValue::List(items) => Self::of_tensors(items),
            SlotValue::Stacked(t) => {
                let rows = t.shape.first().copied().unwrap_or(1);
                let len = t.numel().checked_div(rows).unwrap_or(0);
                (0..rows).map(|r| DocIds::of(&t, r * len, len).map(Some)).collect::<Result<_>>().map(Documents)
            }
        }
    }

    /// One document per tensor (`None`: a row without one, dropped).
    pub fn of_tensors(items: Vec<Option<Tensor>>) -> Result<Self> {
        let docs = items.into_iter().map(|t| t.map(|t| DocIds::of(&t, 0, t.numel())).transpose());
        docs.collect::<Result<_>>().map(Documents)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn ids(&self) -> Vec<Option<&[i64]>> {
        self.0.iter().map(|d| d.as_ref().map(DocIds::ids)).collect()
    }
}

impl DocIds {
    fn of(t: &Tensor, start: usize, len: usize) -> Result<Self> {
        let size = t.dtype.size();
        let b = &t.bytes()[start * size..(start + len) * size];
        Ok(match t.dtype {
            DType::I64 if (b.as_ptr() as usize).is_multiple_of(8) => DocIds::InPlace { t: t.clone(), start, len },
            DType::I64 => DocIds::Owned(b.chunks_exact(8).map(|c| i64::from_ne_bytes(c.try_into().unwrap())).collect()),
            DType::I32 => {
                DocIds::Owned(b.chunks_exact(4).map(|c| i32::from_ne_bytes(c.try_into().unwrap()).into()).collect())
            }
            DType::U32 => {
                DocIds::Owned(b.chunks_exact(4).map(|c| u32::from_ne_bytes(c.try_into().unwrap()).into()).collect())
            }
            DType::U16 => {
                DocIds::Owned(b.chunks_exact(2).map(|c| u16::from_ne_bytes(c.try_into().unwrap()).into()).collect())
            }
            other => return Err(Error::invalid(format!("pack(): token ids must be integers, got {}", other.name()))),
        })
    }

    fn ids(&self) -> &[i64] {
        match self {
            DocIds::Owned(v) => v,
            DocIds::InPlace { t, start, len } => {
                let b = &t.bytes()[start * 8..(start + len) * 8];
                // SAFETY: int64 elements, 8-aligned (checked in `of`).
                unsafe { std::slice::from_raw_parts(b.as_ptr().cast::<i64>(), *len) }
            }
        }
    }
}

/// The random stream of a block's sequence order (an op id no per-record
/// op uses).
const PACK_OP: u64 = 0x7061_636b;

/// Label of a token whose next token is not its document's (and of padding).
pub const IGNORE: i64 = -100;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Concatenate and cut: no padding but at the end of the epoch;
    /// documents split at sequence edges.
    Concat,
    /// Whole documents placed by best-fit decreasing over a block; only
    /// documents longer than `seq_len` are split; the rest is padding.
    BestFit,
}

impl Strategy {
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "concat" => Ok(Strategy::Concat),
            "best_fit" => Ok(Strategy::BestFit),
            other => Err(Error::invalid(format!("pack(): strategy must be 'best_fit' or 'concat', got {other:?}"))),
        }
    }
}

impl Config {
    /// The one check of a packing's shape, where `dataio.pack(...)` is
    /// written (through the binding) and when a packer is made.
    pub fn check_shape(seq_len: i64, batch_size: i64) -> Result<()> {
        if !(1..1 << 30).contains(&seq_len) {
            return Err(Error::invalid(format!("pack(): seq_len must be at least 1 and below 2^30, got {seq_len}")));
        }
        if batch_size < 1 {
            return Err(Error::invalid(format!("pack(): batch_size must be positive, got {batch_size}")));
        }
        if batch_size.saturating_mul(seq_len) > i32::MAX as i64 {
            return Err(Error::invalid(format!(
                "pack(): batch_size * seq_len must fit int32 (cu_seqlens), got {batch_size} * {seq_len}"
            )));
        }
        Ok(())
    }
}

#[derive(Clone, Debug)]
pub struct Config {
    pub seq_len: usize,
    pub batch_size: usize,
    pub strategy: Strategy,
    /// Appended to every document (`add_eos`).
    pub eos: Option<i64>,
    /// The id padding positions hold in `input_ids`.
    pub pad: i64,
    /// Shuffles each block's sequences (best_fit), keyed by (seed, epoch, block).
    pub seed: Option<u64>,
    pub epoch: u64,
    /// Emit a last, short batch padded with empty sequences (else drop it).
    pub keep_last: bool,
}

/// Where a sequence starts, in terms a resumed loader can find again: the
/// schedule position of its block, and `(sequence ordinal, 0)` in the
/// block's packing (best_fit) or `(document ordinal, token offset)` in the
/// block (concat).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Origin {
    pub block: u64,
    pub a: u64,
    pub b: u64,
}

/// What the packer has done since it was made (this epoch, from its start
/// or its resume point).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PackStats {
    /// Documents packed (empty ones are dropped and not counted).
    pub documents: u64,
    /// Tokens of those documents, end tokens included.
    pub tokens: u64,
    /// Padding tokens in the sequences delivered.
    pub padding: u64,
    /// Sequences delivered (padded empty rows of a last batch included).
    pub sequences: u64,
    /// Documents cut into more than one piece.
    pub split: u64,
    /// Batches delivered.
    pub batches: u64,
    /// Tokens fed per group (a mix's source), when the feeder names them.
    pub group_tokens: std::collections::BTreeMap<u32, u64>,
}

/// One packed batch, row-major `[rows, seq_len]` where not said otherwise.
#[derive(Clone, Debug, PartialEq)]
pub struct Packed {
    pub rows: usize,
    pub seq_len: usize,
    pub input_ids: Vec<i64>,
    pub labels: Vec<i64>,
    pub position_ids: Vec<i64>,
    /// The document piece of each token within its row; -1 on padding.
    pub document_ids: Vec<i32>,
    /// Offsets of every piece (padding runs included, as pieces of their
    /// own) in the flattened batch: `[0, …, rows * seq_len]`.
    pub cu_seqlens: Vec<i32>,
    pub max_seqlen: u32,
}

#[derive(Debug)]
struct Seq {
    tokens: Vec<i64>,
    /// Length of each document piece, in order.
    pieces: Vec<u32>,
    origin: Origin,
}

pub struct Packer {
    cfg: Config,
    ready: VecDeque<Seq>,
    /// concat: the sequence being filled.
    open: Option<Seq>,
    /// The resume skip, applied to the first block fed.
    skip: Option<(u64, u64)>,
    /// Where the loader goes on after the blocks fed so far.
    next_block: u64,
    finished: bool,
    stats: PackStats,
}

impl Packer {
    /// A packer for an epoch read from schedule position `start` (a block
    /// start), dropping what `skip` says of the first block (a resume).
    pub fn new(cfg: Config, start: u64, skip: (u64, u64)) -> Result<Self> {
        Config::check_shape(
            i64::try_from(cfg.seq_len).unwrap_or(i64::MAX),
            i64::try_from(cfg.batch_size).unwrap_or(i64::MAX),
        )?;
        let skip = (skip != (0, 0)).then_some(skip);
        Ok(Packer {
            cfg,
            ready: VecDeque::new(),
            open: None,
            skip,
            next_block: start,
            finished: false,
            stats: PackStats::default(),
        })
    }

    pub fn stats(&self) -> &PackStats {
        &self.stats
    }

    /// The resume point after the batches delivered so far: a block start
    /// and what to drop of it.
    pub fn state(&self) -> Origin {
        if let Some(s) = self.ready.front().or(self.open.as_ref()) {
            return s.origin;
        }
        match self.skip {
            // Nothing fed since a resume: the same point again.
            Some((a, b)) => Origin { block: self.next_block, a, b },
            None => Origin { block: self.next_block, a: 0, b: 0 },
        }
    }

    /// Sequences ready to deliver.
    pub fn ready(&self) -> usize {
        self.ready.len()
    }

    /// Whether a batch can be delivered now.
    pub fn has_batch(&self) -> bool {
        self.ready.len() >= self.cfg.batch_size || (self.finished && !self.ready.is_empty() && self.cfg.keep_last)
    }

    /// Feeds the documents of the block at schedule position `block`, which
    /// covers `positions` positions (`docs` may be shorter when rows were
    /// skipped; an empty or `None` document is dropped). `groups`, when
    /// given, names each document's group for [`PackStats::group_tokens`].
    pub fn feed(&mut self, block: u64, positions: u64, docs: &[Option<&[i64]>], groups: Option<&[u32]>) -> Result<()> {
        self.feed_keyed(block, positions, docs, groups, block, (0, 0))
    }

    /// [`Packer::feed_keyed`] of a block's [`Documents`], as the engine
    /// produced them: no document is copied before it is placed.
    pub fn feed_documents(
        &mut self,
        block: u64,
        positions: u64,
        docs: &Documents,
        groups: Option<&[u32]>,
        key: u64,
        skip: (u64, u64),
    ) -> Result<()> {
        self.feed_keyed(block, positions, &docs.ids(), groups, key, skip)
    }

    /// [`Packer::feed`] of a block read elsewhere than at `block` (an
    /// elastic resume's units: another rank's block): `key` keys its rows'
    /// shuffle (the block's own position where it was read), and `skip`
    /// drops what of it was delivered before (the later of it and a resume
    /// skip, which both count from the block's start).
    pub fn feed_keyed(
        &mut self,
        block: u64,
        positions: u64,
        docs: &[Option<&[i64]>],
        groups: Option<&[u32]>,
        key: u64,
        skip: (u64, u64),
    ) -> Result<()> {
        if self.finished {
            return Err(Error::invalid("pack(): fed after the end of the epoch"));
        }
        if block != self.next_block {
            return Err(Error::invalid(format!(
                "pack(): a block at position {block} came where {} was expected",
                self.next_block
            )));
        }
        if let Some(g) = groups {
            if g.len() != docs.len() {
                return Err(Error::invalid(format!("pack(): {} groups for {} documents", g.len(), docs.len())));
            }
        }
        let skip = match self.skip.take() {
            Some(s) => Some(s.max(skip)),
            None => (skip != (0, 0)).then_some(skip),
        };
        if let Some(g) = groups {
            let eos = u64::from(self.cfg.eos.is_some());
            for (i, (d, &g)) in docs.iter().zip(g).enumerate() {
                let n = d.map_or(0, |d| d.len() as u64);
                // A resumed block's documents before the skip were counted before.
                let counted = match (self.cfg.strategy, skip) {
                    (Strategy::Concat, Some((a, _))) => i as u64 >= a,
                    _ => true,
                };
                if n > 0 && counted {
                    *self.stats.group_tokens.entry(g).or_default() += n + eos;
                }
            }
        }
        match self.cfg.strategy {
            Strategy::BestFit => self.feed_best_fit(block, key, docs, skip.map_or(0, |s| s.0)),
            Strategy::Concat => self.feed_concat(block, docs, skip.unwrap_or((0, 0))),
        }
        self.next_block = block + positions;
        Ok(())
    }

    /// The epoch's documents are all fed: the open sequence is padded and
    /// queued.
    pub fn finish(&mut self) {
        if let Some(s) = self.open.take() {
            if !s.tokens.is_empty() {
                self.ready.push_back(s);
            }
        }
        self.finished = true;
    }

    fn doc_len(&self, d: &[i64]) -> usize {
        d.len() + usize::from(self.cfg.eos.is_some())
    }

    /// Token `i` of document `d` with its end token.
    fn extend_piece(&self, out: &mut Vec<i64>, d: &[i64], start: usize, len: usize) {
        let end = start + len;
        out.extend_from_slice(&d[start.min(d.len())..end.min(d.len())]);
        if end > d.len() {
            out.push(self.cfg.eos.expect("a piece past a document's tokens is its end token"));
        }
    }

    fn feed_best_fit(&mut self, block: u64, key: u64, docs: &[Option<&[i64]>], skip: u64) {
        let l = self.cfg.seq_len;
        // (doc, start, len) of every piece: documents over seq_len give
        // whole sequences first, their rest is placed like a short document.
        let mut whole: Vec<(usize, usize)> = Vec::new();
        let mut rest: Vec<(usize, usize, usize)> = Vec::new();
        for (i, d) in docs.iter().enumerate() {
            let Some(d) = d.filter(|d| !d.is_empty()) else { continue };
            let n = self.doc_len(d);
            self.stats.documents += 1;
            self.stats.tokens += n as u64;
            if n > l {
                self.stats.split += 1;
            }
            for k in 0..n / l {
                whole.push((i, k * l));
            }
            if !n.is_multiple_of(l) {
                rest.push((i, n - n % l, n % l));
            }
        }
        // Best-fit decreasing: longest first (earlier document on ties),
        // each into the open sequence with the least room that holds it.
        rest.sort_by(|x, y| y.2.cmp(&x.2).then(x.0.cmp(&y.0)));
        let mut bins: Vec<Vec<(usize, usize, usize)>> = Vec::new();
        let mut room: BTreeSet<(usize, usize)> = BTreeSet::new();
        for p in rest {
            let fit = room.range((p.2, 0)..).next().copied();
            let bin = match fit {
                Some(key) => {
                    room.remove(&key);
                    if key.0 > p.2 {
                        room.insert((key.0 - p.2, key.1));
                    }
                    key.1
                }
                None => {
                    bins.push(Vec::new());
                    if l > p.2 {
                        room.insert((l - p.2, bins.len() - 1));
                    }
                    bins.len() - 1
                }
            };
            bins[bin].push(p);
        }
        let mut seqs: Vec<Vec<(usize, usize, usize)>> = whole.into_iter().map(|(i, s)| vec![(i, s, l)]).collect();
        seqs.extend(bins);
        if let Some(seed) = self.cfg.seed {
            let mut rng = Stream::new(seed, self.cfg.epoch, key, PACK_OP);
            for i in (1..seqs.len()).rev() {
                let j = rng.below(i as u64 + 1) as usize;
                seqs.swap(i, j);
            }
        }
        for (ordinal, pieces) in seqs.into_iter().enumerate().skip(skip as usize) {
            let mut s = Seq {
                tokens: Vec::with_capacity(l),
                pieces: Vec::with_capacity(pieces.len()),
                origin: Origin { block, a: ordinal as u64, b: 0 },
            };
            for (i, start, len) in pieces {
                let d = docs[i].expect("pieces come from documents");
                self.extend_piece(&mut s.tokens, d, start, len);
                s.pieces.push(len as u32);
            }
            self.ready.push_back(s);
        }
    }

    fn feed_concat(&mut self, block: u64, docs: &[Option<&[i64]>], skip: (u64, u64)) {
        let l = self.cfg.seq_len;
        for (i, d) in docs.iter().enumerate() {
            if (i as u64) < skip.0 {
                continue;
            }
            let Some(d) = d.filter(|d| !d.is_empty()) else { continue };
            let n = self.doc_len(d);
            let mut at = if i as u64 == skip.0 { (skip.1 as usize).min(n) } else { 0 };
            if at == 0 {
                self.stats.documents += 1;
                self.stats.tokens += n as u64;
            } else {
                self.stats.tokens += (n - at) as u64;
            }
            let mut pieces = 0;
            while at < n {
                let mut s = self.open.take().unwrap_or_else(|| Seq {
                    tokens: Vec::with_capacity(l),
                    pieces: Vec::new(),
                    origin: Origin { block, a: i as u64, b: at as u64 },
                });
                let take = (n - at).min(l - s.tokens.len());
                self.extend_piece(&mut s.tokens, d, at, take);
                s.pieces.push(take as u32);
                pieces += 1;
                at += take;
                if s.tokens.len() == l {
                    self.ready.push_back(s);
                } else {
                    self.open = Some(s);
                }
            }
            if pieces > 1 {
                self.stats.split += 1;
            }
        }
    }

    /// The next batch: `batch_size` sequences, or at the end of the epoch
    /// the rest padded with empty rows (`keep_last`). `None` when neither.
    pub fn next_batch(&mut self) -> Option<Packed> {
        if !self.has_batch() {
            return None;
        }
        let b = self.cfg.batch_size;
        let l = self.cfg.seq_len;
        let n = self.ready.len().min(b);
        let mut out = Packed {
            rows: b,
            seq_len: l,
            input_ids: Vec::with_capacity(b * l),
            labels: Vec::with_capacity(b * l),
            position_ids: Vec::with_capacity(b * l),
            document_ids: Vec::with_capacity(b * l),
            cu_seqlens: vec![0],
            max_seqlen: 0,
        };
        let mut flat = 0i32;
        let mut piece = |len: usize, out: &mut Packed| {
            flat += len as i32;
            out.cu_seqlens.push(flat);
            out.max_seqlen = out.max_seqlen.max(len as u32);
        };
        for _ in 0..b {
            let s = if out.input_ids.len() < n * l { self.ready.pop_front() } else { None };
            let (tokens, pieces) = s.map_or((Vec::new(), Vec::new()), |s| (s.tokens, s.pieces));
            let mut at = 0usize;
            for (k, &len) in pieces.iter().enumerate() {
                let len = len as usize;
                let t = &tokens[at..at + len];
                out.input_ids.extend_from_slice(t);
                out.labels.extend(t.iter().skip(1).copied());
                out.labels.push(IGNORE);
                out.position_ids.extend(0..len as i64);
                out.document_ids.extend(std::iter::repeat_n(k as i32, len));
                piece(len, &mut out);
                at += len;
            }
            let pad = l - at;
            if pad > 0 {
                out.input_ids.extend(std::iter::repeat_n(self.cfg.pad, pad));
                out.labels.extend(std::iter::repeat_n(IGNORE, pad));
                out.position_ids.extend(0..pad as i64);
                out.document_ids.extend(std::iter::repeat_n(-1, pad));
                piece(pad, &mut out);
                self.stats.padding += pad as u64;
            }
        }
        self.stats.sequences += b as u64;
        self.stats.batches += 1;
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(strategy: Strategy, seq_len: usize, batch_size: usize) -> Config {
        Config { seq_len, batch_size, strategy, eos: Some(0), pad: 0, seed: None, epoch: 0, keep_last: true }
    }

    /// Documents `d` with tokens `1000*d + 1 ..= 1000*d + len`.
    fn docs(lens: &[usize]) -> Vec<Vec<i64>> {
        lens.iter().enumerate().map(|(d, &n)| (1..=n as i64).map(|t| 1000 * (d as i64 + 1) + t).collect()).collect()
    }

    fn feed_all(p: &mut Packer, blocks: &[Vec<Vec<i64>>], window: u64, first: u64) -> Vec<Packed> {
        let mut out = Vec::new();
        for (k, b) in blocks.iter().enumerate() {
            let refs: Vec<Option<&[i64]>> = b.iter().map(|d| Some(d.as_slice())).collect();
            p.feed(first + k as u64 * window, window, &refs, None).unwrap();
            while let Some(x) = p.next_batch() {
                out.push(x);
            }
        }
        p.finish();
        while let Some(x) = p.next_batch() {
            out.push(x);
        }
        out
    }

    /// Every document's tokens, in order, from a batch's rows.
    fn tokens_of(batches: &[Packed]) -> Vec<i64> {
        batches
            .iter()
            .flat_map(|b| b.input_ids.iter().zip(&b.document_ids).filter(|(_, &d)| d >= 0).map(|(&t, _)| t))
            .collect()
    }

    fn tensor<T: Copy>(dtype: DType, shape: Vec<usize>, values: &[T]) -> Tensor {
        // SAFETY: plain integers viewed as bytes.
        let b = unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values)) };
        Tensor::from_bytes(dtype, shape, b).unwrap()
    }

    #[test]
    fn documents_of_a_slot_pack_as_the_same_ids_fed_as_slices() {
        let d = docs(&[5, 3, 9, 4]);
        let want = feed_all(&mut Packer::new(cfg(Strategy::Concat, 8, 2), 0, (0, 0)).unwrap(), &[d.clone()], 4, 0);
        // A list slot: int64 documents read in place, an int32 one converted, a row without one.
        let i32_doc: Vec<i32> = d[1].iter().map(|&t| t as i32).collect();
        let items = vec![
            Some(tensor(DType::I64, vec![5], &d[0])),
            Some(tensor(DType::I32, vec![3], &i32_doc)),
            None,
            Some(tensor(DType::I64, vec![9], &d[2])),
            Some(tensor(DType::I64, vec![4], &d[3])),
        ];
        let docs = Documents::of_slot(SlotValue::List(items)).unwrap();
        assert_eq!(docs.len(), 5);
        let mut p = Packer::new(cfg(Strategy::Concat, 8, 2), 0, (0, 0)).unwrap();
        p.feed_documents(0, 5, &docs, None, 0, (0, 0)).unwrap();
        p.finish();
        let got: Vec<Packed> = std::iter::from_fn(|| p.next_batch()).collect();
        assert_eq!(tokens_of(&got), tokens_of(&want));
        assert_eq!(
            got.iter().map(|b| b.input_ids.clone()).collect::<Vec<_>>(),
            want.iter().map(|b| b.input_ids.clone()).collect::<Vec<_>>()
        );
        // A stacked slot: each row one document, viewed in place.
        let rows: Vec<i64> = d[0].iter().chain(&d[0]).copied().collect();
        let docs = Documents::of_slot(SlotValue::Stacked(tensor(DType::I64, vec![2, 5], &rows))).unwrap();
        assert_eq!(docs.ids(), vec![Some(&d[0][..]), Some(&d[0][..])]);
        // Token ids that are not integers are refused, naming the dtype.
        let bad = Documents::of_slot(SlotValue::List(vec![Some(tensor(DType::F32, vec![2], &[1.0f32, 2.0]))]));
        assert!(bad.err().unwrap().to_string().contains("must be integers, got float32"));
    }

    #[test]
    fn concat_cuts_the_stream_and_marks_every_boundary() {
        let d = docs(&[5, 3, 9]);
        let mut p = Packer::new(cfg(Strategy::Concat, 8, 2), 0, (0, 0)).unwrap();
        let out = feed_all(&mut p, std::slice::from_ref(&d), 3, 0);
        // 6 + 4 + 10 = 20 tokens with end tokens: 3 rows, 2 batches, 4 of padding.
        assert_eq!(out.len(), 2);
        let b = &out[0];
        assert_eq!(&b.input_ids[..8], &[1001, 1002, 1003, 1004, 1005, 0, 2001, 2002]);
        assert_eq!(&b.position_ids[..8], &[0, 1, 2, 3, 4, 5, 0, 1]);
        assert_eq!(&b.document_ids[..8], &[0, 0, 0, 0, 0, 0, 1, 1]);
        assert_eq!(&b.labels[..8], &[1002, 1003, 1004, 1005, 0, IGNORE, 2002, IGNORE]);
        // Row 1 continues document 1 (its piece restarts positions) then 2.
        assert_eq!(&b.input_ids[8..16], &[2003, 0, 3001, 3002, 3003, 3004, 3005, 3006]);
        assert_eq!(&b.position_ids[8..16], &[0, 1, 0, 1, 2, 3, 4, 5]);
        assert_eq!(b.cu_seqlens, vec![0, 6, 8, 10, 16]);
        assert_eq!(b.max_seqlen, 6);
        let last = &out[1];
        assert_eq!(&last.input_ids[..4], &[3007, 3008, 3009, 0]);
        assert_eq!(&last.document_ids[..8], &[0, 0, 0, 0, -1, -1, -1, -1]);
        assert!(last.document_ids[8..].iter().all(|&x| x == -1), "the padded empty row");
        assert_eq!(last.cu_seqlens, vec![0, 4, 8, 16]);
        let s = p.stats();
        assert_eq!((s.documents, s.tokens, s.padding, s.sequences, s.split), (3, 20, 12, 4, 2));
    }

    #[test]
    fn best_fit_keeps_documents_whole_and_splits_only_the_long_ones() {
        let d = docs(&[6, 2, 5, 1, 3, 19]);
        let mut p = Packer::new(cfg(Strategy::BestFit, 8, 1), 0, (0, 0)).unwrap();
        let out = feed_all(&mut p, std::slice::from_ref(&d), 6, 0);
        // Lengths with end tokens: 7 3 6 2 4 20 -> 20 = 8 + 8 + 4.
        let rows: Vec<Vec<i32>> = out.iter().map(|b| b.document_ids.clone()).collect();
        // Two whole rows of document 5, then bins: [7 ...], [6, 2], [4 (doc 5 rest), 4 (doc 4)], [3].
        assert_eq!(out.len(), 6);
        assert!(rows[0].iter().all(|&x| x == 0) && rows[1].iter().all(|&x| x == 0));
        let piece_lens: Vec<Vec<i32>> =
            out.iter().map(|b| b.cu_seqlens.windows(2).map(|w| w[1] - w[0]).collect()).collect();
        assert_eq!(piece_lens[2], vec![7, 1]);
        assert_eq!(piece_lens[3], vec![6, 2]);
        assert_eq!(piece_lens[4], vec![4, 4]);
        assert_eq!(piece_lens[5], vec![3, 5]);
        // Only document 5 is split; every token is there once.
        assert_eq!(p.stats().split, 1);
        let mut got = tokens_of(&out);
        got.retain(|&t| t != 0);
        let mut want: Vec<i64> = d.concat();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want);
    }

    #[test]
    fn resuming_from_any_batch_gives_the_same_rest() {
        for strategy in [Strategy::Concat, Strategy::BestFit] {
            let lens: Vec<usize> = (0..40).map(|i| (i * 37 + 11) % 23 + 1).collect();
            let all = docs(&lens);
            let blocks: Vec<Vec<Vec<i64>>> = all.chunks(8).map(<[_]>::to_vec).collect();
            let mut c = cfg(strategy, 16, 3);
            c.seed = Some(5);
            let mut p = Packer::new(c.clone(), 0, (0, 0)).unwrap();
            // The state after each batch of an uninterrupted run.
            let mut states = Vec::new();
            let mut full = Vec::new();
            for (k, b) in blocks.iter().enumerate() {
                let refs: Vec<Option<&[i64]>> = b.iter().map(|d| Some(d.as_slice())).collect();
                p.feed(k as u64 * 8, 8, &refs, None).unwrap();
                while let Some(x) = p.next_batch() {
                    full.push(x);
                    states.push(p.state());
                }
            }
            p.finish();
            while let Some(x) = p.next_batch() {
                full.push(x);
                states.push(p.state());
            }
            assert!(full.len() > 5, "{strategy:?}: {} batches", full.len());
            for (k, st) in states.iter().enumerate().take(full.len() - 1) {
                let mut q = Packer::new(c.clone(), st.block, (st.a, st.b)).unwrap();
                let first = (st.block / 8) as usize;
                let rest = feed_all(&mut q, &blocks[first..], 8, st.block);
                assert_eq!(rest, full[k + 1..], "{strategy:?}: resumed after batch {k} at {st:?}");
            }
        }
    }

    #[test]
    fn a_seed_shuffles_a_blocks_sequences_and_nothing_is_lost() {
        let lens: Vec<usize> = (0..64).map(|i| (i * 13 + 5) % 30 + 1).collect();
        let d = docs(&lens);
        let run = |seed: Option<u64>| {
            let mut c = cfg(Strategy::BestFit, 32, 4);
            c.seed = seed;
            let mut p = Packer::new(c, 0, (0, 0)).unwrap();
            feed_all(&mut p, std::slice::from_ref(&d), 64, 0)
        };
        let (a, b, plain) = (run(Some(1)), run(Some(2)), run(None));
        assert_ne!(a, b);
        assert_eq!(a, run(Some(1)));
        for x in [&a, &b, &plain] {
            let mut got = tokens_of(x);
            got.retain(|&t| t != 0);
            got.sort_unstable();
            let mut want = d.concat();
            want.sort_unstable();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn a_block_out_of_order_is_refused() {
        let mut p = Packer::new(cfg(Strategy::Concat, 4, 1), 0, (0, 0)).unwrap();
        let e = p.feed(8, 8, &[], None).unwrap_err().to_string();
        assert!(e.contains("position 8"), "{e}");
    }
}
