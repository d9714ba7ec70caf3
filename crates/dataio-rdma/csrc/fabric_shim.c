/*
 * dataio-rdma's C shim over libfabric: see fabric_shim.h for the contract.
 *
 * Only the inline functions of libfabric's headers are called directly; the
 * exported setup functions are called through pointers that dio_load() binds
 * with dlvsym, so this object has no undefined fi_* symbol and never links
 * libfabric.
 */
#define _GNU_SOURCE
#include "fabric_shim.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef DIO_NO_HEADERS

/* Built without libfabric's headers: a stub that loads nothing. */
static void msg(char *err, size_t errlen) {
    if (err && errlen)
        snprintf(err, errlen, "dataio-rdma was built without libfabric's headers (install libfabric-dev and rebuild)");
}
void dio_consts_get(struct dio_consts *out) { memset(out, 0, sizeof(*out)); }
int dio_load(const char *path, char *err, size_t errlen) { (void)path; msg(err, errlen); return -DIO_ENOHEADERS; }
int dio_symbols_versioned(void) { return 0; }
const char *dio_loaded_path(void) { return ""; }
uint32_t dio_runtime_version(void) { return 0; }
const char *dio_strerror(int e) { (void)e; return "built without libfabric headers"; }
int dio_getinfo(const struct dio_hints *h, struct dio_desc *o, int m, int *c, char *err, size_t errlen) {
    (void)h; (void)o; (void)m; *c = 0; msg(err, errlen); return -DIO_ENOHEADERS;
}
int dio_open(const struct dio_hints *h, struct dio_ep **o, struct dio_desc *d, int *w, char *err, size_t errlen) {
    (void)h; (void)o; (void)d; (void)w; msg(err, errlen); return -DIO_ENOHEADERS;
}
void dio_close(struct dio_ep *ep) { (void)ep; }
int dio_ep_shutdown(struct dio_ep *ep) { (void)ep; return 0; }
int dio_getname(struct dio_ep *ep, void *a, size_t *l) { (void)ep; (void)a; (void)l; return -DIO_ENOHEADERS; }
int dio_av_insert(struct dio_ep *ep, const void *a, uint64_t *f, char *err, size_t errlen) {
    (void)ep; (void)a; (void)f; msg(err, errlen); return -DIO_ENOHEADERS;
}
int dio_mr_reg(struct dio_ep *ep, void *b, size_t l, uint64_t a, uint64_t k, int32_t i, int32_t d, struct dio_mr **o,
               char *err, size_t errlen) {
    (void)ep; (void)b; (void)l; (void)a; (void)k; (void)i; (void)d; (void)o; msg(err, errlen); return -DIO_ENOHEADERS;
}
uint64_t dio_mr_key(const struct dio_mr *mr) { (void)mr; return 0; }
void *dio_mr_desc(const struct dio_mr *mr) { (void)mr; return NULL; }
int dio_mr_close(struct dio_mr *mr) { (void)mr; return 0; }
int64_t dio_post_read(struct dio_ep *ep, void *b, size_t l, void *d, uint64_t p, uint64_t r, uint64_t k, void *c) {
    (void)ep; (void)b; (void)l; (void)d; (void)p; (void)r; (void)k; (void)c; return -DIO_ENOHEADERS;
}
int64_t dio_post_write(struct dio_ep *ep, const void *b, size_t l, void *d, uint64_t p, uint64_t r, uint64_t k,
                       void *c) {
    (void)ep; (void)b; (void)l; (void)d; (void)p; (void)r; (void)k; (void)c; return -DIO_ENOHEADERS;
}
int64_t dio_cq_reap(struct dio_ep *ep, void **c, size_t m, int t) { (void)ep; (void)c; (void)m; (void)t; return -DIO_ENOHEADERS; }
int dio_cq_readerr(struct dio_ep *ep, void **c, int *e, int *p, char *m, size_t l) {
    (void)ep; (void)c; (void)e; (void)p; (void)m; (void)l; return -DIO_ENOHEADERS;
}

#else

#include <dlfcn.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

/*
 * The symbol versions whose structure layouts these headers describe.
 * libfabric keeps old versions of fi_getinfo & co. for old binaries; binding
 * the version that matches our headers (rather than the library's newest)
 * keeps the layouts in agreement when the runtime library is newer.
 * Headers 1.5 to 1.17 describe ABI FABRIC_1.3 for the fi_info functions and
 * FABRIC_1.1 for fi_fabric; for newer headers we take the library's default.
 */
