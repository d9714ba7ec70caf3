//! CSV shards (RFC 4180, as the `csv` crate reads it): the header and the
//! row table a shard index keeps (each row's byte span; a quoted field may
//! hold newlines, so rows are found by the parser, not by lines), and one
//! row parsed into a record's fields, typed by column where asked.

use crate::base::error::{Error, Result};
use std::collections::HashMap;

/// One field of a row, as its column's type reads it (the record layer
/// turns it into a record value).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
}

/// The most rows one shard may hold.
pub const MAX_ROWS: usize = 1 << 32;

/// The type a column's text is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    Str,
    Int,
    Float,
    Bool,
    Bytes,
}

impl ColumnType {
    pub fn parse(s: &str) -> Result<ColumnType> {
        Ok(match s {
            "str" => ColumnType::Str,
            "int" => ColumnType::Int,
            "float" => ColumnType::Float,
            "bool" => ColumnType::Bool,
            "bytes" => ColumnType::Bytes,
            other => {
                return Err(Error::invalid(format!(
                    "a CSV column type is str, int, float, bool or bytes, not {other:?}"
                )))
            }
        })
    }
}

/// How a CSV shard is read: its delimiter, and the columns with a type
/// (the others are text).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CsvSpec {
    pub delimiter: u8,
    pub columns: HashMap<String, ColumnType>,
}

impl CsvSpec {
    /// From the options part of a format spec (`csv:{"delimiter": ";",
    /// "columns": {"label": "int"}}`); `None` is the default (`,`, all text).
    pub fn parse(options: Option<&str>) -> Result<CsvSpec> {
        let mut spec = CsvSpec { delimiter: b',', columns: HashMap::new() };
        let Some(text) = options else { return Ok(spec) };
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| Error::invalid(format!("CSV options are not JSON: {e}")))?;
        let serde_json::Value::Object(m) = v else { return Err(Error::invalid("CSV options must be a JSON object")) };
        for (k, v) in m {
            match (k.as_str(), v) {
                ("delimiter", serde_json::Value::String(d)) if d.len() == 1 && d.is_ascii() => {
                    spec.delimiter = d.as_bytes()[0];
                    if matches!(spec.delimiter, b'"' | b'\n' | b'\r') {
                        return Err(Error::invalid(format!("a CSV delimiter cannot be {d:?}")));
                    }
                }
                ("delimiter", d) => {
                    return Err(Error::invalid(format!("a CSV delimiter is one ASCII character, got {d}")))
                }
                ("columns", serde_json::Value::Object(cols)) => {
                    for (name, t) in cols {
                        let serde_json::Value::String(t) = t else {
                            return Err(Error::invalid(format!("CSV column {name:?}: its type is a name, got {t}")));
                        };
                        spec.columns.insert(name, ColumnType::parse(&t)?);
                    }
                }
                (other, _) => return Err(Error::invalid(format!("unknown CSV option {other:?}"))),
            }
        }
        Ok(spec)
    }
}

fn reader(payload: &[u8], delimiter: u8, headers: bool) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new().delimiter(delimiter).has_headers(headers).flexible(true).from_reader(payload)
}

/// A CSV shard's header and the `(offset, len)` of each row after it.
pub type HeaderAndRows = (Vec<String>, Vec<(u64, u64)>);

