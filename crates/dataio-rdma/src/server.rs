//! The serving side: one registered region, one RDM endpoint, a TCP listener
//! for the handshake, and a progress thread.
//!
//! Clients move bytes with one-sided reads and writes; the server's CPU is
//! not involved per operation, except that providers with manual data
//! progress (tcp;ofi_rxm, for one) only move bytes while someone drives their
//! completion queue, which the progress thread does, asleep in fi_cq_sread
//! when the queue can wait.
//!
//! Threads: the progress thread owns the endpoint and the registration (so
//! nothing else touches them after setup, and joining it releases both); the
//! accept thread hands each connection to a short-lived thread that runs the
//! handshake and then waits on the socket until the client leaves.

use crate::error::{Error, Result};
use crate::fabric::{self, Endpoint, Memory, MemoryRegion, ProviderInfo, Query};
use crate::region::Region;
use crate::wire::{self, RegionOffer, ServerHello, Status};
use std::collections::HashMap;
use std::io::Read;
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// "host:port" of the handshake listener; the fabric endpoint binds to
    /// the same host (a wildcard host leaves the interface to the provider).
    pub bind: String,
    /// When set, clients must present it.
    pub token: Option<Vec<u8>>,
    /// Exact libfabric provider name; None: FI_PROVIDER and the ranking.
    pub provider: Option<String>,
    /// Handshake read/write timeout; the whole client hello must also
    /// arrive within it (a peer dripping a byte at a time is cut off).
    pub timeout: Duration,
    pub max_clients: usize,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            bind: "0.0.0.0:0".into(),
            token: None,
            provider: None,
            timeout: Duration::from_secs(30),
            max_clients: 256,
        }
    }
}

/// Handshakes running at once; more connections are closed at once (a flood
/// of silent strangers cannot pin a thread each for the whole timeout).
const MAX_HANDSHAKES: usize = 64;
/// Handshakes running at once from one address: half the slots, so a host
/// flooding silent connections leaves the other half to the others, while
/// one host's ranks may still all connect at once.
const MAX_HANDSHAKES_PER_PEER: usize = MAX_HANDSHAKES / 2;

struct Shared {
    stop: AtomicBool,
    handshakes: AtomicUsize,
    /// Running handshakes by peer address.
    per_peer: Mutex<HashMap<std::net::IpAddr, usize>>,
    conns: Mutex<HashMap<u64, TcpStream>>,
    next_id: AtomicU64,
}

pub struct Server {
    local_addr: SocketAddr,
    provider: ProviderInfo,
    fabric_addr: Vec<u8>,
    region: Arc<Region>,
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// Parses "host:port", "[v6]:port" or "host" (port 0).
pub fn resolve(addr: &str) -> Result<SocketAddr> {
    let with_port = if addr.parse::<IpAddr>().is_ok() || (!addr.contains(':') && !addr.is_empty()) {
        format!("{addr}:0")
    } else {
        addr.to_string()
    };
    with_port
        .to_socket_addrs()
        .map_err(|e| Error::InvalidArgument(format!("cannot resolve {addr:?} (expected \"host:port\"): {e}")))?
        .next()
        .ok_or_else(|| Error::InvalidArgument(format!("{addr:?} resolves to no address")))
}

impl Server {
    pub fn start(opts: ServeOptions, region: Region) -> Result<Server> {
        let bind = resolve(&opts.bind)?;
        let listener =
            TcpListener::bind(bind).map_err(|e| Error::Io(format!("binding the handshake listener to {bind}: {e}")))?;
        let region = Arc::new(region);

        let mut q = Query::rma();
        q.provider = opts.provider.clone();
        if !bind.ip().is_unspecified() {
            q.node = Some(bind.ip().to_string());
            q.source = true;
        }
        let info = fabric::select(&q).map_err(|e| e.context("rdma.serve"))?;
        let ep = Endpoint::open(&q, &info)?;
        let c = *ep.consts();
        let mut access = c.cap_remote_read;
        if !region.read_only() {
            access |= c.cap_remote_write;
        }
        // SAFETY: the region outlives the registration: the progress thread
        // owns the registration and an Arc of the region, and drops the
        // registration first.
        let mr = unsafe { ep.register(region.as_ptr(), region.len(), access, Memory::Host)? };
        let fabric_addr = ep.name()?;
        let provider = ep.info.clone();

        let mut local_addr = listener.local_addr().map_err(|e| Error::Io(format!("listener address: {e}")))?;
        if local_addr.ip().is_unspecified() {
            // Publish an address other hosts can reach: the fabric
            // endpoint's, where the provider picked an interface.
            if let Some(ip) = sockaddr_ip(&provider, &fabric_addr, &c).filter(|ip| !ip.is_unspecified()) {
                local_addr.set_ip(ip);
            }
        }

        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            handshakes: AtomicUsize::new(0),
            per_peer: Mutex::new(HashMap::new()),
            conns: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
        });
        let offer = RegionOffer {
            provider: provider.provider.clone(),
            addr_format: provider.addr_format,
            fabric_addr: fabric_addr.clone(),
            size: region.len() as u64,
            base: if provider.mr_mode & c.mr_virt_addr != 0 { region.as_ptr() as u64 } else { 0 },
            key: mr.key,
            access: if region.read_only() { wire::ACCESS_READ } else { wire::ACCESS_READ | wire::ACCESS_WRITE },
        };
        let progress = {
            let (shared, region) = (Arc::clone(&shared), Arc::clone(&region));
            std::thread::Builder::new()
                .name("dataio-rdma-progress".into())
                .spawn(move || drive_progress(ep, mr, region, shared))
                .map_err(|e| Error::Io(format!("spawning the progress thread: {e}")))?
        };
        let accept = {
            let shared = Arc::clone(&shared);
            let ctx = Arc::new(ConnContext {
                offer,
                token: opts.token.clone(),
                timeout: opts.timeout,
                max_clients: opts.max_clients,
                c,
            });
            listener.set_nonblocking(true).map_err(|e| Error::Io(format!("listener: {e}")))?;
            std::thread::Builder::new()
                .name("dataio-rdma-accept".into())
                .spawn(move || accept_loop(listener, shared, ctx))
                .map_err(|e| Error::Io(format!("spawning the accept thread: {e}")))?
        };
        Ok(Server { local_addr, provider, fabric_addr, region, shared, threads: Mutex::new(vec![progress, accept]) })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    pub fn provider(&self) -> &ProviderInfo {
        &self.provider
    }

