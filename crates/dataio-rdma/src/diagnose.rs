//! `info()` and `diagnose()`: what libfabric offers on this host, and why
//! plain RMA and HMEM (GPUDirect) would or would not work, found by running
//! the real opens rather than guessing from names.

use crate::client::{Client, ConnectOptions};
use crate::error::Error;
use crate::fabric::{self, Endpoint, Library, Memory, ProviderInfo, Query};
use crate::region::Region;
use crate::server::{ServeOptions, Server};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// A CUDA allocation to try registering (from the Python side, which can
/// allocate one through torch).
#[derive(Debug, Clone, Copy)]
pub struct CudaProbe {
    pub ptr: u64,
    pub len: usize,
    pub device: i32,
}

fn library_json(lib: &Library) -> Value {
    json!({
        "loaded": true,
        "path": lib.path,
        "version": fabric::version_string(lib.runtime_version),
        "headers": fabric::version_string(lib.header_version),
        "api_requested": fabric::version_string(lib.api_version),
        "symbols": if lib.symbols_versioned { "versioned (dlvsym at the headers' ABI)" } else { "default (dlsym)" },
    })
}

pub fn provider_json(p: &ProviderInfo, lib: &Library) -> Value {
    let c = &lib.consts;
    json!({
        "name": p.provider,
        "fabric": p.fabric,
        "domain": p.domain,
        "version": fabric::version_string(p.prov_version),
        "ep_type": p.ep_type_name(c),
        "caps": p.cap_names(c),
        "mr_mode": p.mr_mode_names(c),
        "rma": p.rma(c),
        "hmem": p.hmem(c),
        "hardware": p.is_hardware(),
        "local_only": p.is_local_only(),
        "data_progress": p.progress_name(p.data_progress, c),
        "max_msg_size": p.max_msg_size,
        "mr_key_size": p.mr_key_size,
    })
}

fn describe(p: &ProviderInfo) -> String {
    let kind = if p.is_hardware() {
        "RDMA hardware"
    } else if p.is_local_only() {
        "shared memory, this host only"
    } else {
        "software fallback over the kernel's network stack, no RDMA hardware"
    };
    format!("{} on {} ({kind})", p.provider, p.domain)
}

fn fi_provider_env() -> Option<String> {
    std::env::var("FI_PROVIDER").ok()
}

/// The providers of this host that offer one-sided RMA on RDM endpoints.
pub fn info() -> Value {
    let lib = match fabric::library() {
        Ok(lib) => lib,
        Err(e) => {
            return json!({
                "available": false,
                "libfabric": {"loaded": false, "reason": e.to_string(), "tried": fabric::candidates()},
                "providers": [],
                "selected": null,
                "fi_provider": fi_provider_env(),
            })
        }
    };
    let (providers, error) = match fabric::getinfo(&Query::rma()) {
        Ok(list) => (list, None),
        Err(e) => (Vec::new(), Some(e.to_string())),
    };
    let selected = fabric::select(&Query::rma()).ok();
    json!({
        "available": providers.iter().any(ProviderInfo::is_hardware),
        "libfabric": library_json(lib),
        "providers": providers.iter().map(|p| provider_json(p, lib)).collect::<Vec<_>>(),
        "selected": selected.map(|p| p.provider),
        "error": error,
        "fi_provider": fi_provider_env(),
    })
}