#if FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION) <= FI_VERSION(1, 17) && \
    FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION) >= FI_VERSION(1, 5)
#define DIO_SYMVER_INFO "FABRIC_1.3"
#define DIO_SYMVER_FABRIC "FABRIC_1.1"
#define DIO_SYMVER_BASE "FABRIC_1.0"
#define DIO_SYMVERS 1
#else
#define DIO_SYMVER_INFO NULL
#define DIO_SYMVER_FABRIC NULL
#define DIO_SYMVER_BASE NULL
#define DIO_SYMVERS 0
#endif

/* The exported setup functions, bound by dio_load(). */
static struct {
    void *handle;
    int versioned;
    int (*getinfo)(uint32_t, const char *, const char *, uint64_t, const struct fi_info *, struct fi_info **);
    void (*freeinfo)(struct fi_info *);
    struct fi_info *(*dupinfo)(const struct fi_info *);
    int (*fabric)(struct fi_fabric_attr *, struct fid_fabric **, void *);
    const char *(*strerror)(int);
    uint32_t (*version)(void);
} lib;

struct dio_ep {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
    int delivery_complete; /* 1: writes ask FI_DELIVERY_COMPLETE; 0: the provider refused it */
};

struct dio_mr {
    struct fid_mr *mr;
};

static void set_err(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static void call_err(char *err, size_t errlen, const char *call, int rc) {
    set_err(err, errlen, "%s failed: %s (%d)", call, dio_strerror(rc), rc);
}

void dio_consts_get(struct dio_consts *o) {
    memset(o, 0, sizeof(*o));
    o->header_version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
    o->cap_rma = FI_RMA;
    o->cap_read = FI_READ;
    o->cap_write = FI_WRITE;
    o->cap_remote_read = FI_REMOTE_READ;
    o->cap_remote_write = FI_REMOTE_WRITE;
    o->cap_hmem = FI_HMEM;
    o->cap_msg = FI_MSG;
    o->cap_tagged = FI_TAGGED;
    o->cap_atomic = FI_ATOMIC;
    o->mr_local = FI_MR_LOCAL;
    o->mr_raw = FI_MR_RAW;
    o->mr_virt_addr = FI_MR_VIRT_ADDR;
    o->mr_allocated = FI_MR_ALLOCATED;
    o->mr_prov_key = FI_MR_PROV_KEY;
    o->mr_endpoint = FI_MR_ENDPOINT;
    o->mr_hmem = FI_MR_HMEM;
    o->mode_context = FI_CONTEXT;
    o->mode_context2 = FI_CONTEXT2;
    o->ep_rdm = FI_EP_RDM;
    o->ep_msg = FI_EP_MSG;
    o->ep_dgram = FI_EP_DGRAM;
    o->progress_auto = FI_PROGRESS_AUTO;
    o->progress_manual = FI_PROGRESS_MANUAL;
    o->addr_sockaddr_in = FI_SOCKADDR_IN;
    o->addr_sockaddr_in6 = FI_SOCKADDR_IN6;
    o->hmem_system = FI_HMEM_SYSTEM;
    o->hmem_cuda = FI_HMEM_CUDA;
    o->eagain = FI_EAGAIN;
    o->eavail = FI_EAVAIL;
    o->enodata = FI_ENODATA;
    o->enosys = FI_ENOSYS;
    o->context_size = sizeof(struct fi_context2);
}

static void *bind_symbol(void *handle, const char *name, const char *version, int *versioned) {
    void *sym = NULL;
    if (version)
        sym = dlvsym(handle, name, version);
    if (sym)
        return sym;
    *versioned = 0;
    return dlsym(handle, name);
}

int dio_load(const char *path, char *err, size_t errlen) {
    if (lib.handle)
        return 0;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        set_err(err, errlen, "%s", why ? why : "dlopen failed");
        return -FI_ENOENT;
    }
    int versioned = DIO_SYMVERS;
    lib.getinfo = bind_symbol(h, "fi_getinfo", DIO_SYMVER_INFO, &versioned);
    lib.freeinfo = bind_symbol(h, "fi_freeinfo", DIO_SYMVER_INFO, &versioned);
    lib.dupinfo = bind_symbol(h, "fi_dupinfo", DIO_SYMVER_INFO, &versioned);
    lib.fabric = bind_symbol(h, "fi_fabric", DIO_SYMVER_FABRIC, &versioned);
    lib.strerror = bind_symbol(h, "fi_strerror", DIO_SYMVER_BASE, &versioned);
    lib.version = bind_symbol(h, "fi_version", DIO_SYMVER_BASE, &versioned);
    if (!lib.getinfo || !lib.freeinfo || !lib.dupinfo || !lib.fabric || !lib.strerror || !lib.version) {
        set_err(err, errlen, "%s does not export the libfabric setup functions (fi_getinfo, fi_fabric, ...)", path);
        dlclose(h);
        memset(&lib, 0, sizeof(lib));
        return -FI_ENOSYS;
    }
    lib.versioned = versioned;
    lib.handle = h;
    return 0;
}

