//! A hostile peer against a server in another process, through the real
//! libfabric (skipped, with a message, where libfabric cannot be loaded).
//!
//! The test binary re-executes itself. With `DATAIO_RDMA_HOSTILE_ROLE=server`
//! the test `hostile_server_process` serves a pattern-filled anonymous region
//! (canary bytes right after its end and on the pages around it) and a
//! pattern file, both token-protected, prints their addresses, and serves
//! until its stdin closes (the line `canaries` on stdin asks it whether the
//! canaries are intact). With `=client-read` / `=client-write` the test
//! `hostile_client_process` moves the whole region in a loop until it is
//! killed. Without the variable both return at once.
//!
//! The hostile peer sends garbage handshakes, one-sided requests outside the
//! region (through `Client::transfer_unchecked`, which skips the client-side
//! checks), overlapping concurrent transfers, and dies mid-transfer. Every
//! request must be refused or dropped without taking the server down, no
//! byte from outside the region may come back or be written, and afterwards
//! a well-behaved client still reads and writes the right bytes while the
//! server's memory, open files and threads stay flat.
//!
//! What libfabric 1.17's `tcp;ofi_rxm` does with a request outside the
//! registration (prov/tcp/src/tcpx_progress.c, prov/util/src/util_mr_map.c):
//! the target's `ofi_mr_verify` fails with -FI_EACCES, the target drops the
//! connection (`tcpx_ep_disable`), and the initiator's provider cancels what
//! was posted on it: the client sees an error completion with FI_ECANCELED
//! (125), which `Client` reports as `Error::Disconnected`, and nothing lands
//! in its buffer. The exception: that check computes `address + length`
//! without an overflow test, so a request whose length wraps past 2^64
//! passes it. An aimed read then fails on the server's side and times out
//! here (asserted below); a wrapping *write* lands past the region or
//! crashes the server — libfabric's hole, not something the server can
//! filter, so it is not a test here but a reproduction with its own client:
//! `crates/dataio-rdma/repro/` (docs/arch.md, RDMA "Security and bad input").

use dataio_rdma::wire::{self, ServerHello, Status};
use dataio_rdma::{fabric, Client, ConnectOptions, Error, Memory, Op, Region, ServeOptions, Server};
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

const ROLE: &str = "DATAIO_RDMA_HOSTILE_ROLE";
const TOKEN: &[u8] = b"hostile-peer-token";
/// Not a multiple of the page size: the rest of the region's last page (4000
/// bytes right after its last byte, outside the registration) holds the
/// canary; so do the pages around the mapping where they are free.
const ANON_LEN: usize = (8 << 20) - 4000;
const FILE_LEN: usize = (64 << 10) + 37;
const PAGE: usize = 4096;
/// The server's handshake timeout: silent connections are dropped after it.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(1);
/// Fills the memory around the anonymous region.
const CANARY: u8 = 0xFE;
/// Fills the hostile peer's own buffers before a read that must fail.
const SENTINEL: u8 = 0xFD;
/// Generous bound of every wait for the server to answer or hang up.
const PATIENCE: Duration = Duration::from_secs(10);

fn libfabric() -> bool {
    match fabric::library() {
        Ok(_) => true,
        Err(e) => {
            eprintln!("skipped: {e}");
            false
        }
    }
}

/// In the parent test run: libfabric loads and this is not a child process.
fn hostile_run() -> bool {
    std::env::var_os(ROLE).is_none() && libfabric()
}

/// The served bytes: never 0, CANARY or SENTINEL.
fn pattern(i: u64) -> u8 {
    ((i.wrapping_mul(0x9E37_79B1) >> 7) % 251) as u8 + 1
}

fn pattern_at(offset: u64, len: usize) -> Vec<u8> {
    (0..len as u64).map(|i| pattern(offset + i)).collect()
}

/// xorshift64*: the garbage is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

// ---------------------------------------------------------------------------
// The server process.

/// Maps one page of CANARY at `at` if nothing is mapped there yet (it stays
/// mapped for the life of the process).
fn canary_page(at: usize) -> bool {
    // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping; the
    // new page is written only here.
    unsafe {
        let p = libc::mmap(
            at as *mut libc::c_void,
            PAGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return false;
        }
        if p as usize != at {
            libc::munmap(p, PAGE);
            return false;
        }
        std::ptr::write_bytes(p.cast::<u8>(), CANARY, PAGE);
        true
    }
}

