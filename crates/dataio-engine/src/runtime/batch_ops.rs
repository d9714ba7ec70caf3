//! Native batch transforms: run on a finished batch, on the CPU thread that
//! completed it, without the GIL. Their randomness is keyed by (seed, epoch,
//! the batch's first schedule position, op), so a resumed run replays them.
//!
//! * `mixup(alpha, slot, label, num_classes)` — torchvision v2 semantics: one
//!   λ ~ Beta(α, α) per batch, each sample mixed with its neighbour in the
//!   batch rolled by one; labels become mixed one-hot float32 rows.
//! * `cutmix(alpha, slot, label, num_classes)` — a box of area 1-λ from the
//!   rolled batch is pasted; labels mixed by the box's actual area.
//! * `pad_to_longest(slot, value)` — a variable-length slot becomes one
//!   tensor padded along its first axis, plus `<slot>_lengths` (int64).

use super::batch::{Batch, SlotValue};
use crate::base::error::{Error, Result};
use crate::base::rng::{key, Stream};
use crate::base::tensor::{pooled, read_scalar, write_scalar, DType, Tensor};
use crate::plan::ops::{Mix, PadToLongest};
use crate::plan::BatchOp;
use std::sync::Arc;

/// Gamma(shape, 1) by Marsaglia–Tsang, from a keyed stream.
fn gamma(s: &mut Stream, shape: f64) -> f64 {
    if shape < 1.0 {
        let u = s.uniform().max(f64::MIN_POSITIVE);
        return gamma(s, shape + 1.0) * u.powf(1.0 / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        // Standard normal by Box–Muller.
        let (u1, u2) = (s.uniform().max(f64::MIN_POSITIVE), s.uniform());
        let x = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        let v = (1.0 + c * x).powi(3);
        if v <= 0.0 {
            continue;
        }
        let u = s.uniform();
        if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
            return d * v;
        }
    }
}

fn beta(s: &mut Stream, a: f64) -> f64 {
    let x = gamma(s, a);
    let y = gamma(s, a);
    x / (x + y)
}

fn slot_index(batch: &Batch, name: &str, op: &str) -> Result<usize> {
    batch
        .slots
        .iter()
        .position(|(n, _)| n == name)
        .ok_or_else(|| Error::invalid(format!("{op}: the batch has no slot {name:?}")))
}

fn stacked<'a>(batch: &'a Batch, i: usize, op: &str) -> Result<&'a Tensor> {
    match &batch.slots[i].1 {
        SlotValue::Stacked(t) => Ok(t),
        SlotValue::List(_) => Err(Error::invalid(format!("{op}: slot {:?} must have a fixed shape", batch.slots[i].0))),
    }
}

/// One-hot float32 labels (N, classes) from integer labels.
fn one_hot(labels: &Tensor, classes: usize, op: &str) -> Result<Vec<f32>> {
    let n = labels.shape.first().copied().unwrap_or(0);
    if labels.shape.len() != 1 {
        return Err(Error::invalid(format!(
            "{op}: labels must be one integer per sample, got shape {:?}",
            labels.shape
        )));
    }
    let size = labels.dtype.size();
    let mut out = vec![0f32; n * classes];
    for i in 0..n {
        let v = read_scalar(labels.dtype, &labels.bytes()[i * size..(i + 1) * size]);
        if v.fract() != 0.0 || v < 0.0 || v as usize >= classes {
            return Err(Error::invalid(format!("{op}: label {v} is not a class index below num_classes={classes}")));
        }
        out[i * classes + v as usize] = 1.0;
    }
    Ok(out)
}

fn f32_tensor(shape: Vec<usize>, data: &[f32]) -> Tensor {
    let bytes = data.len() * 4;
    let buf = pooled(bytes);
    // SAFETY: fresh buffer, fully written.
    let dst = unsafe { buf.slice_mut(0, bytes) };
    for (chunk, v) in dst.chunks_exact_mut(4).zip(data) {
        chunk.copy_from_slice(&v.to_ne_bytes());
    }
    Tensor { dtype: DType::F32, shape, buf: Arc::new(buf), offset: 0 }
}

fn images_f32(t: &Tensor, op: &str) -> Result<Vec<f32>> {
    if t.dtype != DType::F32 {
        return Err(Error::invalid(format!(
            "{op}: the image slot must be float32 (add normalize() before it), got {}",
            t.dtype.name()
        )));
    }
    Ok(t.bytes().chunks_exact(4).map(|c| f32::from_ne_bytes(c.try_into().unwrap())).collect())
}

