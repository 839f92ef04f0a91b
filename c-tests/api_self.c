/*
 * api_self.c - API probe for the "self" transport of libuct.so.0.
 *
 * Built with gcc against the system UCX 1.13.1 headers and linked with
 * -luct -lucs, so it runs unchanged on the C original and on uct-rs.
 * Every result line starts with "api: " and holds no pointer, pid or other
 * run-dependent value, so the output of two libraries can be compared with
 * diff.  The exit status is 0 only when every check passed.
 *
 * With UCT_PROBE_SHOW_PROVIDER=1 in the environment, the probe also prints
 * "provider: <path>", the file that provides uct_iface_open in this process
 * (used by the LD_PRELOAD test), and "mapped: <path>" for every mapped file
 * whose name contains "libuct".
 */
#define _GNU_SOURCE
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>
#include <ucs/datastruct/callbackq.h>

/* The self transport's one device: "memory0" up to UCX 1.13, "memory" from
 * 1.14 on (UCX names a single self device without a number). */
#if UCT_VERNO_MINOR >= 14
#define SELF_DEV "memory"
#else
#define SELF_DEV "memory0"
#endif

/* uct_config_modify names a field with its table's prefix from UCX 1.17 on
 * (libucs matches the name against "SELF_SEG_SIZE"), without it before. */
#if UCT_VERNO_MINOR >= 17
#define SEG_SIZE_KEY "SELF_SEG_SIZE"
#else
#define SEG_SIZE_KEY "SEG_SIZE"
#endif

#include <dlfcn.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_failures;
static int g_checks;

#define INFO(...) \
    do { printf("api: info "); printf(__VA_ARGS__); printf("\n"); } while (0)

