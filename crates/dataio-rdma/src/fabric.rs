//! Safe wrappers over the C shim: loading libfabric, listing providers,
//! opening an RDM endpoint, registering memory, posting one-sided operations
//! and reaping completions.
//!
//! Ownership: an [`Endpoint`] owns fabric, domain, address vector, completion
//! queue and endpoint, and closes them on drop; a [`MemoryRegion`] holds an
//! `Arc` of its endpoint, so a domain is never closed under a registration.

use crate::error::{Error, Result};
use crate::ffi;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// The libfabric API version requested: the headers' own (1.17 on Debian 12),
/// or the runtime's if that is older, but never below 1.9 (FI_HMEM and the
/// memory-registration mode bits as this crate uses them).
pub const MIN_API: u32 = fi_version(1, 9);

pub const fn fi_version(major: u32, minor: u32) -> u32 {
    (major << 16) | minor
}

pub fn version_string(v: u32) -> String {
    format!("{}.{}", v >> 16, v & 0xffff)
}

/// Registrations alive in this process (tests check that closing handles
/// releases every one).
static LIVE_REGISTRATIONS: AtomicUsize = AtomicUsize::new(0);

pub fn live_registrations() -> usize {
    LIVE_REGISTRATIONS.load(Ordering::SeqCst)
}

/// The loaded library, process-wide.
#[derive(Debug, Clone)]
pub struct Library {
    pub path: String,
    pub runtime_version: u32,
    pub header_version: u32,
    pub api_version: u32,
    /// Setup functions bound at the symbol versions of the headers (dlvsym).
    pub symbols_versioned: bool,
    pub consts: ffi::DioConsts,
}

static LIBRARY: OnceLock<std::result::Result<Library, String>> = OnceLock::new();

/// The file names tried, in order. `DATAIO_LIBFABRIC` names one file to use
/// instead (and only that one).
pub fn candidates() -> Vec<String> {
    match std::env::var("DATAIO_LIBFABRIC") {
        Ok(p) if !p.is_empty() => vec![p],
        _ => vec!["libfabric.so.1".into(), "libfabric.so".into()],
    }
}

/// Loads libfabric on first use; later calls answer the same result.
pub fn library() -> Result<&'static Library> {
    LIBRARY.get_or_init(load).as_ref().map_err(|e| Error::Unavailable(e.clone()))
}

fn load() -> std::result::Result<Library, String> {
    let mut consts = ffi::DioConsts::default();
    // SAFETY: writes one plain struct.
    unsafe { ffi::dio_consts_get(&mut consts) };
    if consts.header_version == 0 {
        return Err("dataio-rdma was built without libfabric's headers (install libfabric-dev and rebuild)".into());
    }
    let mut reasons = Vec::new();
    for name in candidates() {
        let c = CString::new(name.clone()).map_err(|_| format!("bad library name {name:?}"))?;
        let mut err = [0 as c_char; 512];
        // SAFETY: NUL-terminated name, writable error buffer of the given size.
        let rc = unsafe { ffi::dio_load(c.as_ptr(), err.as_mut_ptr(), err.len()) };
        if rc == 0 {
            // SAFETY: the shim returns static or library-owned strings.
            let path = unsafe { cstr(ffi::dio_loaded_path()) };
            // SAFETY: a libfabric was loaded (rc == 0): the shim returns its version.
            let runtime_version = unsafe { ffi::dio_runtime_version() };
            let api_version = consts.header_version.min(runtime_version);
            if api_version < MIN_API {
                return Err(format!(
                    "libfabric {} at {path} is older than the API {} dataio-rdma needs",
                    version_string(runtime_version),
                    version_string(MIN_API)
                ));
            }
            return Ok(Library {
                path: if path.is_empty() { name } else { path },
                runtime_version,
                header_version: consts.header_version,
                api_version,
                // SAFETY: as above: a query of the loaded library.
                symbols_versioned: unsafe { ffi::dio_symbols_versioned() } != 0,
                consts,
            });
        }
        reasons.push(buf_str(&err));
    }
    Err(format!(
        "libfabric could not be loaded ({}); install it (Debian/Ubuntu: apt-get install libfabric1) or set DATAIO_LIBFABRIC to its path",
        reasons.join("; ")
    ))
}

