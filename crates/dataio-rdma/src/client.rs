//! The client: a handshake, then one-sided reads and writes into the
//! server's region, pipelined.
//!
//! A transfer registers the caller's buffer as the local side of the RMA (no
//! bounce copy), splits it into `chunk_size` segments and keeps up to
//! `max_inflight` of them posted, reaping completions as they come. Every
//! wait is bounded: a transfer that sees no completion for `timeout` fails,
//! and so does one whose server closed the control socket. A failed transfer
//! closes the endpoint before its registration (so the provider never writes
//! into the caller's buffer after the call returned) and leaves the client
//! broken: later calls say why, and the caller connects again.

use crate::error::{Error, Result};
use crate::fabric::{self, Endpoint, Memory, MemoryRegion, Op, ProviderInfo, Query, Reaped, Remote};
use crate::server::resolve;
use crate::wire::{self, RegionOffer, ServerHello, Status};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::os::raw::c_void;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const DEFAULT_CHUNK_SIZE: usize = 1 << 20;
pub const DEFAULT_MAX_INFLIGHT: usize = 16;
pub const MAX_INFLIGHT_LIMIT: usize = 4096;

#[derive(Debug, Clone)]
pub struct ConnectOptions {
    pub token: Option<Vec<u8>>,
    /// Must match the server's provider when set.
    pub provider: Option<String>,
    /// Ask for FI_HMEM so device (CUDA) buffers can be registered.
    pub cuda: bool,
    pub chunk_size: usize,
    pub max_inflight: usize,
    /// Bound of every wait: connecting, the handshake, and a transfer that
    /// makes no progress.
    pub timeout: Duration,
    /// How long to poll the completion queue after a completion before
    /// blocking in it (`DATAIO_RDMA_SPIN_US`, default 0: block at once).
    pub spin: Duration,
}

/// `DATAIO_RDMA_SPIN_US`, read once.
pub fn default_spin() -> Duration {
    static SPIN: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *SPIN.get_or_init(|| {
        let us = std::env::var("DATAIO_RDMA_SPIN_US").ok().and_then(|v| v.trim().parse::<u64>().ok()).unwrap_or(0);
        Duration::from_micros(us.min(1_000_000))
    })
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            token: None,
            provider: None,
            cuda: false,
            chunk_size: DEFAULT_CHUNK_SIZE,
            max_inflight: DEFAULT_MAX_INFLIGHT,
            timeout: Duration::from_secs(30),
            spin: default_spin(),
        }
    }
}

/// Storage for one operation's provider context (struct fi_context2 is 64
/// bytes); cache-line aligned, never moved while an operation is posted.
#[repr(C, align(64))]
struct OpContext([u8; 128]);

struct Conn {
    ep: Arc<Endpoint>,
    peer: u64,
    ctrl: TcpStream,
    contexts: Vec<OpContext>,
}

enum State {
    Open(Box<Conn>),
    Broken(String),
    Closed,
}

pub struct Client {
    server: SocketAddr,
    offer: RegionOffer,
    provider: ProviderInfo,
    opts: ConnectOptions,
    chunk_size: usize,
    state: Mutex<State>,
}

/// What a transfer moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transferred {
    pub bytes: usize,
    pub chunks: usize,
}