/* Record one check; the detail text is printed only when the check fails. */
static int check(int cond, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int check(int cond, const char *name, const char *fmt, ...)
{
    va_list ap;

    ++g_checks;
    if (cond) {
        printf("api: ok   %s\n", name);
    } else {
        ++g_failures;
        printf("api: FAIL %s: ", name);
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        printf("\n");
    }
    fflush(stdout);
    return cond;
}

static const char *st(ucs_status_t s)
{
    return ucs_status_string(s);
}

#define CHECK_STATUS(_expr, _want, _name) \
    ({ ucs_status_t _s = (_expr); \
       check(_s == (_want), _name, "got %d (%s), want %d (%s)", (int)_s, \
             st(_s), (int)(_want), st(_want)); \
       _s; })

/* ---------------------------------------------------------------------- */
/* Active message receive side                                             */

typedef struct {
    unsigned count;
    uint8_t  last_id;
    size_t   length;
    unsigned flags;
    void    *arg_seen;
    uint8_t  data[512];
} am_ctx_t;

static ucs_status_t am_handler(void *arg, void *data, size_t length,
                               unsigned flags)
{
    am_ctx_t *ctx = arg;

    ctx->count++;
    ctx->arg_seen = arg;
    ctx->length   = length;
    ctx->flags    = flags;
    memcpy(ctx->data, data, length < sizeof(ctx->data) ? length :
                                                         sizeof(ctx->data));
    return UCS_OK;
}

/* Progress until the handler count reaches 'want' (or give up). */
static void wait_am(uct_worker_h worker, am_ctx_t *ctx, unsigned want)
{
    int i;

    for (i = 0; (i < 1000) && (ctx->count < want); ++i) {
        uct_worker_progress(worker);
    }
}

typedef struct {
    const uint8_t *src;
    size_t         len;
} pack_arg_t;

static size_t pack_cb(void *dest, void *arg)
{
    pack_arg_t *p = arg;

    memcpy(dest, p->src, p->len);
    return p->len;
}

typedef struct {
    uint8_t *dst;
    size_t   len;
    unsigned calls;
} unpack_arg_t;

static void unpack_cb(void *arg, const void *data, size_t length)
{
    unpack_arg_t *u = arg;

    u->calls++;
    u->len = length;
    memcpy(u->dst, data, length);
}

/* ---------------------------------------------------------------------- */
/* Worker progress callbacks                                               */

static unsigned g_oneshot_calls;
static unsigned g_periodic_calls;

static unsigned oneshot_cb(void *arg)
{
    (void)arg;
    g_oneshot_calls++;
    return 0;
}

static unsigned periodic_cb(void *arg)
{
    (void)arg;
    g_periodic_calls++;
    return 0;
}

static ucs_status_t pending_cb(uct_pending_req_t *req)
{
    (void)req;
    return UCS_OK;
}

static unsigned g_comp_calls;
static void comp_cb(uct_completion_t *comp)
{
    (void)comp;
    g_comp_calls++;
}

/* ---------------------------------------------------------------------- */

static void show_provider(void)
{
    Dl_info info;
    char path[PATH_MAX];
    char line[4096];
    FILE *f;
    void *sym = dlsym(RTLD_DEFAULT, "uct_iface_open");

    if ((sym != NULL) && dladdr(sym, &info) && (info.dli_fname != NULL) &&
        (realpath(info.dli_fname, path) != NULL)) {
        printf("provider: %s\n", path);
    } else {
        printf("provider: unknown\n");
    }

    f = fopen("/proc/self/maps", "r");
    if (f == NULL) {
        return;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        char *p = strchr(line, '/');
        if ((p != NULL) && (strstr(p, "libuct") != NULL) &&
            (strstr(p, "/ucx/") == NULL)) {
            p[strcspn(p, "\n")] = '\0';
            /* print each file once: only the first (offset 0) mapping */
            if (strstr(line, " 00000000 ") != NULL) {
                printf("mapped: %s\n", p);
            }
        }
    }
    fclose(f);
}

static uct_component_h find_component(uct_component_h *cmpts, unsigned n,
                                      const char *name)
{
    uct_component_attr_t attr;
    unsigned i;

    for (i = 0; i < n; ++i) {
        memset(&attr, 0, sizeof(attr));
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if ((uct_component_query(cmpts[i], &attr) == UCS_OK) &&
            !strcmp(attr.name, name)) {
            return cmpts[i];
        }
    }
    return NULL;
}

static ucs_status_t open_self_iface(uct_md_h md, uct_worker_h worker,
                                    uct_iface_config_t *config,
                                    uct_iface_h *iface_p)
{
    uct_iface_params_t params;

    memset(&params, 0, sizeof(params));
    params.field_mask            = UCT_IFACE_PARAM_FIELD_OPEN_MODE   |
                                   UCT_IFACE_PARAM_FIELD_DEVICE      |
                                   UCT_IFACE_PARAM_FIELD_STATS_ROOT  |
                                   UCT_IFACE_PARAM_FIELD_RX_HEADROOM;
    params.open_mode             = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name   = "self";
    params.mode.device.dev_name  = SELF_DEV;
    params.stats_root            = NULL;
    params.rx_headroom           = 16;
    return uct_iface_open(md, worker, &params, config, iface_p);
}

int main(void)
{
    static const uint64_t am_header = 0x1122334455667788ull;
    static const char short_payload[] = "self-am-short-payload";
    uct_component_h *components = NULL;
    unsigned num_components     = 0;
    uct_component_h self_cmpt;
    uct_component_attr_t cattr;
    uct_md_resource_desc_t *md_res;
    uct_md_config_t *md_config;
    uct_md_h md;
    uct_md_attr_t md_attr;
    uct_tl_resource_desc_t *tl_res;
    unsigned num_tl, i;
    ucs_async_context_t *async;
    uct_worker_h worker;
    uct_iface_config_t *iface_config;
    uct_iface_h iface, iface2;
    uct_iface_attr_t attr, attr2;
    uint8_t dev_addr[64], iface_addr[64], other_addr[64];
    uct_ep_params_t ep_params;
    uct_ep_h ep;
    am_ctx_t am_ctx;
    uint8_t expect[512], bcopy_src[300];
    pack_arg_t pack_arg;
    ssize_t packed;
    uct_iov_t iov[2];
    char cfg_value[64];
    ucs_status_t status;
    uct_mem_h memh;
    void *rkey_buf;
    uct_rkey_bundle_t rkey;
    uint8_t *region;
    const size_t region_len = 8192;
    uint64_t *target64, result64;
    uint32_t *target32, result32;
    unpack_arg_t unpack_arg;
    uct_completion_t comp;
    uct_pending_req_t preq;
    uct_worker_cb_id_t cb_id;
    int r;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (getenv("UCT_PROBE_SHOW_PROVIDER") != NULL) {
        show_provider();
    }

    /* --- components ---------------------------------------------------- */
    status = CHECK_STATUS(uct_query_components(&components, &num_components),
                          UCS_OK, "uct_query_components");
    if (status != UCS_OK) {
        return 1;
    }
    check(num_components >= 1, "component count >= 1", "got %u",
          num_components);
    self_cmpt = find_component(components, num_components, "self");
    if (!check(self_cmpt != NULL, "component self present", "not listed")) {
        return 1;
    }

    memset(&cattr, 0, sizeof(cattr));
    cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
                       UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT |
                       UCT_COMPONENT_ATTR_FIELD_FLAGS;
    CHECK_STATUS(uct_component_query(self_cmpt, &cattr), UCS_OK,
                 "uct_component_query(count)");
    INFO("component name=%s md_resource_count=%u flags=0x%" PRIx64,
         cattr.name, cattr.md_resource_count, cattr.flags);
    md_res = calloc(cattr.md_resource_count + 1, sizeof(*md_res));
    cattr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    cattr.md_resources = md_res;
    CHECK_STATUS(uct_component_query(self_cmpt, &cattr), UCS_OK,
                 "uct_component_query(resources)");
    for (i = 0; i < cattr.md_resource_count; ++i) {
        INFO("md_resource[%u]=%s", i, md_res[i].md_name);
    }
    check((cattr.md_resource_count == 1) && !strcmp(md_res[0].md_name, "self"),
          "self component has md 'self'", "count %u", cattr.md_resource_count);

    /* --- memory domain --------------------------------------------------- */
    status = CHECK_STATUS(uct_md_config_read(self_cmpt, NULL, NULL,
                                             &md_config),
                          UCS_OK, "uct_md_config_read");
    if (status != UCS_OK) {
        return 1;
    }
    status = CHECK_STATUS(uct_md_open(self_cmpt, "self", md_config, &md),
                          UCS_OK, "uct_md_open(self)");
    uct_config_release(md_config);
    if (status != UCS_OK) {
        return 1;
    }

    memset(&md_attr, 0, sizeof(md_attr));
    CHECK_STATUS(uct_md_query(md, &md_attr), UCS_OK, "uct_md_query");
    INFO("md component_name=%s cap.flags=0x%" PRIx64 " rkey_packed_size=%zu",
         md_attr.component_name, md_attr.cap.flags, md_attr.rkey_packed_size);
    INFO("md reg_mem_types=0x%" PRIx64 " access_mem_types=0x%" PRIx64
         " alloc_mem_types=0x%" PRIx64 " detect_mem_types=0x%" PRIx64,
         md_attr.cap.reg_mem_types, md_attr.cap.access_mem_types,
         md_attr.cap.alloc_mem_types, md_attr.cap.detect_mem_types);
    INFO("md max_alloc=%" PRIu64 " max_reg=%zu reg_cost=%g/%g",
         md_attr.cap.max_alloc, md_attr.cap.max_reg, md_attr.reg_cost.c,
         md_attr.reg_cost.m);
    check(!strcmp(md_attr.component_name, "self"), "md component_name",
          "got '%s'", md_attr.component_name);
    check((md_attr.cap.flags & UCT_MD_FLAG_REG) != 0, "md has REG flag",
          "flags 0x%" PRIx64, md_attr.cap.flags);

    status = CHECK_STATUS(uct_md_query_tl_resources(md, &tl_res, &num_tl),
                          UCS_OK, "uct_md_query_tl_resources");
    if (status != UCS_OK) {
        return 1;
    }
    for (i = 0; i < num_tl; ++i) {
        INFO("tl_resource[%u] tl=%s dev=%s type=%d(%s) sys_device=%u", i,
             tl_res[i].tl_name, tl_res[i].dev_name, (int)tl_res[i].dev_type,
             (tl_res[i].dev_type < UCT_DEVICE_TYPE_LAST) ?
                     uct_device_type_names[tl_res[i].dev_type] : "(bad)",
             (unsigned)tl_res[i].sys_device);
    }
    check((num_tl == 1) && !strcmp(tl_res[0].tl_name, "self") &&
          !strcmp(tl_res[0].dev_name, SELF_DEV) &&
          (tl_res[0].dev_type == UCT_DEVICE_TYPE_SELF),
          "tl resource self/" SELF_DEV " loopback", "count %u", num_tl);
    uct_release_tl_resource_list(tl_res);

    /* --- worker ---------------------------------------------------------- */
    status = CHECK_STATUS(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                                   &async),
                          UCS_OK, "ucs_async_context_create");
    if (status != UCS_OK) {
        return 1;
    }
    status = CHECK_STATUS(uct_worker_create(async, UCS_THREAD_MODE_SINGLE,
                                            &worker),
                          UCS_OK, "uct_worker_create");
    if (status != UCS_OK) {
        return 1;
    }

    /* --- iface config ------------------------------------------------------ */
    status = CHECK_STATUS(uct_md_iface_config_read(md, "self", NULL, NULL,
                                                   &iface_config),
                          UCS_OK, "uct_md_iface_config_read(self)");
    if (status != UCS_OK) {
        return 1;
    }
    memset(cfg_value, 0, sizeof(cfg_value));
    status = CHECK_STATUS(uct_config_get(iface_config, "SEG_SIZE", cfg_value,
                                         sizeof(cfg_value)),
                          UCS_OK, "uct_config_get(SEG_SIZE)");
    INFO("config SEG_SIZE=%s", cfg_value);

    /* --- iface ------------------------------------------------------------- */
    status = CHECK_STATUS(open_self_iface(md, worker, iface_config, &iface),
                          UCS_OK, "uct_iface_open(self/" SELF_DEV ")");
    if (status != UCS_OK) {
        return 1;
    }
    memset(&attr, 0, sizeof(attr));
    CHECK_STATUS(uct_iface_query(iface, &attr), UCS_OK, "uct_iface_query");
    INFO("iface cap.flags=0x%" PRIx64 " event_flags=0x%" PRIx64,
         attr.cap.flags, attr.cap.event_flags);
    INFO("iface am.max_short=%zu am.max_bcopy=%zu am.min_zcopy=%zu "
         "am.max_zcopy=%zu am.max_hdr=%zu am.max_iov=%zu",
         attr.cap.am.max_short, attr.cap.am.max_bcopy, attr.cap.am.min_zcopy,
         attr.cap.am.max_zcopy, attr.cap.am.max_hdr, attr.cap.am.max_iov);
    INFO("iface put.max_short=%zu put.max_bcopy=%zu put.max_zcopy=%zu "
         "put.max_iov=%zu", attr.cap.put.max_short, attr.cap.put.max_bcopy,
         attr.cap.put.max_zcopy, attr.cap.put.max_iov);
    INFO("iface get.max_short=%zu get.max_bcopy=%zu get.max_zcopy=%zu "
         "get.max_iov=%zu", attr.cap.get.max_short, attr.cap.get.max_bcopy,
         attr.cap.get.max_zcopy, attr.cap.get.max_iov);
    INFO("iface atomic32.op=0x%" PRIx64 " atomic32.fop=0x%" PRIx64
         " atomic64.op=0x%" PRIx64 " atomic64.fop=0x%" PRIx64,
         attr.cap.atomic32.op_flags, attr.cap.atomic32.fop_flags,
         attr.cap.atomic64.op_flags, attr.cap.atomic64.fop_flags);
    INFO("iface device_addr_len=%zu iface_addr_len=%zu ep_addr_len=%zu "
         "max_conn_priv=%zu", attr.device_addr_len, attr.iface_addr_len,
         attr.ep_addr_len, attr.max_conn_priv);
    INFO("iface overhead=%g bw.dedicated=%g bw.shared=%g latency=%g/%g "
         "priority=%u max_num_eps=%zu dev_num_paths=%u", attr.overhead,
         attr.bandwidth.dedicated, attr.bandwidth.shared, attr.latency.c,
         attr.latency.m, (unsigned)attr.priority, attr.max_num_eps,
         attr.dev_num_paths);
    check((attr.cap.flags & (UCT_IFACE_FLAG_AM_SHORT | UCT_IFACE_FLAG_AM_BCOPY |
                             UCT_IFACE_FLAG_PUT_SHORT | UCT_IFACE_FLAG_GET_BCOPY |
                             UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                             UCT_IFACE_FLAG_CB_SYNC | UCT_IFACE_FLAG_PENDING)) ==
          (UCT_IFACE_FLAG_AM_SHORT | UCT_IFACE_FLAG_AM_BCOPY |
           UCT_IFACE_FLAG_PUT_SHORT | UCT_IFACE_FLAG_GET_BCOPY |
           UCT_IFACE_FLAG_CONNECT_TO_IFACE | UCT_IFACE_FLAG_CB_SYNC |
           UCT_IFACE_FLAG_PENDING),
          "iface cap flags", "flags 0x%" PRIx64, attr.cap.flags);
    check((attr.iface_addr_len > 0) && (attr.iface_addr_len <= 64) &&
          (attr.device_addr_len <= 64), "address lengths fit", "iface %zu dev %zu",
          attr.iface_addr_len, attr.device_addr_len);

    /* --- addresses and reachability ---------------------------------------- */
    memset(dev_addr, 0, sizeof(dev_addr));
    memset(iface_addr, 0, sizeof(iface_addr));
    CHECK_STATUS(uct_iface_get_device_address(iface,
                                              (uct_device_addr_t*)dev_addr),
                 UCS_OK, "uct_iface_get_device_address");
    CHECK_STATUS(uct_iface_get_address(iface, (uct_iface_addr_t*)iface_addr),
                 UCS_OK, "uct_iface_get_address");
    r = uct_iface_is_reachable(iface, (uct_device_addr_t*)dev_addr,
                               (uct_iface_addr_t*)iface_addr);
    check(r != 0, "is_reachable(own address)", "returned %d", r);
    memcpy(other_addr, iface_addr, sizeof(other_addr));
    for (i = 0; i < attr.iface_addr_len; ++i) {
        other_addr[i] ^= 0x5a;
    }
    r = uct_iface_is_reachable(iface, (uct_device_addr_t*)dev_addr,
                               (uct_iface_addr_t*)other_addr);
    check(r == 0, "is_reachable(other address)", "returned %d", r);
    r = uct_iface_is_reachable(iface, (uct_device_addr_t*)dev_addr, NULL);
    check(r == 0, "is_reachable(NULL iface address)", "returned %d", r);

    /* a second iface gets a different address and cannot reach the first */
    status = CHECK_STATUS(open_self_iface(md, worker, iface_config, &iface2),
                          UCS_OK, "uct_iface_open(second self iface)");
    if (status == UCS_OK) {
        memset(other_addr, 0, sizeof(other_addr));
        CHECK_STATUS(uct_iface_get_address(iface2,
                                           (uct_iface_addr_t*)other_addr),
                     UCS_OK, "uct_iface_get_address(second)");
        check(memcmp(other_addr, iface_addr, attr.iface_addr_len) != 0,
              "second iface has its own address", "addresses equal");
        r = uct_iface_is_reachable(iface2, (uct_device_addr_t*)dev_addr,
                                   (uct_iface_addr_t*)iface_addr);
        check(r == 0, "second iface cannot reach the first", "returned %d", r);
        uct_iface_close(iface2);
    }

    /* --- endpoint ---------------------------------------------------------- */
    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                           UCT_EP_PARAM_FIELD_DEV_ADDR |
                           UCT_EP_PARAM_FIELD_IFACE_ADDR;
    ep_params.iface      = iface;
    ep_params.dev_addr   = (uct_device_addr_t*)dev_addr;
    ep_params.iface_addr = (uct_iface_addr_t*)iface_addr;
    status = CHECK_STATUS(uct_ep_create(&ep_params, &ep), UCS_OK,
                          "uct_ep_create(CONNECT_TO_IFACE)");
    if (status != UCS_OK) {
        return 1;
    }
    check(ep->iface == iface, "ep->iface points to the iface", "mismatch");

    uct_iface_progress_enable(iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);

    /* --- active messages --------------------------------------------------- */
    memset(&am_ctx, 0, sizeof(am_ctx));
    CHECK_STATUS(uct_iface_set_am_handler(iface, 3, am_handler, &am_ctx, 0),
                 UCS_OK, "uct_iface_set_am_handler(3, sync)");

    CHECK_STATUS(uct_ep_am_short(ep, 3, am_header, short_payload,
                                 sizeof(short_payload)),
                 UCS_OK, "uct_ep_am_short");
    wait_am(worker, &am_ctx, 1);
    memcpy(expect, &am_header, sizeof(am_header));
    memcpy(expect + sizeof(am_header), short_payload, sizeof(short_payload));
    check(am_ctx.count == 1, "am_short delivered once", "count %u",
          am_ctx.count);
    check(am_ctx.arg_seen == &am_ctx, "am handler got its arg", "wrong arg");
    check(am_ctx.length == sizeof(am_header) + sizeof(short_payload),
          "am_short length = 8 + payload", "length %zu", am_ctx.length);
    check(!memcmp(am_ctx.data, expect,
                  sizeof(am_header) + sizeof(short_payload)),
          "am_short data = header then payload", "content differs");
    INFO("am_short handler flags=0x%x", am_ctx.flags);

    /* am_short_iov: the gathered payload arrives as one message, no header */
    iov[0].buffer = (void*)"first-part/";
    iov[0].length = 11;
    iov[0].memh   = UCT_MEM_HANDLE_NULL;
    iov[0].stride = 0;
    iov[0].count  = 1;
    iov[1].buffer = (void*)"second-part";
    iov[1].length = 11;
    iov[1].memh   = UCT_MEM_HANDLE_NULL;
    iov[1].stride = 0;
    iov[1].count  = 1;
    CHECK_STATUS(uct_ep_am_short_iov(ep, 3, iov, 2), UCS_OK,
                 "uct_ep_am_short_iov");
    wait_am(worker, &am_ctx, 2);
    check((am_ctx.count == 2) && (am_ctx.length == 22) &&
          !memcmp(am_ctx.data, "first-part/second-part", 22),
          "am_short_iov delivered gathered payload", "count %u length %zu",
          am_ctx.count, am_ctx.length);

    for (i = 0; i < sizeof(bcopy_src); ++i) {
        bcopy_src[i] = (uint8_t)(i * 7 + 1);
    }
    pack_arg.src = bcopy_src;
    pack_arg.len = sizeof(bcopy_src);
    packed = uct_ep_am_bcopy(ep, 3, pack_cb, &pack_arg, 0);
    check(packed == (ssize_t)sizeof(bcopy_src), "uct_ep_am_bcopy returns packed length",
          "got %zd", packed);
    wait_am(worker, &am_ctx, 3);
    check((am_ctx.count == 3) && (am_ctx.length == sizeof(bcopy_src)) &&
          !memcmp(am_ctx.data, bcopy_src, sizeof(bcopy_src)),
          "am_bcopy delivered packed bytes", "count %u length %zu",
          am_ctx.count, am_ctx.length);

    /* a message as large as am.max_short still fits */
    if (attr.cap.am.max_short >= 8) {
        size_t plen  = attr.cap.am.max_short - 8;
        uint8_t *big = calloc(1, plen + 1);
        CHECK_STATUS(uct_ep_am_short(ep, 3, am_header, big, (unsigned)plen),
                     UCS_OK, "uct_ep_am_short(max_short)");
        wait_am(worker, &am_ctx, 4);
        check((am_ctx.count == 4) && (am_ctx.length == attr.cap.am.max_short),
              "am_short of max_short bytes delivered", "count %u length %zu",
              am_ctx.count, am_ctx.length);
        free(big);
    }

    /* an async handler may replace the sync one; a NULL handler resets it */
    CHECK_STATUS(uct_iface_set_am_handler(iface, 3, am_handler, &am_ctx,
                                          UCT_CB_FLAG_ASYNC),
                 UCS_OK, "uct_iface_set_am_handler(3, async)");
    CHECK_STATUS(uct_iface_set_am_handler(iface, 31, am_handler, &am_ctx, 0),
                 UCS_OK, "uct_iface_set_am_handler(31)");
    CHECK_STATUS(uct_iface_set_am_handler(iface, 31, NULL, NULL, 0), UCS_OK,
                 "uct_iface_set_am_handler(31, NULL)");

    /* --- memory registration and remote keys ------------------------------- */
    region = aligned_alloc(4096, region_len);
    memset(region, 0, region_len);
    status = CHECK_STATUS(uct_md_mem_reg(md, region, region_len,
                                         UCT_MD_MEM_ACCESS_ALL, &memh),
                          UCS_OK, "uct_md_mem_reg");
    rkey_buf = calloc(1, md_attr.rkey_packed_size + 16);
    CHECK_STATUS(uct_md_mkey_pack(md, memh, rkey_buf), UCS_OK,
                 "uct_md_mkey_pack");
    status = CHECK_STATUS(uct_rkey_unpack(self_cmpt, rkey_buf, &rkey), UCS_OK,
                          "uct_rkey_unpack");
    INFO("rkey_is_zero=%d", rkey.rkey == 0);
    check(rkey.rkey != UCT_INVALID_RKEY, "rkey is valid", "UCT_INVALID_RKEY");

    /* put_short */
    {
        static const char msg[] = "put-short-data";
        CHECK_STATUS(uct_ep_put_short(ep, msg, sizeof(msg),
                                      (uint64_t)(uintptr_t)(region + 100),
                                      rkey.rkey),
                     UCS_OK, "uct_ep_put_short");
        check(!memcmp(region + 100, msg, sizeof(msg)) && (region[99] == 0) &&
              (region[100 + sizeof(msg)] == 0),
              "put_short wrote exactly the data", "content differs");
    }

    /* put_bcopy */
    pack_arg.src = bcopy_src;
    pack_arg.len = 200;
    packed = uct_ep_put_bcopy(ep, pack_cb, &pack_arg,
                              (uint64_t)(uintptr_t)(region + 1000), rkey.rkey);
    check(packed == 200, "uct_ep_put_bcopy returns packed length", "got %zd",
          packed);
    check(!memcmp(region + 1000, bcopy_src, 200), "put_bcopy wrote the data",
          "content differs");

    /* get_bcopy */
    {
        uint8_t got[256];
        memset(got, 0, sizeof(got));
        for (i = 0; i < 256; ++i) {
            region[2048 + i] = (uint8_t)(255 - i);
        }
        unpack_arg.dst   = got;
        unpack_arg.len   = 0;
        unpack_arg.calls = 0;
        g_comp_calls     = 0;
        comp.func        = comp_cb;
        comp.count       = 1;
        comp.status      = UCS_OK;
        status = uct_ep_get_bcopy(ep, unpack_cb, &unpack_arg, 256,
                                  (uint64_t)(uintptr_t)(region + 2048),
                                  rkey.rkey, &comp);
        check((status == UCS_OK) || (status == UCS_INPROGRESS),
              "uct_ep_get_bcopy status", "got %d (%s)", (int)status, st(status));
        INFO("get_bcopy status=%s", st(status));
        if (status == UCS_INPROGRESS) {
            for (i = 0; (i < 100000) && (g_comp_calls == 0); ++i) {
                uct_worker_progress(worker);
            }
            check(g_comp_calls == 1, "get_bcopy completion called once",
                  "%u calls", g_comp_calls);
        }
        check((unpack_arg.calls >= 1) && !memcmp(got, region + 2048, 256),
              "get_bcopy unpacked the remote data", "calls %u len %zu",
              unpack_arg.calls, unpack_arg.len);
    }

    /* atomics */
    target64  = (uint64_t*)(region + 4096);
    *target64 = 100;
    result64  = 0;
    status = CHECK_STATUS(uct_ep_atomic64_fetch(ep, UCT_ATOMIC_OP_ADD, 5,
                                                &result64,
                                                (uint64_t)(uintptr_t)target64,
                                                rkey.rkey, NULL),
                          UCS_OK, "uct_ep_atomic64_fetch(ADD)");
    check((result64 == 100) && (*target64 == 105), "fetch-add 64 values",
          "result %" PRIu64 " target %" PRIu64, result64, *target64);

    result64 = 0;
    CHECK_STATUS(uct_ep_atomic_cswap64(ep, 105, 7,
                                       (uint64_t)(uintptr_t)target64,
                                       rkey.rkey, &result64, NULL),
                 UCS_OK, "uct_ep_atomic_cswap64(match)");
    check((result64 == 105) && (*target64 == 7), "cswap64 swapped",
          "result %" PRIu64 " target %" PRIu64, result64, *target64);
    result64 = 0;
    CHECK_STATUS(uct_ep_atomic_cswap64(ep, 1234, 99,
                                       (uint64_t)(uintptr_t)target64,
                                       rkey.rkey, &result64, NULL),
                 UCS_OK, "uct_ep_atomic_cswap64(mismatch)");
    check((result64 == 7) && (*target64 == 7), "cswap64 left value alone",
          "result %" PRIu64 " target %" PRIu64, result64, *target64);

    CHECK_STATUS(uct_ep_atomic64_post(ep, UCT_ATOMIC_OP_XOR, 0xff,
                                      (uint64_t)(uintptr_t)target64,
                                      rkey.rkey),
                 UCS_OK, "uct_ep_atomic64_post(XOR)");
    check(*target64 == (7 ^ 0xff), "atomic64 post xor", "target %" PRIu64,
          *target64);

    target32  = (uint32_t*)(region + 4200);
    *target32 = 40;
    CHECK_STATUS(uct_ep_atomic32_post(ep, UCT_ATOMIC_OP_ADD, 2,
                                      (uint64_t)(uintptr_t)target32,
                                      rkey.rkey),
                 UCS_OK, "uct_ep_atomic32_post(ADD)");
    check(*target32 == 42, "atomic32 post add", "target %u", *target32);
    result32 = 0;
    CHECK_STATUS(uct_ep_atomic32_fetch(ep, UCT_ATOMIC_OP_SWAP, 77, &result32,
                                       (uint64_t)(uintptr_t)target32,
                                       rkey.rkey, NULL),
                 UCS_OK, "uct_ep_atomic32_fetch(SWAP)");
    check((result32 == 42) && (*target32 == 77), "atomic32 fetch swap",
          "result %u target %u", result32, *target32);
    result32 = 0;
    CHECK_STATUS(uct_ep_atomic_cswap32(ep, 77, 5,
                                       (uint64_t)(uintptr_t)target32,
                                       rkey.rkey, &result32, NULL),
                 UCS_OK, "uct_ep_atomic_cswap32");
    check((result32 == 77) && (*target32 == 5), "cswap32 swapped",
          "result %u target %u", result32, *target32);
    check(region[4204] == 0 && region[4199] == 0, "atomic32 stayed in 4 bytes",
          "neighbour bytes changed");

    /* --- flush, fence, pending, check ---------------------------------------- */
    CHECK_STATUS(uct_ep_flush(ep, 0, NULL), UCS_OK, "uct_ep_flush");
    CHECK_STATUS(uct_iface_flush(iface, 0, NULL), UCS_OK, "uct_iface_flush");
    CHECK_STATUS(uct_ep_fence(ep, 0), UCS_OK, "uct_ep_fence");
    CHECK_STATUS(uct_iface_fence(iface, 0), UCS_OK, "uct_iface_fence");
    memset(&preq, 0, sizeof(preq));
    preq.func = pending_cb;
    CHECK_STATUS(uct_ep_pending_add(ep, &preq, 0), UCS_ERR_BUSY,
                 "uct_ep_pending_add when resources are free");
    uct_ep_pending_purge(ep, NULL, NULL);
    CHECK_STATUS(uct_ep_check(ep, 0, NULL), UCS_OK, "uct_ep_check");
    INFO("uct_iface_progress=%u", uct_iface_progress(iface));

    /* --- worker progress callbacks ----------------------------------------- */
    cb_id = UCS_CALLBACKQ_ID_NULL;
    uct_worker_progress_register_safe(worker, oneshot_cb, NULL,
                                      UCS_CALLBACKQ_FLAG_ONESHOT, &cb_id);
    check(cb_id != UCS_CALLBACKQ_ID_NULL, "register_safe(oneshot) gave an id",
          "id is NULL");
    for (i = 0; i < 5; ++i) {
        uct_worker_progress(worker);
    }
    check(g_oneshot_calls == 1, "oneshot callback ran exactly once",
          "ran %u times", g_oneshot_calls);

    cb_id = UCS_CALLBACKQ_ID_NULL;
    uct_worker_progress_register_safe(worker, periodic_cb, NULL, 0, &cb_id);
    check(cb_id != UCS_CALLBACKQ_ID_NULL, "register_safe(periodic) gave an id",
          "id is NULL");
    {
        uct_worker_cb_id_t same = cb_id;
        /* registering again through a non-NULL id must not add a callback */
        uct_worker_progress_register_safe(worker, periodic_cb, NULL, 0, &cb_id);
        check(cb_id == same, "register_safe with a set id keeps it",
              "id changed");
    }
    for (i = 0; i < 3; ++i) {
        uct_worker_progress(worker);
    }
    check(g_periodic_calls == 3, "periodic callback ran once per progress",
          "ran %u times in 3 progress calls", g_periodic_calls);
    uct_worker_progress_unregister_safe(worker, &cb_id);
    check(cb_id == UCS_CALLBACKQ_ID_NULL, "unregister_safe resets the id",
          "id %d", cb_id);
    for (i = 0; i < 3; ++i) {
        uct_worker_progress(worker);
    }
    check(g_periodic_calls == 3, "unregistered callback no longer runs",
          "ran %u times", g_periodic_calls);
    /* unregistering a NULL id is a no-op */
    uct_worker_progress_unregister_safe(worker, &cb_id);
    check(cb_id == UCS_CALLBACKQ_ID_NULL, "unregister_safe(NULL id) no-op",
          "id %d", cb_id);

    /* --- configuration: modify and reopen ----------------------------------- */
    CHECK_STATUS(uct_config_modify(iface_config, SEG_SIZE_KEY, "4k"), UCS_OK,
                 "uct_config_modify(" SEG_SIZE_KEY "=4k)");
    memset(cfg_value, 0, sizeof(cfg_value));
    CHECK_STATUS(uct_config_get(iface_config, "SEG_SIZE", cfg_value,
                                sizeof(cfg_value)),
                 UCS_OK, "uct_config_get(SEG_SIZE) after modify");
    INFO("config SEG_SIZE after modify=%s", cfg_value);
    CHECK_STATUS(uct_config_modify(iface_config, "NO_SUCH_KEY", "1"),
                 UCS_ERR_NO_ELEM, "uct_config_modify(NO_SUCH_KEY)");
    CHECK_STATUS(uct_config_get(iface_config, "NO_SUCH_KEY", cfg_value,
                                sizeof(cfg_value)),
                 UCS_ERR_NO_ELEM, "uct_config_get(NO_SUCH_KEY)");
    status = CHECK_STATUS(open_self_iface(md, worker, iface_config, &iface2),
                          UCS_OK, "uct_iface_open(SEG_SIZE=4k)");
    if (status == UCS_OK) {
        memset(&attr2, 0, sizeof(attr2));
        CHECK_STATUS(uct_iface_query(iface2, &attr2), UCS_OK,
                     "uct_iface_query(SEG_SIZE=4k)");
        check(attr2.cap.am.max_short == 4096, "am.max_short follows SEG_SIZE",
              "got %zu", attr2.cap.am.max_short);
        check(attr2.cap.am.max_bcopy == 4096, "am.max_bcopy follows SEG_SIZE",
              "got %zu", attr2.cap.am.max_bcopy);
        uct_iface_close(iface2);
    }
    /* the first iface keeps the size it was opened with */
    memset(&attr2, 0, sizeof(attr2));
    uct_iface_query(iface, &attr2);
    check(attr2.cap.am.max_short == attr.cap.am.max_short,
          "existing iface unaffected by config change", "got %zu",
          attr2.cap.am.max_short);

    /* --- teardown ------------------------------------------------------------- */
    CHECK_STATUS(uct_rkey_release(self_cmpt, &rkey), UCS_OK,
                 "uct_rkey_release");
    CHECK_STATUS(uct_md_mem_dereg(md, memh), UCS_OK, "uct_md_mem_dereg");
    CHECK_STATUS(uct_iface_set_am_handler(iface, 3, NULL, NULL, 0), UCS_OK,
                 "uct_iface_set_am_handler(3, NULL)");
    uct_ep_destroy(ep);
    uct_iface_progress_disable(iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    uct_iface_close(iface);
    uct_config_release(iface_config);
    uct_worker_destroy(worker);
    ucs_async_context_destroy(async);
    uct_md_close(md);
    uct_release_component_list(components);
    free(rkey_buf);
    free(region);
    free(md_res);

    printf("api: summary %d checks, %d failed\n", g_checks, g_failures);
    return (g_failures == 0) ? 0 : 1;
}
