//! The HTTP response headers dataio-http acts on, as any server may send
//! them: `Retry-After` (never more than its cap), HTTP dates, `Content-Range`
//! (a span in order and inside its total) and `X-Robots-Tag`.
#![no_main]
use dataio_abi::http::{content_range, parse_http_date, retry_after, robots_forbid, MAX_RETRY_AFTER};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Some(d) = retry_after(text, 1_800_000_000) {
        assert!(d <= MAX_RETRY_AFTER, "Retry-After over its cap: {d:?}");
    }
    if let Some(t) = parse_http_date(text) {
        assert!((-12_000_000_000..=254_000_000_000).contains(&t), "a date outside years 1600-9999: {t}");
    }
    if let Some((a, b, total)) = content_range(text) {
        assert!(a <= b && total.is_none_or(|t| b < t), "a range out of order or past its total");
    }
    if let Some(d) = robots_forbid(text, "dataio") {
        assert!(d == "noai" || d == "noimageai");
    }
});
