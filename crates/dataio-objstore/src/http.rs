//! `http://` and `https://`: [`HttpBackend`], dataio's backend contract over
//! reqwest (rustls, HTTP/1.1 and HTTP/2), on this crate's runtime.
//!
//! * **Reads.** `read_all` is a GET, `read_range` a `Range` GET (206 and the
//!   exact length, else a typed error; a server that ignores `Range` is
//!   refused rather than downloaded whole per member), `head` a HEAD (the
//!   size from `Content-Length`, the version from `ETag`, else
//!   `Last-Modified`). A body shorter than its `Content-Length` (a cut
//!   connection) is retried, never returned short.
//! * **Retries.** Connection errors, timeouts, cut bodies, 5xx, 408 and 429,
//!   up to `retries` times with exponential backoff (0.2 s doubling, capped
//!   at 10 s), or after the `Retry-After` the server gave (seconds or an
//!   HTTP date, capped at 60 s).
//! * **Where a URL may point.** A URL is untrusted (it may come from a
//!   record). Unless allowed, a host that is, or resolves to, a loopback,
//!   private, link-local (`169.254.169.254`, the cloud metadata address),
//!   shared, multicast, documentation, benchmarking or reserved address is
//!   refused with an error naming the URL and the rule. Names are resolved
//!   by [`Guard`], the client's resolver, which returns only the addresses it
//!   allowed: the connection goes to an address that was checked (no DNS
//!   rebinding window). Literal addresses are checked before each request
//!   and each redirect (at most 10) by the redirect policy.
//! * **Headers** we act on are parsed by `dataio_abi::http` (fuzzed).
//! * **Robots.** With `respect_robots`, a response whose `X-Robots-Tag` says
//!   `noai` or `noimageai` is refused, named so (as img2dataset does).
//! * **Limits.** At most `max_connections_per_host` requests in flight per
//!   host (a semaphore each), a whole-request `timeout`.
//! * No listing (HTTP has none) and no writes: both are typed errors.

use crate::runtime;
use dataio_abi::http::{content_range, parse_http_date, retry_after, robots_forbid};
use dataio_abi::{caps, status, AbiError, Dst, ExportBackend, Meta, Reply, WriterHandle};
use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;

/// What `dataio.configure_http` sets.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Allow loopback, private, link-local and other internal addresses.
    pub allow_private: bool,
    /// Hosts (names, exact) and networks (CIDRs or addresses) allowed even
    /// when internal.
    pub allow_hosts: Vec<String>,
    pub max_connections_per_host: usize,
    /// Seconds for one whole request (connect, headers and body).
    pub timeout: f64,
    pub retries: u32,
    pub user_agent: String,
    pub respect_robots: bool,
    /// Extra PEM roots (besides the system's): `SSL_CERT_FILE` when set.
    pub ca_file: Option<String>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            allow_private: false,
            allow_hosts: Vec::new(),
            max_connections_per_host: 16,
            timeout: 30.0,
            retries: 3,
            user_agent: format!("dataio/{}", env!("CARGO_PKG_VERSION")),
            respect_robots: true,
            ca_file: std::env::var("SSL_CERT_FILE").ok().filter(|s| !s.is_empty()),
        }
    }
}

impl HttpConfig {
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let bad = |what: &str| format!("configure_http: {key}= must be {what}, got {value:?}");
        match key {
            "allow_private" => self.allow_private = parse_bool(value).ok_or_else(|| bad("a bool"))?,
            "respect_robots" => self.respect_robots = parse_bool(value).ok_or_else(|| bad("a bool"))?,
            "allow_hosts" => {
                self.allow_hosts =
                    value.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect();
                for h in &self.allow_hosts {
                    if h.contains('/') && h.parse::<ipnet::IpNet>().is_err() {
                        return Err(format!("configure_http: allow_hosts: {h:?} is not a network (CIDR)"));
                    }
                }
            }
            "max_connections_per_host" => {
                self.max_connections_per_host =
                    value.parse().ok().filter(|&n: &usize| n > 0).ok_or_else(|| bad("a positive integer"))?
            }
            "timeout" => {
                self.timeout = value.parse().ok().filter(|&t: &f64| t > 0.0).ok_or_else(|| bad("seconds > 0"))?
            }
            "retries" => self.retries = value.parse().map_err(|_| bad("an integer >= 0"))?,
            "user_agent" => self.user_agent = value.to_string(),
            "ca_file" => self.ca_file = Some(value.to_string()).filter(|s| !s.is_empty()),
            other => return Err(format!("configure_http: unknown option {other:?}")),
        }
        Ok(())
    }
}