fn mix(batch: &mut Batch, p: &Mix, s: &mut Stream, cut: bool) -> Result<()> {
    let name = if cut { "cutmix" } else { "mixup" };
    let alpha = p.alpha.0;
    let classes = p.num_classes.0 as usize;
    let si = slot_index(batch, &p.slot, name)?;
    let li = slot_index(batch, &p.label, name)?;
    let img = stacked(batch, si, name)?.clone();
    let labels = stacked(batch, li, name)?.clone();
    let n = img.shape[0];
    if n < 2 {
        return Ok(());
    }
    let per = img.numel() / n;
    let x = images_f32(&img, name)?;
    let y = one_hot(&labels, classes, name)?;
    let mut lam = beta(s, alpha);
    let mut out = x.clone();
    let roll = |i: usize| (i + n - 1) % n;
    if cut {
        // Image dims: CHW or HWC; cut over the two spatial axes we can infer.
        let shape = &img.shape[1..];
        let (h, w, chw) = match shape {
            [c, h, w] if *c <= 4 => (*h, *w, true),
            [h, w, _c] => (*h, *w, false),
            [h, w] => (*h, *w, true),
            _ => return Err(Error::invalid(format!("{name}: cannot find the spatial axes of shape {shape:?}"))),
        };
        let ratio = (1.0 - lam).sqrt();
        let (ch, cw) = ((h as f64 * ratio) as usize, (w as f64 * ratio) as usize);
        let cy = s.below(h as u64) as usize;
        let cx = s.below(w as u64) as usize;
        let (y0, y1) = (cy.saturating_sub(ch / 2), (cy + ch / 2).min(h));
        let (x0, x1) = (cx.saturating_sub(cw / 2), (cx + cw / 2).min(w));
        let channels = per / (h * w);
        for i in 0..n {
            let src = roll(i);
            for c in 0..channels {
                for yy in y0..y1 {
                    for xx in x0..x1 {
                        let idx = if chw { c * h * w + yy * w + xx } else { (yy * w + xx) * channels + c };
                        out[i * per + idx] = x[src * per + idx];
                    }
                }
            }
        }
        lam = 1.0 - ((y1 - y0) * (x1 - x0)) as f64 / (h * w) as f64;
    } else {
        let l = lam as f32;
        for i in 0..n {
            let src = roll(i);
            for k in 0..per {
                out[i * per + k] = l * x[i * per + k] + (1.0 - l) * x[src * per + k];
            }
        }
    }
    let l = lam as f32;
    let mixed: Vec<f32> =
        (0..n * classes).map(|k| l * y[k] + (1.0 - l) * y[roll(k / classes) * classes + k % classes]).collect();
    batch.slots[si].1 = SlotValue::Stacked(f32_tensor(img.shape.clone(), &out));
    batch.slots[li].1 = SlotValue::Stacked(f32_tensor(vec![n, classes], &mixed));
    Ok(())
}

fn pad_to_longest(batch: &mut Batch, p: &PadToLongest) -> Result<()> {
    let name = p.slot.as_str();
    let value = p.value;
    let min_len = p.length.unwrap_or(0) as usize;
    if !matches!(p.axis, None | Some(0) | Some(-1)) {
        return Err(Error::invalid(format!("pad_to_longest: axis must be 0 or -1, got {:?}", p.axis)));
    }
    let si = slot_index(batch, name, "pad_to_longest")?;
    let rows: Vec<Tensor> = match &batch.slots[si].1 {
        SlotValue::Stacked(t) => {
            let n = t.shape[0];
            let last = p.axis == Some(-1);
            let axis_len = if last { t.shape.last().copied() } else { t.shape.get(1).copied() }.unwrap_or(1);
            if axis_len >= min_len {
                let lens = vec![axis_len as i64; n];
                let lt = Tensor::from_bytes(
                    DType::I64,
                    vec![n],
                    &lens.iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<_>>(),
                )?;
                batch.slots.push((format!("{name}_lengths"), SlotValue::Stacked(lt)));
                return Ok(());
            }
            // Shorter than `length`: padded row by row below (views of the stack).
            let row_bytes = t.nbytes().checked_div(n).unwrap_or(0);
            (0..n)
                .map(|i| Tensor {
                    dtype: t.dtype,
                    shape: t.shape[1..].to_vec(),
                    buf: t.buf.clone(),
                    offset: t.offset + i * row_bytes,
                })
                .collect()
        }
        SlotValue::List(items) => items
            .iter()
            .map(|t| {
                t.clone().ok_or_else(|| Error::invalid(format!("pad_to_longest: slot {name:?} has a missing row")))
            })
            .collect::<Result<_>>()?,
    };
    let Some(first) = rows.first() else { return Ok(()) };
    let dtype = first.dtype;
    // Rows that differ only in their last axis (audio, [C, N]) pad that axis.
    let nd = first.shape.len();
    let last_axis = match p.axis {
        Some(a) => a == -1,
        None => nd >= 2 && rows.iter().any(|r| r.shape[..] != first.shape[..]),
    };
    if last_axis
        && nd >= 2
        && rows.iter().all(|r| r.dtype == dtype && r.shape.len() == nd && r.shape[..nd - 1] == first.shape[..nd - 1])
    {
        return pad_last_axis(batch, si, name, &rows, value, min_len);
    }
    if p.axis == Some(-1) {
        return Err(Error::invalid(format!(
            "pad_to_longest: axis=-1: rows of {name:?} must share dtype and every dim but the last; got {:?} and {:?}",
            first.shape,
            rows.iter()
                .find(|r| r.shape.len() != nd || r.shape[..nd.saturating_sub(1)] != first.shape[..nd.saturating_sub(1)])
                .map(|r| &r.shape)
                .unwrap_or(&first.shape)
        )));
    }
    let tail: Vec<usize> = first.shape.get(1..).map(<[usize]>::to_vec).unwrap_or_default();
    for r in &rows {
        if r.dtype != dtype || r.shape.is_empty() || r.shape[1..] != tail[..] {
            return Err(Error::invalid(format!(
                "pad_to_longest: rows of {name:?} must share dtype and trailing dims; got {:?} and {:?}",
                first.shape, r.shape
            )));
        }
    }
    let longest = rows.iter().map(|r| r.shape[0]).max().unwrap_or(0).max(min_len);
    let inner: usize = tail.iter().product::<usize>() * dtype.size();
    let row_bytes = longest * inner;
    let buf = pooled(row_bytes * rows.len());
    // SAFETY: fresh buffer we own; fully written below (data, then padding).
    let dst = unsafe { buf.slice_mut(0, row_bytes * rows.len()) };
    let mut pad = vec![0u8; dtype.size()];
    write_scalar(dtype, value, &mut pad);
    for (i, r) in rows.iter().enumerate() {
        let row = &mut dst[i * row_bytes..(i + 1) * row_bytes];
        let n = r.nbytes();
        row[..n].copy_from_slice(r.bytes());
        for chunk in row[n..].chunks_exact_mut(dtype.size()) {
            chunk.copy_from_slice(&pad);
        }
    }
    let mut shape = vec![rows.len(), longest];
    shape.extend(&tail);
    batch.slots[si].1 = SlotValue::Stacked(Tensor { dtype, shape, buf: Arc::new(buf), offset: 0 });
    let lens: Vec<u8> = rows.iter().flat_map(|r| (r.shape[0] as i64).to_ne_bytes()).collect();
    batch.slots.push((
        format!("{name}_lengths"),
        SlotValue::Stacked(Tensor::from_bytes(DType::I64, vec![rows.len()], &lens)?),
    ));
    Ok(())
}

