//! Hostile tokenizer files through the loader of `tokenize` (the
//! tokenizers crate's JSON deserializer and its model, normalizer,
//! pre-tokenizer and post-processor builders), then an encode of a few
//! texts with whatever loaded: an error, never a panic or a hang.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // `load` catches the tokenizers crate's own panics (it has some on bad
    // files) and returns them as errors; libFuzzer's panic hook would
    // abort before the catch, so it is quieted here. A panic anywhere else
    // still unwinds out of this closure, which libfuzzer-sys reports.
    static QUIET: std::sync::Once = std::sync::Once::new();
    if std::env::var_os("DATAIO_FUZZ_LOUD").is_none() {
        QUIET.call_once(|| std::panic::set_hook(Box::new(|_| ())));
    }
    if let Ok(tok) = dataio_text::load(data, "fuzz") {
        // The op's own calls run behind the op ABI's catch_unwind, as here.
        for text in ["", "the loader tokenizes captions", "数据 😀 e\u{301}\t\n x\u{7}y"] {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tok.encode(text, true)));
        }
    }
});