/// Where, around the anonymous region, a canary byte changed.
fn clobbered(base: usize, mapped: usize, before: bool, after: bool) -> Vec<String> {
    let check = |from: usize, len: usize, what: &str| -> Option<String> {
        // SAFETY: the region's mapping and the canary pages stay mapped for
        // the life of the process; reads only.
        let bytes = unsafe { std::slice::from_raw_parts(from as *const u8, len) };
        let first = bytes.iter().position(|&b| b != CANARY)?;
        let n = bytes.iter().filter(|&&b| b != CANARY).count();
        Some(format!("{what}+{first}({n} bytes)"))
    };
    let mut bad = Vec::new();
    bad.extend(check(base + ANON_LEN, mapped - ANON_LEN, "region_end"));
    if after {
        bad.extend(check(base + mapped, PAGE, "page_after"));
    }
    if before {
        bad.extend(check(base - PAGE, PAGE, "page_before"));
    }
    bad
}

#[test]
fn hostile_server_process() {
    if std::env::var(ROLE).as_deref() != Ok("server") {
        return;
    }
    let opts = || ServeOptions {
        bind: "127.0.0.1:0".into(),
        token: Some(TOKEN.to_vec()),
        timeout: HANDSHAKE_TIMEOUT,
        ..Default::default()
    };

    let region = Region::anonymous(ANON_LEN).unwrap();
    let base = region.as_ptr() as usize;
    let mapped = ANON_LEN.div_ceil(PAGE) * PAGE;
    // SAFETY: the mapping is `mapped` bytes long and nothing else uses it
    // yet: the region's bytes get the pattern, the rest of its last page the
    // canary.
    unsafe {
        let all = std::slice::from_raw_parts_mut(base as *mut u8, mapped);
        for (i, b) in all[..ANON_LEN].iter_mut().enumerate() {
            *b = pattern(i as u64);
        }
        all[ANON_LEN..].fill(CANARY);
    }
    let before = canary_page(base - PAGE);
    let after = canary_page(base + mapped);
    let anon = Server::start(opts(), region).unwrap();

    let path = std::env::temp_dir().join(format!("dataio-rdma-hostile-{}.bin", std::process::id()));
    std::fs::write(&path, pattern_at(0, FILE_LEN)).unwrap();
    let file = Server::start(opts(), Region::file(&path).unwrap()).unwrap();
    // The map keeps the bytes; the name is not needed any more.
    let _ = std::fs::remove_file(&path);

    println!(
        "HOSTILE-SERVER anon={} file={} provider={} mr_mode={:#x} base={base:#x} canaries={before},{after}",
        anon.local_addr(),
        file.local_addr(),
        anon.provider().provider,
        anon.provider().mr_mode,
    );
    std::io::stdout().flush().unwrap();

    let mut line = String::new();
    while std::io::stdin().read_line(&mut line).is_ok_and(|n| n > 0) {
        if line.trim() == "canaries" {
            let bad = clobbered(base, mapped, before, after);
            if bad.is_empty() {
                println!("CANARIES ok");
            } else {
                println!("CANARIES clobbered {}", bad.join(" "));
            }
            std::io::stdout().flush().unwrap();
        }
        line.clear();
    }
    anon.close();
    file.close();
    assert_eq!(fabric::live_registrations(), 0);
}

/// A client in its own process, killed by the parent mid-transfer.
#[test]
fn hostile_client_process() {
    let role = std::env::var(ROLE).unwrap_or_default();
    if role != "client-read" && role != "client-write" {
        return;
    }
    let client = connect(&std::env::var("DATAIO_RDMA_HOSTILE_ADDR").unwrap());
    let mut buf = vec![0u8; ANON_LEN];
    if role == "client-write" {
        // Writes the bytes that are there already: the region's contents
        // stay known wherever the write is cut.
        buf.copy_from_slice(&pattern_at(0, ANON_LEN));
    }
    for round in 0.. {
        if role == "client-write" {
            client.write(&buf, 0).unwrap();
        } else {
            client.read_into(&mut buf, 0).unwrap();
        }
        if round == 0 {
            println!("TRANSFERRING");
            std::io::stdout().flush().unwrap();
        }
    }
}

// ---------------------------------------------------------------------------
// The hostile side's view of the server process.

/// This test binary, re-executed as `role` running only `test`.
///
/// libfabric 1.17 opens its sockets and epoll files without O_CLOEXEC, so a
/// child would inherit those of the clients other tests have open here, and
/// hold their connections open after those clients close. The child closes
/// every file but its stdio before it starts.
fn reexec(test: &str, role: &str) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", test, "--nocapture", "--test-threads=1"]).env(ROLE, role);
    // SAFETY: the hook runs between fork and exec and makes only
    // async-signal-safe system calls.
    unsafe {
        cmd.pre_exec(|| {
            if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) != 0 {
                for fd in 3..65_536 {
                    libc::close(fd);
                }
            }
            Ok(())
        });
    }
    cmd
}