/// # Safety
/// `p` is null or a NUL-terminated string.
unsafe fn cstr(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: guaranteed by the caller.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

fn buf_str(b: &[c_char]) -> String {
    let bytes: Vec<u8> = b.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

pub fn strerror(code: i64) -> String {
    // SAFETY: fi_strerror (or libc's) returns a static string.
    unsafe { cstr(ffi::dio_strerror(code.unsigned_abs().min(i32::MAX as u64) as c_int)) }
}

/// One provider match of fi_getinfo, flattened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderInfo {
    pub provider: String,
    pub fabric: String,
    pub domain: String,
    pub caps: u64,
    pub mode: u64,
    pub mr_mode: u64,
    pub max_msg_size: u64,
    pub mr_key_size: u64,
    pub tx_size: u64,
    pub prov_version: u32,
    pub addr_format: u32,
    pub ep_type: i32,
    pub data_progress: i32,
    pub control_progress: i32,
    pub threading: i32,
}

/// Providers that move bytes through the kernel's network stack (or shared
/// memory), with no RDMA hardware underneath.
const SOFTWARE_CORES: &[&str] = &["tcp", "sockets", "udp", "shm", "net"];

impl ProviderInfo {
    fn from_desc(d: &ffi::DioDesc) -> Self {
        ProviderInfo {
            provider: buf_str(&d.prov_name),
            fabric: buf_str(&d.fabric_name),
            domain: buf_str(&d.domain_name),
            caps: d.caps,
            mode: d.mode,
            mr_mode: d.mr_mode,
            max_msg_size: d.max_msg_size,
            mr_key_size: d.mr_key_size,
            tx_size: d.tx_size,
            prov_version: d.prov_version,
            addr_format: d.addr_format,
            ep_type: d.ep_type,
            data_progress: d.data_progress,
            control_progress: d.control_progress,
            threading: d.threading,
        }
    }

    /// The core provider under any utility layers: "tcp" for "tcp;ofi_rxm".
    pub fn core(&self) -> &str {
        self.provider.split(';').next().unwrap_or("")
    }

    /// True for providers backed by RDMA hardware (efa, verbs, cxi, psm3, ...).
    pub fn is_hardware(&self) -> bool {
        !SOFTWARE_CORES.contains(&self.core())
    }

    /// Only reaches processes on the same host.
    pub fn is_local_only(&self) -> bool {
        self.core() == "shm"
    }

    pub fn has(&self, bits: u64) -> bool {
        self.caps & bits == bits
    }

    pub fn hmem(&self, c: &ffi::DioConsts) -> bool {
        self.has(c.cap_hmem)
    }

    pub fn rma(&self, c: &ffi::DioConsts) -> bool {
        self.has(c.cap_rma | c.cap_read | c.cap_write | c.cap_remote_read | c.cap_remote_write)
    }

    /// Preference among matches when no provider is named: hardware first,
    /// then tcp;ofi_rxm, then sockets, then anything else (udp;ofi_rxd);
    /// shared memory is never picked on its own (it cannot reach other hosts).
    pub fn rank(&self) -> u32 {
        if self.is_local_only() {
            return 9;
        }
        if self.is_hardware() {
            return 0;
        }
        match self.provider.as_str() {
            "tcp;ofi_rxm" => 1,
            "tcp" => 2,
            "sockets" => 3,
            _ => 4,
        }
    }

    pub fn cap_names(&self, c: &ffi::DioConsts) -> Vec<&'static str> {
        let table = [
            (c.cap_msg, "FI_MSG"),
            (c.cap_rma, "FI_RMA"),
            (c.cap_tagged, "FI_TAGGED"),
            (c.cap_atomic, "FI_ATOMIC"),
            (c.cap_read, "FI_READ"),
            (c.cap_write, "FI_WRITE"),
            (c.cap_remote_read, "FI_REMOTE_READ"),
            (c.cap_remote_write, "FI_REMOTE_WRITE"),
            (c.cap_hmem, "FI_HMEM"),
        ];
        table.iter().filter(|(bit, _)| self.caps & bit != 0).map(|&(_, n)| n).collect()
    }

    pub fn mr_mode_names(&self, c: &ffi::DioConsts) -> Vec<&'static str> {
        let table = [
            (c.mr_local, "FI_MR_LOCAL"),
            (c.mr_raw, "FI_MR_RAW"),
            (c.mr_virt_addr, "FI_MR_VIRT_ADDR"),
            (c.mr_allocated, "FI_MR_ALLOCATED"),
            (c.mr_prov_key, "FI_MR_PROV_KEY"),
            (c.mr_endpoint, "FI_MR_ENDPOINT"),
            (c.mr_hmem, "FI_MR_HMEM"),
        ];
        table.iter().filter(|(bit, _)| self.mr_mode & bit != 0).map(|&(_, n)| n).collect()
    }

    pub fn ep_type_name(&self, c: &ffi::DioConsts) -> &'static str {
        match self.ep_type {
            t if t == c.ep_rdm => "FI_EP_RDM",
            t if t == c.ep_msg => "FI_EP_MSG",
            t if t == c.ep_dgram => "FI_EP_DGRAM",
            _ => "other",
        }
    }

    pub fn progress_name(&self, p: i32, c: &ffi::DioConsts) -> &'static str {
        match p {
            p if p == c.progress_auto => "auto",
            p if p == c.progress_manual => "manual",
            _ => "unspecified",
        }
    }

    pub fn is_sockaddr(&self, c: &ffi::DioConsts) -> bool {
        self.addr_format == c.addr_sockaddr_in || self.addr_format == c.addr_sockaddr_in6
    }
}

