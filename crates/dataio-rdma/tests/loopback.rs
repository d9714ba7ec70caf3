//! Server and client in one process, through the real libfabric (skipped,
//! with a message, where libfabric cannot be loaded).

use dataio_rdma::{fabric, Client, ConnectOptions, Error, Region, ServeOptions, Server};
use std::time::{Duration, Instant};

fn libfabric() -> bool {
    match fabric::library() {
        Ok(_) => true,
        Err(e) => {
            eprintln!("skipped: {e}");
            false
        }
    }
}

fn serve(size: usize, token: Option<&[u8]>) -> Server {
    let opts = ServeOptions {
        bind: "127.0.0.1:0".into(),
        token: token.map(<[u8]>::to_vec),
        timeout: Duration::from_secs(5),
        ..Default::default()
    };
    Server::start(opts, Region::anonymous(size).unwrap()).unwrap()
}

fn connect(server: &Server, chunk: usize, inflight: usize) -> Client {
    let opts = ConnectOptions {
        chunk_size: chunk,
        max_inflight: inflight,
        timeout: Duration::from_secs(5),
        ..Default::default()
    };
    Client::connect(&server.local_addr().to_string(), opts).unwrap()
}

#[test]
fn write_then_read_back_through_many_chunks() {
    if !libfabric() {
        return;
    }
    let server = serve(8 << 20, None);
    let client = connect(&server, 64 << 10, 8);
    let data: Vec<u8> = (0..(6 << 20) + 123).map(|i: usize| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    let t = client.write(&data, 1000).unwrap();
    assert_eq!(t.chunks, data.len().div_ceil(64 << 10));
    let mut back = vec![0u8; data.len()];
    client.read_into(&mut back, 1000).unwrap();
    assert!(back == data);
    // The server's memory holds the bytes too.
    let region = server.region();
    // SAFETY: the region is mapped while the server lives.
    let served = unsafe { std::slice::from_raw_parts(region.as_ptr().add(1000), data.len()) };
    assert!(served == &data[..]);
    client.close();
    server.close();
    assert_eq!(fabric::live_registrations(), 0);
}

#[test]
fn bounds_and_token() {
    if !libfabric() {
        return;
    }
    let server = serve(4096, Some(b"s3cret"));
    let bad = Client::connect(
        &server.local_addr().to_string(),
        ConnectOptions { token: Some(b"nope".to_vec()), ..Default::default() },
    );
    assert!(matches!(bad, Err(Error::AccessDenied(_))), "{:?}", bad.err());
    let none = Client::connect(&server.local_addr().to_string(), ConnectOptions::default());
    assert!(matches!(none, Err(Error::AccessDenied(_))));
    let client = Client::connect(
        &server.local_addr().to_string(),
        ConnectOptions { token: Some(b"s3cret".to_vec()), ..Default::default() },
    )
    .unwrap();
    let mut buf = vec![0u8; 100];
    assert!(matches!(client.read_into(&mut buf, 4000), Err(Error::OutOfRange { .. })));
    assert!(matches!(client.read_into(&mut buf, u64::MAX - 10), Err(Error::OutOfRange { .. })));
    client.read_into(&mut buf, 3996).unwrap();
}

#[test]
fn server_gone_mid_transfer_is_an_error_not_a_hang() {
    if !libfabric() {
        return;
    }
    let server = serve(64 << 20, None);
    let client = connect(&server, 4096, 2);
    let addr = server.local_addr();
    let closer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        server.close();
    });
    let started = Instant::now();
    let mut buf = vec![0u8; 64 << 20];
    let mut result = Ok(Default::default());
    for _ in 0..50 {
        result = client.read_into(&mut buf, 0).map(|t| t.bytes);
        if result.is_err() {
            break;
        }
    }
    closer.join().unwrap();
    let err = result.expect_err("reads kept succeeding after the server closed");
    assert!(started.elapsed() < Duration::from_secs(15), "took {:?}", started.elapsed());
    assert!(matches!(err, Error::Disconnected(_) | Error::Timeout(_) | Error::Fabric(_)), "{err:?} ({addr})");
    assert!(matches!(client.read_into(&mut buf[..10], 0), Err(Error::Disconnected(_))));
}