impl Client {
    pub fn connect(addr: &str, opts: ConnectOptions) -> Result<Client> {
        if opts.chunk_size == 0 {
            return Err(Error::InvalidArgument("chunk_size must be at least 1 byte".into()));
        }
        if opts.max_inflight == 0 || opts.max_inflight > MAX_INFLIGHT_LIMIT {
            return Err(Error::InvalidArgument(format!(
                "max_inflight must be between 1 and {MAX_INFLIGHT_LIMIT}, got {}",
                opts.max_inflight
            )));
        }
        if opts.timeout.is_zero() {
            return Err(Error::InvalidArgument("timeout must be positive".into()));
        }
        let lib = fabric::library().map_err(|e| e.context("rdma.connect"))?;
        if lib.consts.context_size as usize > std::mem::size_of::<OpContext>() {
            return Err(Error::Unavailable(format!(
                "libfabric's operation context is {} bytes, more than this build reserves",
                lib.consts.context_size
            )));
        }
        let mut server = resolve(addr)?;
        if server.port() == 0 {
            return Err(Error::InvalidArgument(format!("{addr:?} has no port; pass the server's local_addr")));
        }
        if server.ip().is_unspecified() {
            server.set_ip(if server.is_ipv4() {
                IpAddr::V4(Ipv4Addr::LOCALHOST)
            } else {
                IpAddr::V6(Ipv6Addr::LOCALHOST)
            });
        }
        let (ctrl, offer) = handshake(server, &opts)?;
        if let Some(p) = &opts.provider {
            if p != &offer.provider {
                return Err(Error::InvalidArgument(format!(
                    "the server at {server} serves over libfabric provider {:?}, but provider={p:?} was asked for",
                    offer.provider
                )));
            }
        }

        // The same provider as the server; for IP-addressed providers, the
        // server's address as destination lets libfabric pick the interface
        // that routes to it.
        let mut q = Query::rma();
        q.provider = Some(offer.provider.clone());
        q.hmem = opts.cuda;
        let what = if opts.cuda { "rdma.connect(cuda=True)" } else { "rdma.connect" };
        let routed = sockaddr_ip(&offer, &lib.consts).map(|ip| Query { node: Some(ip.to_string()), ..q.clone() });
        let (q, info) = match routed.as_ref().map(|r| (r, fabric::select(r))) {
            Some((r, Ok(info))) => (r.clone(), info),
            _ => {
                let info = fabric::select(&q).map_err(|e| e.context(what))?;
                (q, info)
            }
        };
        let ep = Endpoint::open(&q, &info).map_err(|e| e.context(what))?;
        // fi_av_insert reads an address of the provider's format, whatever
        // its length: accept only one exactly as long as our own.
        let own = ep.name()?;
        if offer.addr_format != ep.info.addr_format || offer.fabric_addr.len() != own.len() {
            return Err(Error::Protocol(format!(
                "the server at {server} sent a fabric address of format {} and {} bytes; {} here uses format {} and {} bytes",
                offer.addr_format,
                offer.fabric_addr.len(),
                ep.info.provider,
                ep.info.addr_format,
                own.len()
            )));
        }
        let peer = ep
            .insert_peer(&offer.fabric_addr)
            .map_err(|e| e.context(&format!("adding the server at {server} to the address vector")))?;
        let contexts = (0..opts.max_inflight).map(|_| OpContext([0; 128])).collect();
        let chunk_size = opts.chunk_size.min(info.max_msg_size.min(usize::MAX as u64) as usize).max(1);
        let provider = ep.info.clone();
        Ok(Client {
            server,
            offer,
            provider,
            opts,
            chunk_size,
            state: Mutex::new(State::Open(Box::new(Conn { ep, peer, ctrl, contexts }))),
        })
    }

    pub fn server(&self) -> SocketAddr {
        self.server
    }

    pub fn region(&self) -> &RegionOffer {
        &self.offer
    }

    pub fn provider(&self) -> &ProviderInfo {
        &self.provider
    }

    pub fn options(&self) -> &ConnectOptions {
        &self.opts
    }

    pub fn chunk_size(&self) -> usize {
        self.chunk_size
    }

    pub fn is_closed(&self) -> bool {
        !matches!(&*self.lock(), State::Open(_))
    }

    /// Why the connection broke, if it did.
    pub fn broken(&self) -> Option<String> {
        match &*self.lock() {
            State::Broken(why) => Some(why.clone()),
            _ => None,
        }
    }