/// What to ask fi_getinfo for.
#[derive(Debug, Clone, Default)]
pub struct Query {
    pub provider: Option<String>,
    pub fabric: Option<String>,
    pub domain: Option<String>,
    pub node: Option<String>,
    pub service: Option<String>,
    /// node/service name the local address (FI_SOURCE), not the peer's.
    pub source: bool,
    pub rma: bool,
    pub hmem: bool,
    pub rdm: bool,
}

impl Query {
    /// One-sided RMA on a reliable-datagram endpoint.
    pub fn rma() -> Self {
        Query { rma: true, rdm: true, ..Default::default() }
    }

    /// Runs `f` with the C view of this query (the strings live until it returns).
    fn with_hints<T>(&self, lib: &Library, f: impl FnOnce(&ffi::DioHints) -> T) -> Result<T> {
        let c = |s: &Option<String>| -> Result<Option<CString>> {
            s.as_deref()
                .map(|v| CString::new(v).map_err(|_| Error::InvalidArgument(format!("{v:?} contains a NUL byte"))))
                .transpose()
        };
        let (prov, fabric, domain, node, service) =
            (c(&self.provider)?, c(&self.fabric)?, c(&self.domain)?, c(&self.node)?, c(&self.service)?);
        let p = |s: &Option<CString>| s.as_ref().map_or(std::ptr::null(), |v| v.as_ptr());
        let hints = ffi::DioHints {
            api_version: lib.api_version,
            prov_name: p(&prov),
            fabric_name: p(&fabric),
            domain_name: p(&domain),
            node: p(&node),
            service: p(&service),
            source: self.source as c_int,
            rma: self.rma as c_int,
            hmem: self.hmem as c_int,
            ep_rdm: self.rdm as c_int,
        };
        Ok(f(&hints))
    }
}

/// Every match of `q`, in libfabric's order. An empty list is `Ok`.
pub fn getinfo(q: &Query) -> Result<Vec<ProviderInfo>> {
    let lib = library()?;
    const MAX: usize = 256;
    let mut out = vec![ffi::DioDesc::default(); MAX];
    let mut count: c_int = 0;
    let mut err = [0 as c_char; 512];
    let rc = q.with_hints(lib, |h| {
        // SAFETY: `h` and its strings are valid for the call; `out` holds MAX
        // entries; `err` is writable.
        unsafe { ffi::dio_getinfo(h, out.as_mut_ptr(), MAX as c_int, &mut count, err.as_mut_ptr(), err.len()) }
    })?;
    if rc == -lib.consts.enodata {
        return Ok(Vec::new());
    }
    if rc != 0 {
        return Err(Error::Fabric(buf_str(&err)));
    }
    Ok(out[..(count.max(0) as usize).min(MAX)].iter().map(ProviderInfo::from_desc).collect())
}

