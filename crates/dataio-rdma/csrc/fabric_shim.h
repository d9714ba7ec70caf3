/*
 * dataio-rdma's C shim over libfabric.
 *
 * libfabric exports only its setup functions (fi_getinfo, fi_fabric, ...);
 * everything else in its API (fi_domain, fi_endpoint, fi_mr_reg, fi_read,
 * fi_write, fi_cq_read, fi_close) is a static inline function in the headers
 * that calls through the ops tables of the fid structures. This file is
 * compiled against those headers, so the inline calls, the structure layouts
 * and the constants are exactly the ones of the API version it requests. The
 * library itself is never linked: dio_load() opens it with dlopen and binds
 * the setup functions with dlvsym at the symbol versions of these headers.
 *
 * Every function returns 0 (or a count) on success and a negative libfabric
 * error code on failure; functions that take `err` write a message there
 * naming the call that failed.
 */
#ifndef DATAIO_FABRIC_SHIM_H
#define DATAIO_FABRIC_SHIM_H

#include <stddef.h>
#include <stdint.h>

#define DIO_NAME_MAX 128

/* Built without libfabric's headers: every call answers -DIO_ENOHEADERS. */
#define DIO_ENOHEADERS 100001

/* What to ask fi_getinfo for. */
struct dio_hints {
    uint32_t api_version;   /* FI_VERSION(major, minor); 0: the headers' own */
    const char *prov_name;  /* exact provider name ("tcp;ofi_rxm"); NULL: any */
    const char *fabric_name;
    const char *domain_name;
    const char *node;       /* NULL: none */
    const char *service;    /* NULL: none */
    int source;             /* node/service name the local address (FI_SOURCE) */
    int rma;                /* ask for one-sided RMA (read, write, remote read/write) */
    int hmem;               /* ask for FI_HMEM (device memory registration) */
    int ep_rdm;             /* restrict to FI_EP_RDM */
};

/* One fi_info, flattened. */
struct dio_desc {
    char prov_name[DIO_NAME_MAX];
    char fabric_name[DIO_NAME_MAX];
    char domain_name[DIO_NAME_MAX];
    uint64_t caps;
    uint64_t mode;
    uint64_t mr_mode;
    uint64_t max_msg_size;
    uint64_t mr_key_size;
    uint64_t tx_size;
    uint32_t prov_version;
    uint32_t addr_format;
    int32_t ep_type;
    int32_t data_progress;
    int32_t control_progress;
    int32_t threading;
};

/* Capability bits and constants the Rust side needs, read from the headers. */
struct dio_consts {
    uint32_t header_version;
    uint64_t cap_rma, cap_read, cap_write, cap_remote_read, cap_remote_write, cap_hmem;
    uint64_t cap_msg, cap_tagged, cap_atomic;
    uint64_t mr_local, mr_raw, mr_virt_addr, mr_allocated, mr_prov_key, mr_endpoint, mr_hmem;
    uint64_t mode_context, mode_context2;
    int32_t ep_rdm, ep_msg, ep_dgram;
    int32_t progress_auto, progress_manual;
    uint32_t addr_sockaddr_in, addr_sockaddr_in6;
    int32_t hmem_system, hmem_cuda;
    int32_t eagain, eavail, enodata, enosys;
    uint64_t context_size; /* bytes of one operation context (struct fi_context2) */
};

struct dio_ep;  /* fabric, domain, address vector, completion queue, endpoint */
struct dio_mr;  /* one memory registration */

void dio_consts_get(struct dio_consts *out);

int dio_load(const char *path, char *err, size_t errlen);
const char *dio_loaded_path(void); /* the file dlopen resolved, or "" */
int dio_symbols_versioned(void);
uint32_t dio_runtime_version(void);
const char *dio_strerror(int err);

/* Up to `max` matches of `hints` into `out`; the total count in *count. */
int dio_getinfo(const struct dio_hints *hints, struct dio_desc *out, int max, int *count, char *err, size_t errlen);

/* Opens the first match of `hints`: fabric, domain, AV, CQ, RDM endpoint. */
int dio_open(const struct dio_hints *hints, struct dio_ep **out, struct dio_desc *desc, int *cq_waits, char *err, size_t errlen);
void dio_close(struct dio_ep *ep);
int dio_ep_shutdown(struct dio_ep *ep);

int dio_getname(struct dio_ep *ep, void *addr, size_t *len);
int dio_av_insert(struct dio_ep *ep, const void *addr, uint64_t *fi_addr, char *err, size_t errlen);

int dio_mr_reg(struct dio_ep *ep, void *buf, size_t len, uint64_t access, uint64_t requested_key, int32_t iface,
               int32_t device, struct dio_mr **out, char *err, size_t errlen);
uint64_t dio_mr_key(const struct dio_mr *mr);
void *dio_mr_desc(const struct dio_mr *mr);
int dio_mr_close(struct dio_mr *mr);

/* One-sided operations; `context` points to dio_consts.context_size bytes
 * that stay in place until the completion is reaped. */
int64_t dio_post_read(struct dio_ep *ep, void *buf, size_t len, void *desc, uint64_t peer, uint64_t raddr,
                      uint64_t key, void *context);
int64_t dio_post_write(struct dio_ep *ep, const void *buf, size_t len, void *desc, uint64_t peer, uint64_t raddr,
                       uint64_t key, void *context);

/* Reaps up to `max` completions into `contexts`; timeout_ms < 0: do not wait
 * (fi_cq_read), else fi_cq_sread. -FI_EAGAIN: nothing yet; -FI_EAVAIL: an
 * error completion waits, fetch it with dio_cq_readerr. */
int64_t dio_cq_reap(struct dio_ep *ep, void **contexts, size_t max, int timeout_ms);
int dio_cq_readerr(struct dio_ep *ep, void **context, int *err, int *prov_errno, char *msg, size_t msglen);

#endif