    pub fn fabric_addr(&self) -> &[u8] {
        &self.fabric_addr
    }

    pub fn region(&self) -> &Arc<Region> {
        &self.region
    }

    /// Clients that completed the handshake and are still connected.
    pub fn clients(&self) -> usize {
        self.shared.conns.lock().map(|c| c.len()).unwrap_or(0)
    }

    pub fn is_closed(&self) -> bool {
        self.shared.stop.load(Ordering::SeqCst)
    }

    /// Stops accepting, disconnects every client, and releases the endpoint
    /// and the registration (the memory lives on while the region has other
    /// owners, such as a Python buffer view). Idempotent.
    pub fn close(&self) {
        {
            let conns = match self.shared.conns.lock() {
                Ok(c) => c,
                Err(p) => p.into_inner(),
            };
            self.shared.stop.store(true, Ordering::SeqCst);
            for s in conns.values() {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
        let threads = match self.threads.lock() {
            Ok(mut t) => std::mem::take(&mut *t),
            Err(p) => std::mem::take(&mut *p.into_inner()),
        };
        for t in threads {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.close();
    }
}

/// The IP inside a sockaddr-format fabric address.
fn sockaddr_ip(info: &ProviderInfo, addr: &[u8], c: &crate::ffi::DioConsts) -> Option<IpAddr> {
    if info.addr_format == c.addr_sockaddr_in && addr.len() >= 8 {
        Some(IpAddr::from([addr[4], addr[5], addr[6], addr[7]]))
    } else if info.addr_format == c.addr_sockaddr_in6 && addr.len() >= 24 {
        let mut b = [0u8; 16];
        b.copy_from_slice(&addr[8..24]);
        Some(IpAddr::from(b))
    } else {
        None
    }
}

/// A wildcard fabric address (0.0.0.0 / ::) rewritten to the IP the client
/// reached us at, which it can also reach the endpoint at.
fn address_for_client(offer: &RegionOffer, local_ip: IpAddr, c: &crate::ffi::DioConsts) -> Vec<u8> {
    let mut a = offer.fabric_addr.clone();
    match local_ip {
        IpAddr::V4(ip) if offer.addr_format == c.addr_sockaddr_in && a.len() >= 8 && a[4..8] == [0, 0, 0, 0] => {
            a[4..8].copy_from_slice(&ip.octets());
        }
        IpAddr::V6(ip)
            if offer.addr_format == c.addr_sockaddr_in6 && a.len() >= 24 && a[8..24].iter().all(|&b| b == 0) =>
        {
            a[8..24].copy_from_slice(&ip.octets());
        }
        _ => {}
    }
    a
}

fn drive_progress(ep: Arc<Endpoint>, mr: MemoryRegion, region: Arc<Region>, shared: Arc<Shared>) {
    let mut ctxs = [std::ptr::null_mut(); 16];
    while !shared.stop.load(Ordering::Relaxed) {
        // Target-side RMA produces no completions; reading the queue is what
        // makes a manual-progress provider serve the clients' operations.
        if let fabric::Reaped::Nothing = ep.reap(&mut ctxs, 50) {
            if !ep.cq_waits {
                std::thread::sleep(Duration::from_micros(20));
            }
        }
    }
    ep.shutdown();
    drop(mr);
    drop(ep);
    drop(region);
}

struct ConnContext {
    offer: RegionOffer,
    token: Option<Vec<u8>>,
    timeout: Duration,
    max_clients: usize,
    c: crate::ffi::DioConsts,
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>, ctx: Arc<ConnContext>) {
    let fd = listener.as_raw_fd();
    while !shared.stop.load(Ordering::SeqCst) {
        let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut pfd, 1, 100) };
        if ready <= 0 {
            continue;
        }
        let Ok((stream, peer)) = listener.accept() else { continue };
        let ip = peer.ip();
        {
            let Ok(mut per_peer) = shared.per_peer.lock() else { continue };
            let mine = per_peer.entry(ip).or_insert(0);
            if *mine >= MAX_HANDSHAKES_PER_PEER || shared.handshakes.load(Ordering::SeqCst) >= MAX_HANDSHAKES {
                if *mine == 0 {
                    per_peer.remove(&ip);
                }
                drop(stream);
                continue;
            }
            *mine += 1;
            shared.handshakes.fetch_add(1, Ordering::SeqCst);
        }
        let handshake = Handshake(Arc::clone(&shared), ip);
        let (conn_shared, conn_ctx) = (Arc::clone(&shared), Arc::clone(&ctx));
        // Out of threads: the closure is dropped, and with it the stream (the
        // client sees the connection closed) and the handshake count.
        let _ = std::thread::Builder::new()
            .name("dataio-rdma-conn".into())
            .spawn(move || serve_connection(stream, conn_shared, conn_ctx, handshake));
    }
}

/// Reads from `stream` until `deadline`, then fails with `TimedOut`.
struct Deadline<'a> {
    stream: &'a TcpStream,
    deadline: std::time::Instant,
}

