//! The connection handshake, over a plain TCP socket.
//!
//! ```text
//! client → server   magic "DIORDMA" + version (8 bytes) · u16 token length · token
//! server → client   magic · u8 status
//!                   ok:      u16+provider · u32 address format · u16+fabric address
//!                            · u64 region size · u64 base address · u64 key · u8 access
//!                   refused: u16+message
//! ```
//!
//! Integers are little-endian; every length is bounded before anything is
//! allocated, so a stranger cannot make either side allocate or wait without
//! limit (the sockets carry read and write timeouts). After the handshake the
//! socket stays open as the control channel: each side learns that the other
//! went away when it closes.

use crate::error::{Error, Result};
use std::io::{Read, Write};

pub const MAGIC: &[u8; 7] = b"DIORDMA";
pub const VERSION: u8 = 1;
pub const MAX_TOKEN: usize = 4096;
pub const MAX_ADDR: usize = 1024;
pub const MAX_TEXT: usize = 1024;

/// Access rights of the served region.
pub const ACCESS_READ: u8 = 1;
pub const ACCESS_WRITE: u8 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Status {
    Ok = 0,
    /// Missing or wrong token.
    Denied = 1,
    /// Too many clients.
    Busy = 2,
    /// The server is closing or failed.
    Error = 3,
}

/// What a client needs to reach the region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionOffer {
    pub provider: String,
    pub addr_format: u32,
    pub fabric_addr: Vec<u8>,
    pub size: u64,
    /// Added to offsets: the region's virtual address when the provider
    /// addresses registrations by virtual address (FI_MR_VIRT_ADDR), else 0.
    pub base: u64,
    pub key: u64,
    pub access: u8,
}

impl RegionOffer {
    pub fn writable(&self) -> bool {
        self.access & ACCESS_WRITE != 0
    }
    pub fn readable(&self) -> bool {
        self.access & ACCESS_READ != 0
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerHello {
    Ok(RegionOffer),
    Refused(Status, String),
}

struct Out(Vec<u8>);

impl Out {
    fn new() -> Self {
        let mut v = Vec::with_capacity(64);
        v.extend_from_slice(MAGIC);
        v.push(VERSION);
        Out(v)
    }
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, v: &[u8], max: usize) -> Result<()> {
        if v.len() > max || v.len() > u16::MAX as usize {
            return Err(Error::InvalidArgument(format!(
                "handshake field of {} bytes exceeds the limit of {max}",
                v.len()
            )));
        }
        self.0.extend_from_slice(&(v.len() as u16).to_le_bytes());
        self.0.extend_from_slice(v);
        Ok(())
    }
}

struct In<'a, R: Read>(&'a mut R, &'a str);

impl<R: Read> In<'_, R> {
    fn exact<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut b = [0u8; N];
        self.0.read_exact(&mut b).map_err(|e| Error::from_io(self.1, e))?;
        Ok(b)
    }
    fn magic(&mut self) -> Result<()> {
        let m: [u8; 8] = self.exact()?;
        if &m[..7] != MAGIC {
            return Err(Error::Protocol(format!("{}: the peer does not speak the dataio-rdma handshake", self.1)));
        }
        if m[7] != VERSION {
            return Err(Error::Protocol(format!(
                "{}: the peer speaks handshake version {}, this side {VERSION}",
                self.1, m[7]
            )));
        }
        Ok(())
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.exact::<1>()?[0])
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.exact()?))
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.exact()?))
    }
    fn bytes(&mut self, max: usize, what: &str) -> Result<Vec<u8>> {
        let n = u16::from_le_bytes(self.exact()?) as usize;
        if n > max {
            return Err(Error::Protocol(format!("{}: {what} of {n} bytes exceeds the limit of {max}", self.1)));
        }
        let mut v = vec![0u8; n];
        self.0.read_exact(&mut v).map_err(|e| Error::from_io(self.1, e))?;
        Ok(v)
    }
    /// UTF-8 only: a lossy decode would grow invalid bytes into U+FFFD
    /// (3 bytes each) past the field's limit (found by the `wire` fuzz target).
    fn text(&mut self, max: usize, what: &str) -> Result<String> {
        String::from_utf8(self.bytes(max, what)?)
            .map_err(|_| Error::Protocol(format!("{}: the {what} is not UTF-8", self.1)))
    }
}

pub fn write_client_hello(w: &mut impl Write, token: &[u8]) -> Result<()> {
    let mut o = Out::new();
    o.bytes(token, MAX_TOKEN)
        .map_err(|_| Error::InvalidArgument(format!("the token is longer than {MAX_TOKEN} bytes")))?;
    w.write_all(&o.0).map_err(|e| Error::from_io("sending the handshake", e))
}

pub fn read_client_hello(r: &mut impl Read) -> Result<Vec<u8>> {
    let mut i = In(r, "reading the client's handshake");
    i.magic()?;
    i.bytes(MAX_TOKEN, "token")
}