int dio_symbols_versioned(void) { return lib.versioned; }

const char *dio_loaded_path(void) {
    Dl_info where;
    if (lib.getinfo && dladdr((void *)lib.getinfo, &where) && where.dli_fname)
        return where.dli_fname;
    return "";
}

uint32_t dio_runtime_version(void) { return lib.version ? lib.version() : 0; }

const char *dio_strerror(int e) {
    if (e < 0)
        e = -e;
    if (lib.strerror)
        return lib.strerror(e);
    return strerror(e);
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

/* fi_allocinfo() is an inline call of the exported fi_dupinfo(NULL). */
static struct fi_info *build_hints(const struct dio_hints *h) {
    struct fi_info *hints = lib.dupinfo(NULL);
    if (!hints)
        return NULL;
    if (h->rma)
        hints->caps = FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    if (h->hmem)
        hints->caps |= FI_HMEM;
    if (h->ep_rdm)
        hints->ep_attr->type = FI_EP_RDM;
    /* We can give every operation a context of fi_context2 size. */
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    /* The registration modes we handle: local registration, virtual
     * addressing, provider keys, binding to the endpoint. Not FI_MR_RAW. */
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
    if (h->hmem)
        hints->domain_attr->mr_mode |= FI_MR_HMEM;
    hints->fabric_attr->prov_name = dup_or_null(h->prov_name);
    hints->fabric_attr->name = dup_or_null(h->fabric_name);
    hints->domain_attr->name = dup_or_null(h->domain_name);
    return hints;
}

static int do_getinfo(const struct dio_hints *h, struct fi_info **out, char *err, size_t errlen) {
    if (!lib.handle) {
        set_err(err, errlen, "libfabric is not loaded");
        return -FI_ENOSYS;
    }
    struct fi_info *hints = build_hints(h);
    if (!hints) {
        set_err(err, errlen, "fi_dupinfo(NULL) failed: out of memory");
        return -FI_ENOMEM;
    }
    uint32_t version = h->api_version ? h->api_version : FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
    int rc = lib.getinfo(version, h->node, h->service, h->source ? FI_SOURCE : 0, hints, out);
    lib.freeinfo(hints);
    if (rc) {
        *out = NULL;
        call_err(err, errlen, "fi_getinfo", rc);
    }
    return rc;
}

static void copy_name(char *dst, const char *src) {
    snprintf(dst, DIO_NAME_MAX, "%s", src ? src : "");
}

static void describe(const struct fi_info *fi, struct dio_desc *d) {
    memset(d, 0, sizeof(*d));
    copy_name(d->prov_name, fi->fabric_attr->prov_name);
    copy_name(d->fabric_name, fi->fabric_attr->name);
    copy_name(d->domain_name, fi->domain_attr->name);
    d->caps = fi->caps;
    d->mode = fi->mode;
    d->mr_mode = (uint64_t)fi->domain_attr->mr_mode;
    d->max_msg_size = fi->ep_attr->max_msg_size;
    d->mr_key_size = fi->domain_attr->mr_key_size;
    d->tx_size = fi->tx_attr->size;
    d->prov_version = fi->fabric_attr->prov_version;
    d->addr_format = fi->addr_format;
    d->ep_type = fi->ep_attr->type;
    d->data_progress = fi->domain_attr->data_progress;
    d->control_progress = fi->domain_attr->control_progress;
    d->threading = fi->domain_attr->threading;
}

int dio_getinfo(const struct dio_hints *h, struct dio_desc *out, int max, int *count, char *err, size_t errlen) {
    struct fi_info *list = NULL;
    *count = 0;
    int rc = do_getinfo(h, &list, err, errlen);
    if (rc)
        return rc;
    int n = 0;
    for (struct fi_info *fi = list; fi; fi = fi->next, n++)
        if (n < max)
            describe(fi, &out[n]);
    *count = n;
    lib.freeinfo(list);
    return 0;
}

void dio_close(struct dio_ep *e) {
    if (!e)
        return;
    /* Children before parents: endpoint, then what it was bound to. */
    if (e->ep)
        fi_close(&e->ep->fid);
    if (e->cq)
        fi_close(&e->cq->fid);
    if (e->av)
        fi_close(&e->av->fid);
    if (e->domain)
        fi_close(&e->domain->fid);
    if (e->fabric)
        fi_close(&e->fabric->fid);
    if (e->info)
        lib.freeinfo(e->info);
    free(e);
}

int dio_ep_shutdown(struct dio_ep *e) {
    if (!e || !e->ep)
        return 0;
    int rc = fi_close(&e->ep->fid);
    e->ep = NULL;
    return rc;
}

int dio_open(const struct dio_hints *h, struct dio_ep **out, struct dio_desc *desc, int *cq_waits, char *err,
             size_t errlen) {
    struct fi_info *list = NULL;
    *out = NULL;
    int rc = do_getinfo(h, &list, err, errlen);
    if (rc)
        return rc;
    struct dio_ep *e = calloc(1, sizeof(*e));
    if (!e) {
        lib.freeinfo(list);
        set_err(err, errlen, "out of memory");
        return -FI_ENOMEM;
    }
    /* Keep the first match only. */
    e->info = lib.dupinfo(list);
    lib.freeinfo(list);
    if (!e->info) {
        free(e);
        set_err(err, errlen, "fi_dupinfo failed: out of memory");
        return -FI_ENOMEM;
    }
    describe(e->info, desc);

    rc = lib.fabric(e->info->fabric_attr, &e->fabric, NULL);
    if (rc) {
        call_err(err, errlen, "fi_fabric", rc);
        goto fail;
    }
    rc = fi_domain(e->fabric, e->info, &e->domain, NULL);
    if (rc) {
        call_err(err, errlen, "fi_domain", rc);
        goto fail;
    }
    struct fi_av_attr av_attr = {0};
    av_attr.type = e->info->domain_attr->av_type != FI_AV_UNSPEC ? e->info->domain_attr->av_type : FI_AV_TABLE;
    av_attr.count = 64;
    rc = fi_av_open(e->domain, &av_attr, &e->av, NULL);
    if (rc) {
        call_err(err, errlen, "fi_av_open", rc);
        goto fail;
    }
    /* A completion queue that can block (fi_cq_sread) where the provider
     * offers a wait object; a polled one otherwise. */
    struct fi_cq_attr cq_attr = {0};
    cq_attr.format = FI_CQ_FORMAT_CONTEXT;
    cq_attr.wait_obj = FI_WAIT_UNSPEC;
    cq_attr.size = e->info->tx_attr->size > 0 ? e->info->tx_attr->size : 1024;
    *cq_waits = 1;
    rc = fi_cq_open(e->domain, &cq_attr, &e->cq, NULL);
    if (rc) {
        cq_attr.wait_obj = FI_WAIT_NONE;
        *cq_waits = 0;
        rc = fi_cq_open(e->domain, &cq_attr, &e->cq, NULL);
    }
    if (rc) {
        call_err(err, errlen, "fi_cq_open", rc);
        goto fail;
    }
    rc = fi_endpoint(e->domain, e->info, &e->ep, NULL);
    if (rc) {
        call_err(err, errlen, "fi_endpoint", rc);
        goto fail;
    }
    rc = fi_ep_bind(e->ep, &e->av->fid, 0);
    if (rc) {
        call_err(err, errlen, "fi_ep_bind(av)", rc);
        goto fail;
    }
    rc = fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV);
    if (rc) {
        call_err(err, errlen, "fi_ep_bind(cq)", rc);
        goto fail;
    }
    rc = fi_enable(e->ep);
    if (rc) {
        call_err(err, errlen, "fi_enable", rc);
        goto fail;
    }
    e->delivery_complete = 1;
    *out = e;
    return 0;
fail:
    dio_close(e);
    return rc;
}