/// The match `open` would use for `q`: the best-ranked one (or, when a
/// provider is named, the first of that provider).
pub fn select(q: &Query) -> Result<ProviderInfo> {
    let lib = library()?;
    let mut list = getinfo(q)?;
    if q.provider.is_none() {
        list.retain(|p| !p.is_local_only());
        list.sort_by_key(ProviderInfo::rank); // stable: libfabric's order within a rank
    }
    list.into_iter().next().ok_or_else(|| {
        let what = if q.hmem { "one-sided RMA with FI_HMEM" } else { "one-sided RMA" };
        let prov = q.provider.as_deref().map(|p| format!(" from provider {p:?}")).unwrap_or_default();
        let env = std::env::var("FI_PROVIDER").map(|v| format!(" (FI_PROVIDER={v})")).unwrap_or_default();
        let node = q.node.as_deref().map(|n| format!(" on {n}")).unwrap_or_default();
        Error::Unavailable(format!(
            "no libfabric provider offers {what} on a reliable-datagram endpoint{prov}{node}{env} (libfabric {}); see dataio.rdma.diagnose()",
            version_string(lib.runtime_version)
        ))
    })
}

/// An open RDM endpoint with its fabric, domain, address vector and
/// completion queue.
pub struct Endpoint {
    raw: *mut ffi::DioEp,
    /// Serializes every call into the provider: libfabric lets providers ask
    /// for that (FI_THREAD_DOMAIN), and uncontended it costs nanoseconds
    /// against microseconds per operation.
    calls: Mutex<()>,
    pub info: ProviderInfo,
    /// The completion queue has a wait object (fi_cq_sread can block).
    pub cq_waits: bool,
    lib: &'static Library,
}

// SAFETY: the shim's handles are plain heap objects that any thread may use
// as long as calls are not concurrent (the strictest threading model a
// provider may ask for); every method that calls into the provider holds
// `calls`, and registrations take it too (through their Arc).
unsafe impl Send for Endpoint {}
// SAFETY: as above: shared references only reach the provider under `calls`.
unsafe impl Sync for Endpoint {}

impl Endpoint {
    /// Opens exactly the match `info` of `q` (same provider, fabric, domain).
    pub fn open(q: &Query, info: &ProviderInfo) -> Result<Arc<Endpoint>> {
        let lib = library()?;
        let exact = Query {
            provider: Some(info.provider.clone()),
            fabric: Some(info.fabric.clone()),
            domain: Some(info.domain.clone()),
            ..q.clone()
        };
        let mut raw: *mut ffi::DioEp = std::ptr::null_mut();
        let mut desc = ffi::DioDesc::default();
        let mut waits: c_int = 0;
        let mut err = [0 as c_char; 512];
        let rc = exact.with_hints(lib, |h| {
            // SAFETY: valid hints; out-pointers to live locals.
            unsafe { ffi::dio_open(h, &mut raw, &mut desc, &mut waits, err.as_mut_ptr(), err.len()) }
        })?;
        if rc != 0 || raw.is_null() {
            return Err(Error::Fabric(format!("opening {} on {}: {}", info.provider, info.domain, buf_str(&err))));
        }
        Ok(Arc::new(Endpoint {
            raw,
            calls: Mutex::new(()),
            info: ProviderInfo::from_desc(&desc),
            cq_waits: waits != 0,
            lib,
        }))
    }

    fn guard(&self) -> MutexGuard<'_, ()> {
        match self.calls.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    pub fn consts(&self) -> &ffi::DioConsts {
        &self.lib.consts
    }

    /// This endpoint's fabric address (opaque bytes for the peer's AV).
    pub fn name(&self) -> Result<Vec<u8>> {
        // Provider addresses are tens of bytes (sockaddr, EFA GID + QPN);
        // 1 KiB is the handshake's limit too.
        let mut buf = vec![0u8; crate::wire::MAX_ADDR];
        let mut len = buf.len();
        let _g = self.guard();
        // SAFETY: writable buffer of `len` bytes.
        let rc = unsafe { ffi::dio_getname(self.raw, buf.as_mut_ptr().cast(), &mut len) };
        if rc != 0 || len > buf.len() {
            return Err(Error::Fabric(format!("fi_getname failed: {} ({rc})", strerror(rc as i64))));
        }
        buf.truncate(len);
        Ok(buf)
    }