fn parse_bool(v: &str) -> Option<bool> {
    match v {
        "true" | "1" => Some(true),
        "false" | "0" => Some(false),
        _ => None,
    }
}

/// Why an address is internal, or `None` for a public one.
pub fn internal(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            if v4.is_loopback() {
                Some("loopback")
            } else if v4.is_private() {
                Some("private")
            } else if v4.is_link_local() {
                Some("link-local (the cloud metadata address is one)")
            } else if v4.is_unspecified() || o[0] == 0 {
                Some("unspecified")
            } else if v4.is_broadcast() {
                Some("broadcast")
            } else if v4.is_multicast() {
                Some("multicast")
            } else if o[0] == 100 && (o[1] & 0xc0) == 64 {
                Some("shared (carrier-grade NAT)")
            } else if v4.is_documentation() {
                Some("documentation")
            } else if o[0] == 198 && (o[1] & 0xfe) == 18 {
                Some("benchmarking")
            } else if o[0] >= 240 || (o[0] == 192 && o[1] == 0 && o[2] == 0) {
                Some("reserved")
            } else {
                None
            }
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return internal(IpAddr::V4(v4));
            }
            let s = v6.segments();
            if v6.is_loopback() {
                Some("loopback")
            } else if v6.is_unspecified() {
                Some("unspecified")
            } else if v6.is_multicast() {
                Some("multicast")
            } else if (s[0] & 0xfe00) == 0xfc00 {
                Some("private (unique local)")
            } else if (s[0] & 0xffc0) == 0xfe80 {
                Some("link-local")
            } else if s[0] == 0x2001 && s[1] == 0x0db8 {
                Some("documentation")
            } else if s[0] == 0x64 && s[1] == 0xff9b {
                // NAT64 of an IPv4 address: judge the embedded address.
                let v4 = std::net::Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
                internal(IpAddr::V4(v4))
            } else {
                None
            }
        }
    }
}

/// The address rules of one configuration: whether `host` at `ip` may be used.
#[derive(Debug, Clone)]
struct Rules {
    allow_private: bool,
    hosts: Vec<String>,
    nets: Vec<ipnet::IpNet>,
}

impl Rules {
    fn new(cfg: &HttpConfig) -> Self {
        let mut hosts = Vec::new();
        let mut nets = Vec::new();
        for h in &cfg.allow_hosts {
            if let Ok(n) = h.parse::<ipnet::IpNet>() {
                nets.push(n);
            } else if let Ok(ip) = h.trim_matches(['[', ']']).parse::<IpAddr>() {
                nets.push(ipnet::IpNet::from(ip));
            } else {
                hosts.push(h.to_ascii_lowercase());
            }
        }
        Rules { allow_private: cfg.allow_private, hosts, nets }
    }

    /// `Err(rule)` when `ip` (of `host`) may not be used.
    fn check(&self, host: &str, ip: IpAddr) -> Result<(), String> {
        let Some(why) = internal(ip) else { return Ok(()) };
        if self.allow_private || self.hosts.iter().any(|h| h == host) || self.nets.iter().any(|n| n.contains(&ip)) {
            return Ok(());
        }
        Err(format!(
            "{host} is {ip}, a {why} address: refused for URLs from data (server-side request forgery); allow it \
             with dataio.configure_http(allow_private=True) or allow_hosts=[{host:?}]"
        ))
    }
}

/// The client's resolver: resolves with the system's, and hands reqwest only
/// the addresses [`Rules`] allow, so what it connects to was checked.
struct Guard {
    rules: Rules,
}

