//! Declarations of the C shim (csrc/fabric_shim.h). Only this module and
//! `fabric.rs` call them.

use std::os::raw::{c_char, c_int, c_void};

pub const NAME_MAX: usize = 128;

#[repr(C)]
pub struct DioHints {
    pub api_version: u32,
    pub prov_name: *const c_char,
    pub fabric_name: *const c_char,
    pub domain_name: *const c_char,
    pub node: *const c_char,
    pub service: *const c_char,
    pub source: c_int,
    pub rma: c_int,
    pub hmem: c_int,
    pub ep_rdm: c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DioDesc {
    pub prov_name: [c_char; NAME_MAX],
    pub fabric_name: [c_char; NAME_MAX],
    pub domain_name: [c_char; NAME_MAX],
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

impl Default for DioDesc {
    fn default() -> Self {
        // SAFETY: plain integers and byte arrays; all-zero is a valid value.
        unsafe { std::mem::zeroed() }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct DioConsts {
    pub header_version: u32,
    pub cap_rma: u64,
    pub cap_read: u64,
    pub cap_write: u64,
    pub cap_remote_read: u64,
    pub cap_remote_write: u64,
    pub cap_hmem: u64,
    pub cap_msg: u64,
    pub cap_tagged: u64,
    pub cap_atomic: u64,
    pub mr_local: u64,
    pub mr_raw: u64,
    pub mr_virt_addr: u64,
    pub mr_allocated: u64,
    pub mr_prov_key: u64,
    pub mr_endpoint: u64,
    pub mr_hmem: u64,
    pub mode_context: u64,
    pub mode_context2: u64,
    pub ep_rdm: i32,
    pub ep_msg: i32,
    pub ep_dgram: i32,
    pub progress_auto: i32,
    pub progress_manual: i32,
    pub addr_sockaddr_in: u32,
    pub addr_sockaddr_in6: u32,
    pub hmem_system: i32,
    pub hmem_cuda: i32,
    pub eagain: i32,
    pub eavail: i32,
    pub enodata: i32,
    pub enosys: i32,
    pub context_size: u64,
}

/// Opaque handles of the shim.
#[repr(C)]
pub struct DioEp {
    _private: [u8; 0],
}
#[repr(C)]
pub struct DioMr {
    _private: [u8; 0],
}

extern "C" {
    pub fn dio_consts_get(out: *mut DioConsts);
    pub fn dio_load(path: *const c_char, err: *mut c_char, errlen: usize) -> c_int;
    pub fn dio_loaded_path() -> *const c_char;
    pub fn dio_symbols_versioned() -> c_int;
    pub fn dio_runtime_version() -> u32;
    pub fn dio_strerror(err: c_int) -> *const c_char;
    pub fn dio_getinfo(
        hints: *const DioHints,
        out: *mut DioDesc,
        max: c_int,
        count: *mut c_int,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn dio_open(
        hints: *const DioHints,
        out: *mut *mut DioEp,
        desc: *mut DioDesc,
        cq_waits: *mut c_int,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn dio_close(ep: *mut DioEp);
    pub fn dio_ep_shutdown(ep: *mut DioEp) -> c_int;
    pub fn dio_getname(ep: *mut DioEp, addr: *mut c_void, len: *mut usize) -> c_int;
    pub fn dio_av_insert(
        ep: *mut DioEp,
        addr: *const c_void,
        fi_addr: *mut u64,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn dio_mr_reg(
        ep: *mut DioEp,
        buf: *mut c_void,
        len: usize,
        access: u64,
        requested_key: u64,
        iface: i32,
        device: i32,
        out: *mut *mut DioMr,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn dio_mr_key(mr: *const DioMr) -> u64;
    pub fn dio_mr_desc(mr: *const DioMr) -> *mut c_void;
    pub fn dio_mr_close(mr: *mut DioMr) -> c_int;
    pub fn dio_post_read(
        ep: *mut DioEp,
        buf: *mut c_void,
        len: usize,
        desc: *mut c_void,
        peer: u64,
        raddr: u64,
        key: u64,
        ctx: *mut c_void,
    ) -> i64;
    pub fn dio_post_write(
        ep: *mut DioEp,
        buf: *const c_void,
        len: usize,
        desc: *mut c_void,
        peer: u64,
        raddr: u64,
        key: u64,
        ctx: *mut c_void,
    ) -> i64;
    pub fn dio_cq_reap(ep: *mut DioEp, contexts: *mut *mut c_void, max: usize, timeout_ms: c_int) -> i64;
    pub fn dio_cq_readerr(
        ep: *mut DioEp,
        context: *mut *mut c_void,
        err: *mut c_int,
        prov_errno: *mut c_int,
        msg: *mut c_char,
        msglen: usize,
    ) -> c_int;
}