    /// Adds a peer's address; the handle to post operations to. The address
    /// must be as long as this endpoint's own (fi_av_insert reads one
    /// address of the provider's format, whatever the slice holds).
    pub fn insert_peer(&self, addr: &[u8]) -> Result<u64> {
        let own = self.name()?.len();
        if addr.len() != own {
            return Err(Error::Protocol(format!(
                "a {} address is {own} bytes, not {}",
                self.info.provider,
                addr.len()
            )));
        }
        let mut fi_addr = 0u64;
        let mut err = [0 as c_char; 256];
        let _g = self.guard();
        // SAFETY: `addr` holds exactly one address of this provider's format
        // (checked above).
        let rc =
            unsafe { ffi::dio_av_insert(self.raw, addr.as_ptr().cast(), &mut fi_addr, err.as_mut_ptr(), err.len()) };
        if rc != 0 {
            return Err(Error::Fabric(buf_str(&err)));
        }
        Ok(fi_addr)
    }

    /// Registers `len` bytes at `ptr` with `access` (FI_READ, FI_REMOTE_READ, ...).
    ///
    /// # Safety
    /// The memory must stay mapped, and for host memory not be freed, until
    /// the returned region is dropped (after which the provider no longer
    /// touches it).
    pub unsafe fn register(
        self: &Arc<Self>,
        ptr: *mut u8,
        len: usize,
        access: u64,
        mem: Memory,
    ) -> Result<MemoryRegion> {
        let (iface, device) = match mem {
            Memory::Host => (self.lib.consts.hmem_system, 0),
            Memory::Cuda(d) => (self.lib.consts.hmem_cuda, d),
        };
        let mut mr: *mut ffi::DioMr = std::ptr::null_mut();
        let mut err = [0 as c_char; 512];
        let _g = self.guard();
        // SAFETY: the caller keeps the memory valid; out-pointers are live.
        let rc = unsafe {
            ffi::dio_mr_reg(
                self.raw,
                ptr.cast(),
                len,
                access,
                random_u64(),
                iface,
                device,
                &mut mr,
                err.as_mut_ptr(),
                err.len(),
            )
        };
        if rc != 0 || mr.is_null() {
            return Err(Error::Fabric(format!("registering {len} bytes of {mem}: {}", buf_str(&err))));
        }
        LIVE_REGISTRATIONS.fetch_add(1, Ordering::SeqCst);
        // SAFETY: `mr` is a live registration.
        let (key, desc) = unsafe { (ffi::dio_mr_key(mr), ffi::dio_mr_desc(mr)) };
        Ok(MemoryRegion { raw: mr, key, desc, addr: ptr as u64, len, endpoint: Arc::clone(self) })
    }

    /// Posts one operation between `buf..buf+len` and `remote`.
    ///
    /// # Safety
    /// `buf..buf+len` lies inside `mr`'s registration and stays valid until
    /// the completion for `ctx` is reaped or the endpoint is shut down; `ctx`
    /// points to `context_size` bytes that stay in place as long.
    pub unsafe fn post(
        &self,
        op: Op,
        buf: *mut u8,
        len: usize,
        mr: &MemoryRegion,
        remote: Remote,
        ctx: *mut c_void,
    ) -> i64 {
        let _g = self.guard();
        let Remote { peer, addr, key } = remote;
        // SAFETY: forwarded from the caller.
        unsafe {
            match op {
                Op::Read => ffi::dio_post_read(self.raw, buf.cast(), len, mr.desc, peer, addr, key, ctx),
                Op::Write => ffi::dio_post_write(self.raw, buf.cast_const().cast(), len, mr.desc, peer, addr, key, ctx),
            }
        }
    }

    /// Reaps completions into `out`: `timeout_ms < 0` polls once, otherwise
    /// blocks up to that long (when the queue can wait).
    pub fn reap(&self, out: &mut [*mut c_void], timeout_ms: i32) -> Reaped {
        let timeout = if self.cq_waits { timeout_ms } else { -1 };
        let _g = self.guard();
        // SAFETY: `out` is writable for its length.
        let n = unsafe { ffi::dio_cq_reap(self.raw, out.as_mut_ptr(), out.len(), timeout) };
        let c = &self.lib.consts;
        if n > 0 {
            Reaped::Done(n as usize)
        } else if n == 0 || n == -(c.eagain as i64) || n == -(libc::ETIMEDOUT as i64) {
            Reaped::Nothing
        } else if n == -(c.eavail as i64) {
            let mut ctx: *mut c_void = std::ptr::null_mut();
            let (mut err, mut prov) = (0, 0);
            let mut msg = [0 as c_char; 512];
            // SAFETY: out-pointers to live locals, writable message buffer.
            let rc =
                unsafe { ffi::dio_cq_readerr(self.raw, &mut ctx, &mut err, &mut prov, msg.as_mut_ptr(), msg.len()) };
            if rc != 0 {
                return Reaped::Failed {
                    message: format!("fi_cq_readerr failed: {}", strerror(rc as i64)),
                    peer_gone: false,
                };
            }
            Reaped::Failed {
                message: format!("{} (error {err}, provider error {prov})", buf_str(&msg)),
                peer_gone: connection_lost(err),
            }
        } else {
            Reaped::Failed {
                message: format!("fi_cq_read failed: {} ({n})", strerror(n)),
                peer_gone: connection_lost(-n as i32),
            }
        }
    }