    /// Releases the endpoint and tells the server (by closing the control
    /// socket). Idempotent.
    pub fn close(&self) {
        let mut st = self.lock();
        *st = State::Closed;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Reads `dst.len()` bytes at `offset` of the server's region into `dst`.
    pub fn read_into(&self, dst: &mut [u8], offset: u64) -> Result<Transferred> {
        // SAFETY: `dst` is a live exclusive slice for the whole call.
        unsafe { self.transfer(Op::Read, dst.as_mut_ptr(), dst.len(), Memory::Host, offset) }
    }

    /// Writes `src` at `offset` of the server's region.
    pub fn write(&self, src: &[u8], offset: u64) -> Result<Transferred> {
        // SAFETY: `src` is live for the whole call; a write only reads it.
        unsafe { self.transfer(Op::Write, src.as_ptr() as *mut u8, src.len(), Memory::Host, offset) }
    }

    /// Moves `len` bytes between `ptr` and the server's region at `offset`.
    ///
    /// # Safety
    /// `ptr..ptr+len` is valid memory of kind `mem` for the whole call
    /// (writable for reads), not freed or moved until it returns.
    pub unsafe fn transfer(&self, op: Op, ptr: *mut u8, len: usize, mem: Memory, offset: u64) -> Result<Transferred> {
        let size = self.offer.size;
        let end = offset.checked_add(len as u64);
        if end.is_none_or(|end| end > size) {
            let shown_end = end.map_or_else(|| "overflow".to_string(), |e| e.to_string());
            return Err(Error::OutOfRange {
                message: format!(
                    "rdma {}: bytes [{offset}, {shown_end}) lie outside the server's {size}-byte region at {}",
                    op_name(op),
                    self.server
                ),
                offset,
                size: len as u64,
                length: size,
            });
        }
        if op == Op::Write && !self.offer.writable() {
            return Err(Error::AccessDenied(format!(
                "rdma write: the region served at {} is read-only (served with serve_file); clients may only read it",
                self.server
            )));
        }
        if op == Op::Read && !self.offer.readable() {
            return Err(Error::AccessDenied(format!(
                "rdma read: the region served at {} is not readable",
                self.server
            )));
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.transfer_unchecked(op, ptr, len, mem, offset) }
    }

    /// [`Client::transfer`] without its client-side checks of the range
    /// against the region and of the region's access rights: it posts what a
    /// client that does not check would send. It exists for the hostile-peer
    /// tests (`tests/hostile_peer.rs`), which show that the server's provider
    /// refuses such requests on its own; use [`Client::transfer`].
    ///
    /// # Safety
    /// As for [`Client::transfer`].
    #[doc(hidden)]
    pub unsafe fn transfer_unchecked(
        &self,
        op: Op,
        ptr: *mut u8,
        len: usize,
        mem: Memory,
        offset: u64,
    ) -> Result<Transferred> {
        if let Memory::Cuda(_) = mem {
            if !self.opts.cuda {
                return Err(Error::InvalidArgument("a CUDA buffer needs a client connected with cuda=True".into()));
            }
        }
        let mut st = self.lock();
        let conn = match &mut *st {
            State::Open(c) => c,
            State::Broken(why) => {
                return Err(Error::Disconnected(format!(
                    "the connection to {} broke earlier ({why}); connect again",
                    self.server
                )));
            }
            State::Closed => return Err(Error::Closed("the RDMA client is closed".into())),
        };
        if len == 0 {
            return Ok(Transferred { bytes: 0, chunks: 0 });
        }
        let access = match op {
            Op::Read => conn.ep.consts().cap_read,
            Op::Write => conn.ep.consts().cap_write,
        };
        // SAFETY: the caller keeps the buffer valid for the call; the
        // registration is dropped before we return (after the endpoint is
        // shut down, on failure).
        let mr = match unsafe { conn.ep.register(ptr, len, access, mem) } {
            Ok(mr) => mr,
            Err(e) => return Err(e.context(&format!("rdma {}", op_name(op)))),
        };
        // SAFETY: forwarded from the caller; `mr` covers the buffer.
        let result = unsafe { self.pipeline(conn, op, &mr, ptr, len, offset) };
        match result {
            Ok(t) => Ok(t),
            Err(e) => {
                // Operations may still be posted: close the endpoint first so
                // the provider lets go of the buffer, then the registration.
                conn.ep.shutdown();
                drop(mr);
                *st = State::Broken(e.to_string());
                Err(e)
            }
        }
    }

    /// # Safety
    /// See [`Client::transfer`]; `mr` registers `ptr..ptr+len`.
    unsafe fn pipeline(
        &self,
        conn: &mut Conn,
        op: Op,
        mr: &MemoryRegion,
        ptr: *mut u8,
        len: usize,
        offset: u64,
    ) -> Result<Transferred> {
        let chunk = self.chunk_size;
        let chunks = len.div_ceil(chunk);
        let slots = conn.contexts.len();
        let ctx_base = conn.contexts.as_mut_ptr();
        let mut free: Vec<usize> = (0..slots).rev().collect();
        let (mut next, mut done) = (0usize, 0usize);
        let mut last_progress = Instant::now();
        let mut last_ctrl_check = Instant::now();
        let mut reaped = [std::ptr::null_mut::<c_void>(); 64];
        let timeout = self.opts.timeout;
        let ep = &conn.ep;
        let eagain = ep.eagain();

        while done < chunks {
            let mut stalled = false;
            while next < chunks {
                let Some(&slot) = free.last() else { break };
                let off = next * chunk;
                let n = chunk.min(len - off);
                // The server's base comes off the wire: wrap rather than
                // panic; its provider checks the address against the key.
                let raddr = self.offer.base.wrapping_add(offset).wrapping_add(off as u64);
                let remote = Remote { peer: conn.peer, addr: raddr, key: self.offer.key };
                // SAFETY: `slot` is free, so its context is not in use; the
                // chunk lies inside the registered buffer.
                let rc = unsafe { ep.post(op, ptr.add(off), n, mr, remote, ctx_base.add(slot).cast()) };
                if rc == 0 {
                    free.pop();
                    next += 1;
                } else if rc == eagain {
                    // The provider's queue is full: reap, then post again.
                    stalled = true;
                    break;
                } else {
                    return Err(Error::Fabric(format!(
                        "rdma {}: posting {n} bytes at remote offset {} failed: {} ({rc})",
                        op_name(op),
                        offset.wrapping_add(off as u64),
                        fabric::strerror(rc)
                    )));
                }
            }
            // Block only when nothing more can be posted.
            let all_posted_or_full = next == chunks || free.is_empty() || stalled;
            // Right after a completion the next one is usually microseconds
            // away: poll for `spin` before sleeping in the provider's wait.
            let block = all_posted_or_full && last_progress.elapsed() >= self.opts.spin;
            let wait_ms = if block { remaining_ms(last_progress, timeout).min(100) } else { -1 };
            match ep.reap(&mut reaped, wait_ms) {
                Reaped::Done(n) => {
                    for &ctx in &reaped[..n] {
                        let Some(slot) = slot_of(ctx, ctx_base, slots) else { continue };
                        free.push(slot);
                        done += 1;
                    }
                    last_progress = Instant::now();
                }
                Reaped::Nothing => {
                    if last_ctrl_check.elapsed() >= Duration::from_millis(20) {
                        last_ctrl_check = Instant::now();
                        if peer_closed(&conn.ctrl) {
                            return Err(Error::Disconnected(format!(
                                "rdma {}: the server at {} went away mid-transfer ({done} of {chunks} chunks done)",
                                op_name(op),
                                self.server
                            )));
                        }
                    }
                    if last_progress.elapsed() >= timeout {
                        return Err(Error::Timeout(format!(
                            "rdma {}: no completion from the server at {} for {:.1}s ({done} of {chunks} chunks done, {} in flight)",
                            op_name(op),
                            self.server,
                            timeout.as_secs_f64(),
                            slots - free.len()
                        )));
                    }
                    if !ep.cq_waits && wait_ms >= 0 {
                        std::thread::yield_now();
                    }
                }
                Reaped::Failed { message, peer_gone } => {
                    let gone = peer_gone || peer_closed(&conn.ctrl);
                    let what = format!(
                        "rdma {} of remote bytes [{offset}, {}) from {}",
                        op_name(op),
                        offset.wrapping_add(len as u64),
                        self.server
                    );
                    return Err(if gone {
                        Error::Disconnected(format!("{what}: the server went away mid-transfer: {message}"))
                    } else {
                        Error::Fabric(format!("{what} failed: {message}"))
                    });
                }
            }
        }
        Ok(Transferred { bytes: len, chunks })
    }
}

fn op_name(op: Op) -> &'static str {
    match op {
        Op::Read => "read",
        Op::Write => "write",
    }
}