impl std::io::Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "the handshake took too long"));
        }
        self.stream.set_read_timeout(Some(left))?;
        (&*self.stream).read(buf)
    }
}

/// One running handshake from a peer; counted down when dropped.
struct Handshake(Arc<Shared>, std::net::IpAddr);

impl Drop for Handshake {
    fn drop(&mut self) {
        if let Ok(mut per_peer) = self.0.per_peer.lock() {
            if let Some(n) = per_peer.get_mut(&self.1) {
                *n -= 1;
                if *n == 0 {
                    per_peer.remove(&self.1);
                }
            }
        }
        self.0.handshakes.fetch_sub(1, Ordering::SeqCst);
    }
}

fn serve_connection(mut stream: TcpStream, shared: Arc<Shared>, ctx: Arc<ConnContext>, handshake: Handshake) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(ctx.timeout));
    let _ = stream.set_write_timeout(Some(ctx.timeout));
    let _ = stream.set_nodelay(true);
    // The hello within one deadline, not a timeout per read: a peer that
    // drips a byte now and then cannot hold a handshake slot for long.
    let deadline = std::time::Instant::now() + ctx.timeout;
    let Ok(token) = wire::read_client_hello(&mut Deadline { stream: &stream, deadline }) else { return };
    if let Some(expected) = &ctx.token {
        if !wire::tokens_match(expected, &token) {
            let why = if token.is_empty() { "this server requires a token" } else { "wrong token" };
            let _ = wire::write_server_hello(&mut stream, &ServerHello::Refused(Status::Denied, why.into()));
            return;
        }
    }
    let Ok(local) = stream.local_addr() else { return };
    let id = shared.next_id.fetch_add(1, Ordering::SeqCst);
    {
        let mut conns = match shared.conns.lock() {
            Ok(c) => c,
            Err(_) => return,
        };
        let refusal = if shared.stop.load(Ordering::SeqCst) {
            Some((Status::Error, "the server is closing".to_string()))
        } else if conns.len() >= ctx.max_clients {
            Some((Status::Busy, format!("the server already serves {} clients", ctx.max_clients)))
        } else {
            None
        };
        if let Some((status, msg)) = refusal {
            let _ = wire::write_server_hello(&mut stream, &ServerHello::Refused(status, msg));
            return;
        }
        let Ok(clone) = stream.try_clone() else { return };
        conns.insert(id, clone);
    }
    let mut offer = ctx.offer.clone();
    offer.fabric_addr = address_for_client(&ctx.offer, local.ip(), &ctx.c);
    let sent = wire::write_server_hello(&mut stream, &ServerHello::Ok(offer)).is_ok();
    drop(handshake);
    if sent {
        // The control channel: wait until the client leaves or close() shuts
        // the socket down.
        let _ = stream.set_read_timeout(None);
        let mut sink = [0u8; 64];
        while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
    }
    if let Ok(mut conns) = shared.conns.lock() {
        conns.remove(&id);
    }
}