    /// Closes the endpoint itself (the provider then touches no posted
    /// buffer); the other objects close on drop.
    pub fn shutdown(&self) {
        let _g = self.guard();
        // SAFETY: the shim clears its endpoint pointer; later posts fail with
        // -FI_ENOTCONN instead of touching a closed endpoint.
        unsafe { ffi::dio_ep_shutdown(self.raw) };
    }

    pub fn eagain(&self) -> i64 {
        -(self.lib.consts.eagain as i64)
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        // SAFETY: the last reference; every MemoryRegion (which holds an Arc
        // of this endpoint) is gone.
        unsafe { ffi::dio_close(self.raw) };
    }
}

/// The far side of an operation: the peer's AV handle, the address in its
/// registration's terms (offset or virtual address) and the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Remote {
    pub peer: u64,
    pub addr: u64,
    pub key: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Read,
    Write,
}

/// Where a buffer lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Memory {
    Host,
    Cuda(i32),
}

impl std::fmt::Display for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Memory::Host => write!(f, "host memory"),
            Memory::Cuda(d) => write!(f, "CUDA device {d} memory"),
        }
    }
}

pub enum Reaped {
    Done(usize),
    Nothing,
    /// An error completion (or a failed read of the queue); `peer_gone` when
    /// its code says the connection to the peer was lost.
    Failed {
        message: String,
        peer_gone: bool,
    },
}

/// libfabric's error codes are errno values: these mean the peer is gone
/// (rxm cancels the operations of a connection that broke).
fn connection_lost(err: i32) -> bool {
    [
        libc::ENOTCONN,
        libc::ECONNRESET,
        libc::ECONNABORTED,
        libc::ECONNREFUSED,
        libc::EPIPE,
        libc::EHOSTUNREACH,
        libc::ENETUNREACH,
        libc::ECANCELED,
    ]
    .contains(&err.abs())
}

/// One registration; closed on drop.
pub struct MemoryRegion {
    raw: *mut ffi::DioMr,
    pub key: u64,
    desc: *mut c_void,
    pub addr: u64,
    pub len: usize,
    endpoint: Arc<Endpoint>,
}

// SAFETY: the handle is only closed, once, on drop, under its endpoint's
// call lock; the descriptor is an opaque value passed back to the provider.
unsafe impl Send for MemoryRegion {}
// SAFETY: shared references only read plain fields.
unsafe impl Sync for MemoryRegion {}

impl MemoryRegion {
    pub fn endpoint(&self) -> &Arc<Endpoint> {
        &self.endpoint
    }
}

impl Drop for MemoryRegion {
    fn drop(&mut self) {
        let _g = self.endpoint.guard();
        // SAFETY: a live registration, closed once.
        unsafe { ffi::dio_mr_close(self.raw) };
        LIVE_REGISTRATIONS.fetch_sub(1, Ordering::SeqCst);
    }
}

/// 64 random bits from the kernel: requested keys (where the provider lets
/// us choose) that a stranger cannot guess.
pub fn random_u64() -> u64 {
    let mut v = [0u8; 8];
    let mut filled = 0;
    while filled < v.len() {
        // SAFETY: writes at most the remaining bytes of `v`.
        let n = unsafe { libc::getrandom(v[filled..].as_mut_ptr().cast(), v.len() - filled, 0) };
        if n <= 0 {
            // getrandom cannot fail for 8 bytes on Linux ≥ 3.17 once the pool
            // is initialized; fall back to the clock rather than panic.
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0);
            return t ^ (std::process::id() as u64).rotate_left(32);
        }
        filled += n as usize;
    }
    u64::from_ne_bytes(v)
}