impl reqwest::dns::Resolve for Guard {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let rules = self.rules.clone();
        let host = name.as_str().to_ascii_lowercase();
        Box::pin(async move {
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let mut refused = None;
            let allowed: Vec<SocketAddr> = found
                .into_iter()
                .filter(|a| match rules.check(&host, a.ip()) {
                    Ok(()) => true,
                    Err(e) => {
                        refused.get_or_insert(e);
                        false
                    }
                })
                .collect();
            if allowed.is_empty() {
                let why = refused.unwrap_or_else(|| format!("{host} resolves to no address"));
                return Err(Box::new(Refused(why)) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(allowed.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// An address the rules refused (carried through reqwest's error chain).
#[derive(Debug)]
struct Refused(String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// The redirect limit, reached.
#[derive(Debug)]
struct RedirectLimit;

impl std::fmt::Display for RedirectLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("more than 10 redirects (a redirect loop?)")
    }
}

impl std::error::Error for RedirectLimit {}

/// The refusal in `e`'s source chain, if the guard refused.
fn refusal(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if let Some(r) = err.downcast_ref::<Refused>() {
            return Some(r.0.clone());
        }
        cur = err.source();
    }
    None
}

/// Counters of one backend (`stats()`): responses by class, retries, refusals, bytes.
#[derive(Debug, Default)]
pub struct HttpStats {
    pub ok: AtomicU64,
    pub redirects: AtomicU64,
    pub client_errors: AtomicU64,
    pub server_errors: AtomicU64,
    pub retries: AtomicU64,
    pub refused: AtomicU64,
    pub robots: AtomicU64,
    pub bytes: AtomicU64,
}

impl HttpStats {
    pub fn snapshot(&self) -> Vec<(&'static str, u64)> {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        vec![
            ("2xx", g(&self.ok)),
            ("3xx", g(&self.redirects)),
            ("4xx", g(&self.client_errors)),
            ("5xx", g(&self.server_errors)),
            ("retries", g(&self.retries)),
            ("refused", g(&self.refused)),
            ("robots_refused", g(&self.robots)),
            ("bytes", g(&self.bytes)),
        ]
    }
}

struct Inner {
    cfg: HttpConfig,
    rules: Rules,
    client: Mutex<Option<(u32, reqwest::Client)>>,
    per_host: Mutex<HashMap<String, Arc<Semaphore>>>,
    stats: Arc<HttpStats>,
}

/// The backend of `http://` and `https://` (one per scheme).
pub struct HttpBackend {
    name: String,
    inner: Arc<Inner>,
}

impl HttpBackend {
    pub fn new(scheme: &str, cfg: HttpConfig) -> Result<Self, AbiError> {
        let rules = Rules::new(&cfg);
        let inner = Inner {
            cfg,
            rules,
            client: Mutex::new(None),
            per_host: Mutex::new(HashMap::new()),
            stats: Arc::new(HttpStats::default()),
        };
        inner.client()?; // a bad CA file fails at registration
        Ok(HttpBackend { name: format!("dataio-http ({scheme})"), inner: Arc::new(inner) })
    }

    pub fn stats(&self) -> Arc<HttpStats> {
        self.inner.stats.clone()
    }

    fn run<T, F, Fut>(&self, reply: Reply<T>, op: F)
    where
        T: dataio_abi::ReplyValue + Send + 'static,
        F: FnOnce(Arc<Inner>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, AbiError>> + Send + 'static,
    {
        let inner = self.inner.clone();
        runtime::spawn(async move { reply.result(op(inner).await) });
    }
}

fn err(code: i32, uri: &str, msg: impl std::fmt::Display) -> AbiError {
    AbiError::new(code, format!("{uri}: {msg}"))
}

/// A response that says what to do next.
enum Attempt<T> {
    Done(T),
    /// Retry after this long (at least).
    Retry(AbiError, Option<Duration>),
}

impl Inner {
    fn client(&self) -> Result<reqwest::Client, AbiError> {
        let mut slot = self.client.lock().unwrap_or_else(|p| p.into_inner());
        let pid = std::process::id();
        if let Some((owner, c)) = slot.as_ref() {
            if *owner == pid {
                return Ok(c.clone());
            }
            // Inherited through fork: its pool belongs to the parent's runtime.
            std::mem::forget(slot.take());
        }
        let rules = self.rules.clone();
        let policy = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= 10 {
                // Not a refusal of an address: the server's own loop, a storage error.
                return attempt.error(RedirectLimit);
            }
            let url = attempt.url().clone();
            if !matches!(url.scheme(), "http" | "https") {
                let why = format!("a redirect to {url}: only http and https are followed");
                return attempt.error(Refused(why));
            }
            if let Some(why) = literal_refusal(&rules, &url) {
                return attempt.error(Refused(format!("a redirect to {url}: {why}")));
            }
            attempt.follow()
        });
        let mut b = reqwest::Client::builder()
            .dns_resolver(Arc::new(Guard { rules: self.rules.clone() }))
            .redirect(policy)
            .timeout(Duration::from_secs_f64(self.cfg.timeout))
            .connect_timeout(Duration::from_secs_f64(self.cfg.timeout.min(10.0)))
            .pool_max_idle_per_host(self.cfg.max_connections_per_host)
            .user_agent(self.cfg.user_agent.clone())
            .no_proxy();
        if let Some(path) = &self.cfg.ca_file {
            let pem = std::fs::read(path).map_err(|e| {
                AbiError::new(status::INVALID_ARGUMENT, format!("cannot read the CA file {path} (SSL_CERT_FILE): {e}"))
            })?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
                AbiError::new(status::INVALID_ARGUMENT, format!("the CA file {path} (SSL_CERT_FILE) is not PEM: {e}"))
            })?;
            b = b.tls_certs_merge(certs);
        }
        let c = b
            .build()
            .map_err(|e| AbiError::new(status::INVALID_ARGUMENT, format!("cannot build the HTTP client: {e}")))?;
        *slot = Some((pid, c.clone()));
        Ok(c)
    }

