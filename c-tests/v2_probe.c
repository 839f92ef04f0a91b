/*
 * What libucp reads from libuct, printed so that two libraries can be
 * compared line by line (tests/v2-probe.sh runs it on the C original and
 * on ours and diffs the outputs):
 *
 *   for every md: its attributes (flags, memory types, rkey size, reg_cost);
 *   (not uct_md_mem_query: the original has it on none of these mds and
 *   crashes on a NULL slot; ours answers UCS_ERR_UNSUPPORTED)
 *   for every transport resource: the interface attributes libucp's
 *   selection uses (latency, bandwidth, overhead, priority, address
 *   lengths, cap flags, max sizes), then uct_iface_estimate_perf for every
 *   operation the interface supports;
 *   for mds that register memory: uct_md_mem_reg, uct_md_mkey_pack_v2 (the
 *   packed key's size), uct_md_mem_dereg_v2;
 *   uct_config_modify of a key the table does not own (libucp tries every
 *   UCX_* key it caches on every config): must fail and change nothing.
 *
 * Debian does not ship uct/api/v2/uct_v2.h; the v2 types are declared here
 * with the 1.13.1 layouts (checked against tests/data/ucx-1.13.1-layouts.tsv
 * by the asserts below).  Interfaces that need a peer (tcp on a device
 * without an address, ...) are skipped with a line saying so, on both
 * libraries alike.  Exit 0 when everything could be printed, 1 otherwise.
 */
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- v2 declarations (uct/api/v2/uct_v2.h of UCX 1.13.1) ---- */
typedef enum {
    P_OP_AM_SHORT, P_OP_AM_BCOPY, P_OP_AM_ZCOPY, P_OP_PUT_SHORT, P_OP_PUT_BCOPY, P_OP_PUT_ZCOPY,
    P_OP_GET_SHORT, P_OP_GET_BCOPY, P_OP_GET_ZCOPY, P_OP_EAGER_SHORT, P_OP_EAGER_BCOPY,
    P_OP_EAGER_ZCOPY, P_OP_RNDV_ZCOPY, P_OP_ATOMIC_POST, P_OP_ATOMIC_FETCH, P_OP_LAST
} probe_ep_op_t;

typedef struct {
    uint64_t            field_mask;
    probe_ep_op_t       operation;
    ucs_memory_type_t   local_memory_type;
    ucs_memory_type_t   remote_memory_type;
    ucs_sys_device_t    local_sys_device;
    ucs_sys_device_t    remote_sys_device;
    double              send_pre_overhead;
    double              send_post_overhead;
    double              recv_overhead;
    uct_ppn_bandwidth_t bandwidth;
    ucs_linear_func_t   latency;
    size_t              max_inflight_eps;
} probe_perf_attr_t;

#define PERF_OPERATION          (1ul << 0)
#define PERF_LOCAL_MEMORY_TYPE  (1ul << 1)
#define PERF_REMOTE_MEMORY_TYPE (1ul << 2)
#define PERF_SEND_PRE_OVERHEAD  (1ul << 5)
#define PERF_SEND_POST_OVERHEAD (1ul << 6)
#define PERF_RECV_OVERHEAD      (1ul << 7)
#define PERF_BANDWIDTH          (1ul << 8)
#define PERF_LATENCY            (1ul << 9)
#define PERF_MAX_INFLIGHT_EPS   (1ul << 10)

typedef struct {
    uint64_t field_mask;
    unsigned flags;
} probe_mkey_pack_params_t;

typedef struct {
    uint64_t          field_mask;
    unsigned          flags;
    uct_mem_h         memh;
    uct_completion_t *comp;
} probe_mem_dereg_params_t;

#define DEREG_FIELD_MEMH (1ul << 0)

ucs_status_t uct_iface_estimate_perf(uct_iface_h iface, probe_perf_attr_t *perf_attr);
#if UCT_VERNO_MINOR >= 16
/* UCX 1.16 added the range of the memory to pack a key for. */
ucs_status_t uct_md_mkey_pack_v2(uct_md_h md, uct_mem_h memh, void *address, size_t length,
                                 const probe_mkey_pack_params_t *params, void *rkey_buffer);
#define MKEY_PACK_V2(_md, _memh, _addr, _len, _params, _buf) \
    uct_md_mkey_pack_v2(_md, _memh, _addr, _len, _params, _buf)
#else
ucs_status_t uct_md_mkey_pack_v2(uct_md_h md, uct_mem_h memh, const probe_mkey_pack_params_t *params,
                                 void *rkey_buffer);
#define MKEY_PACK_V2(_md, _memh, _addr, _len, _params, _buf) \
    uct_md_mkey_pack_v2(_md, _memh, _params, _buf)
#endif
ucs_status_t uct_md_mem_dereg_v2(uct_md_h md, const probe_mem_dereg_params_t *params);