struct ServerProc {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    anon: SocketAddr,
    file: SocketAddr,
    /// The anonymous region's virtual address in the server process.
    base: u64,
    provider: String,
}

fn field<'a>(line: &'a str, key: &str) -> &'a str {
    line.split_whitespace().find_map(|w| w.strip_prefix(key).and_then(|w| w.strip_prefix('='))).unwrap_or("")
}

fn hex(v: &str) -> u64 {
    u64::from_str_radix(v.trim_start_matches("0x"), 16).unwrap()
}

/// Every line of `out`, through a thread that keeps draining it.
fn line_reader(out: impl Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

fn wait_line(lines: &Receiver<String>, marker: &str, timeout: Duration) -> Option<String> {
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.checked_duration_since(Instant::now())?;
        let line = lines.recv_timeout(left).ok()?;
        if line.contains(marker) {
            return Some(line);
        }
    }
}

impl ServerProc {
    fn spawn() -> ServerProc {
        let mut child = reexec("hostile_server_process", "server")
            // Where a crash report would land (libfabric writes one on SIGSEGV).
            .current_dir(std::env::temp_dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let lines = line_reader(child.stdout.take().unwrap());
        let line = wait_line(&lines, "HOSTILE-SERVER", Duration::from_secs(60));
        let Some(line) = line else {
            let _ = child.kill();
            panic!("the server process printed no address: {:?}", child.wait());
        };
        ServerProc {
            child,
            stdin,
            lines,
            anon: field(&line, "anon").parse().unwrap(),
            file: field(&line, "file").parse().unwrap(),
            base: hex(field(&line, "base")),
            provider: field(&line, "provider").to_string(),
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn assert_alive(&mut self, after: &str) {
        if let Some(status) = self.child.try_wait().unwrap() {
            panic!("the server process died after {after}: {status}");
        }
    }

    /// Asks the server whether the memory around its region is untouched.
    fn assert_canaries(&mut self, after: &str) {
        self.assert_alive(after);
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(b"canaries\n").and_then(|_| stdin.flush()).unwrap();
        let line = wait_line(&self.lines, "CANARIES", PATIENCE).expect("the server did not answer");
        assert!(line.ends_with("CANARIES ok"), "after {after}, bytes outside the region changed: {line}");
    }

    fn proc_count(&self, dir: &str) -> usize {
        std::fs::read_dir(format!("/proc/{}/{dir}", self.pid())).unwrap().count()
    }

    fn fds(&self) -> usize {
        self.proc_count("fd")
    }

    fn threads(&self) -> usize {
        self.proc_count("task")
    }

    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    /// Waits (generously) until the server's open files and threads are
    /// back to `baseline`; what they settled at.
    fn settle(&self, baseline: (usize, usize)) -> (usize, usize) {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let now = (self.fds(), self.threads());
            if (now.0 <= baseline.0 && now.1 <= baseline.1) || Instant::now() > deadline {
                return now;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn assert_settled(&self, baseline: (usize, usize), after: &str) {
        let (fds, threads) = self.settle(baseline);
        assert!(
            fds <= baseline.0 && threads <= baseline.1,
            "after {after} the server holds {fds} files and {threads} threads, {} and {} before; its files: {:?}",
            baseline.0,
            baseline.1,
            self.fd_targets()
        );
    }

    fn fd_targets(&self) -> Vec<String> {
        let dir = format!("/proc/{}/fd", self.pid());
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .map(|d| d.flatten().filter_map(|e| std::fs::read_link(e.path()).ok()))
            .into_iter()
            .flatten()
            .map(|p| p.display().to_string())
            .collect();
        v.sort();
        v
    }

    /// Closes the server's stdin and waits for a clean exit.
    fn stop(mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "the server process exited with {status}");
                return;
            }
            assert!(Instant::now() < deadline, "the server process did not exit after its stdin closed");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn options(token: &[u8]) -> ConnectOptions {
    ConnectOptions {
        token: Some(token.to_vec()),
        chunk_size: 256 << 10,
        max_inflight: 8,
        timeout: PATIENCE,
        ..Default::default()
    }
}

fn connect(addr: &str) -> Client {
    Client::connect(addr, options(TOKEN)).unwrap_or_else(|e| panic!("connecting to {addr}: {e}"))
}

/// A well-behaved client: reads stretches at both ends and in the middle of
/// each region, writes the pattern back over a stretch and reads it again.
fn well_behaved(server: &mut ServerProc, after: &str) {
    server.assert_alive(after);
    let client = connect(&server.anon.to_string());
    for (off, len) in [(0u64, 4096usize), (ANON_LEN as u64 - 5000, 5000), (12_345, 1 << 20)] {
        let mut buf = vec![SENTINEL; len];
        client.read_into(&mut buf, off).unwrap_or_else(|e| panic!("after {after}: {e}"));
        assert!(buf == pattern_at(off, len), "after {after}: wrong bytes at [{off}, {})", off + len as u64);
    }
    let off = ANON_LEN as u64 - 3000;
    client.write(&pattern_at(off, 3000), off).unwrap_or_else(|e| panic!("after {after}: {e}"));
    let mut buf = vec![SENTINEL; 3000];
    client.read_into(&mut buf, off).unwrap();
    assert!(buf == pattern_at(off, 3000), "after {after}: a write did not read back");
    client.close();

    let client = connect(&server.file.to_string());
    let mut buf = vec![SENTINEL; FILE_LEN];
    client.read_into(&mut buf, 0).unwrap_or_else(|e| panic!("after {after}: {e}"));
    assert!(buf == pattern_at(0, FILE_LEN), "after {after}: the file region reads back wrong");
    client.close();
    server.assert_canaries(after);
}

/// Warms the server up (the first connection opens some of libfabric's
/// files for good) and returns its open files and threads once they have
/// stopped changing for half a second.
fn baseline(server: &mut ServerProc) -> (usize, usize) {
    well_behaved(server, "start");
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut last = (server.fds(), server.threads());
    let mut since = Instant::now();
    while since.elapsed() < Duration::from_millis(500) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(25));
        let now = (server.fds(), server.threads());
        if now != last {
            (last, since) = (now, Instant::now());
        }
    }
    last
}

// ---------------------------------------------------------------------------
// 1. Garbage on the handshake socket.

#[derive(Debug)]
enum Answer {
    /// The server closed (or reset) the connection without a byte.
    Dropped,
    /// A complete server hello.
    Hello(ServerHello),
    /// Bytes that are not a server hello.
    Garbage(Vec<u8>),
}

fn hello(token: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    wire::write_client_hello(&mut v, token).unwrap();
    v
}

/// Sends `bytes` (then half-closes when asked) and reads until the server
/// answers a complete hello or hangs up.
fn exchange(addr: SocketAddr, bytes: &[u8], half_close: bool) -> Answer {
    let mut s = TcpStream::connect_timeout(&addr, PATIENCE).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.set_write_timeout(Some(PATIENCE)).unwrap();
    // The server may hang up before it has read everything.
    let _ = s.write_all(bytes);
    if half_close {
        let _ = s.shutdown(Shutdown::Write);
    }
    read_answer(&mut s)
}

fn read_answer(s: &mut TcpStream) -> Answer {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                if let Ok(h) = wire::read_server_hello(&mut got.as_slice()) {
                    return Answer::Hello(h);
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted) => break,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                panic!("the server neither answered nor hung up within {PATIENCE:?} ({} bytes so far)", got.len())
            }
            Err(e) => panic!("reading the server's answer: {e}"),
        }
    }
    if got.is_empty() {
        Answer::Dropped
    } else {
        Answer::Garbage(got)
    }
}

