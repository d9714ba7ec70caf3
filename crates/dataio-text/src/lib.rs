//! Text for the `dataio-text` plugin, behind dataio's op ABI:
//!
//! * `tokenize` — a text value (a string field, or UTF-8 bytes) to token
//!   ids, int64 (or int32) `[L]`, with a Hugging Face `tokenizer.json`
//!   loaded once per process from any URI and shared by the pool.
//!
//! Ids are those of the `tokenizers` Python package for the same file and
//! text: the same crate does the work (with Oniguruma, as that package).

use dataio_abi::ops::{flags, kind, Call, ExportOp, Output};
use dataio_abi::{status, AbiError};
use serde_json::{Map, Value as Json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

/// Reads the bytes of a URI for the loader of tokenizer files (the plugin
/// shell installs one that reads through dataio's backends).
pub type Fetch = dyn Fn(&str) -> Result<Vec<u8>, String> + Send + Sync;

fn fetcher() -> &'static RwLock<Option<Arc<Fetch>>> {
    static F: OnceLock<RwLock<Option<Arc<Fetch>>>> = OnceLock::new();
    F.get_or_init(|| RwLock::new(None))
}

/// Installs the function that reads tokenizer files by URI.
pub fn set_fetcher(f: Arc<Fetch>) {
    *fetcher().write().unwrap() = Some(f);
}

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

fn once(key: &str, make: impl FnOnce() -> Result<Arc<Tokenizer>, String>) -> Result<Arc<Tokenizer>, String> {
    let slot = cache().lock().unwrap().entry(key.to_string()).or_default().clone();
    slot.get_or_init(make).clone()
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

fn base(uri: &str) -> Result<Arc<Tokenizer>, String> {
    once(uri, || {
        let fetch = fetcher().read().unwrap().clone().ok_or_else(|| format!("{uri}: no reader for tokenizer files"))?;
        let bytes = fetch(uri)?;
        load(&bytes, uri).map(Arc::new)
    })
}

/// How one call tokenizes.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub tokenizer: String,
    pub max_length: Option<usize>,
    pub truncation: bool,
    pub pad_to_max_length: bool,
    pub add_special_tokens: bool,
    pub int32: bool,
    pub max_chars: usize,
}

fn invalid(m: impl Into<String>) -> AbiError {
    AbiError::new(status::INVALID_ARGUMENT, m)
}

impl Config {
    pub fn parse(params: &str) -> Result<Config, AbiError> {
        let m: Map<String, Json> = match serde_json::from_str(params) {
            Ok(Json::Object(m)) => m,
            _ => return Err(invalid("params must be a JSON object")),
        };
        let get = |k: &str| m.get(k).filter(|v| !v.is_null());
        let tokenizer = match get("tokenizer") {
            Some(Json::String(s)) if !s.is_empty() => s.clone(),
            _ => return Err(invalid("tokenize needs tokenizer=<the URI of a tokenizer.json>")),
        };
        let int = |k: &str| -> Result<Option<usize>, AbiError> {
            match get(k) {
                None => Ok(None),
                Some(v) => v
                    .as_u64()
                    .filter(|&n| n > 0)
                    .map(|n| Some(n as usize))
                    .ok_or_else(|| invalid(format!("{k} must be a positive integer, got {v}"))),
            }
        };
        let flag = |k: &str, default: bool| -> Result<bool, AbiError> {
            match get(k) {
                None => Ok(default),
                Some(Json::Bool(b)) => Ok(*b),
                Some(v) => Err(invalid(format!("{k} must be true or false, got {v}"))),
            }
        };
        let pad_to_max_length = match get("padding") {
            None => false,
            Some(Json::String(s)) if s == "max_length" => true,
            Some(v) => return Err(invalid(format!("padding must be None or \"max_length\", got {v}"))),
        };
        let int32 = match get("dtype") {
            None => false,
            Some(Json::String(s)) if s == "int64" => false,
            Some(Json::String(s)) if s == "int32" => true,
            Some(v) => return Err(invalid(format!("dtype must be \"int64\" or \"int32\", got {v}"))),
        };
        let max_length = int("max_length")?;
        if pad_to_max_length && max_length.is_none() {
            return Err(invalid("padding=\"max_length\" needs max_length"));
        }
        Ok(Config {
            tokenizer,
            max_length,
            truncation: flag("truncation", true)?,
            pad_to_max_length,
            add_special_tokens: flag("add_special_tokens", true)?,
            int32,
            max_chars: int("max_chars")?.unwrap_or(1 << 22),
        })
    }

    /// The tokenizer with this call's truncation and padding, made once.
    pub fn tokenizer(&self) -> Result<Arc<Tokenizer>, AbiError> {
        let plain = || base(&self.tokenizer);
        let (Some(n), true) = (self.max_length, self.truncation || self.pad_to_max_length) else {
            return plain().map_err(invalid);
        };
        let key = format!("{}\u{0}{n}\u{0}{}\u{0}{}", self.tokenizer, self.truncation, self.pad_to_max_length);
        once(&key, || {
            let mut t = (*plain()?).clone();
            if self.truncation {
                t.with_truncation(Some(TruncationParams { max_length: n, ..Default::default() }))
                    .map_err(|e| format!("{}: truncation to {n}: {e}", self.tokenizer))?;
            }
            if self.pad_to_max_length {
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

type Prepared = Arc<(Config, Arc<Tokenizer>)>;

/// A call's configuration and tokenizer by its parameters, kept per pool
/// thread: parsing the parameters and finding the tokenizer cost as much as
/// encoding a short caption.
fn prepared(params: &str) -> Result<Prepared, AbiError> {
    thread_local! {
        static KNOWN: std::cell::RefCell<HashMap<String, Prepared>> = std::cell::RefCell::new(HashMap::new());
    }
    if let Some(p) = KNOWN.with(|k| k.borrow().get(params).cloned()) {
        return Ok(p);
    }
    let cfg = Config::parse(params)?;
    let tok = cfg.tokenizer()?;
    let p = Arc::new((cfg, tok));
    KNOWN.with(|k| {
        let mut k = k.borrow_mut();
        if k.len() >= 64 {
            k.clear();
        }
        k.insert(params.to_string(), p.clone());
    });
    Ok(p)
}

/// `tokenize`: text to ids.
pub struct Tokenize;

impl ExportOp for Tokenize {
    fn name(&self) -> &str {
        "tokenize"
    }
    fn kind(&self) -> u32 {
        kind::DECODE
    }
    fn flags(&self) -> u32 {
        flags::TEXT_INPUT
    }
    fn run(&self, call: &Call<'_>, out: &mut Output<'_>) -> Result<(), AbiError> {
        let p = prepared(call.params)?;
        let (cfg, tok) = (&p.0, &p.1);
        let text = std::str::from_utf8(call.data).map_err(|e| {
            AbiError::new(status::CORRUPT, format!("the text is not UTF-8 (invalid byte at {})", e.valid_up_to()))
        })?;
        if text.len() > cfg.max_chars && text.chars().count() > cfg.max_chars {
            return Err(AbiError::new(
                status::CORRUPT,
                format!("a text of {} characters is over max_chars={}", text.chars().count(), cfg.max_chars),
            ));
        }
        // encode_fast: the same ids without the character offsets (which
        // the op does not return).
        let enc = tok
            .encode_fast(text, cfg.add_special_tokens)
            .map_err(|e| AbiError::new(status::CORRUPT, format!("tokenizing failed: {e}")))?;
        let ids = enc.get_ids();
        if cfg.int32 {
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