    fn semaphore(&self, host: &str) -> Arc<Semaphore> {
        let mut m = self.per_host.lock().unwrap_or_else(|p| p.into_inner());
        m.entry(host.to_string()).or_insert_with(|| Arc::new(Semaphore::new(self.cfg.max_connections_per_host))).clone()
    }

    fn url(&self, uri: &str) -> Result<reqwest::Url, AbiError> {
        let url =
            reqwest::Url::parse(uri).map_err(|e| err(status::INVALID_ARGUMENT, uri, format!("not a URL: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
            return Err(err(status::INVALID_ARGUMENT, uri, "expected http(s)://host/path"));
        }
        if let Some(why) = literal_refusal(&self.rules, &url) {
            self.stats.refused.fetch_add(1, Ordering::Relaxed);
            return Err(err(status::PERMISSION_DENIED, uri, why));
        }
        Ok(url)
    }

    /// One request with retries; `handle` reads a response into a result or
    /// says to retry.
    async fn request<T, F, Fut>(
        &self,
        uri: &str,
        method: reqwest::Method,
        range: Option<(u64, u64)>,
        handle: F,
    ) -> Result<T, AbiError>
    where
        F: Fn(reqwest::Response) -> Fut,
        Fut: Future<Output = Attempt<T>>,
    {
        let url = self.url(uri)?;
        let client = self.client()?;
        let sem = self.semaphore(url.host_str().unwrap_or(""));
        let mut backoff = Duration::from_millis(200);
        let mut attempt = 0u32;
        loop {
            let permit = sem.clone().acquire_owned().await.map_err(|_| err(status::BACKEND, uri, "closed"))?;
            let mut req = client.request(method.clone(), url.clone());
            if let Some((offset, len)) = range {
                req = req.header(reqwest::header::RANGE, format!("bytes={offset}-{}", offset + len - 1));
            }
            let outcome = match req.send().await {
                Ok(resp) => {
                    let code = resp.status();
                    let class = match code.as_u16() {
                        200..=299 => &self.stats.ok,
                        300..=399 => &self.stats.redirects,
                        400..=499 => &self.stats.client_errors,
                        _ => &self.stats.server_errors,
                    };
                    class.fetch_add(1, Ordering::Relaxed);
                    if self.cfg.respect_robots {
                        let tags: Vec<&str> =
                            resp.headers().get_all("x-robots-tag").iter().filter_map(|v| v.to_str().ok()).collect();
                        if let Some(d) = tags.iter().find_map(|t| robots_forbid(t, "dataio")) {
                            self.stats.robots.fetch_add(1, Ordering::Relaxed);
                            return Err(err(
                                status::PERMISSION_DENIED,
                                uri,
                                format!(
                                    "refused: the server says X-Robots-Tag: {d} (respect_robots=True; \
                                     configure_http(respect_robots=False) to read it anyway)"
                                ),
                            ));
                        }
                    }
                    if let Some(e) = status_error(uri, &resp) {
                        let retry_after = resp
                            .headers()
                            .get(reqwest::header::RETRY_AFTER)
                            .and_then(|v| v.to_str().ok())
                            .and_then(|v| retry_after(v, unix_now()));
                        if is_retryable(code) {
                            Attempt::Retry(e, retry_after)
                        } else {
                            return Err(e);
                        }
                    } else {
                        handle(resp).await
                    }
                }
                Err(e) => {
                    if let Some(why) = refusal(&e) {
                        self.stats.refused.fetch_add(1, Ordering::Relaxed);
                        return Err(err(status::PERMISSION_DENIED, uri, why));
                    }
                    let code = if e.is_timeout() { status::TIMEOUT } else { status::TRANSIENT };
                    if e.is_redirect() {
                        return Err(err(status::BACKEND, uri, chain(&e.without_url())));
                    }
                    if e.is_builder() {
                        return Err(err(status::INVALID_ARGUMENT, uri, chain(&e.without_url())));
                    }
                    Attempt::Retry(err(code, uri, chain(&e.without_url())), None)
                }
            };
            drop(permit);
            match outcome {
                Attempt::Done(v) => return Ok(v),
                Attempt::Retry(e, after) => {
                    if attempt >= self.cfg.retries {
                        let tries = attempt + 1;
                        return Err(AbiError::new(e.status, format!("{} (after {tries} attempts)", e.message)));
                    }
                    attempt += 1;
                    self.stats.retries.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(after.unwrap_or(backoff).max(backoff.min(Duration::from_millis(50)))).await;
                    backoff = (backoff * 2).min(Duration::from_secs(10));
                }
            }
        }
    }
}

/// The refusal of a URL whose host is a literal address the rules refuse.
fn literal_refusal(rules: &Rules, url: &reqwest::Url) -> Option<String> {
    let ip = match url.host()? {
        url::Host::Ipv4(v4) => IpAddr::V4(v4),
        url::Host::Ipv6(v6) => IpAddr::V6(v6),
        url::Host::Domain(d) => {
            // "localhost" never needs DNS to be loopback.
            if d.eq_ignore_ascii_case("localhost") || d.to_ascii_lowercase().ends_with(".localhost") {
                return rules.check(&d.to_ascii_lowercase(), IpAddr::from([127, 0, 0, 1])).err();
            }
            return None;
        }
    };
    rules.check(&ip.to_string(), ip).err()
}

fn unix_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

fn is_retryable(code: reqwest::StatusCode) -> bool {
    code.is_server_error() || code.as_u16() == 429 || code.as_u16() == 408
}

/// The typed error of a non-success status, or `None` for 2xx.
fn status_error(uri: &str, resp: &reqwest::Response) -> Option<AbiError> {
    let code = resp.status();
    if code.is_success() {
        return None;
    }
    let s = match code.as_u16() {
        404 | 410 => status::NOT_FOUND,
        401 | 403 => status::PERMISSION_DENIED,
        416 => status::OUT_OF_RANGE,
        408 => status::TIMEOUT,
        429 | 500..=599 => status::TRANSIENT,
        _ => status::BACKEND,
    };
    Some(err(s, uri, format!("HTTP {code}")))
}

/// An error and its causes on one line.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let s = c.to_string();
        if !out.contains(&s) {
            out.push_str(": ");
            out.push_str(&s);
        }
        cur = c.source();
    }
    out
}