fn assert_dropped(answer: Answer, what: &str) {
    match answer {
        Answer::Dropped => {}
        Answer::Hello(h) => panic!("{what}: the server answered {h:?}"),
        Answer::Garbage(b) => panic!("{what}: the server sent {} bytes: {:?}", b.len(), String::from_utf8_lossy(&b)),
    }
}

fn assert_denied(answer: Answer, what: &str, message: &str) {
    match answer {
        Answer::Hello(ServerHello::Refused(Status::Denied, m)) => assert_eq!(m, message, "{what}"),
        other => panic!("{what}: {other:?}"),
    }
}

fn assert_offer(answer: Answer, what: &str) {
    assert!(matches!(answer, Answer::Hello(ServerHello::Ok(_))), "{what}: {answer:?}");
}

/// A TCP connection to `to` from the local address `from` (another
/// loopback address stands for another host).
fn connect_from(from: std::net::Ipv4Addr, to: SocketAddr) -> TcpStream {
    use std::os::fd::FromRawFd;
    let SocketAddr::V4(to) = to else { panic!("the server listens on IPv4 here") };
    let sa = |ip: std::net::Ipv4Addr, port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from(ip).to_be() },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: plain socket calls on a descriptor this function owns, with
    // sockaddr_in values that live across each call.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let local = sa(from, 0);
        assert_eq!(libc::bind(fd, (&local as *const libc::sockaddr_in).cast(), len), 0, "bind {from}");
        let remote = sa(*to.ip(), to.port());
        assert_eq!(libc::connect(fd, (&remote as *const libc::sockaddr_in).cast(), len), 0, "connect to {to}");
        TcpStream::from_raw_fd(fd)
    }
}