_Static_assert(sizeof(probe_perf_attr_t) == 88, "uct_perf_attr_t size");
_Static_assert(offsetof(probe_perf_attr_t, send_pre_overhead) == 24, "send_pre_overhead");
_Static_assert(offsetof(probe_perf_attr_t, bandwidth) == 48, "bandwidth");
_Static_assert(offsetof(probe_perf_attr_t, latency) == 64, "latency");
_Static_assert(offsetof(probe_perf_attr_t, max_inflight_eps) == 80, "max_inflight_eps");
_Static_assert(sizeof(probe_mkey_pack_params_t) == 16, "uct_md_mkey_pack_params_t size");
_Static_assert(sizeof(probe_mem_dereg_params_t) == 32, "uct_md_mem_dereg_params_t size");
_Static_assert(offsetof(probe_mem_dereg_params_t, memh) == 16, "dereg memh");

static int g_failed;

#define CHECK(_cond, ...) \
    do { if (!(_cond)) { printf("  FAIL "); printf(__VA_ARGS__); printf("\n"); g_failed = 1; } } while (0)

/* Doubles are printed with 6 significant digits: both libraries compute
 * them from the same settings, so they must agree exactly at that
 * precision. */
static void print_perf(uct_iface_h iface, uint64_t cap_flags)
{
    static const struct { probe_ep_op_t op; const char *name; uint64_t flag; } ops[] = {
        {P_OP_AM_SHORT, "am_short", UCT_IFACE_FLAG_AM_SHORT},
        {P_OP_AM_BCOPY, "am_bcopy", UCT_IFACE_FLAG_AM_BCOPY},
        {P_OP_AM_ZCOPY, "am_zcopy", UCT_IFACE_FLAG_AM_ZCOPY},
        {P_OP_PUT_SHORT, "put_short", UCT_IFACE_FLAG_PUT_SHORT},
        {P_OP_PUT_BCOPY, "put_bcopy", UCT_IFACE_FLAG_PUT_BCOPY},
        {P_OP_PUT_ZCOPY, "put_zcopy", UCT_IFACE_FLAG_PUT_ZCOPY},
        {P_OP_GET_SHORT, "get_short", UCT_IFACE_FLAG_GET_SHORT},
        {P_OP_GET_BCOPY, "get_bcopy", UCT_IFACE_FLAG_GET_BCOPY},
        {P_OP_GET_ZCOPY, "get_zcopy", UCT_IFACE_FLAG_GET_ZCOPY},
        {P_OP_ATOMIC_POST, "atomic_post", UCT_IFACE_FLAG_ATOMIC_DEVICE},
        {P_OP_ATOMIC_FETCH, "atomic_fetch", UCT_IFACE_FLAG_ATOMIC_DEVICE},
    };
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        probe_perf_attr_t p;
        ucs_status_t s;
        if (!(cap_flags & ops[i].flag)) continue;
        memset(&p, 0, sizeof(p));
        p.field_mask = PERF_OPERATION | PERF_LOCAL_MEMORY_TYPE | PERF_REMOTE_MEMORY_TYPE |
                       PERF_SEND_PRE_OVERHEAD | PERF_SEND_POST_OVERHEAD | PERF_RECV_OVERHEAD |
                       PERF_BANDWIDTH | PERF_LATENCY | PERF_MAX_INFLIGHT_EPS;
        p.operation          = ops[i].op;
        p.local_memory_type  = UCS_MEMORY_TYPE_HOST;
        p.remote_memory_type = UCS_MEMORY_TYPE_HOST;
        s = uct_iface_estimate_perf(iface, &p);
        if (s != UCS_OK) {
            printf("    perf %-12s status %s\n", ops[i].name, ucs_status_string(s));
            continue;
        }
        printf("    perf %-12s pre %.6g post %.6g recv %.6g bw %.6g/%.6g lat %.6g+%.6g*n inflight %zu\n",
               ops[i].name, p.send_pre_overhead, p.send_post_overhead, p.recv_overhead,
               p.bandwidth.dedicated, p.bandwidth.shared, p.latency.c, p.latency.m, p.max_inflight_eps);
    }
}

static void probe_iface(uct_md_h md, uct_worker_h worker, const uct_tl_resource_desc_t *r)
{
    uct_iface_config_t *cfg;
    uct_iface_params_t params;
    uct_iface_attr_t a;
    uct_iface_h iface;
    ucs_status_t s;

    printf("  iface %s/%s\n", r->tl_name, r->dev_name);
    if (uct_md_iface_config_read(md, r->tl_name, NULL, NULL, &cfg) != UCS_OK) {
        printf("    config: cannot read\n");
        return;
    }
    /* a key the table does not own: must fail, and change nothing */
    s = uct_config_modify(cfg, "PROBE_NO_SUCH_KEY", "1");
    CHECK(s != UCS_OK, "uct_config_modify of an unknown key returned OK");
    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = r->tl_name;
    params.mode.device.dev_name = r->dev_name;
    s = uct_iface_open(md, worker, &params, cfg, &iface);
    uct_config_release(cfg);
    if (s != UCS_OK) {
        printf("    open: %s\n", ucs_status_string(s));
        return;
    }
    memset(&a, 0, sizeof(a));
    CHECK(uct_iface_query(iface, &a) == UCS_OK, "uct_iface_query");
    printf("    flags %#lx event_flags %#lx priority %u\n", (unsigned long)a.cap.flags,
           (unsigned long)a.cap.event_flags, a.priority);
    printf("    addr dev %zu iface %zu ep %zu max_conn_priv %zu\n", a.device_addr_len, a.iface_addr_len,
           a.ep_addr_len, a.max_conn_priv);
    printf("    overhead %.6g latency %.6g+%.6g*n bw %.6g/%.6g\n", a.overhead, a.latency.c, a.latency.m,
           a.bandwidth.dedicated, a.bandwidth.shared);
    printf("    am short %zu bcopy %zu zcopy %zu hdr %zu iov %zu; put short %zu bcopy %zu zcopy %zu; "
           "get bcopy %zu zcopy %zu\n", a.cap.am.max_short, a.cap.am.max_bcopy, a.cap.am.max_zcopy,
           a.cap.am.max_hdr, a.cap.am.max_iov, a.cap.put.max_short, a.cap.put.max_bcopy, a.cap.put.max_zcopy,
           a.cap.get.max_bcopy, a.cap.get.max_zcopy);
    print_perf(iface, a.cap.flags);
    uct_iface_close(iface);
}