fn remaining_ms(since: Instant, timeout: Duration) -> i32 {
    timeout.saturating_sub(since.elapsed()).as_millis().clamp(1, i32::MAX as u128) as i32
}

fn slot_of(ctx: *mut c_void, base: *mut OpContext, slots: usize) -> Option<usize> {
    let off = (ctx as usize).checked_sub(base as usize)?;
    let size = std::mem::size_of::<OpContext>();
    (off % size == 0 && off / size < slots).then_some(off / size)
}

/// True once the server closed (or reset) the control socket.
fn peer_closed(s: &TcpStream) -> bool {
    let mut b = [0u8; 1];
    // SAFETY: peeks at most one byte into a local buffer without blocking.
    let n = unsafe { libc::recv(s.as_raw_fd(), b.as_mut_ptr().cast(), 1, libc::MSG_PEEK | libc::MSG_DONTWAIT) };
    if n == 0 {
        return true;
    }
    if n < 0 {
        let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        return e != libc::EAGAIN && e != libc::EWOULDBLOCK && e != libc::EINTR;
    }
    false
}

fn sockaddr_ip(offer: &RegionOffer, c: &crate::ffi::DioConsts) -> Option<IpAddr> {
    let a = &offer.fabric_addr;
    if offer.addr_format == c.addr_sockaddr_in && a.len() >= 8 {
        Some(IpAddr::from([a[4], a[5], a[6], a[7]]))
    } else if offer.addr_format == c.addr_sockaddr_in6 && a.len() >= 24 {
        let mut b = [0u8; 16];
        b.copy_from_slice(&a[8..24]);
        Some(IpAddr::from(b))
    } else {
        None
    }
}