int dio_getname(struct dio_ep *e, void *addr, size_t *len) {
    if (!e->ep)
        return -FI_EINVAL;
    return fi_getname(&e->ep->fid, addr, len);
}

int dio_av_insert(struct dio_ep *e, const void *addr, uint64_t *fi_addr, char *err, size_t errlen) {
    fi_addr_t a = FI_ADDR_NOTAVAIL;
    int rc = fi_av_insert(e->av, addr, 1, &a, 0, NULL);
    if (rc != 1) {
        int code = rc < 0 ? rc : -FI_EADDRNOTAVAIL;
        call_err(err, errlen, "fi_av_insert", code);
        return code;
    }
    *fi_addr = a;
    return 0;
}

int dio_mr_reg(struct dio_ep *e, void *buf, size_t len, uint64_t access, uint64_t requested_key, int32_t iface,
               int32_t device, struct dio_mr **out, char *err, size_t errlen) {
    *out = NULL;
    struct dio_mr *m = calloc(1, sizeof(*m));
    if (!m) {
        set_err(err, errlen, "out of memory");
        return -FI_ENOMEM;
    }
    struct iovec iov = {.iov_base = buf, .iov_len = len};
    struct fi_mr_attr attr = {0};
    attr.mr_iov = &iov;
    attr.iov_count = 1;
    attr.access = access;
    attr.requested_key = requested_key;
    attr.iface = (enum fi_hmem_iface)iface;
    if (iface == FI_HMEM_CUDA)
        attr.device.cuda = device;
    int rc = fi_mr_regattr(e->domain, &attr, 0, &m->mr);
    if (rc) {
        free(m);
        call_err(err, errlen, "fi_mr_regattr", rc);
        return rc;
    }
    if (e->info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
        rc = fi_mr_bind(m->mr, &e->ep->fid, 0);
        if (!rc)
            rc = fi_mr_enable(m->mr);
        if (rc) {
            fi_close(&m->mr->fid);
            free(m);
            call_err(err, errlen, "fi_mr_bind/fi_mr_enable", rc);
            return rc;
        }
    }
    *out = m;
    return 0;
}