static void probe_md(uct_component_h comp, const char *md_name, uct_worker_h worker)
{
    uct_md_config_t *cfg;
    uct_md_attr_t a;
    uct_md_h md;
    uct_tl_resource_desc_t *res;
    unsigned nres;
    void *buf;

    printf("md %s\n", md_name);
    if (uct_md_config_read(comp, NULL, NULL, &cfg) != UCS_OK) {
        printf("  config: cannot read\n");
        g_failed = 1;
        return;
    }
    if (uct_md_open(comp, md_name, cfg, &md) != UCS_OK) {
        uct_config_release(cfg);
        printf("  open failed\n");
        g_failed = 1;
        return;
    }
    uct_config_release(cfg);
    CHECK(uct_md_query(md, &a) == UCS_OK, "uct_md_query");
    printf("  flags %#lx reg_mem %#lx alloc_mem %#lx access_mem %#lx detect_mem %#lx rkey %zu\n",
           (unsigned long)a.cap.flags, (unsigned long)a.cap.reg_mem_types,
           (unsigned long)a.cap.alloc_mem_types, (unsigned long)a.cap.access_mem_types,
           (unsigned long)a.cap.detect_mem_types, a.rkey_packed_size);
    if (a.cap.flags & UCT_MD_FLAG_REG) {
        printf("  reg_cost %.6g+%.6g*n\n", a.reg_cost.c, a.reg_cost.m);
    }

    buf = aligned_alloc(4096, 65536);
    memset(buf, 1, 65536);
    if (a.cap.flags & UCT_MD_FLAG_REG) {
        uct_mem_h memh;
        ucs_status_t s = uct_md_mem_reg(md, buf, 65536, UCT_MD_MEM_ACCESS_ALL, &memh);
        if (s == UCS_OK) {
            probe_mkey_pack_params_t pp = {0};
            probe_mem_dereg_params_t dp = {0};
            unsigned char *rkey = calloc(1, a.rkey_packed_size + 1);
            s = MKEY_PACK_V2(md, memh, buf, 65536, &pp, rkey);
            printf("  mkey_pack_v2: %s\n", ucs_status_string(s));
            free(rkey);
            dp.field_mask = DEREG_FIELD_MEMH;
            dp.memh       = memh;
            s = uct_md_mem_dereg_v2(md, &dp);
            printf("  mem_dereg_v2: %s\n", ucs_status_string(s));
        } else {
            printf("  mem_reg: %s\n", ucs_status_string(s));
        }
    }
    free(buf);

    if (uct_md_query_tl_resources(md, &res, &nres) == UCS_OK) {
        for (unsigned i = 0; i < nres; i++) {
            probe_iface(md, worker, &res[i]);
        }
        uct_release_tl_resource_list(res);
    }
    uct_md_close(md);
}

int main(void)
{
    uct_component_h *comps;
    unsigned ncomps;
    ucs_async_context_t *async;
    uct_worker_h worker;

    setvbuf(stdout, NULL, _IONBF, 0);
    if (ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async) != UCS_OK) return 1;
    if (uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker) != UCS_OK) return 1;
    if (uct_query_components(&comps, &ncomps) != UCS_OK) return 1;
    for (unsigned c = 0; c < ncomps; c++) {
        uct_component_attr_t ca;
        memset(&ca, 0, sizeof(ca));
        ca.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        if (uct_component_query(comps[c], &ca) != UCS_OK) continue;
        ca.md_resources = calloc(ca.md_resource_count + 1, sizeof(*ca.md_resources));
        ca.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        if (uct_component_query(comps[c], &ca) == UCS_OK) {
            for (unsigned m = 0; m < ca.md_resource_count; m++) {
                probe_md(comps[c], ca.md_resources[m].md_name, worker);
            }
        }
        free(ca.md_resources);
    }
    uct_release_component_list(comps);
    uct_worker_destroy(worker);
    ucs_async_context_destroy(async);
    return g_failed;
}
