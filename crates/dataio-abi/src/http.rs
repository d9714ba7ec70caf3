//! Parsers of the HTTP response headers a backend acts on (untrusted text
//! from any server a URL names): `Retry-After`, HTTP dates
//! (`Last-Modified`), `Content-Range` and `X-Robots-Tag`. Plain functions
//! over `&str`, no allocation beyond the result, fuzzed
//! (`crates/dataio-abi/fuzz`, target `http_headers`).

use std::time::Duration;

/// The most `Retry-After` is honoured for.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// Seconds since the Unix epoch of an HTTP date in the preferred format
/// (IMF-fixdate, RFC 9110 §5.6.7: `Sun, 06 Nov 1994 08:49:37 GMT`; the day
/// name may be missing). `None` for anything else.
pub fn parse_http_date(value: &str) -> Option<i64> {
    let v = value.trim();
    let v = match v.split_once(',') {
        Some((day, rest)) if day.len() <= 9 && day.bytes().all(|b| b.is_ascii_alphabetic()) => rest.trim(),
        Some(_) => return None,
        None => v,
    };
    let mut parts = v.split_ascii_whitespace();
    let day: u32 = parts.next()?.parse().ok()?;
    let month = match parts.next()?.to_ascii_lowercase().as_str() {
        "jan" => 1,
        "feb" => 2,
        "mar" => 3,
        "apr" => 4,
        "may" => 5,
        "jun" => 6,
        "jul" => 7,
        "aug" => 8,
        "sep" => 9,
        "oct" => 10,
        "nov" => 11,
        "dec" => 12,
        _ => return None,
    };
    let year: i64 = parts.next()?.parse().ok()?;
    let mut hms = parts.next()?.split(':');
    let (h, m, s): (i64, i64, i64) = (hms.next()?.parse().ok()?, hms.next()?.parse().ok()?, hms.next()?.parse().ok()?);
    if hms.next().is_some() || !matches!(parts.next(), Some("GMT" | "UTC")) || parts.next().is_some() {
        return None;
    }
    if !(1..=31).contains(&day) || !(0..24).contains(&h) || !(0..60).contains(&m) || !(0..=60).contains(&s) {
        return None;
    }
    if !(1600..=9999).contains(&year) {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + s)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// How long a `Retry-After` value says to wait, `now` being seconds since
/// the epoch: delta-seconds or an HTTP date, at most [`MAX_RETRY_AFTER`]
/// (a date in the past is 0); `None` when unreadable.
pub fn retry_after(value: &str, now: i64) -> Option<Duration> {
    let v = value.trim();
    let secs = match v.parse::<u64>() {
        Ok(s) => s,
        Err(_) => parse_http_date(v)?.saturating_sub(now).max(0) as u64,
    };
    Some(Duration::from_secs(secs).min(MAX_RETRY_AFTER))
}

/// `(first, last, total)` of a `Content-Range: bytes first-last/total`
/// value (`total` `None` for `*`); `None` when malformed or `last < first`
/// or past `total`.
pub fn content_range(value: &str) -> Option<(u64, u64, Option<u64>)> {
    let rest = value.trim().strip_prefix("bytes ")?;
    let (span, total) = rest.split_once('/')?;
    let (a, b) = span.split_once('-')?;
    let (a, b): (u64, u64) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
    let total = match total.trim() {
        "*" => None,
        t => Some(t.parse::<u64>().ok()?),
    };
    if b < a || total.is_some_and(|t| b >= t) {
        return None;
    }
    Some((a, b, total))
}

/// Whether an `X-Robots-Tag` value forbids AI use: a `noai` or `noimageai`
/// directive for every agent, or one scoped to `agent` (`"otherbot: noai"`
/// names another and does not count).
pub fn robots_forbid(value: &str, agent: &str) -> Option<&'static str> {
    for part in value.split(',') {
        let mut d = part.trim();
        if let Some((who, rest)) = d.split_once(':') {
            let who = who.trim();
            if !who.is_empty() && !who.contains(' ') && who != "*" && !who.eq_ignore_ascii_case(agent) {
                continue;
            }
            d = rest.trim();
        }
        for token in d.split_ascii_whitespace() {
            if token.eq_ignore_ascii_case("noai") {
                return Some("noai");
            }
            if token.eq_ignore_ascii_case("noimageai") {
                return Some("noimageai");
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_retry_after_ranges_and_robots() {
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), Some(784_111_777));
        assert_eq!(parse_http_date("06 Nov 1994 08:49:37 GMT"), Some(784_111_777));
        assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(parse_http_date("Tue, 29 Feb 2028 12:00:00 GMT"), Some(1_835_438_400));
        for bad in [
            "",
            "Sun, 06 Nov 1994",
            "Sunday 06 Nov 1994 08:49:37 GMT",
            "Sun, 32 Nov 1994 08:49:37 GMT",
            "Sun, 06 Foo 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 PST",
            "Sun, 06 Nov 1994 25:00:00 GMT",
        ] {
            assert_eq!(parse_http_date(bad), None, "{bad}");
        }
        let now = parse_http_date("Sun, 06 Dec 2026 21:00:00 GMT").unwrap();
        assert_eq!(retry_after("3", now), Some(Duration::from_secs(3)));
        assert_eq!(retry_after("Sun, 06 Dec 2026 21:00:05 GMT", now), Some(Duration::from_secs(5)));
        assert_eq!(retry_after("Sun, 06 Dec 2026 20:00:00 GMT", now), Some(Duration::ZERO));
        assert_eq!(retry_after("9999", now), Some(MAX_RETRY_AFTER));
        assert_eq!(retry_after("soon", now), None);
        assert_eq!(content_range("bytes 10-19/100"), Some((10, 19, Some(100))));
        assert_eq!(content_range("bytes 10-19/*"), Some((10, 19, None)));
        assert_eq!(content_range("bytes 19-10/100"), None);
        assert_eq!(content_range("bytes 10-100/100"), None);
        assert_eq!(content_range("items 1-2/3"), None);
        assert_eq!(robots_forbid("noai", "dataio"), Some("noai"));
        assert_eq!(robots_forbid("noindex, NoImageAI", "dataio"), Some("noimageai"));
        assert_eq!(robots_forbid("otherbot: noai", "dataio"), None);
        assert_eq!(robots_forbid("dataio: noai", "dataio"), Some("noai"));
        assert_eq!(robots_forbid("noindex, nofollow", "dataio"), None);
    }
}
