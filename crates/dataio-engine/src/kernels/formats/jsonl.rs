//! JSON Lines shards: the line table a shard index keeps (each non-blank
//! line's span), and one line parsed into a record's fields.

use crate::base::error::{Error, Result};
use serde_json::Value as Json;

/// The most lines one shard may hold.
pub const MAX_LINES: usize = 1 << 32;

/// `(offset, len)` of every line of `payload` that holds more than
/// whitespace, without its `\n` or `\r\n`. A last line without a newline
/// counts.
pub fn split_lines(uri: &str, payload: &[u8]) -> Result<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    let mut start = 0usize;
    while start < payload.len() {
        let end = memchr::memchr(b'\n', &payload[start..]).map_or(payload.len(), |i| start + i);
        let mut line = &payload[start..end];
        if let [rest @ .., b'\r'] = line {
            line = rest;
        }
        if !line.iter().all(u8::is_ascii_whitespace) {
            if out.len() >= MAX_LINES {
                return Err(Error::corrupt(uri, "jsonl", format!("over {MAX_LINES} lines")));
            }
            out.push((start as u64, line.len() as u64));
        }
        start = end + 1;
    }
    Ok(out)
}

/// The 1-based line number of byte `offset` of `payload`.
pub fn line_number(payload: &[u8], offset: u64) -> u64 {
    memchr::memchr_iter(b'\n', &payload[..(offset as usize).min(payload.len())]).count() as u64 + 1
}

/// The fields of one line, in the object's order (the record layer turns
/// them into values: see `Value::from_json`). `line` is the line's number,
/// for errors.
pub fn parse_line(uri: &str, line: u64, text: &[u8]) -> Result<Vec<(String, Json)>> {
    let v: Json = serde_json::from_slice(text)
        .map_err(|e| Error::corrupt(uri, "jsonl", format!("line {line}: not JSON: {e}")))?;
    let Json::Object(m) = v else {
        return Err(Error::corrupt(uri, "jsonl", format!("line {line}: a JSON {} where an object belongs", kind(&v))));
    };
    Ok(m.into_iter().collect())
}

fn kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "bool",
        Json::Number(_) => "number",
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_skip_blanks_and_crlf_and_keep_a_last_line_without_newline() {
        let p = b"{\"a\":1}\r\n\n  \n{\"b\":2}\n{\"c\":3}";
        let spans = split_lines("u", p).unwrap();
        let texts: Vec<&[u8]> = spans.iter().map(|&(o, n)| &p[o as usize..(o + n) as usize]).collect();
        assert_eq!(texts, [&b"{\"a\":1}"[..], b"{\"b\":2}", b"{\"c\":3}"]);
        assert_eq!(line_number(p, spans[1].0), 4);
        assert_eq!(line_number(p, spans[2].0), 5);
    }

    #[test]
    fn a_line_that_is_not_an_object_names_its_line() {
        let e = parse_line("s.jsonl", 7, b"[1, 2]").unwrap_err().to_string();
        assert!(e.contains("line 7") && e.contains("array") && e.contains("s.jsonl"), "{e}");
        let e = parse_line("s.jsonl", 3, b"{\"a\": ").unwrap_err().to_string();
        assert!(e.contains("line 3: not JSON"), "{e}");
        let f =
            parse_line("s.jsonl", 1, br#"{"text": "hi", "n": 3, "x": 1.5, "ok": true, "m": {"k": [1]}, "z": null}"#)
                .unwrap();
        let names: Vec<&str> = f.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["text", "n", "x", "ok", "m", "z"]);
        assert_eq!(f[4].1, serde_json::json!({"k": [1]}));
    }
}