fn handshake(server: SocketAddr, opts: &ConnectOptions) -> Result<(TcpStream, RegionOffer)> {
    let mut s = TcpStream::connect_timeout(&server, opts.timeout)
        .map_err(|e| Error::from_io(&format!("connecting to the dataio-rdma server at {server}"), e))?;
    let _ = s.set_nodelay(true);
    let io = |e| Error::Io(format!("socket to {server}: {e}"));
    s.set_read_timeout(Some(opts.timeout)).map_err(io)?;
    s.set_write_timeout(Some(opts.timeout)).map_err(io)?;
    wire::write_client_hello(&mut s, opts.token.as_deref().unwrap_or_default())
        .map_err(|e| e.context(&format!("handshake with {server}")))?;
    let hello = wire::read_server_hello(&mut s).map_err(|e| e.context(&format!("handshake with {server}")))?;
    match hello {
        ServerHello::Ok(offer) => Ok((s, offer)),
        ServerHello::Refused(Status::Denied, msg) => {
            Err(Error::AccessDenied(format!("the dataio-rdma server at {server} refused the connection: {msg}")))
        }
        ServerHello::Refused(_, msg) => {
            Err(Error::Disconnected(format!("the dataio-rdma server at {server} refused the connection: {msg}")))
        }
    }
}