/// Runs the real opens and says why each path works or not.
pub fn diagnose(cuda: Option<CudaProbe>, cuda_note: Option<&str>) -> Value {
    let mut summary: Vec<String> = Vec::new();
    let lib = match fabric::library() {
        Ok(lib) => lib,
        Err(e) => {
            summary.push(format!("libfabric: not loaded: {e}"));
            summary.push("plain RMA: no, libfabric is not loaded".into());
            summary.push("HMEM (GPUDirect): no, libfabric is not loaded".into());
            return json!({
                "available": false,
                "libfabric": {"loaded": false, "reason": e.to_string(), "tried": fabric::candidates()},
                "rma": {"ok": false, "reason": "libfabric is not loaded"},
                "hmem": {"ok": false, "reason": "libfabric is not loaded"},
                "providers": [],
                "summary": summary,
            });
        }
    };
    summary.push(format!(
        "libfabric {} loaded from {} (headers {}, API {} requested, setup symbols {})",
        fabric::version_string(lib.runtime_version),
        lib.path,
        fabric::version_string(lib.header_version),
        fabric::version_string(lib.api_version),
        if lib.symbols_versioned { "bound at the headers' ABI versions" } else { "bound at the library's defaults" }
    ));
    if let Some(v) = fi_provider_env() {
        summary.push(format!("FI_PROVIDER={v} restricts the providers libfabric loads"));
    }

    // Every provider, whatever it offers, to say why the others do not match.
    let everything = fabric::getinfo(&Query::default()).unwrap_or_default();
    let rma_matches = fabric::getinfo(&Query::rma()).unwrap_or_default();
    let mut names: Vec<&str> = everything.iter().map(|p| p.provider.as_str()).collect();
    names.sort();
    names.dedup();
    summary.push(format!("providers found: {}", if names.is_empty() { "none".to_string() } else { names.join(", ") }));
    for name in &names {
        if rma_matches.iter().any(|p| p.provider == *name) {
            continue;
        }
        let with_rma: Vec<&ProviderInfo> =
            everything.iter().filter(|p| p.provider == *name && p.rma(&lib.consts)).collect();
        let why = if with_rma.is_empty() {
            "offers no one-sided RMA (FI_RMA with remote read and write)".to_string()
        } else if with_rma.iter().all(|p| p.ep_type != lib.consts.ep_rdm) {
            let mut types: Vec<&str> = with_rma.iter().map(|p| p.ep_type_name(&lib.consts)).collect();
            types.dedup();
            format!("offers RMA only on {} endpoints; dataio-rdma uses reliable-datagram (FI_EP_RDM) endpoints, which utility providers such as ofi_rxm layer on top", types.join("/"))
        } else {
            "offers RMA on FI_EP_RDM, but not for dataio-rdma's hints (it asks for operation contexts and registration modes that dataio-rdma cannot supply)".to_string()
        };
        summary.push(format!("  {name}: not usable, {why}"));
    }

    let rma = rma_check(lib, &rma_matches, &mut summary);
    let hmem = hmem_check(lib, cuda, cuda_note, &mut summary);
    let available = rma_matches.iter().any(ProviderInfo::is_hardware);
    summary.push(if available {
        "available(): True (an RDMA hardware provider offers one-sided RMA)".to_string()
    } else {
        "available(): False (no RDMA hardware provider; the software providers above still work as slow fallbacks)"
            .to_string()
    });
    json!({
        "available": available,
        "libfabric": library_json(lib),
        "fi_provider": fi_provider_env(),
        "providers": rma_matches.iter().map(|p| provider_json(p, lib)).collect::<Vec<_>>(),
        "rma": rma,
        "hmem": hmem,
        "summary": summary,
    })
}

/// Plain RMA: select a provider, serve a 64 KiB region on this host, connect
/// to it, write and read back, through the same code as serve/connect.
fn rma_check(lib: &Library, matches: &[ProviderInfo], summary: &mut Vec<String>) -> Value {
    let selected = match fabric::select(&Query::rma()) {
        Ok(p) => p,
        Err(e) => {
            let reason = if matches.is_empty() {
                format!("no provider offers FI_RMA with FI_READ/FI_WRITE/FI_REMOTE_READ/FI_REMOTE_WRITE on an FI_EP_RDM endpoint ({e})")
            } else {
                e.to_string()
            };
            summary.push(format!("plain RMA: no, {reason}"));
            return json!({"ok": false, "reason": reason});
        }
    };
    let started = Instant::now();
    let outcome = loopback_transfer(&selected);
    let ms = started.elapsed().as_secs_f64() * 1e3;
    match outcome {
        Ok(()) => {
            summary.push(format!(
                "plain RMA: works with {}: opened fabric, domain, address vector, completion queue and endpoint, registered 64 KiB, and wrote and read it back through a server on this host ({ms:.0} ms)",
                describe(&selected)
            ));
            json!({"ok": true, "provider": provider_json(&selected, lib), "reason": null, "loopback_ms": ms})
        }
        Err(e) => {
            summary.push(format!("plain RMA: no, {} matches but the real open failed: {e}", describe(&selected)));
            json!({"ok": false, "provider": provider_json(&selected, lib), "reason": e.to_string()})
        }
    }
}

