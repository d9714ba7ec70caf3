//! TFRecord framing and `tf.train.Example` parsing.
//!
//! A record is `u64 length | u32 masked_crc32c(length) | data | u32
//! masked_crc32c(data)`, little-endian. An Example is a protobuf
//! `Features { map<string, Feature> feature = 1 }` where a Feature holds one
//! of `BytesList` (1), `FloatList` (2) or `Int64List` (3). The protobuf
//! subset is small and fixed, so it is decoded here directly; every length
//! is checked against the buffer.

use crate::base::error::{Error, Result};

/// A feature's values.
#[derive(Debug, Clone, PartialEq)]
pub enum Feature<'a> {
    Bytes(Vec<&'a [u8]>),
    Float(Vec<f32>),
    Int64(Vec<i64>),
}

pub fn masked_crc(data: &[u8]) -> u32 {
    let crc = crc32c::crc32c(data);
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

fn bad(uri: &str, what: impl std::fmt::Display) -> Error {
    Error::corrupt(uri, "TFRecord file", what)
}

/// Finds every record's payload `(offset, len)` in a whole file.
pub fn split_records(uri: &str, data: &[u8], check_crc: bool) -> Result<Vec<(usize, usize)>> {
    crate::base::guard::catch(
        |m| Error::corrupt(uri, "TFRecord file", format!("the parser failed on it ({m})")),
        || split_records_unguarded(uri, data, check_crc),
    )
}

fn split_records_unguarded(uri: &str, data: &[u8], check_crc: bool) -> Result<Vec<(usize, usize)>> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos < data.len() {
        let rec = out.len();
        if data.len() - pos < 12 {
            return Err(bad(uri, format!("record {rec} at byte {pos}: truncated length header")));
        }
        let len_bytes = &data[pos..pos + 8];
        let len = u64::from_le_bytes(len_bytes.try_into().unwrap());
        let len_crc = u32::from_le_bytes(data[pos + 8..pos + 12].try_into().unwrap());
        if check_crc && masked_crc(len_bytes) != len_crc {
            return Err(bad(uri, format!("record {rec} at byte {pos}: length CRC mismatch")));
        }
        let start = pos + 12;
        let len =
            usize::try_from(len).map_err(|_| bad(uri, format!("record {rec}: length {len} does not fit in memory")))?;
        let end = start.checked_add(len).and_then(|e| e.checked_add(4)).filter(|&e| e <= data.len());
        let Some(end) = end else {
            return Err(bad(
                uri,
                format!(
                    "record {rec} at byte {pos}: claims {len} bytes, only {} remain (truncated)",
                    data.len() - start
                ),
            ));
        };
        if check_crc {
            let crc = u32::from_le_bytes(data[end - 4..end].try_into().unwrap());
            if masked_crc(&data[start..start + len]) != crc {
                return Err(bad(uri, format!("record {rec} at byte {pos}: data CRC mismatch")));
            }
        }
        out.push((start, len));
        pos = end;
    }
    Ok(out)
}

struct Pb<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Pb<'a> {
    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.buf.get(self.pos)?;
            self.pos += 1;
            v |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.varint()?).ok()?;
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len())?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Some(s)
    }

    /// Skips a field of the given wire type.
    fn skip(&mut self, wire: u64) -> Option<()> {
        match wire {
            0 => self.varint().map(|_| ()),
            1 => {
                self.pos = self.pos.checked_add(8).filter(|&e| e <= self.buf.len())?;
                Some(())
            }
            2 => self.bytes().map(|_| ()),
            5 => {
                self.pos = self.pos.checked_add(4).filter(|&e| e <= self.buf.len())?;
                Some(())
            }
            _ => None,
        }
    }

    fn done(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// Iterates (field number, wire type) headers.
    fn key(&mut self) -> Option<(u64, u64)> {
        let k = self.varint()?;
        Some((k >> 3, k & 7))
    }
}

fn parse_feature<'a>(buf: &'a [u8]) -> Option<Feature<'a>> {
    let mut p = Pb { buf, pos: 0 };
    let mut out = None;
    while !p.done() {
        let (field, wire) = p.key()?;
        if wire != 2 || !(1..=3).contains(&field) {
            p.skip(wire)?;
            continue;
        }
        let list = p.bytes()?;
        let mut l = Pb { buf: list, pos: 0 };
        out = Some(match field {
            1 => {
                let mut v = Vec::new();
                while !l.done() {
                    let (f, w) = l.key()?;
                    if f == 1 && w == 2 {
                        v.push(l.bytes()?)
                    } else {
                        l.skip(w)?
                    }
                }
                Feature::Bytes(v)
            }
            2 => {
                let mut v = Vec::new();
                while !l.done() {
                    let (f, w) = l.key()?;
                    match (f, w) {
                        (1, 2) => {
                            let packed = l.bytes()?;
                            if packed.len() % 4 != 0 {
                                return None;
                            }
                            v.extend(packed.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())));
                        }
                        (1, 5) => {
                            let end = l.pos.checked_add(4).filter(|&e| e <= list.len())?;
                            v.push(f32::from_le_bytes(list[l.pos..end].try_into().unwrap()));
                            l.pos = end;
                        }
                        _ => l.skip(w)?,
                    }
                }
                Feature::Float(v)
            }
            _ => {
                let mut v = Vec::new();
                while !l.done() {
                    let (f, w) = l.key()?;
                    match (f, w) {
                        (1, 2) => {
                            let packed = l.bytes()?;
                            let mut q = Pb { buf: packed, pos: 0 };
                            while !q.done() {
                                v.push(q.varint()? as i64);
                            }
                        }
                        (1, 0) => v.push(l.varint()? as i64),
                        _ => l.skip(w)?,
                    }
                }
                Feature::Int64(v)
            }
        });
    }
    Some(out.unwrap_or(Feature::Bytes(Vec::new())))
}

