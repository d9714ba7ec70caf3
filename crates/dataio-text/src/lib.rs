//! Text for the `dataio-text` plugin, behind dataio's op ABI:
//!
//! * `tokenize` — a text value (a string field, or UTF-8 bytes) to token
//!   ids, int64 (or int32) `[L]`, with a Hugging Face `tokenizer.json`
//!   loaded once per process from any URI (read through the host, by the
//!   engine's backends, when a plan is prepared) and shared by the pool.
//!
//! Ids are those of the `tokenizers` Python package for the same file and
//! text: the same crate does the work (with Oniguruma, as that package).

use dataio_abi::ops::{flags, kind, Call, Host, Op, Output};
use dataio_abi::{status, AbiError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

/// The largest tokenizer file loaded.
pub const MAX_TOKENIZER_BYTES: usize = 1 << 30;

/// Parses a `tokenizer.json`; an error names `uri` and what is wrong.
pub fn load(bytes: &[u8], uri: &str) -> Result<Tokenizer, String> {
    if bytes.len() > MAX_TOKENIZER_BYTES {
        return Err(format!(
            "{uri}: a tokenizer file of {} bytes is over the {MAX_TOKENIZER_BYTES}-byte bound",
            bytes.len()
        ));
    }
    let bad = |e: &dyn std::fmt::Display| format!("{uri}: not a tokenizer file the tokenizers crate can load: {e}");
    // Malformed JSON is refused before the crate sees it: tokenizers 0.22.2
    // panics on some (an `expect` in its decoder deserializer; the fuzz
    // target `tokenizer_file` found it), and a panic is caught below too.
    serde_json::from_slice::<Json>(bytes).map_err(|e| bad(&e))?;
    // A file that loads but cannot encode (a post-processor template naming
    // a special token the file lacks panics the crate's encode) is refused
    // here, once, rather than failing every record.
    let probe = || {
        let t = Tokenizer::from_bytes(bytes)?;
        for text in ["", "a probe, 0 ✓"] {
            t.encode(text, true)?;
            t.encode(text, false)?;
        }
        Ok::<_, tokenizers::Error>(t)
    };
    match std::panic::catch_unwind(probe) {
        Ok(Ok(t)) => Ok(t),
        Ok(Err(e)) => Err(bad(&e)),
        Err(p) => {
            let what = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
            Err(bad(&format!("the crate panicked: {}", what.unwrap_or_default())))
        }
    }
}

type Slot = Arc<OnceLock<Result<Arc<Tokenizer>, String>>>;

/// Loaded tokenizers by URI, and configured ones (truncation, padding) by
/// URI and configuration: each loaded once per process.
fn cache() -> &'static Mutex<HashMap<String, Slot>> {
    static C: OnceLock<Mutex<HashMap<String, Slot>>> = OnceLock::new();
    C.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The tokenizer kept under `key`, made by `make` the first time it succeeds:
/// a failure is not kept (a file that was missing, or a store that failed
/// for a moment, is read again by the next plan that names it).
fn once(key: &str, make: impl FnOnce() -> Result<Arc<Tokenizer>, String>) -> Result<Arc<Tokenizer>, String> {
    let slot = cache().lock().unwrap().entry(key.to_string()).or_default().clone();
    if let Some(Ok(t)) = slot.get() {
        return Ok(t.clone());
    }
    let t = make()?;
    Ok(slot.get_or_init(|| Ok(t)).clone().expect("only successes are kept"))
}

/// Keeps `bytes` as the tokenizer of `uri` (parsed now; an error if not a tokenizer).
pub fn preload(uri: &str, bytes: &[u8]) -> Result<(), String> {
    let tok = Arc::new(load(bytes, uri)?);
    let slot: Slot = Arc::new(OnceLock::new());
    let _ = slot.set(Ok(tok));
    cache().lock().unwrap().insert(uri.to_string(), slot);
    Ok(())
}

/// Forgets every loaded tokenizer (tests).
pub fn clear() {
    cache().lock().unwrap().clear();
}

/// The tokenizer file at `uri`, loaded once per process (read through `fetch`).
fn base(uri: &str, fetch: impl FnOnce(&str) -> Result<Vec<u8>, String>) -> Result<Arc<Tokenizer>, String> {
    once(uri, || {
        let bytes = fetch(uri)?;
        load(&bytes, uri).map(Arc::new)
    })
}

/// `padding=`: pad every row to max_length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Padding {
    MaxLength,
}

/// `dtype=` of the ids.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum IdType {
    #[default]
    Int64,
    Int32,
}

/// The parameters of `tokenize`, parsed once per plan; `prepare` loads the
/// tokenizer they name.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenizeParams {
    /// The URI of a Hugging Face tokenizer.json (any scheme dataio reads), or a tokenizers.Tokenizer.
    pub tokenizer: String,
    /// Truncate (and, with padding, pad) to this many tokens.
    #[schemars(range(min = 1))]
    pub max_length: Option<u64>,
    /// Truncate to max_length.
    #[serde(default = "yes")]
    pub truncation: bool,
    /// "max_length" pads every row to max_length with the file's pad token.
    pub padding: Option<Padding>,
    /// Add the tokenizer's special tokens (BOS/EOS, CLS/SEP).
    #[serde(default = "yes")]
    pub add_special_tokens: bool,
    /// The ids' dtype.
    #[serde(default)]
    pub dtype: IdType,
    /// A longer text fails the row.
    #[schemars(range(min = 1))]
    #[serde(default = "max_chars")]
    pub max_chars: u64,
    #[serde(skip)]
    #[schemars(skip)]
    tok: OnceLock<Arc<Tokenizer>>,
}