pub fn write_server_hello(w: &mut impl Write, hello: &ServerHello) -> Result<()> {
    let mut o = Out::new();
    match hello {
        ServerHello::Ok(r) => {
            o.u8(Status::Ok as u8);
            o.bytes(r.provider.as_bytes(), MAX_TEXT)?;
            o.u32(r.addr_format);
            o.bytes(&r.fabric_addr, MAX_ADDR)?;
            o.u64(r.size);
            o.u64(r.base);
            o.u64(r.key);
            o.u8(r.access);
        }
        ServerHello::Refused(status, msg) => {
            o.u8(*status as u8);
            // Cut at a character boundary, so the message stays UTF-8.
            let mut end = msg.len().min(MAX_TEXT);
            while !msg.is_char_boundary(end) {
                end -= 1;
            }
            o.bytes(&msg.as_bytes()[..end], MAX_TEXT)?;
        }
    }
    w.write_all(&o.0).map_err(|e| Error::from_io("sending the server's handshake", e))
}

pub fn read_server_hello(r: &mut impl Read) -> Result<ServerHello> {
    let mut i = In(r, "reading the server's handshake");
    i.magic()?;
    let status = i.u8()?;
    if status != Status::Ok as u8 {
        let msg = i.text(MAX_TEXT, "message")?;
        let status = match status {
            1 => Status::Denied,
            2 => Status::Busy,
            _ => Status::Error,
        };
        return Ok(ServerHello::Refused(status, msg));
    }
    let provider = i.text(MAX_TEXT, "provider name")?;
    let addr_format = i.u32()?;
    let fabric_addr = i.bytes(MAX_ADDR, "fabric address")?;
    let size = i.u64()?;
    let base = i.u64()?;
    let key = i.u64()?;
    let access = i.u8()?;
    Ok(ServerHello::Ok(RegionOffer { provider, addr_format, fabric_addr, size, base, key, access }))
}

/// Compares tokens in time independent of where they differ.
pub fn tokens_match(expected: &[u8], given: &[u8]) -> bool {
    if expected.len() != given.len() {
        return false;
    }
    expected.iter().zip(given).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_round_trips() {
        let offer = RegionOffer {
            provider: "tcp;ofi_rxm".into(),
            addr_format: 2,
            fabric_addr: vec![1, 2, 3, 4],
            size: 1 << 20,
            base: 0,
            key: 0xdead_beef,
            access: ACCESS_READ,
        };
        let mut buf = Vec::new();
        write_server_hello(&mut buf, &ServerHello::Ok(offer.clone())).unwrap();
        assert_eq!(read_server_hello(&mut buf.as_slice()).unwrap(), ServerHello::Ok(offer));

        let mut buf = Vec::new();
        write_client_hello(&mut buf, b"secret").unwrap();
        assert_eq!(read_client_hello(&mut buf.as_slice()).unwrap(), b"secret");
    }

    #[test]
    fn refuses_strangers_and_oversized_fields() {
        assert!(matches!(read_client_hello(&mut &b"GET / HTTP/1.1\r\n"[..]), Err(Error::Protocol(_))));
        let mut buf = MAGIC.to_vec();
        buf.push(VERSION);
        buf.extend_from_slice(&u16::MAX.to_le_bytes());
        assert!(matches!(read_client_hello(&mut buf.as_slice()), Err(Error::Protocol(_))));
        let mut short = MAGIC.to_vec();
        short.push(VERSION);
        assert!(matches!(read_client_hello(&mut short.as_slice()), Err(Error::Disconnected(_))));
    }

    #[test]
    fn text_fields_are_utf8_and_long_messages_are_cut_at_a_character() {
        // Found by the `wire` fuzz target: a provider name of invalid bytes
        // decoded lossily grew past its limit, and could not be written back.
        let mut buf = MAGIC.to_vec();
        buf.push(VERSION);
        buf.push(Status::Ok as u8);
        buf.extend_from_slice(&(1000u16).to_le_bytes());
        buf.extend(std::iter::repeat_n(0xffu8, 1000));
        let e = read_server_hello(&mut buf.as_slice()).unwrap_err();
        assert!(matches!(&e, Error::Protocol(m) if m.contains("provider name is not UTF-8")), "{e:?}");

        let long = "é".repeat(MAX_TEXT); // 2 bytes each
        let mut buf = Vec::new();
        write_server_hello(&mut buf, &ServerHello::Refused(Status::Denied, format!("x{long}"))).unwrap();
        match read_server_hello(&mut buf.as_slice()).unwrap() {
            ServerHello::Refused(Status::Denied, m) => {
                assert!(m.len() <= MAX_TEXT && m.len() >= MAX_TEXT - 1 && m.starts_with("xé"), "{}", m.len())
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn token_comparison() {
        assert!(tokens_match(b"abc", b"abc"));
        assert!(!tokens_match(b"abc", b"abd"));
        assert!(!tokens_match(b"abc", b"ab"));
        assert!(tokens_match(b"", b""));
    }
}