uint64_t dio_mr_key(const struct dio_mr *m) { return fi_mr_key(m->mr); }

void *dio_mr_desc(const struct dio_mr *m) { return fi_mr_desc(m->mr); }

int dio_mr_close(struct dio_mr *m) {
    if (!m)
        return 0;
    int rc = fi_close(&m->mr->fid);
    free(m);
    return rc;
}

int64_t dio_post_read(struct dio_ep *e, void *buf, size_t len, void *desc, uint64_t peer, uint64_t raddr,
                      uint64_t key, void *context) {
    if (!e->ep)
        return -FI_ENOTCONN;
    return fi_read(e->ep, buf, len, desc, peer, raddr, key, context);
}

int64_t dio_post_write(struct dio_ep *e, const void *buf, size_t len, void *desc, uint64_t peer, uint64_t raddr,
                       uint64_t key, void *context) {
    if (!e->ep)
        return -FI_ENOTCONN;
    if (e->delivery_complete) {
        /* Complete only once the data is placed in the target's memory, so a
         * write that returned is visible to the server. */
        struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
        struct fi_rma_iov rma = {.addr = raddr, .len = len, .key = key};
        struct fi_msg_rma msg = {0};
        msg.msg_iov = &iov;
        msg.desc = &desc;
        msg.iov_count = 1;
        msg.addr = peer;
        msg.rma_iov = &rma;
        msg.rma_iov_count = 1;
        msg.context = context;
        ssize_t rc = fi_writemsg(e->ep, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE);
        if (rc != -FI_EBADFLAGS && rc != -FI_ENOSYS && rc != -FI_EOPNOTSUPP)
            return rc;
        e->delivery_complete = 0;
    }
    return fi_write(e->ep, buf, len, desc, peer, raddr, key, context);
}

int64_t dio_cq_reap(struct dio_ep *e, void **contexts, size_t max, int timeout_ms) {
    struct fi_cq_entry entries[64];
    if (max > 64)
        max = 64;
    ssize_t n = timeout_ms < 0 ? fi_cq_read(e->cq, entries, max) : fi_cq_sread(e->cq, entries, max, NULL, timeout_ms);
    for (ssize_t i = 0; i < n; i++)
        contexts[i] = entries[i].op_context;
    return n;
}

int dio_cq_readerr(struct dio_ep *e, void **context, int *err, int *prov_errno, char *msg, size_t msglen) {
    struct fi_cq_err_entry entry;
    memset(&entry, 0, sizeof(entry));
    ssize_t rc = fi_cq_readerr(e->cq, &entry, 0);
    if (rc < 0)
        return (int)rc;
    *context = entry.op_context;
    *err = entry.err;
    *prov_errno = entry.prov_errno;
    char buf[256] = {0};
    const char *detail = fi_cq_strerror(e->cq, entry.prov_errno, entry.err_data, buf, sizeof(buf));
    set_err(msg, msglen, "%s%s%s", dio_strerror(entry.err), detail && *detail ? ": " : "", detail ? detail : "");
    return 0;
}

#endif