#[test]
fn a_flood_of_silent_connections_from_one_host_does_not_lock_out_another() {
    if !hostile_run() {
        return;
    }
    let mut server = ServerProc::spawn();
    let addr = server.anon;
    // 100 silent connections from 127.0.0.2 (more than the 64 handshakes the
    // server runs at once), held open while 127.0.0.1 says hello.
    let flood: Vec<TcpStream> = (0..100).map(|_| connect_from(std::net::Ipv4Addr::new(127, 0, 0, 2), addr)).collect();
    std::thread::sleep(Duration::from_millis(200));
    for i in 0..3 {
        assert_offer(exchange(addr, &hello(TOKEN), false), &format!("hello {i} from another host during a flood"));
    }
    drop(flood);
    server.assert_alive("a flood from one host");
    well_behaved(&mut server, "a flood from one host");
    server.stop();
}

#[test]
fn garbage_handshakes_are_refused_or_dropped() {
    if !hostile_run() {
        return;
    }
    let mut server = ServerProc::spawn();
    let base = baseline(&mut server);
    let addr = server.anon;
    let valid = hello(TOKEN);

    // Random bytes, seeded; the server reads at most a hello's worth.
    let mut rng = Rng(0x5eed_0001);
    for round in 0..64 {
        let len = 1 + rng.below(if round % 8 == 0 { 70_000 } else { 600 }) as usize;
        assert_dropped(exchange(addr, &rng.bytes(len), true), &format!("random round {round} ({len} bytes)"));
    }
    // Other protocols.
    for (what, bytes) in [
        ("HTTP GET", &b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"[..]),
        ("HTTP POST", &b"POST /rdma HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"[..]),
        ("TLS hello", &[0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03][..]),
        ("SSH banner", &b"SSH-2.0-OpenSSH_9.2\r\n"[..]),
    ] {
        assert_dropped(exchange(addr, bytes, true), what);
    }
    // Every prefix of a valid hello, cut by a half-close; the whole one gets
    // the offer.
    for cut in 0..valid.len() {
        assert_dropped(exchange(addr, &valid[..cut], true), &format!("hello cut at {cut} bytes"));
    }
    assert_offer(exchange(addr, &valid, true), "a whole hello, half-closed");
    // Wrong versions.
    for version in [0u8, wire::VERSION + 1, 0xff] {
        let mut v = valid.clone();
        v[7] = version;
        assert_dropped(exchange(addr, &v, true), &format!("version {version}"));
    }
    // Token lengths over the limit, with and without the bytes.
    for n in [wire::MAX_TOKEN + 1, 0x8000, u16::MAX as usize] {
        let mut v = valid[..8].to_vec();
        v.extend_from_slice(&(n as u16).to_le_bytes());
        assert_dropped(exchange(addr, &v, true), &format!("token length {n}, no token"));
        v.resize(10 + n, b'A');
        assert_dropped(exchange(addr, &v, true), &format!("token length {n} with its bytes"));
    }
    // Wrong and empty tokens are refused, with the reason.
    let mut flipped = TOKEN.to_vec();
    *flipped.last_mut().unwrap() ^= 1;
    let long = [TOKEN, b"x"].concat();
    let wrong: [(&str, &[u8]); 6] = [
        ("flipped", &flipped),
        ("short", &TOKEN[..TOKEN.len() - 1]),
        ("long", &long),
        ("one byte", b"x"),
        ("binary", &[0, 0xff, 0, 0xfe, 10, 13]),
        ("longest", &[b'A'; wire::MAX_TOKEN]),
    ];
    for (what, token) in wrong {
        assert_denied(exchange(addr, &hello(token), false), &format!("{what} token"), "wrong token");
    }
    assert_denied(exchange(addr, &hello(b""), false), "empty token", "this server requires a token");
    // Silent or stalled connections are dropped by the handshake timeout.
    let stalled: Vec<_> = [0, 4, 9, valid.len() - 1]
        .into_iter()
        .map(|cut| {
            let v = valid[..cut].to_vec();
            std::thread::spawn(move || (cut, exchange(addr, &v, false)))
        })
        .collect();
    for t in stalled {
        let (cut, answer) = t.join().unwrap();
        assert_dropped(answer, &format!("silent after {cut} bytes"));
    }
    // A valid hello dripped a byte every 300 ms: each read comes well within
    // the timeout, but the whole hello does not; the server cuts it off
    // (a per-read timeout alone would let 64 drippers hold every handshake
    // slot for hours).
    {
        let mut s = TcpStream::connect_timeout(&addr, PATIENCE).unwrap();
        s.set_read_timeout(Some(PATIENCE)).unwrap();
        for b in &valid {
            if s.write_all(std::slice::from_ref(b)).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(300));
        }
        assert_dropped(read_answer(&mut s), "a hello dripped a byte at a time");
    }
    // A valid hello whose sender stops reading, and one followed by garbage
    // on the control channel: the offer, then the server just waits.
    {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(&valid).unwrap();
        s.shutdown(Shutdown::Read).unwrap();
        let mut s2 = TcpStream::connect(addr).unwrap();
        s2.set_read_timeout(Some(PATIENCE)).unwrap();
        s2.write_all(&valid).unwrap();
        assert_offer(read_answer(&mut s2), "a hello before garbage");
        let mut rng = Rng(0x5eed_0002);
        for _ in 0..16 {
            s2.write_all(&rng.bytes(64 << 10)).unwrap();
        }
    }
    server.assert_alive("garbage handshakes");

    // Many connections at once: 200 silent ones (more than the server runs
    // handshakes for at once), then 32 valid hellos at once.
    let crowd: Vec<TcpStream> = (0..200).map(|_| TcpStream::connect_timeout(&addr, PATIENCE).unwrap()).collect();
    for (i, mut s) in crowd.into_iter().enumerate() {
        s.set_read_timeout(Some(PATIENCE)).unwrap();
        assert_dropped(read_answer(&mut s), &format!("silent connection {i} of 200"));
    }
    let valid_crowd: Vec<_> = (0..32)
        .map(|_| {
            let v = valid.clone();
            std::thread::spawn(move || exchange(addr, &v, true))
        })
        .collect();
    for t in valid_crowd {
        assert_offer(t.join().unwrap(), "one of 32 hellos at once");
    }

    well_behaved(&mut server, "garbage handshakes");
    server.assert_settled(base, "garbage handshakes");
    server.stop();
}