/// Parses a serialized `tf.train.Example`.
pub fn parse_example<'a>(uri: &str, index: usize, buf: &'a [u8]) -> Result<Vec<(String, Feature<'a>)>> {
    crate::base::guard::catch(
        |m| Error::corrupt(uri, format!("tf.train.Example (record {index})"), format!("the parser failed on it ({m})")),
        || parse_example_unguarded(uri, index, buf),
    )
}

fn parse_example_unguarded<'a>(uri: &str, index: usize, buf: &'a [u8]) -> Result<Vec<(String, Feature<'a>)>> {
    let err = || bad(uri, format!("record {index} is not a valid tf.train.Example"));
    let mut p = Pb { buf, pos: 0 };
    let mut out = Vec::new();
    while !p.done() {
        let (field, wire) = p.key().ok_or_else(err)?;
        if field != 1 || wire != 2 {
            p.skip(wire).ok_or_else(err)?;
            continue;
        }
        // Features: repeated map entries (field 1), each {1: key, 2: Feature}.
        let features = p.bytes().ok_or_else(err)?;
        let mut f = Pb { buf: features, pos: 0 };
        while !f.done() {
            let (ff, fw) = f.key().ok_or_else(err)?;
            if ff != 1 || fw != 2 {
                f.skip(fw).ok_or_else(err)?;
                continue;
            }
            let entry = f.bytes().ok_or_else(err)?;
            let mut e = Pb { buf: entry, pos: 0 };
            let (mut name, mut value) = (None, None);
            while !e.done() {
                let (ef, ew) = e.key().ok_or_else(err)?;
                match (ef, ew) {
                    (1, 2) => {
                        name = Some(std::str::from_utf8(e.bytes().ok_or_else(err)?).map_err(|_| err())?.to_string())
                    }
                    (2, 2) => value = Some(parse_feature(e.bytes().ok_or_else(err)?).ok_or_else(err)?),
                    _ => e.skip(ew).ok_or_else(err)?,
                }
            }
            out.push((name.unwrap_or_default(), value.unwrap_or(Feature::Bytes(Vec::new()))));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(payload: &[u8]) -> Vec<u8> {
        let mut out = (payload.len() as u64).to_le_bytes().to_vec();
        out.extend(masked_crc(&out[..8]).to_le_bytes());
        out.extend(payload);
        out.extend(masked_crc(payload).to_le_bytes());
        out
    }

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }

    fn field(num: u64, payload: &[u8], out: &mut Vec<u8>) {
        varint(num << 3 | 2, out);
        varint(payload.len() as u64, out);
        out.extend(payload);
    }

    fn example() -> Vec<u8> {
        // label: int64_list [7, -1]; image: bytes_list [b"abc"]; score: float_list [0.5]
        let mut ints = Vec::new();
        varint(7, &mut ints);
        varint(-1i64 as u64, &mut ints);
        let mut int_list = Vec::new();
        field(1, &ints, &mut int_list);
        let mut feat_int = Vec::new();
        field(3, &int_list, &mut feat_int);
        let mut bytes_list = Vec::new();
        field(1, b"abc", &mut bytes_list);
        let mut feat_bytes = Vec::new();
        field(1, &bytes_list, &mut feat_bytes);
        let mut float_list = Vec::new();
        field(1, &0.5f32.to_le_bytes(), &mut float_list);
        let mut feat_float = Vec::new();
        field(2, &float_list, &mut feat_float);
        let mut features = Vec::new();
        for (name, feat) in [("label", feat_int), ("image", feat_bytes), ("score", feat_float)] {
            let mut entry = Vec::new();
            field(1, name.as_bytes(), &mut entry);
            field(2, &feat, &mut entry);
            field(1, &entry, &mut features);
        }
        let mut ex = Vec::new();
        field(1, &features, &mut ex);
        ex
    }

    #[test]
    fn frames_and_examples_round_trip() {
        let ex = example();
        let mut file = frame(&ex);
        file.extend(frame(&ex));
        let recs = split_records("t", &file, true).unwrap();
        assert_eq!(recs.len(), 2);
        let (off, len) = recs[1];
        let parsed = parse_example("t", 1, &file[off..off + len]).unwrap();
        assert_eq!(parsed[0], ("label".to_string(), Feature::Int64(vec![7, -1])));
        assert_eq!(parsed[1], ("image".to_string(), Feature::Bytes(vec![b"abc"])));
        assert_eq!(parsed[2], ("score".to_string(), Feature::Float(vec![0.5])));
    }

    #[test]
    fn corruption_is_reported_not_crashed() {
        let mut file = frame(&example());
        let n = file.len();
        assert!(split_records("t", &file[..n - 3], true).unwrap_err().to_string().contains("truncated"));
        file[20] ^= 0xff;
        assert!(split_records("t", &file, true).unwrap_err().to_string().contains("data CRC"));
        assert!(split_records("t", &file, false).is_ok());
        file[2] ^= 0xff;
        assert!(split_records("t", &file, true).unwrap_err().to_string().contains("length CRC"));
        for cut in 0..example().len() {
            let _ = parse_example("t", 0, &example()[..cut]);
        }
    }
}