/// The header (column names) and `(offset, len)` of every row of
/// `payload` after it. Blank lines are no rows; a header with an empty or
/// repeated name is refused, naming the column.
pub fn split_rows(uri: &str, payload: &[u8], delimiter: u8) -> Result<HeaderAndRows> {
    let mut rdr = reader(payload, delimiter, true);
    let header: Vec<String> = rdr
        .byte_headers()
        .map_err(|e| Error::corrupt(uri, "csv", format!("the header row: {e}")))?
        .iter()
        .map(|h| String::from_utf8_lossy(h).trim().to_string())
        .collect();
    if header.is_empty() || (header.len() == 1 && header[0].is_empty()) {
        if payload.iter().all(u8::is_ascii_whitespace) {
            return Ok((Vec::new(), Vec::new()));
        }
        return Err(Error::corrupt(uri, "csv", "the header row names no column"));
    }
    for (i, h) in header.iter().enumerate() {
        if h.is_empty() {
            return Err(Error::corrupt(uri, "csv", format!("column {} of the header has no name", i + 1)));
        }
        if header[..i].contains(h) {
            return Err(Error::corrupt(uri, "csv", format!("the header names column {h:?} twice")));
        }
    }
    let mut rows = Vec::new();
    let mut rec = csv::ByteRecord::new();
    loop {
        let more = rdr.read_byte_record(&mut rec).map_err(|e| Error::corrupt(uri, "csv", e.to_string()))?;
        if !more {
            break;
        }
        let mut start = rec.position().map_or(0, |p| p.byte());
        let end = rdr.position().byte().min(payload.len() as u64);
        // After a CRLF the parser places the next record at the LF: a row
        // starts after its line's terminator (its key and line number say so).
        while start < end && matches!(payload[start as usize], b'\r' | b'\n') {
            start += 1;
        }
        if rows.len() >= MAX_ROWS {
            return Err(Error::corrupt(uri, "csv", format!("over {MAX_ROWS} rows")));
        }
        if end > start {
            rows.push((start, end - start));
        }
    }
    Ok((header, rows))
}

/// The 1-based line number of byte `offset` of `payload`.
pub fn line_number(payload: &[u8], offset: u64) -> u64 {
    memchr::memchr_iter(b'\n', &payload[..(offset as usize).min(payload.len())]).count() as u64 + 1
}