// ---------------------------------------------------------------------------
// 2. One-sided requests outside the region.

/// What the provider answers a request outside the registration with, seen
/// from the client: the connection is dropped and the operation cancelled.
fn assert_refused(server: &ServerProc, result: dataio_rdma::Result<dataio_rdma::Transferred>, what: &str) {
    let err = match result {
        Ok(t) => panic!("{what}: the server's provider carried it out ({t:?})"),
        Err(e) => e,
    };
    if server.provider == "tcp;ofi_rxm" {
        // tcpx_op_read_req / tcpx_op_write: ofi_mr_verify fails, the target
        // disables the endpoint, and the initiator cancels its operations.
        assert!(
            matches!(&err, Error::Disconnected(m) if m.contains("(error 125,")),
            "{what}: expected the operation cancelled (FI_ECANCELED) after the server dropped the connection: {err:?}"
        );
    } else {
        assert!(matches!(err, Error::Disconnected(_) | Error::Fabric(_) | Error::Timeout(_)), "{what}: {err:?}");
    }
}

/// One hostile request on a fresh connection (a refused one breaks it).
fn hostile(
    addr: SocketAddr,
    op: Op,
    offset: u64,
    buf: &mut [u8],
    timeout: Duration,
) -> dataio_rdma::Result<dataio_rdma::Transferred> {
    let client = Client::connect(&addr.to_string(), ConnectOptions { timeout, ..options(TOKEN) }).unwrap();
    // SAFETY: `buf` is live and exclusive for the call.
    let result = unsafe { client.transfer_unchecked(op, buf.as_mut_ptr(), buf.len(), Memory::Host, offset) };
    client.close();
    result
}