fn loopback_transfer(p: &ProviderInfo) -> Result<(), Error> {
    // A wildcard bind lets the provider pick its interface (a hardware one
    // may not answer on 127.0.0.1); a random token keeps others out of the
    // scratch region meanwhile.
    let token = fabric::random_u64().to_le_bytes().to_vec();
    let opts = ServeOptions {
        bind: "0.0.0.0:0".into(),
        provider: Some(p.provider.clone()),
        token: Some(token.clone()),
        timeout: Duration::from_secs(5),
        ..Default::default()
    };
    let server = Server::start(opts, Region::anonymous(64 << 10)?)?;
    let copts = ConnectOptions {
        provider: Some(p.provider.clone()),
        token: Some(token),
        timeout: Duration::from_secs(5),
        chunk_size: 16 << 10,
        max_inflight: 4,
        ..Default::default()
    };
    let client = Client::connect(&server.local_addr().to_string(), copts)?;
    let pattern: Vec<u8> = (0..64 << 10).map(|i: usize| (i * 131 % 251) as u8).collect();
    client.write(&pattern, 0)?;
    let mut back = vec![0u8; pattern.len()];
    client.read_into(&mut back, 0)?;
    client.close();
    server.close();
    if back != pattern {
        return Err(Error::Fabric("the bytes read back differ from the bytes written".into()));
    }
    Ok(())
}

fn hmem_check(lib: &Library, cuda: Option<CudaProbe>, cuda_note: Option<&str>, summary: &mut Vec<String>) -> Value {
    if lib.api_version < fabric::fi_version(1, 9) {
        let reason = format!("the API requested ({}) is older than 1.9", fabric::version_string(lib.api_version));
        summary.push(format!("HMEM (GPUDirect): no, {reason}"));
        return json!({"ok": false, "reason": reason});
    }
    let mut q = Query::rma();
    q.hmem = true;
    let matches = match fabric::getinfo(&q) {
        Ok(m) => m,
        Err(e) => {
            let reason = format!("fi_getinfo(FI_RMA | FI_HMEM) failed: {e}");
            summary.push(format!("HMEM (GPUDirect): no, {reason}"));
            return json!({"ok": false, "reason": reason});
        }
    };
    let Some(selected) = fabric::select(&q).ok() else {
        let mut local: Vec<&str> = matches.iter().filter(|p| p.is_local_only()).map(|p| p.provider.as_str()).collect();
        local.dedup();
        let also = if local.is_empty() {
            String::new()
        } else {
            format!(" ({} matched, but it only reaches processes on this host)", local.join(", "))
        };
        let reason = format!("fi_getinfo(FI_RMA | FI_HMEM, FI_MR_HMEM) matched no provider that reaches other hosts{also}: none of the network providers of this libfabric build offers device-memory registration here (that needs a provider built with CUDA support, such as efa, verbs or cxi, and the CUDA driver present at run time)");
        summary.push(format!("HMEM (GPUDirect): no, {reason}"));
        return json!({"ok": false, "reason": reason, "providers": []});
    };
    let names: Vec<Value> = matches.iter().map(|p| provider_json(p, lib)).collect();
    let Some(probe) = cuda else {
        let note = cuda_note.unwrap_or("no CUDA buffer was given to register");
        let reason = format!("{} offers FI_HMEM, but the registration was not attempted: {note}", describe(&selected));
        summary.push(format!("HMEM (GPUDirect): not verified, {reason}"));
        return json!({"ok": false, "reason": reason, "providers": names});
    };
    let result = Endpoint::open(&q, &selected).and_then(|ep| {
        let c = ep.consts();
        // SAFETY: the Python caller keeps the CUDA allocation alive for the
        // call; the registration is dropped before we return.
        unsafe {
            ep.register(
                probe.ptr as *mut u8,
                probe.len,
                c.cap_read | c.cap_write | c.cap_remote_read,
                Memory::Cuda(probe.device),
            )
        }
        .map(drop)
    });
    match result {
        Ok(()) => {
            summary.push(format!(
                "HMEM (GPUDirect): works with {}: registered {} bytes of CUDA device {} memory",
                describe(&selected),
                probe.len,
                probe.device
            ));
            json!({"ok": true, "reason": null, "providers": names})
        }
        Err(e) => {
            let reason = format!(
                "{} offers FI_HMEM, but registering CUDA device {} memory failed: {e}",
                describe(&selected),
                probe.device
            );
            summary.push(format!("HMEM (GPUDirect): no, {reason}"));
            json!({"ok": false, "reason": reason, "providers": names})
        }
    }
}