/// The fields of one row, named by the header, each typed as `spec` says
/// (text otherwise: a string, or bytes when it is not UTF-8). An empty
/// field of a typed column is None. `line` is the row's line, for errors.
pub fn parse_row(uri: &str, line: u64, header: &[String], text: &[u8], spec: &CsvSpec) -> Result<Vec<(String, Value)>> {
    let mut rdr = reader(text, spec.delimiter, false);
    let mut rec = csv::ByteRecord::new();
    let got = rdr.read_byte_record(&mut rec).map_err(|e| Error::corrupt(uri, "csv", format!("line {line}: {e}")))?;
    if !got {
        return Err(Error::corrupt(uri, "csv", format!("line {line}: an empty row")));
    }
    if rec.len() != header.len() {
        return Err(Error::corrupt(
            uri,
            "csv",
            format!("line {line}: {} fields where the header has {} columns", rec.len(), header.len()),
        ));
    }
    let mut out = Vec::with_capacity(header.len());
    for (name, field) in header.iter().zip(rec.iter()) {
        let ty = spec.columns.get(name).copied();
        let bad = |what: &str| {
            Error::corrupt(
                uri,
                "csv",
                format!("line {line}, column {name:?}: {:?} is not {what}", String::from_utf8_lossy(field)),
            )
        };
        let value = match ty {
            None | Some(ColumnType::Str) => match std::str::from_utf8(field) {
                Ok(s) => Value::Str(s.to_string()),
                Err(_) if ty.is_none() => Value::Bytes(field.to_vec()),
                Err(_) => return Err(bad("UTF-8 text")),
            },
            Some(ColumnType::Bytes) => Value::Bytes(field.to_vec()),
            Some(_) if field.iter().all(u8::is_ascii_whitespace) => Value::Null,
            Some(t) => {
                let s = std::str::from_utf8(field).map_err(|_| bad("text"))?.trim();
                match t {
                    ColumnType::Int => Value::Int(s.parse().map_err(|_| bad("an integer"))?),
                    ColumnType::Float => Value::Float(s.parse().map_err(|_| bad("a number"))?),
                    ColumnType::Bool => match s.to_ascii_lowercase().as_str() {
                        "true" | "1" | "yes" | "t" | "y" => Value::Bool(true),
                        "false" | "0" | "no" | "f" | "n" => Value::Bool(false),
                        _ => return Err(bad("a bool (true/false, 1/0, yes/no)")),
                    },
                    ColumnType::Str | ColumnType::Bytes => unreachable!(),
                }
            }
        };
        out.push((name.clone(), value));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_may_hold_quoted_newlines_and_crlf() {
        let p = b"path,label,caption\r\na.jpg,0,\"a cat\non a mat\"\r\n\r\nb.jpg,1,\"say \"\"hi\"\"\"\nc.jpg,2,last";
        let (header, rows) = split_rows("u.csv", p, b',').unwrap();
        assert_eq!(header, ["path", "label", "caption"]);
        assert_eq!(rows.len(), 3);
        let spec = CsvSpec::parse(Some(r#"{"columns": {"label": "int"}}"#)).unwrap();
        let parsed: Vec<_> = rows
            .iter()
            .map(|&(o, n)| parse_row("u.csv", line_number(p, o), &header, &p[o as usize..(o + n) as usize], &spec))
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(parsed[0][2].1, Value::Str("a cat\non a mat".into()));
        assert_eq!(parsed[1][1].1, Value::Int(1));
        assert_eq!(parsed[1][2].1, Value::Str("say \"hi\"".into()));
        assert_eq!(parsed[2][2].1, Value::Str("last".into()));
        let lines: Vec<u64> = rows.iter().map(|&(o, _)| line_number(p, o)).collect();
        assert_eq!(lines, [2, 5, 6]);
        // The same rows with LF and with CRLF line ends are on the same lines.
        let (_, lf) = split_rows("u.csv", b"w,l\nx,1\ny,2\n", b',').unwrap();
        let (_, crlf) = split_rows("u.csv", b"w,l\r\nx,1\r\ny,2\r\n", b',').unwrap();
        let at = |p: &[u8], r: &[(u64, u64)]| r.iter().map(|&(o, _)| line_number(p, o)).collect::<Vec<_>>();
        assert_eq!(at(b"w,l\nx,1\ny,2\n", &lf), [2, 3]);
        assert_eq!(at(b"w,l\r\nx,1\r\ny,2\r\n", &crlf), [2, 3]);
    }

    #[test]
    fn errors_name_the_line_and_column() {
        let spec = CsvSpec::parse(Some(r#"{"columns": {"label": "int"}}"#)).unwrap();
        let h = vec!["path".to_string(), "label".to_string()];
        let e = parse_row("s.csv", 7, &h, b"a.jpg,cat\n", &spec).unwrap_err().to_string();
        assert!(e.contains("s.csv") && e.contains("line 7") && e.contains("\"label\"") && e.contains("integer"), "{e}");
        let e = parse_row("s.csv", 3, &h, b"a.jpg\n", &spec).unwrap_err().to_string();
        assert!(e.contains("line 3: 1 fields where the header has 2"), "{e}");
        assert_eq!(parse_row("s.csv", 3, &h, b"a.jpg,\n", &spec).unwrap()[1].1, Value::Null);
        assert!(split_rows("d.csv", b"a,a\n1,2\n", b',').unwrap_err().to_string().contains("twice"));
        assert!(CsvSpec::parse(Some(r#"{"columns": {"x": "date"}}"#)).is_err());
        assert!(CsvSpec::parse(Some(r#"{"delimiter": "ab"}"#)).is_err());
    }

    #[test]
    fn semicolons_and_an_empty_file() {
        let spec = CsvSpec::parse(Some(r#"{"delimiter": ";"}"#)).unwrap();
        let p = b"a;b\n1;x,y\n";
        let (h, rows) = split_rows("u", p, spec.delimiter).unwrap();
        let (o, n) = rows[0];
        let r = parse_row("u", 2, &h, &p[o as usize..(o + n) as usize], &spec).unwrap();
        assert_eq!(r[1].1, Value::Str("x,y".into()));
        assert_eq!(split_rows("e", b"", b',').unwrap(), (vec![], vec![]));
    }
}