#[test]
fn one_sided_requests_outside_the_region_are_refused() {
    if !hostile_run() {
        return;
    }
    let mut server = ServerProc::spawn();
    let base = baseline(&mut server);
    let (anon, file) = (server.anon, server.file);
    let a = ANON_LEN as u64;
    let f = FILE_LEN as u64;

    // Reads: nothing comes back, not even the part inside the region.
    let reads: [(&str, SocketAddr, u64, usize); 7] = [
        ("read across the end", anon, a - 100, 200),
        ("read right past the end", anon, a, 4096),
        ("read far past the end", anon, a + (1 << 30), 64),
        ("read at u64::MAX - 10", anon, u64::MAX - 10, 100),
        ("read at u64::MAX", anon, u64::MAX, 1),
        ("read across the file's end", file, f - 10, 100),
        ("read past the file's end", file, f + 1, 4096),
    ];
    for (what, addr, off, len) in reads {
        let mut buf = vec![SENTINEL; len];
        let result = hostile(addr, Op::Read, off, &mut buf, PATIENCE);
        assert_refused(&server, result, what);
        assert!(buf.iter().all(|&b| b == SENTINEL), "{what}: bytes came back");
        server.assert_alive(what);
    }

    // Writes: refused whole, the region and the canaries untouched.
    let writes: [(&str, SocketAddr, u64, usize); 6] = [
        ("write across the end", anon, a - 10, 100),
        ("write right past the end", anon, a, 4096),
        ("write at u64::MAX - 10", anon, u64::MAX - 10, 100),
        ("write to the read-only file", file, 0, 100),
        ("write to the whole read-only file", file, 0, FILE_LEN),
        ("write across the file's end", file, f - 10, 100),
    ];
    for (what, addr, off, len) in writes {
        let mut data = vec![0xA5u8; len];
        let result = hostile(addr, Op::Write, off, &mut data, PATIENCE);
        assert_refused(&server, result, what);
        server.assert_canaries(what);
    }

    // A transfer whose first chunks lie inside the region and whose last one
    // does not: the provider serves the chunks inside (they may or may not
    // land before the connection drops) and refuses the last; nothing from
    // outside comes back.
    let chunk = options(TOKEN).chunk_size as u64;
    let start = a - 3 * chunk + 100;
    let mut buf = vec![SENTINEL; 3 * chunk as usize];
    let result = hostile(anon, Op::Read, start, &mut buf, PATIENCE);
    assert_refused(&server, result, "a read whose last chunk crosses the end");
    let inside = (a - start) as usize;
    let expect = pattern_at(start, inside);
    for (i, &b) in buf[..inside].iter().enumerate() {
        assert!(b == SENTINEL || b == expect[i], "a read crossing the end: byte {i} is {b:#x}");
    }
    assert!(buf[inside..].iter().all(|&b| b == SENTINEL), "a read crossing the end: bytes past the end came back");
    let mut data = pattern_at(start, 3 * chunk as usize);
    let result = hostile(anon, Op::Write, start, &mut data, PATIENCE);
    assert_refused(&server, result, "a write whose last chunk crosses the end");
    server.assert_canaries("a write crossing the end");

    // An address aimed so that address + length wraps past 2^64 (a peer
    // that knows where the region is mapped). libfabric 1.17's
    // ofi_mr_map_verify does not check that sum for overflow, so this read
    // passes the target's check: the server's send of the bytes at
    // 0xffff_ffff_ffff_fff0 then fails with EFAULT ("msg send failed ...
    // Bad address" in its log) and it never answers. Nothing comes back and
    // the server lives; the read times out. (The same aimed WRITE crashes
    // the server: see `aimed_wrapping_write_leaves_the_server_up`.)
    if server.provider == "tcp;ofi_rxm" {
        let offset = 0u64.wrapping_sub(16).wrapping_sub(server.base);
        let mut buf = vec![SENTINEL; 4096];
        let result = hostile(anon, Op::Read, offset, &mut buf, Duration::from_secs(2));
        assert!(matches!(result, Err(Error::Timeout(_))), "an aimed wrapping read: {result:?}");
        assert!(buf.iter().all(|&b| b == SENTINEL), "an aimed wrapping read: bytes came back");
        server.assert_alive("an aimed wrapping read");
    }

    well_behaved(&mut server, "requests outside the region");
    server.assert_settled(base, "requests outside the region");
    server.stop();
}

