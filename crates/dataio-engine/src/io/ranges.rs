//! Many byte ranges of one object in few requests.
//!
//! Object stores charge a round trip per request and serve one connection at
//! a limited rate, so [`read_ranges_into`] reshapes what a caller asks for
//! before anything is sent:
//!
//! * **coalescing** — ranges whose gap to the previous one is at most
//!   [`RangePolicy::gap`] are fetched with one request, as long as the merged
//!   span stays within [`RangePolicy::part`]; the bytes of the gaps are read
//!   and dropped (cheaper than a round trip below ~1 MiB on every store we
//!   measured, and the default `object_store` uses too);
//! * **splitting** — a single range longer than `part` is fetched as parts of
//!   `part` bytes, concurrently, each straight into its slice of the caller's
//!   buffer;
//! * up to [`RangePolicy::inflight`] requests run at once.
//!
//! A lone range or a part lands in the caller's buffer with no copy; only a
//! coalesced request copies each member out of its response. The local
//! backend reads from a map, where neither helps: [`RangePolicy::for_backend`]
//! turns both off for it.

use crate::base::error::Result;
use crate::io::backend::Backend;
use futures::{StreamExt, TryStreamExt};

/// How [`read_ranges_into`] groups and splits requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangePolicy {
    /// Whether ranges may share a request at all.
    pub coalesce: bool,
    /// Largest hole between two ranges that are still fetched together.
    pub gap: u64,
    /// Largest span of one request (coalesced ranges), and the part size a
    /// longer single range is split into. `u64::MAX` turns splitting off.
    pub part: u64,
    /// Requests in flight at once.
    pub inflight: usize,
}

impl RangePolicy {
    pub const DEFAULT_GAP: u64 = 1 << 20;
    pub const DEFAULT_PART: u64 = 8 << 20;
    pub const DEFAULT_INFLIGHT: usize = 16;

    /// No coalescing and no splitting: one request per range.
    pub const EXACT: RangePolicy =
        RangePolicy { coalesce: false, gap: 0, part: u64::MAX, inflight: Self::DEFAULT_INFLIGHT };

    /// The default for backends whose requests cost something; [`Self::EXACT`]
    /// for mapped ones (local files), where neither coalescing nor parts help.
    pub fn for_backend(b: &dyn Backend) -> RangePolicy {
        if b.capabilities().mapped {
            RangePolicy::EXACT
        } else {
            RangePolicy::default()
        }
    }
}

impl Default for RangePolicy {
    fn default() -> Self {
        RangePolicy {
            coalesce: true,
            gap: Self::DEFAULT_GAP,
            part: Self::DEFAULT_PART,
            inflight: Self::DEFAULT_INFLIGHT,
        }
    }
}

/// One request: `[offset, offset + len)` of the object, and where its bytes go.
#[derive(Debug, PartialEq, Eq)]
pub struct Request {
    pub offset: u64,
    pub len: u64,
    /// `(range index, byte offset within that range, length)` of each piece.
    pub pieces: Vec<(usize, u64, u64)>,
}

/// Groups `(offset, len)` ranges into requests under `policy`. Empty ranges
/// get no request. Ranges may overlap and come in any order.
pub fn plan(ranges: &[(u64, u64)], policy: &RangePolicy) -> Vec<Request> {
    let mut order: Vec<usize> = (0..ranges.len()).filter(|&i| ranges[i].1 > 0).collect();
    order.sort_by_key(|&i| (ranges[i].0, ranges[i].1));
    let part = policy.part.max(1);
    let mut out: Vec<Request> = Vec::new();
    let mut open: Option<Request> = None;
    for i in order {
        let (off, len) = ranges[i];
        let end = off.saturating_add(len);
        if len > part {
            out.extend(open.take());
            let mut at = 0;
            while at < len {
                let n = part.min(len - at);
                out.push(Request { offset: off + at, len: n, pieces: vec![(i, at, n)] });
                at += n;
            }
            continue;
        }
        if let Some(req) = open.as_mut() {
            let req_end = req.offset + req.len;
            let new_end = req_end.max(end);
            if policy.coalesce && off <= req_end.saturating_add(policy.gap) && new_end - req.offset <= part {
                req.len = new_end - req.offset;
                req.pieces.push((i, 0, len));
                continue;
            }
            out.extend(open.take());
        }
        open = Some(Request { offset: off, len, pieces: vec![(i, 0, len)] });
    }
    out.extend(open);
    out
}

/// What [`read_ranges_into`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RangeStats {
    /// Requests sent.
    pub requests: usize,
    /// Bytes the requests fetched (the asked-for bytes plus coalesced gaps).
    pub fetched: u64,
}