/// The body of `resp`, checked against its `Content-Length`: a cut
/// connection is a retry, never a short result.
async fn body(uri: &str, resp: reqwest::Response, stats: &HttpStats) -> Attempt<Vec<u8>> {
    let expected = resp.content_length();
    match resp.bytes().await {
        Ok(b) => {
            stats.bytes.fetch_add(b.len() as u64, Ordering::Relaxed);
            if expected.is_some_and(|n| n != b.len() as u64) {
                let want = expected.unwrap_or(0);
                let why = format!("the body ended after {} of {want} bytes (connection cut)", b.len());
                return Attempt::Retry(err(status::TRANSIENT, uri, why), None);
            }
            Attempt::Done(b.to_vec())
        }
        Err(e) if e.is_timeout() => {
            let why = format!("the body stalled past the timeout ({})", chain(&e.without_url()));
            Attempt::Retry(err(status::TIMEOUT, uri, why), None)
        }
        Err(e) => {
            let why = format!("the body could not be read whole ({}): connection cut?", chain(&e.without_url()));
            Attempt::Retry(err(status::TRANSIENT, uri, why), None)
        }
    }
}

fn meta_of(uri: &str, resp: &reqwest::Response) -> Meta {
    let h = resp.headers();
    let text = |k: reqwest::header::HeaderName| h.get(k).and_then(|v| v.to_str().ok()).map(str::to_string);
    let size = match resp.status().as_u16() {
        206 => text(reqwest::header::CONTENT_RANGE).and_then(|v| content_range(&v)).and_then(|r| r.2).unwrap_or(0),
        _ => text(reqwest::header::CONTENT_LENGTH).and_then(|v| v.parse().ok()).unwrap_or(0),
    };
    let mtime = text(reqwest::header::LAST_MODIFIED).and_then(|v| parse_http_date(&v)).map(|t| t as f64);
    let etag = text(reqwest::header::ETAG).map(|t| t.trim_start_matches("W/").trim_matches('"').to_string());
    Meta { uri: uri.to_string(), size, mtime, etag, is_dir: false }
}