/// [`pad_to_longest`] of rows that share every axis but the last: each row
/// `[..., n]` becomes `[..., longest]`, `<slot>_lengths` holds each `n`.
fn pad_last_axis(batch: &mut Batch, si: usize, name: &str, rows: &[Tensor], value: f64, min_len: usize) -> Result<()> {
    let first = &rows[0];
    let dtype = first.dtype;
    let nd = first.shape.len();
    let lead: usize = first.shape[..nd - 1].iter().product();
    let longest = rows.iter().map(|r| r.shape[nd - 1]).max().unwrap_or(0).max(min_len);
    let size = dtype.size();
    let row_bytes = lead * longest * size;
    let buf = pooled(row_bytes * rows.len());
    // SAFETY: fresh buffer we own; every byte is written below (data, then padding).
    let dst = unsafe { buf.slice_mut(0, row_bytes * rows.len()) };
    let mut pad = vec![0u8; size];
    write_scalar(dtype, value, &mut pad);
    for (i, r) in rows.iter().enumerate() {
        let n = r.shape[nd - 1];
        let src = r.bytes();
        for l in 0..lead {
            let out = &mut dst[i * row_bytes + l * longest * size..i * row_bytes + (l + 1) * longest * size];
            out[..n * size].copy_from_slice(&src[l * n * size..(l + 1) * n * size]);
            for chunk in out[n * size..].chunks_exact_mut(size) {
                chunk.copy_from_slice(&pad);
            }
        }
    }
    let mut shape = vec![rows.len()];
    shape.extend(&first.shape[..nd - 1]);
    shape.push(longest);
    batch.slots[si].1 = SlotValue::Stacked(Tensor { dtype, shape, buf: Arc::new(buf), offset: 0 });
    let lens: Vec<u8> = rows.iter().flat_map(|r| (r.shape[nd - 1] as i64).to_ne_bytes()).collect();
    batch.slots.push((
        format!("{name}_lengths"),
        SlotValue::Stacked(Tensor::from_bytes(DType::I64, vec![rows.len()], &lens)?),
    ));
    Ok(())
}

/// Applies the plan's batch transforms in order.
pub fn apply(ops: &[BatchOp], batch: &mut Batch, seed: u64, epoch: u64, first_position: u64) -> Result<()> {
    for (i, op) in ops.iter().enumerate() {
        let mut s = Stream::new(seed, epoch, first_position, key(&[0xBA7C, i as u64]));
        match op {
            BatchOp::Mixup(p) => mix(batch, p, &mut s, false)?,
            BatchOp::Cutmix(p) => mix(batch, p, &mut s, true)?,
            BatchOp::PadToLongest(p) => pad_to_longest(batch, p)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beta_samples_have_the_right_mean() {
        let mut s = Stream::new(1, 0, 0, 0);
        let m: f64 = (0..4000).map(|_| beta(&mut s, 0.4)).sum::<f64>() / 4000.0;
        assert!((m - 0.5).abs() < 0.03, "{m}");
        let v: Vec<f64> = (0..100).map(|_| beta(&mut s, 0.2)).collect();
        assert!(v.iter().all(|x| (0.0..=1.0).contains(x)));
    }
}