/// Fills each `(offset, buffer)` with the object's bytes from `offset`, in as
/// few requests as `policy` allows. A failure of any request fails the call
/// (the buffers' contents are then unspecified).
pub async fn read_ranges_into(
    b: &dyn Backend,
    uri: &str,
    ranges: Vec<(u64, &mut [u8])>,
    policy: &RangePolicy,
) -> Result<RangeStats> {
    let spans: Vec<(u64, u64)> = ranges.iter().map(|(o, d)| (*o, d.len() as u64)).collect();
    let requests = plan(&spans, policy);
    let stats = RangeStats { requests: requests.len(), fetched: requests.iter().map(|r| r.len).sum() };

    // Hand each request the mutable pieces it fills. Pieces of one range come
    // in ascending order (a range is either split into parts or one piece),
    // so each buffer is cut front to back; overlapping ranges are distinct
    // buffers and need no cutting.
    let mut rest: Vec<Option<&mut [u8]>> = ranges.into_iter().map(|(_, d)| Some(d)).collect();
    type Job<'a> = (u64, u64, Vec<(u64, &'a mut [u8])>);
    let mut jobs: Vec<Job<'_>> = Vec::with_capacity(requests.len());
    for req in &requests {
        let mut dsts = Vec::with_capacity(req.pieces.len());
        for &(i, _, n) in &req.pieces {
            let buf = rest[i].take().expect("each range appears once per request");
            let at = spans[i].0 + (spans[i].1 - buf.len() as u64);
            let (head, tail) = buf.split_at_mut(n as usize);
            if !tail.is_empty() {
                rest[i] = Some(tail);
            }
            dsts.push((at, head));
        }
        jobs.push((req.offset, req.len, dsts));
    }

    futures::stream::iter(jobs.into_iter().map(|(offset, len, mut dsts)| async move {
        if dsts.len() == 1 && dsts[0].0 == offset && dsts[0].1.len() as u64 == len {
            let (_, dst) = dsts.pop().expect("one piece");
            b.read_into(uri, offset, dst).await?;
        } else {
            let data = b.read_range(uri, offset, len).await?;
            for (at, dst) in dsts {
                let from = (at - offset) as usize;
                dst.copy_from_slice(&data[from..from + dst.len()]);
            }
        }
        Ok::<(), crate::Error>(())
    }))
    .buffer_unordered(policy.inflight.max(1))
    .try_collect::<()>()
    .await?;
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: RangePolicy = RangePolicy { coalesce: true, gap: 10, part: 100, inflight: 4 };

    fn spans(reqs: &[Request]) -> Vec<(u64, u64)> {
        reqs.iter().map(|r| (r.offset, r.len)).collect()
    }

    #[test]
    fn neighbours_within_the_gap_share_a_request() {
        let reqs = plan(&[(0, 10), (15, 5), (25, 5), (60, 5)], &P);
        assert_eq!(spans(&reqs), vec![(0, 30), (60, 5)]);
        assert_eq!(reqs[0].pieces, vec![(0, 0, 10), (1, 0, 5), (2, 0, 5)]);
    }

    #[test]
    fn order_and_overlap_do_not_matter() {
        let reqs = plan(&[(40, 10), (0, 30), (20, 30)], &P);
        assert_eq!(spans(&reqs), vec![(0, 50)]);
        let mut idx: Vec<usize> = reqs[0].pieces.iter().map(|p| p.0).collect();
        idx.sort();
        assert_eq!(idx, vec![0, 1, 2]);
    }

    #[test]
    fn a_merged_request_never_exceeds_the_part_size() {
        let reqs = plan(&[(0, 60), (60, 60), (120, 60)], &P);
        assert_eq!(spans(&reqs), vec![(0, 60), (60, 60), (120, 60)]);
    }

    #[test]
    fn a_long_range_is_split_into_parts() {
        let reqs = plan(&[(5, 250), (0, 3)], &P);
        assert_eq!(spans(&reqs), vec![(0, 3), (5, 100), (105, 100), (205, 50)]);
        assert_eq!(reqs[3].pieces, vec![(0, 200, 50)]);
    }

    #[test]
    fn exact_policy_sends_one_request_per_range_and_skips_empty_ones() {
        let reqs = plan(&[(0, 10), (10, 10), (30, 0), (5, 1 << 40)], &RangePolicy::EXACT);
        assert_eq!(spans(&reqs), vec![(0, 10), (5, 1 << 40), (10, 10)]);
    }

    #[test]
    fn read_ranges_into_fills_every_buffer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("blob");
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let uri = path.to_str().unwrap();
        let asks: Vec<(u64, u64)> = vec![(0, 10), (12, 4), (900, 100), (100, 350), (20, 5)];
        let mut bufs: Vec<Vec<u8>> = asks.iter().map(|&(_, n)| vec![0u8; n as usize]).collect();
        let ranges: Vec<(u64, &mut [u8])> =
            asks.iter().zip(bufs.iter_mut()).map(|(&(o, _), b)| (o, b.as_mut_slice())).collect();
        let b = crate::io::local::LocalBackend;
        let stats = crate::host::pools::block_on(read_ranges_into(&b, uri, ranges, &P)).unwrap();
        for (&(o, n), buf) in asks.iter().zip(&bufs) {
            assert_eq!(&buf[..], &data[o as usize..(o + n) as usize], "range at {o}");
        }
        // (0,10)+(12,4)+(20,5) coalesce; 350 bytes split in 4; 900..1000 alone.
        assert_eq!(stats.requests, 1 + 4 + 1);
    }

    #[test]
    fn a_range_past_the_end_fails() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("blob");
        std::fs::write(&path, [1u8; 50]).unwrap();
        let mut buf = [0u8; 20];
        let b = crate::io::local::LocalBackend;
        let err =
            crate::host::pools::block_on(read_ranges_into(&b, path.to_str().unwrap(), vec![(40, &mut buf[..])], &P))
                .unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::OutOfRange);
    }
}