fn yes() -> bool {
    true
}

fn max_chars() -> u64 {
    1 << 22
}

fn invalid(m: impl Into<String>) -> AbiError {
    AbiError::new(status::INVALID_ARGUMENT, m)
}

impl TokenizeParams {
    /// The tokenizer with these truncation and padding settings, made once
    /// per process (the file read through `fetch` the first time).
    pub fn configured(&self, fetch: impl FnOnce(&str) -> Result<Vec<u8>, String>) -> Result<Arc<Tokenizer>, AbiError> {
        if self.tokenizer.is_empty() {
            return Err(invalid("tokenize needs tokenizer=<the URI of a tokenizer.json>"));
        }
        let pad = self.padding == Some(Padding::MaxLength);
        if self.max_length == Some(0) || self.max_chars == 0 {
            return Err(invalid("max_length and max_chars must be positive"));
        }
        if pad && self.max_length.is_none() {
            return Err(invalid("padding=\"max_length\" needs max_length"));
        }
        let uri = self.tokenizer.as_str();
        let plain = base(uri, fetch).map_err(invalid)?;
        let (Some(n), true) = (self.max_length.map(|n| n as usize), self.truncation || pad) else {
            return Ok(plain);
        };
        let key = format!("{uri}\u{0}{n}\u{0}{}\u{0}{pad}", self.truncation);
        once(&key, || {
            let mut t = (*plain).clone();
            if self.truncation {
                t.with_truncation(Some(TruncationParams { max_length: n, ..Default::default() }))
                    .map_err(|e| format!("{uri}: truncation to {n}: {e}"))?;
            }
            if pad {
                // The file's own padding token and id when it names them.
                let mut p = t.get_padding().cloned().unwrap_or_default();
                p.strategy = PaddingStrategy::Fixed(n);
                t.with_padding(Some(PaddingParams { pad_to_multiple_of: None, ..p }));
            }
            Ok(Arc::new(t))
        })
        .map_err(invalid)
    }
}

/// `tokenize`: text to ids.
pub struct Tokenize;

impl Op for Tokenize {
    const NAME: &'static str = "tokenize";
    const DOC: &'static str = "Text (a string field, or UTF-8 bytes) to token ids, int64 [L] (int32 with \
        dtype='int32'), with the Hugging Face tokenizer.json at tokenizer= (any URI, or a tokenizers.Tokenizer; \
        loaded once per process); max_length truncates, padding='max_length' pads to it.";
    const KIND: u32 = kind::DECODE;
    const FLAGS: u32 = flags::TEXT_INPUT;
    const PREPARE_HOOK: &'static str = "dataio_text.plugin:prepare";
    const OUTPUT_NDIM: i32 = 1;
    type Params = TokenizeParams;

    fn prepare(&self, p: &TokenizeParams, host: &Host<'_>) -> Result<(), AbiError> {
        let tok = p.configured(|uri| {
            host.fetch(uri).map_err(|e| format!("{uri}: reading the tokenizer file failed: {}", e.message))
        })?;
        let _ = p.tok.set(tok);
        Ok(())
    }

    fn run(&self, p: &TokenizeParams, call: &Call<'_>, out: &mut Output<'_>) -> Result<(), AbiError> {
        let tok = p.tok.get().ok_or_else(|| invalid("tokenize ran before its tokenizer was loaded"))?;
        let text = std::str::from_utf8(call.data).map_err(|e| {
            AbiError::new(status::CORRUPT, format!("the text is not UTF-8 (invalid byte at {})", e.valid_up_to()))
        })?;
        let max_chars = p.max_chars as usize;
        if text.len() > max_chars && text.chars().count() > max_chars {
            return Err(AbiError::new(
                status::CORRUPT,
                format!("a text of {} characters is over max_chars={max_chars}", text.chars().count()),
            ));
        }
        // encode_fast: the same ids without the character offsets (which
        // the op does not return).
        let enc = tok
            .encode_fast(text, p.add_special_tokens)
            .map_err(|e| AbiError::new(status::CORRUPT, format!("tokenizing failed: {e}")))?;
        let ids = enc.get_ids();
        if p.dtype == IdType::Int32 {
            let dst = out.alloc("int32", &[ids.len() as u64])?;
            for (d, &i) in dst.chunks_exact_mut(4).zip(ids) {
                d.copy_from_slice(&(i as i32).to_ne_bytes());
            }
        } else {
            let dst = out.alloc("int64", &[ids.len() as u64])?;
            for (d, &i) in dst.chunks_exact_mut(8).zip(ids) {
                d.copy_from_slice(&(i as i64).to_ne_bytes());
            }
        }
        Ok(())
    }
}