#[test]
fn overlapping_concurrent_transfers_with_hostile_neighbours() {
    if !hostile_run() {
        return;
    }
    let mut server = ServerProc::spawn();
    let base = baseline(&mut server);
    let anon = server.anon;
    // Three writers and three readers on overlapping stretches of [1 MiB,
    // 3 MiB), each on its own connection, while a hostile neighbour keeps
    // sending requests past the end on fresh connections.
    let (lo, span) = (1u64 << 20, 1usize << 20);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let neighbour = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) && n < 20 {
                let mut buf = vec![SENTINEL; 4096];
                let op = if n % 2 == 0 { Op::Read } else { Op::Write };
                assert!(hostile(anon, op, ANON_LEN as u64 - 10, &mut buf, PATIENCE).is_err());
                n += 1;
            }
            n
        })
    };
    let fills = [0xB1u8, 0xB2, 0xB3];
    let workers: Vec<_> = (0..6)
        .map(|w| {
            std::thread::spawn(move || {
                let client = connect(&anon.to_string());
                let off = lo + (w as u64 % 3) * (span as u64 / 2);
                for _ in 0..8 {
                    if w < 3 {
                        client.write(&vec![fills[w]; span], off).unwrap();
                    } else {
                        let mut buf = vec![SENTINEL; span];
                        client.read_into(&mut buf, off).unwrap();
                        let original = pattern_at(off, span);
                        for (i, &b) in buf.iter().enumerate() {
                            assert!(fills.contains(&b) || b == original[i], "byte {} reads {b:#x}", off + i as u64);
                        }
                    }
                }
                client.close();
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let refused = neighbour.join().unwrap();
    assert!(refused > 0);
    // Put the pattern back over everything the writers touched.
    let client = connect(&anon.to_string());
    let touched = 2 * span;
    client.write(&pattern_at(lo, touched), lo).unwrap();
    client.close();
    well_behaved(&mut server, "overlapping transfers");
    server.assert_settled(base, "overlapping transfers");
    server.stop();
}

// ---------------------------------------------------------------------------
// 3. A client killed mid-transfer.

#[test]
fn clients_killed_mid_transfer() {
    if !hostile_run() {
        return;
    }
    let mut server = ServerProc::spawn();
    let base = baseline(&mut server);
    for (i, role) in ["client-read", "client-write", "client-read", "client-write"].into_iter().enumerate() {
        let mut child = reexec("hostile_client_process", role)
            .env("DATAIO_RDMA_HOSTILE_ADDR", server.anon.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let lines = line_reader(child.stdout.take().unwrap());
        let started = wait_line(&lines, "TRANSFERRING", Duration::from_secs(60));
        if started.is_none() {
            let _ = child.kill();
            panic!("the {role} process never transferred: {:?}", child.wait());
        }
        // Somewhere inside a later 8 MiB transfer.
        std::thread::sleep(Duration::from_millis(5 + 7 * i as u64));
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        assert!(!status.success(), "the {role} process ended on its own: {status}");
        server.assert_alive(&format!("a {role} process was killed"));
    }
    well_behaved(&mut server, "killed clients");
    server.assert_settled(base, "killed clients");
    server.stop();
}

// ---------------------------------------------------------------------------
// 4. Memory and open files stay flat.

/// One round of everything that should cost the server nothing lasting.
fn hostile_round(server: &ServerProc, round: u64) {
    let (anon, file) = (server.anon, server.file);
    let mut rng = Rng(0x5eed_1000 + round);
    let valid = hello(TOKEN);
    let len = 1 + rng.below(300) as usize;
    assert_dropped(exchange(anon, &rng.bytes(len), true), "random bytes");
    let cut = rng.below(valid.len() as u64) as usize;
    assert_dropped(exchange(file, &valid[..cut], true), "a cut hello");
    assert_denied(exchange(anon, &hello(b"wrong"), false), "wrong token", "wrong token");
    assert_offer(exchange(file, &valid, true), "a hello, half-closed");
    if round.is_multiple_of(4) {
        let mut buf = vec![SENTINEL; 512];
        let (addr, op, off) = match round % 12 {
            0 => (anon, Op::Read, ANON_LEN as u64 - 256),
            4 => (anon, Op::Write, ANON_LEN as u64 + 4096),
            _ => (file, Op::Write, 0),
        };
        assert_refused(server, hostile(addr, op, off, &mut buf, PATIENCE), "a request outside the region");
    }
}

#[test]
fn memory_and_open_files_stay_flat_over_200_hostile_rounds() {
    if !hostile_run() {
        return;
    }
    let mut server = ServerProc::spawn();
    let base = baseline(&mut server);
    for round in 0..20 {
        hostile_round(&server, round);
    }
    server.settle(base);
    let rss_20 = server.rss_kib();
    for round in 20..200 {
        hostile_round(&server, round);
    }
    well_behaved(&mut server, "200 hostile rounds");
    server.assert_settled(base, "200 hostile rounds");
    let rss_200 = server.rss_kib();
    eprintln!(
        "server after 20 hostile rounds: {rss_20} KiB resident; after 200: {rss_200} KiB; files {} (baseline {}), threads {} (baseline {})",
        server.fds(),
        base.0,
        server.threads(),
        base.1
    );
    assert!(rss_200 <= rss_20 + 4096, "the server grew from {rss_20} KiB to {rss_200} KiB resident");
    server.stop();
}