impl Inner {
    async fn head(&self, uri: &str) -> Result<Meta, AbiError> {
        let got = self
            .request(uri, reqwest::Method::HEAD, None, |resp| async move {
                let known = resp.headers().contains_key(reqwest::header::CONTENT_LENGTH);
                Attempt::Done(known.then(|| meta_of(uri, &resp)))
            })
            .await?;
        if let Some(m) = got {
            return Ok(m);
        }
        // No length on HEAD (a dynamic page, a chunked server): one byte by range.
        self.request(uri, reqwest::Method::GET, Some((0, 1)), |resp| async move {
            if resp.status().as_u16() != 206 {
                return Attempt::Done(Err(err(
                    status::UNSUPPORTED,
                    uri,
                    "the server gives neither a length nor ranges",
                )));
            }
            Attempt::Done(Ok(meta_of(uri, &resp)))
        })
        .await?
    }

    async fn read_all(&self, uri: &str) -> Result<Vec<u8>, AbiError> {
        let stats = self.stats.clone();
        self.request(uri, reqwest::Method::GET, None, |resp| {
            let stats = stats.clone();
            async move { body(uri, resp, &stats).await }
        })
        .await
    }

    async fn read_range(&self, uri: &str, offset: u64, mut dst: Dst) -> Result<(), AbiError> {
        let len = dst.len as u64;
        if len == 0 {
            let m = self.head(uri).await?;
            if offset > m.size {
                return Err(err(
                    status::OUT_OF_RANGE,
                    uri,
                    format!("offset {offset} is past the end ({} bytes)", m.size),
                ));
            }
            return Ok(());
        }
        let stats = self.stats.clone();
        let data = self
            .request(uri, reqwest::Method::GET, Some((offset, len)), |resp| {
                let stats = stats.clone();
                async move {
                    if resp.status().as_u16() != 206 {
                        let why = format!(
                            "asked for bytes {offset}-{} and got HTTP {} without a range: the server does not serve \
                             ranges",
                            offset + len - 1,
                            resp.status()
                        );
                        return Attempt::Done(Err(err(status::UNSUPPORTED, uri, why)));
                    }
                    let span = resp
                        .headers()
                        .get(reqwest::header::CONTENT_RANGE)
                        .and_then(|v| v.to_str().ok())
                        .and_then(content_range);
                    if span.is_some_and(|(a, _, _)| a != offset) {
                        return Attempt::Done(Err(err(status::BACKEND, uri, "the server answered another range")));
                    }
                    match body(uri, resp, &stats).await {
                        Attempt::Done(b) => Attempt::Done(Ok(b)),
                        Attempt::Retry(e, a) => Attempt::Retry(e, a),
                    }
                }
            })
            .await??;
        if data.len() as u64 != len {
            return Err(err(
                status::OUT_OF_RANGE,
                uri,
                format!("{} bytes at {offset} where {len} were asked (past the end?)", data.len()),
            ));
        }
        // SAFETY: the core keeps `dst` alive and untouched until we reply,
        // which happens only after this function returns.
        unsafe { dst.as_mut_slice() }.copy_from_slice(&data);
        Ok(())
    }
}

fn unsupported(what: &str) -> AbiError {
    AbiError::new(status::UNSUPPORTED, format!("http(s) has no {what}"))
}

