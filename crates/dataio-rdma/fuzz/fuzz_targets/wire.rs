//! The handshake messages as the server parses a client's (what a stranger
//! on the network controls) and as the client parses the server's: typed
//! errors only, bounded allocations, and what parses writes back the same.
#![no_main]
use dataio_rdma::wire::{read_client_hello, read_server_hello, write_client_hello, write_server_hello, ServerHello};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&side, msg)) = data.split_first() else { return };
    let mut r = msg;
    if side & 1 == 0 {
        if let Ok(token) = read_client_hello(&mut r) {
            assert!(token.len() <= dataio_rdma::wire::MAX_TOKEN);
            let mut back = Vec::new();
            write_client_hello(&mut back, &token).unwrap();
            assert_eq!(&back[..], &msg[..back.len()], "client hello round trip");
        }
    } else if let Ok(hello) = read_server_hello(&mut r) {
        let mut back = Vec::new();
        write_server_hello(&mut back, &hello).unwrap();
        let again = read_server_hello(&mut back.as_slice()).unwrap();
        match (&hello, &again) {
            (ServerHello::Ok(a), ServerHello::Ok(b)) => assert_eq!(a, b),
            (ServerHello::Refused(s, _), ServerHello::Refused(t, _)) => assert_eq!(s, t),
            _ => panic!("server hello changed kind on a round trip"),
        }
    }
});