impl ExportBackend for HttpBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn capabilities(&self) -> u32 {
        caps::RANGED_READ
    }

    fn head(&self, uri: String, reply: Reply<Meta>) {
        self.run(reply, move |b| async move { b.head(&uri).await });
    }

    fn read_range(&self, uri: String, offset: u64, dst: Dst, reply: Reply<()>) {
        self.run(reply, move |b| async move { b.read_range(&uri, offset, dst).await });
    }

    fn read_all(&self, uri: String, reply: Reply<Vec<u8>>) {
        self.run(reply, move |b| async move { b.read_all(&uri).await });
    }

    fn writer_open(&self, _uri: String, reply: Reply<WriterHandle>) {
        reply.err(unsupported("writes (it is read-only here)"));
    }

    fn writer_write(&self, _writer: &mut WriterHandle, _data: Dst, reply: Reply<()>) {
        reply.err(unsupported("writes"));
    }

    fn writer_commit(&self, _writer: WriterHandle, reply: Reply<Meta>) {
        reply.err(unsupported("writes"));
    }

    fn writer_abort(&self, _writer: WriterHandle, reply: Reply<()>) {
        reply.ok(());
    }

    fn list(&self, prefix: String, _recursive: bool, reply: Reply<Vec<Meta>>) {
        reply.err(AbiError::new(
            status::UNSUPPORTED,
            format!(
                "{prefix}: http(s) has no listing, so no glob or folder over it: name the URLs (brace ranges work: \
                 https://host/train-{{000..099}}.tar) or a shard index"
            ),
        ));
    }

    fn exists(&self, uri: String, reply: Reply<bool>) {
        self.run(reply, move |b| async move {
            match b.head(&uri).await {
                Ok(_) => Ok(true),
                Err(e) if e.status == status::NOT_FOUND => Ok(false),
                Err(e) => Err(e),
            }
        });
    }

    fn delete(&self, _uri: String, reply: Reply<()>) {
        reply.err(unsupported("deletes"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_addresses_are_named() {
        for (ip, why) in [
            ("127.0.0.1", "loopback"),
            ("10.1.2.3", "private"),
            ("192.168.0.1", "private"),
            ("172.16.5.4", "private"),
            ("169.254.169.254", "link-local"),
            ("100.64.0.1", "shared"),
            ("0.0.0.0", "unspecified"),
            ("224.0.0.1", "multicast"),
            ("240.0.0.1", "reserved"),
            ("::1", "loopback"),
            ("fd00::1", "private"),
            ("fe80::1", "link-local"),
            ("::ffff:127.0.0.1", "loopback"),
            ("64:ff9b::a9fe:a9fe", "link-local"),
        ] {
            let got = internal(ip.parse().unwrap()).unwrap_or("public");
            assert!(got.starts_with(why), "{ip}: {got}");
        }
        for ip in ["8.8.8.8", "1.1.1.1", "2606:4700::1111", "172.32.0.1", "100.128.0.1"] {
            assert_eq!(internal(ip.parse().unwrap()), None, "{ip}");
        }
    }

    #[test]
    fn rules_allow_by_flag_host_or_network() {
        let mut cfg = HttpConfig::default();
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        assert!(Rules::new(&cfg).check("localhost", lo).unwrap_err().contains("allow_private=True"));
        cfg.allow_hosts = vec!["localhost".into()];
        assert!(Rules::new(&cfg).check("localhost", lo).is_ok());
        assert!(Rules::new(&cfg).check("evil.example", lo).is_err());
        cfg.allow_hosts = vec!["127.0.0.0/8".into()];
        assert!(Rules::new(&cfg).check("evil.example", lo).is_ok());
        assert!(Rules::new(&cfg).check("x", "10.0.0.1".parse().unwrap()).is_err());
        cfg.allow_private = true;
        assert!(Rules::new(&cfg).check("x", "10.0.0.1".parse().unwrap()).is_ok());
        let url = reqwest::Url::parse("http://[::1]:8080/a").unwrap();
        assert!(literal_refusal(&Rules::new(&HttpConfig::default()), &url).unwrap().contains("loopback"));
        let url = reqwest::Url::parse("http://LOCALHOST/a").unwrap();
        assert!(literal_refusal(&Rules::new(&HttpConfig::default()), &url).is_some());
        assert!(HttpConfig::default().set("allow_hosts", "10.0.0.0/33").is_err());
    }
}
