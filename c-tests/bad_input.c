/*
 * bad_input.c - table of bad-input cases for libuct.so.0.
 *
 * Every case runs in its own forked child, which calls one UCT function with
 * bad input and reports the returned status through a pipe.  The parent
 * judges the outcome:
 *
 *   EXACT(s)        the call must return exactly s, without a signal.  The
 *                   expected value is what the C original (Debian 12,
 *                   UCX 1.13.1) was observed to return.
 *   STRICTER(o, s)  the original returns o; uct-rs deliberately returns s
 *                   (bad input that the original accepts silently, such as
 *                   an unknown md/device name or unknown field_mask bits,
 *                   gets a clear error status from us).
 *   ORIG_MAY_CRASH  the C original, built without parameter checking, may
 *                   crash here (NULL dereference, NULL function slot).
 *                   When the library under test is the original, a crash or
 *                   an error status is accepted; for any other library the
 *                   call must return an error status (< 0) and not crash.
 *   BAD_HANDLE      a handle that is not a live object of the library: closed
 *                   or released already, never initialised (heap or stack
 *                   garbage), or an object of another kind.  For uct-rs the
 *                   call must return an error status (< 0), or, for the
 *                   functions that return nothing (BAD_HANDLE_VOID), simply
 *                   return, and must log at least one error line (counted by
 *                   a libucs log handler from bad_call_begin() on); no crash.
 *                   The original follows such pointers: whatever it does
 *                   short of hanging is accepted and shown, the table's
 *                   notes say what Debian's build was seen doing.
 *
 * A child that hangs is stopped by alarm() and counts as a crash.
 *
 * The mode is chosen automatically: "original" when uct_iface_open resolves to
 * the system library file ($UCT_SYSTEM_LIB, default
 * /usr/lib/x86_64-linux-gnu/libuct.so.0), "strict" otherwise.  --strict and
 * --original force a mode, --list prints the table, -v shows the children's
 * own output, --handles runs only the BAD_HANDLE cases, and further
 * arguments select cases by name (substring match).
 * Prints one line per case and "N passed, M failed"; exits 1 if M > 0.
 */
#define _GNU_SOURCE
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>
#include <ucs/debug/log_def.h>

/* The self transport's one device: "memory0" up to UCX 1.13, "memory" from
 * 1.14 on (UCX names a single self device without a number). */
#if UCT_VERNO_MINOR >= 14
#define SELF_DEV "memory"
#else
#define SELF_DEV "memory0"
#endif

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHILD_TIMEOUT_SEC 30
#define SETUP_FAILED_EXIT 77

typedef enum {
    EXACT,
    STRICTER,
    ORIG_MAY_CRASH,
    BAD_HANDLE,
    BAD_HANDLE_VOID
} expect_kind_t;

typedef struct {
    const char    *name;
    expect_kind_t  kind;
    ucs_status_t   want;  /* EXACT only */
    long         (*run)(void);
    const char    *note;  /* what the C original does, for the listing */
    ucs_status_t   want_strict; /* STRICTER: what uct-rs must return */
    const char    *requires;    /* component the case needs, or NULL */
} bad_case_t;

static int g_result_fd = -1;

/* error (and fatal) lines libucs's logger saw since bad_call_begin() */
static volatile int g_log_errors;

static ucs_log_func_rc_t count_errors(const char *file, unsigned line,
                                      const char *function,
                                      ucs_log_level_t level,
                                      const ucs_log_component_config_t *comp,
                                      const char *message, va_list ap)
{
    (void)file;
    (void)line;
    (void)function;
    (void)comp;
    (void)message;
    (void)ap;
    if (level <= UCS_LOG_LEVEL_ERROR) {
        ++g_log_errors;
    }
    return UCS_LOG_FUNC_RC_CONTINUE;
}

/* Called right before the bad call of a BAD_HANDLE case. */
static void bad_call_begin(void)
{
    g_log_errors = 0;
}

/* ---------------------------------------------------------------------- */
/* Fixture, built lazily inside the child                                  */

static struct {
    uct_component_h     *cmpts;
    unsigned             num_cmpts;
    uct_md_config_t     *md_config;
    uct_md_h             md;
    ucs_async_context_t *async;
    uct_worker_h         worker;
    uct_iface_config_t  *iface_config;
    uct_iface_h          iface;
    uint8_t              dev_addr[64];
    uint8_t              iface_addr[64];
    uct_ep_h             ep;
    uint8_t              buffer[8192] __attribute__((aligned(64)));
} fx;

static void setup_failed(const char *what, ucs_status_t status)
{
    fprintf(stderr, "setup failed: %s: %d\n", what, (int)status);
    dprintf(g_result_fd, "SETUP %s\n", what);
    _exit(SETUP_FAILED_EXIT);
}

static uct_component_h component(const char *name)
{
    uct_component_attr_t attr;
    ucs_status_t status;
    unsigned i;

    if (fx.cmpts == NULL) {
        status = uct_query_components(&fx.cmpts, &fx.num_cmpts);
        if (status != UCS_OK) {
            setup_failed("uct_query_components", status);
        }
    }
    for (i = 0; i < fx.num_cmpts; ++i) {
        memset(&attr, 0, sizeof(attr));
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if ((uct_component_query(fx.cmpts[i], &attr) == UCS_OK) &&
            !strcmp(attr.name, name)) {
            return fx.cmpts[i];
        }
    }
    setup_failed(name, UCS_ERR_NO_ELEM);
    return NULL;
}

static uct_md_config_t *md_config(void)
{
    ucs_status_t status;

    if (fx.md_config == NULL) {
        status = uct_md_config_read(component("self"), NULL, NULL,
                                    &fx.md_config);
        if (status != UCS_OK) {
            setup_failed("uct_md_config_read", status);
        }
    }
    return fx.md_config;
}

static uct_md_h md(void)
{
    ucs_status_t status;

    if (fx.md == NULL) {
        status = uct_md_open(component("self"), "self", md_config(), &fx.md);
        if (status != UCS_OK) {
            setup_failed("uct_md_open", status);
        }
    }
    return fx.md;
}

static ucs_async_context_t *async_ctx(void)
{
    ucs_status_t status;

    if (fx.async == NULL) {
        status = ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                          &fx.async);
        if (status != UCS_OK) {
            setup_failed("ucs_async_context_create", status);
        }
    }
    return fx.async;
}

static uct_worker_h worker(void)
{
    ucs_status_t status;

    if (fx.worker == NULL) {
        status = uct_worker_create(async_ctx(), UCS_THREAD_MODE_SINGLE,
                                   &fx.worker);
        if (status != UCS_OK) {
            setup_failed("uct_worker_create", status);
        }
    }
    return fx.worker;
}

static uct_iface_config_t *iface_config(void)
{
    ucs_status_t status;

    if (fx.iface_config == NULL) {
        status = uct_md_iface_config_read(md(), "self", NULL, NULL,
                                          &fx.iface_config);
        if (status != UCS_OK) {
            setup_failed("uct_md_iface_config_read", status);
        }
    }
    return fx.iface_config;
}

static void iface_params(uct_iface_params_t *p)
{
    memset(p, 0, sizeof(*p));
    p->field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                              UCT_IFACE_PARAM_FIELD_DEVICE |
                              UCT_IFACE_PARAM_FIELD_STATS_ROOT |
                              UCT_IFACE_PARAM_FIELD_RX_HEADROOM;
    p->open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    p->mode.device.tl_name  = "self";
    p->mode.device.dev_name = SELF_DEV;
    p->rx_headroom          = 16;
}

static uct_iface_h iface(void)
{
    uct_iface_params_t params;
    ucs_status_t status;

    if (fx.iface == NULL) {
        iface_params(&params);
        status = uct_iface_open(md(), worker(), &params, iface_config(),
                                &fx.iface);
        if (status != UCS_OK) {
            setup_failed("uct_iface_open", status);
        }
        status = uct_iface_get_device_address(fx.iface,
                                              (uct_device_addr_t*)fx.dev_addr);
        if (status != UCS_OK) {
            setup_failed("uct_iface_get_device_address", status);
        }
        status = uct_iface_get_address(fx.iface,
                                       (uct_iface_addr_t*)fx.iface_addr);
        if (status != UCS_OK) {
            setup_failed("uct_iface_get_address", status);
        }
    }
    return fx.iface;
}

static void ep_params(uct_ep_params_t *p)
{
    memset(p, 0, sizeof(*p));
    p->field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                    UCT_EP_PARAM_FIELD_IFACE_ADDR;
    p->iface      = iface();
    p->dev_addr   = (uct_device_addr_t*)fx.dev_addr;
    p->iface_addr = (uct_iface_addr_t*)fx.iface_addr;
}

static uct_ep_h ep(void)
{
    uct_ep_params_t params;
    ucs_status_t status;

    if (fx.ep == NULL) {
        ep_params(&params);
        status = uct_ep_create(&params, &fx.ep);
        if (status != UCS_OK) {
            setup_failed("uct_ep_create", status);
        }
    }
    return fx.ep;
}

static ucs_status_t am_cb(void *arg, void *data, size_t length,
                          unsigned flags)
{
    (void)arg;
    (void)data;
    (void)length;
    (void)flags;
    return UCS_OK;
}

static size_t pack_cb(void *dest, void *arg)
{
    (void)arg;
    memset(dest, 0x5a, 16);
    return 16;
}

/* ---------------------------------------------------------------------- */
/* Cases                                                                   */

/* NULL out-pointers and NULL parameter structs */
static long c_query_components_null_list(void)
{
    unsigned n;
    return uct_query_components(NULL, &n);
}

static long c_query_components_null_count(void)
{
    uct_component_h *c;
    return uct_query_components(&c, NULL);
}

static long c_component_query_null_attr(void)
{
    return uct_component_query(component("self"), NULL);
}

static long c_component_query_null_resources(void)
{
    uct_component_attr_t attr;

    memset(&attr, 0, sizeof(attr));
    attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    attr.md_resources = NULL;
    return uct_component_query(component("self"), &attr);
}

static long c_md_config_read_null_out(void)
{
    return uct_md_config_read(component("self"), NULL, NULL, NULL);
}

static long c_md_open_null_out(void)
{
    return uct_md_open(component("self"), "self", md_config(), NULL);
}

static long c_md_open_null_config(void)
{
    uct_md_h m;
    return uct_md_open(component("self"), "self", NULL, &m);
}

static long c_md_query_null_attr(void)
{
    return uct_md_query(md(), NULL);
}

static long c_md_query_tl_resources_null_list(void)
{
    unsigned n;
    return uct_md_query_tl_resources(md(), NULL, &n);
}

static long c_md_query_tl_resources_null_count(void)
{
    uct_tl_resource_desc_t *r;
    return uct_md_query_tl_resources(md(), &r, NULL);
}

static long c_md_iface_config_read_null_out(void)
{
    return uct_md_iface_config_read(md(), "self", NULL, NULL, NULL);
}

static long c_worker_create_null_out(void)
{
    return uct_worker_create(async_ctx(), UCS_THREAD_MODE_SINGLE, NULL);
}

static long c_iface_open_null_out(void)
{
    uct_iface_params_t params;

    iface_params(&params);
    return uct_iface_open(md(), worker(), &params, iface_config(), NULL);
}

static long c_iface_open_null_params(void)
{
    uct_iface_h i;
    return uct_iface_open(md(), worker(), NULL, iface_config(), &i);
}

static long c_iface_open_null_config(void)
{
    uct_iface_params_t params;
    uct_iface_h i;

    iface_params(&params);
    return uct_iface_open(md(), worker(), &params, NULL, &i);
}

static long c_iface_open_null_worker(void)
{
    uct_iface_params_t params;
    uct_iface_h i;

    iface_params(&params);
    return uct_iface_open(md(), NULL, &params, iface_config(), &i);
}

static long c_iface_query_null_attr(void)
{
    return uct_iface_query(iface(), NULL);
}

static long c_iface_get_address_null(void)
{
    return uct_iface_get_address(iface(), NULL);
}

static long c_ep_create_null_out(void)
{
    uct_ep_params_t params;

    ep_params(&params);
    return uct_ep_create(&params, NULL);
}

static long c_ep_create_null_params(void)
{
    uct_ep_h e;
    return uct_ep_create(NULL, &e);
}

static long c_md_mem_reg_null_memh_out(void)
{
    return uct_md_mem_reg(md(), fx.buffer, sizeof(fx.buffer),
                          UCT_MD_MEM_ACCESS_ALL, NULL);
}

static long c_rkey_unpack_null_bundle(void)
{
    uint8_t buf[64] = {0};
    return uct_rkey_unpack(component("self"), buf, NULL);
}

static long c_mem_alloc_null_params(void)
{
    uct_alloc_method_t method = UCT_ALLOC_METHOD_HEAP;
    uct_allocated_memory_t mem;

    return uct_mem_alloc(4096, &method, 1, NULL, &mem);
}

static long c_mem_alloc_null_out(void)
{
    uct_alloc_method_t method = UCT_ALLOC_METHOD_HEAP;
    uct_mem_alloc_params_t params;

    memset(&params, 0, sizeof(params));
    return uct_mem_alloc(4096, &method, 1, &params, NULL);
}

static long c_worker_create_null_async(void)
{
    uct_worker_h w;
    return uct_worker_create(NULL, UCS_THREAD_MODE_SINGLE, &w);
}

/* names that do not exist */
static long c_md_open_unknown_name(void)
{
    uct_md_h m;
    return uct_md_open(component("self"), "nosuch", md_config(), &m);
}

static long c_md_iface_config_read_unknown_tl(void)
{
    uct_iface_config_t *c;
    return uct_md_iface_config_read(md(), "nosuch", NULL, NULL, &c);
}

static long c_md_iface_config_read_null_tl(void)
{
    uct_iface_config_t *c;
    return uct_md_iface_config_read(md(), NULL, NULL, NULL, &c);
}

static long c_md_iface_config_read_foreign_tl(void)
{
    uct_iface_config_t *c;
    return uct_md_iface_config_read(md(), "tcp", NULL, NULL, &c);
}

static long c_iface_open_unknown_tl(void)
{
    uct_iface_params_t params;
    uct_iface_h i;

    iface_params(&params);
    params.mode.device.tl_name = "nosuch";
    return uct_iface_open(md(), worker(), &params, iface_config(), &i);
}

static long c_iface_open_null_tl(void)
{
    uct_iface_params_t params;
    uct_iface_h i;

    iface_params(&params);
    params.mode.device.tl_name = NULL;
    return uct_iface_open(md(), worker(), &params, iface_config(), &i);
}

static long c_iface_open_foreign_tl(void)
{
    uct_iface_params_t params;
    uct_iface_h i;

    iface_params(&params);
    params.mode.device.tl_name  = "tcp";
    params.mode.device.dev_name = "lo";
    return uct_iface_open(md(), worker(), &params, iface_config(), &i);
}

static long c_iface_open_unknown_device(void)
{
    uct_iface_params_t params;
    uct_iface_h i;

    iface_params(&params);
    params.mode.device.dev_name = "nosuch";
    return uct_iface_open(md(), worker(), &params, iface_config(), &i);
}

/* iface_open parameter checks */
static long c_iface_open_no_open_mode_field(void)
{
    uct_iface_params_t params;
    uct_iface_h i;

    iface_params(&params);
    params.field_mask &= ~UCT_IFACE_PARAM_FIELD_OPEN_MODE;
    params.open_mode   = 0;
    return uct_iface_open(md(), worker(), &params, iface_config(), &i);
}

static long c_iface_open_device_mode_without_field(void)
{
    uct_iface_params_t params;
    uct_iface_h i;

    /* open_mode holds DEVICE, but the field bit says it is not set */
    iface_params(&params);
    params.field_mask &= ~UCT_IFACE_PARAM_FIELD_OPEN_MODE;
    return uct_iface_open(md(), worker(), &params, iface_config(), &i);
}

static long c_iface_open_zero_open_mode(void)
{
    uct_iface_params_t params;
    uct_iface_h i;

    iface_params(&params);
    params.open_mode = 0;
    return uct_iface_open(md(), worker(), &params, iface_config(), &i);
}

static long c_iface_open_unknown_open_mode(void)
{
    uct_iface_params_t params;
    uct_iface_h i;

    iface_params(&params);
    params.open_mode = UCS_BIT(40);
    return uct_iface_open(md(), worker(), &params, iface_config(), &i);
}

static long c_iface_open_sockaddr_mode_on_self(void)
{
    uct_iface_params_t params;
    uct_iface_h i;

    iface_params(&params);
    params.field_mask &= ~UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode   = UCT_IFACE_OPEN_MODE_SOCKADDR_SERVER;
    memset(&params.mode, 0, sizeof(params.mode));
    return uct_iface_open(md(), worker(), &params, iface_config(), &i);
}

static long c_iface_open_align_offset_without_alignment(void)
{
    uct_iface_params_t params;
    uct_iface_h i;

    iface_params(&params);
    params.field_mask     |= UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET;
    params.am_align_offset = 8;
    return uct_iface_open(md(), worker(), &params, iface_config(), &i);
}

static long c_iface_open_multi_thread_worker(void)
{
    uct_iface_params_t params;
    uct_worker_h w;
    uct_iface_h i;
    ucs_status_t status;

    status = uct_worker_create(async_ctx(), UCS_THREAD_MODE_MULTI, &w);
    if (status != UCS_OK) {
        setup_failed("uct_worker_create(MULTI)", status);
    }
    iface_params(&params);
    return uct_iface_open(md(), w, &params, iface_config(), &i);
}

static long c_iface_open_unknown_field_bits(void)
{
    uct_iface_params_t params;
    uct_iface_h i;

    iface_params(&params);
    params.field_mask |= UCS_BIT(63) | UCS_BIT(40);
    return uct_iface_open(md(), worker(), &params, iface_config(), &i);
}

/* active-message handler ids and flags */
static long c_set_am_handler_id_32(void)
{
    return uct_iface_set_am_handler(iface(), 32, am_cb, NULL, 0);
}

static long c_set_am_handler_id_255(void)
{
    return uct_iface_set_am_handler(iface(), 255, am_cb, NULL, 0);
}

static long c_set_am_handler_null_cb_id_32(void)
{
    return uct_iface_set_am_handler(iface(), 32, NULL, NULL, 0);
}

static long c_set_am_handler_reserved_flag(void)
{
    return uct_iface_set_am_handler(iface(), 3, am_cb, NULL,
                                    UCT_CB_FLAG_RESERVED);
}

/* endpoint creation */
static long c_ep_create_no_iface_no_cm(void)
{
    uct_ep_params_t params;
    uct_ep_h e;

    ep_params(&params);
    params.field_mask = UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    return uct_ep_create(&params, &e);
}

static long c_ep_create_empty_field_mask(void)
{
    uct_ep_params_t params;
    uct_ep_h e;

    memset(&params, 0, sizeof(params));
    return uct_ep_create(&params, &e);
}

static long c_ep_create_unknown_field_bits(void)
{
    uct_ep_params_t params;
    uct_ep_h e;

    ep_params(&params);
    params.field_mask |= UCS_BIT(63) | UCS_BIT(40);
    return uct_ep_create(&params, &e);
}

/* field masks of query structs */
static long c_component_query_unknown_field_bits(void)
{
    uct_component_attr_t attr;

    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME | UCS_BIT(63) |
                      UCS_BIT(40);
    return uct_component_query(component("self"), &attr);
}

/* configuration */
static long c_config_modify_unknown_key(void)
{
    return uct_config_modify(iface_config(), "NO_SUCH_KEY", "1");
}

static long c_config_modify_bad_value(void)
{
    /* From UCX 1.17 a field is named with its table's prefix. */
#if UCT_VERNO_MINOR >= 17
    return uct_config_modify(iface_config(), "SELF_SEG_SIZE", "banana");
#else
    return uct_config_modify(iface_config(), "SEG_SIZE", "banana");
#endif
}

static long c_config_modify_prefixed_key(void)
{
    return uct_config_modify(iface_config(), "UCX_SELF_SEG_SIZE", "4k");
}

static long c_config_modify_md_unknown_key(void)
{
    return uct_config_modify(md_config(), "NO_SUCH_KEY", "1");
}

static long c_config_get_unknown_key(void)
{
    char value[64];
    return uct_config_get(iface_config(), "NO_SUCH_KEY", value, sizeof(value));
}

static long c_cm_config_read_on_self(void)
{
    uct_cm_config_t *c;
    return uct_cm_config_read(component("self"), NULL, NULL, &c);
}

static long c_cm_open_on_self(void)
{
    uct_cm_h cm;
    uct_cm_config_t *c = NULL;
    ucs_status_t status;

    /* self has no CM config table; the original then refuses to open a CM */
    status = uct_cm_config_read(component("tcp"), NULL, NULL, &c);
    if (status != UCS_OK) {
        setup_failed("uct_cm_config_read(tcp)", status);
    }
    return uct_cm_open(component("self"), worker(), c, &cm);
}

/* buffer pool settings: the pool grows by at least one buffer and never
 * past its limit; other values make uct_iface_open fail */
static long open_with_config(const char *comp, const char *tl, const char *dev,
                             const char *k1, const char *v1, const char *k2,
                             const char *v2)
{
    uct_md_config_t *mc;
    uct_iface_config_t *ic;
    uct_iface_params_t params;
    uct_md_h m;
    uct_iface_h i;
    ucs_status_t status;

    status = uct_md_config_read(component(comp), NULL, NULL, &mc);
    if (status != UCS_OK) {
        setup_failed("uct_md_config_read", status);
    }
    status = uct_md_open(component(comp), comp, mc, &m);
    if (status != UCS_OK) {
        setup_failed("uct_md_open", status);
    }
    /* as a user sets them: UCX_<TL>_<KEY> in the environment (this child's) */
    setenv(k1, v1, 1);
    if (k2 != NULL) {
        setenv(k2, v2, 1);
    }
    status = uct_md_iface_config_read(m, tl, NULL, NULL, &ic);
    if (status != UCS_OK) {
        setup_failed("uct_md_iface_config_read", status);
    }
    iface_params(&params);
    params.mode.device.tl_name  = tl;
    params.mode.device.dev_name = dev;
    status = uct_iface_open(m, worker(), &params, ic, &i);
    if (status == UCS_OK) {
        uct_iface_close(i);
    }
    return status;
}

static long c_tcp_tx_max_bufs_below_grow(void)
{
    return open_with_config("tcp", "tcp", "lo", "UCX_TCP_TX_MAX_BUFS", "4", NULL, NULL);
}

static long c_tcp_rx_max_bufs_below_default_grow(void)
{
    /* a grow of 0 means 32 */
    return open_with_config("tcp", "tcp", "lo", "UCX_TCP_RX_BUFS_GROW", "0", "UCX_TCP_RX_MAX_BUFS", "16");
}

static long c_posix_rx_bufs_grow_zero(void)
{
    return open_with_config("posix", "posix", "memory", "UCX_POSIX_RX_BUFS_GROW", "0", NULL, NULL);
}

static long c_sysv_rx_max_bufs_below_grow(void)
{
    return open_with_config("sysv", "sysv", "memory", "UCX_SYSV_RX_MAX_BUFS", "100", NULL, NULL);
}

static long c_cma_tx_max_bufs_below_grow(void)
{
    return open_with_config("cma", "cma", "memory", "UCX_CMA_TX_MAX_BUFS", "2", NULL, NULL);
}

/* memory */
static long c_md_mem_query_null_address(void)
{
    uct_md_mem_attr_t attr;

    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCT_MD_MEM_ATTR_FIELD_MEM_TYPE;
    return uct_md_mem_query(md(), NULL, 4096, &attr);
}

static long c_md_mem_query_zero_length(void)
{
    uct_md_mem_attr_t attr;

    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCT_MD_MEM_ATTR_FIELD_MEM_TYPE;
    return uct_md_mem_query(md(), fx.buffer, 0, &attr);
}

static long c_md_mem_reg_null_address(void)
{
    uct_mem_h memh;
    return uct_md_mem_reg(md(), NULL, 4096, UCT_MD_MEM_ACCESS_ALL, &memh);
}

static long c_md_mem_reg_zero_length(void)
{
    uct_mem_h memh;
    return uct_md_mem_reg(md(), fx.buffer, 0, UCT_MD_MEM_ACCESS_ALL, &memh);
}

static long c_md_mem_reg_no_access_flags(void)
{
    uct_mem_h memh;
    return uct_md_mem_reg(md(), fx.buffer, 4096, 0, &memh);
}

static long c_md_mem_dereg_null_memh(void)
{
    return uct_md_mem_dereg(md(), NULL);
}

static long c_md_mem_advise_null_address(void)
{
    return uct_md_mem_advise(md(), NULL, NULL, 4096, UCT_MADV_WILLNEED);
}

static long c_md_mem_advise_zero_length(void)
{
    return uct_md_mem_advise(md(), NULL, fx.buffer, 0, UCT_MADV_WILLNEED);
}

static long c_md_mkey_pack_null_buffer(void)
{
    uct_mem_h memh;

    if (uct_md_mem_reg(md(), fx.buffer, 4096, UCT_MD_MEM_ACCESS_ALL, &memh) !=
        UCS_OK) {
        setup_failed("uct_md_mem_reg", UCS_ERR_IO_ERROR);
    }
    return uct_md_mkey_pack(md(), memh, NULL);
}

static long c_md_mkey_pack_null_memh(void)
{
    uint8_t buf[256];
    return uct_md_mkey_pack(md(), NULL, buf);
}

static long c_md_detect_memory_type_self(void)
{
    ucs_memory_type_t type;
    return uct_md_detect_memory_type(md(), fx.buffer, 4096, &type);
}

static long mem_alloc_heap(size_t length, const uct_mem_alloc_params_t *params,
                           const uct_alloc_method_t *methods, unsigned n)
{
    uct_allocated_memory_t mem;
    ucs_status_t status;

    status = uct_mem_alloc(length, methods, n, params, &mem);
    if (status == UCS_OK) {
        uct_mem_free(&mem);
    }
    return status;
}

static long c_mem_alloc_zero_length(void)
{
    uct_alloc_method_t method = UCT_ALLOC_METHOD_HEAP;
    uct_mem_alloc_params_t params;

    memset(&params, 0, sizeof(params));
    return mem_alloc_heap(0, &params, &method, 1);
}

static long c_mem_alloc_oversize_heap(void)
{
    uct_alloc_method_t method = UCT_ALLOC_METHOD_HEAP;
    uct_mem_alloc_params_t params;

    memset(&params, 0, sizeof(params));
    return mem_alloc_heap(SIZE_MAX / 2, &params, &method, 1);
}

static long c_mem_alloc_oversize_mmap(void)
{
    uct_alloc_method_t method = UCT_ALLOC_METHOD_MMAP;
    uct_mem_alloc_params_t params;

    memset(&params, 0, sizeof(params));
    return mem_alloc_heap(SIZE_MAX / 2, &params, &method, 1);
}

static long c_mem_alloc_no_methods(void)
{
    uct_alloc_method_t method = UCT_ALLOC_METHOD_HEAP;
    uct_mem_alloc_params_t params;

    memset(&params, 0, sizeof(params));
    return mem_alloc_heap(4096, &params, &method, 0);
}

static long c_mem_alloc_md_method_without_mds(void)
{
    uct_alloc_method_t method = UCT_ALLOC_METHOD_MD;
    uct_mem_alloc_params_t params;

    memset(&params, 0, sizeof(params));
    return mem_alloc_heap(4096, &params, &method, 1);
}

static long c_mem_alloc_no_access_flags(void)
{
    uct_alloc_method_t method = UCT_ALLOC_METHOD_HEAP;
    uct_mem_alloc_params_t params;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_MEM_ALLOC_PARAM_FIELD_FLAGS;
    params.flags      = 0;
    return mem_alloc_heap(4096, &params, &method, 1);
}

static long c_mem_alloc_fixed_without_address(void)
{
    uct_alloc_method_t method = UCT_ALLOC_METHOD_MMAP;
    uct_mem_alloc_params_t params;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_MEM_ALLOC_PARAM_FIELD_FLAGS;
    params.flags      = UCT_MD_MEM_ACCESS_ALL | UCT_MD_MEM_FLAG_FIXED;
    return mem_alloc_heap(4096, &params, &method, 1);
}

static long c_mem_alloc_fixed_unaligned_address(void)
{
    uct_alloc_method_t method = UCT_ALLOC_METHOD_MMAP;
    uct_mem_alloc_params_t params;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_MEM_ALLOC_PARAM_FIELD_FLAGS |
                        UCT_MEM_ALLOC_PARAM_FIELD_ADDRESS;
    params.flags      = UCT_MD_MEM_ACCESS_ALL | UCT_MD_MEM_FLAG_FIXED;
    params.address    = (void*)(uintptr_t)0x10000123;
    return mem_alloc_heap(4096, &params, &method, 1);
}

static long c_mem_alloc_unknown_field_bits(void)
{
    uct_alloc_method_t method = UCT_ALLOC_METHOD_HEAP;
    uct_mem_alloc_params_t params;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCS_BIT(63) | UCS_BIT(40);
    return mem_alloc_heap(4096, &params, &method, 1);
}

/* remote keys */
static long c_rkey_unpack_garbage_sysv(void)
{
    uint8_t buf[64];
    uct_rkey_bundle_t rkey;

    memset(buf, 0xff, sizeof(buf)); /* shmid -1 */
    return uct_rkey_unpack(component("sysv"), buf, &rkey);
}

/* posix keys are {seg_id u64, address u64, length u64} [+ directory] */
static void posix_key(uint8_t *buf, size_t max, uint64_t seg_id,
                      uint64_t length, const char *dir)
{
    uint64_t address = 0x10000000;

    memset(buf, 0, max);
    memcpy(buf, &seg_id, 8);
    memcpy(buf + 8, &address, 8);
    memcpy(buf + 16, &length, 8);
    strncpy((char*)buf + 24, dir, max - 25);
}

static long c_rkey_unpack_garbage_posix_file(void)
{
    uint8_t buf[128];
    uct_rkey_bundle_t rkey;

    /* no flag bits: the key names a file in a directory that does not exist */
    posix_key(buf, sizeof(buf), 0x2a, 4096, "/nonexistent-uct-rs-dir");
    return uct_rkey_unpack(component("posix"), buf, &rkey);
}

static long c_rkey_unpack_garbage_posix_procfs(void)
{
    uint8_t buf[128];
    uct_rkey_bundle_t rkey;

    /* PROCFS flag (bit 63) with pid 0x3fffffff, beyond any pid_max */
    posix_key(buf, sizeof(buf), (1ull << 63) | (5ull << 30) | 0x3fffffff,
              4096, "");
    return uct_rkey_unpack(component("posix"), buf, &rkey);
}

static long c_rkey_unpack_garbage_posix_zero_length(void)
{
    uint8_t buf[128];
    uct_rkey_bundle_t rkey;

    posix_key(buf, sizeof(buf), 0x2a, 0, "/nonexistent-uct-rs-dir");
    return uct_rkey_unpack(component("posix"), buf, &rkey);
}

static long c_rkey_ptr_self(void)
{
    uct_rkey_bundle_t rkey;
    void *ptr;

    rkey.rkey   = 0;
    rkey.handle = NULL;
    rkey.type   = NULL;
    return uct_rkey_ptr(component("self"), &rkey, (uintptr_t)fx.buffer, &ptr);
}

/* data path on the self ep */
static long c_ep_am_short_id_32(void)
{
    uint64_t payload = 0;

    uct_iface_set_am_handler(iface(), 3, am_cb, NULL, 0);
    return uct_ep_am_short(ep(), 32, 0, &payload, sizeof(payload));
}

static long c_ep_am_bcopy_id_32(void)
{
    return uct_ep_am_bcopy(ep(), 32, pack_cb, NULL, 0);
}

static long c_ep_am_short_oversize(void)
{
    static uint8_t payload[65536];
    uct_iface_attr_t attr;

    if (uct_iface_query(iface(), &attr) != UCS_OK) {
        setup_failed("uct_iface_query", UCS_ERR_IO_ERROR);
    }
    uct_iface_set_am_handler(iface(), 3, am_cb, NULL, 0);
    /* header (8) + payload is one byte more than am.max_short */
    return uct_ep_am_short(ep(), 3, 0, payload,
                           (unsigned)(attr.cap.am.max_short - 8 + 1));
}

static long c_ep_am_short_iov_oversize(void)
{
    static uint8_t payload[65536];
    uct_iface_attr_t attr;
    uct_iov_t iov;

    if (uct_iface_query(iface(), &attr) != UCS_OK) {
        setup_failed("uct_iface_query", UCS_ERR_IO_ERROR);
    }
    uct_iface_set_am_handler(iface(), 3, am_cb, NULL, 0);
    iov.buffer = payload;
    iov.length = attr.cap.am.max_short + 1;
    iov.memh   = UCT_MEM_HANDLE_NULL;
    iov.stride = 0;
    iov.count  = 1;
    return uct_ep_am_short_iov(ep(), 3, &iov, 1);
}

static long c_ep_atomic64_fetch_bad_opcode(void)
{
    uint64_t target = 0, result;
    return uct_ep_atomic64_fetch(ep(), (uct_atomic_op_t)99, 1, &result,
                                 (uintptr_t)&target, 0, NULL);
}

static long c_ep_atomic64_post_swap(void)
{
    uint64_t target = 0;
    return uct_ep_atomic64_post(ep(), UCT_ATOMIC_OP_SWAP, 1,
                                (uintptr_t)&target, 0);
}

static long c_ep_atomic32_post_cswap(void)
{
    uint32_t target = 0;
    return uct_ep_atomic32_post(ep(), UCT_ATOMIC_OP_CSWAP, 1,
                                (uintptr_t)&target, 0);
}

/* operations the self transport does not implement */
static long c_ep_am_zcopy_self(void)
{
    uct_iov_t iov = { fx.buffer, 16, UCT_MEM_HANDLE_NULL, 0, 1 };
    return uct_ep_am_zcopy(ep(), 3, NULL, 0, &iov, 1, 0, NULL);
}

static long c_ep_put_zcopy_self(void)
{
    uct_iov_t iov = { fx.buffer, 16, UCT_MEM_HANDLE_NULL, 0, 1 };
    return uct_ep_put_zcopy(ep(), &iov, 1, (uintptr_t)(fx.buffer + 1024), 0,
                            NULL);
}

static long c_ep_get_zcopy_self(void)
{
    uct_iov_t iov = { fx.buffer, 16, UCT_MEM_HANDLE_NULL, 0, 1 };
    return uct_ep_get_zcopy(ep(), &iov, 1, (uintptr_t)(fx.buffer + 1024), 0,
                            NULL);
}

static long c_ep_get_short_self(void)
{
    return uct_ep_get_short(ep(), fx.buffer, 16, (uintptr_t)(fx.buffer + 1024),
                            0);
}

static long c_ep_tag_eager_short_self(void)
{
    return uct_ep_tag_eager_short(ep(), 1, fx.buffer, 16);
}

static long c_ep_get_address_self(void)
{
    uint8_t addr[64];
    return uct_ep_get_address(ep(), (uct_ep_addr_t*)addr);
}

static long c_ep_connect_to_ep_self(void)
{
    uint8_t addr[64] = {0};
    return uct_ep_connect_to_ep(ep(), (uct_device_addr_t*)fx.dev_addr,
                                (uct_ep_addr_t*)addr);
}

static long c_iface_event_fd_get_self(void)
{
    int fd;
    return uct_iface_event_fd_get(iface(), &fd);
}

static long c_iface_event_arm_self(void)
{
    return uct_iface_event_arm(iface(), UCT_EVENT_RECV);
}

/* ---------------------------------------------------------------------- */
/* Handles that are not live objects: closed twice, released, never       */
/* initialised, or of another kind.  Each case calls bad_call_begin()     */
/* right before the bad call, so that only that call's log lines count.   */

/* A block of heap memory full of garbage (as an uninitialised pointer
 * would name): rand() bytes from a fixed seed, so that pointers read out of
 * it are non-canonical and a library that follows them faults at once. */
static void *garbage_block(void)
{
    unsigned char *p = malloc(4096);
    size_t i;

    if (p == NULL) {
        setup_failed("malloc", UCS_ERR_NO_MEMORY);
    }
    srand(12345);
    for (i = 0; i < 4096; ++i) {
        p[i] = (unsigned char)rand();
    }
    return p;
}

/* The same on the stack: the caller's array, filled with a pattern. */
#define STACK_GARBAGE(_name) \
    uint64_t _name[512]; \
    memset(_name, 0xa5, sizeof(_name))

static uct_component_h tcp_component(void)
{
    return component("tcp");
}

static uct_cm_h cm(void)
{
    uct_cm_config_t *c;
    ucs_status_t status;
    uct_cm_h h;

    status = uct_cm_config_read(tcp_component(), NULL, NULL, &c);
    if (status != UCS_OK) {
        setup_failed("uct_cm_config_read(tcp)", status);
    }
    status = uct_cm_open(tcp_component(), worker(), c, &h);
    if (status != UCS_OK) {
        setup_failed("uct_cm_open(tcp)", status);
    }
    uct_config_release(c);
    return h;
}

static void conn_request_cb(uct_listener_h listener, void *arg,
                            const uct_cm_listener_conn_request_args_t *args)
{
    (void)listener;
    (void)arg;
    (void)args;
}

static uct_listener_h listener(void)
{
    uct_listener_params_t params;
    struct sockaddr_in sin;
    ucs_status_t status;
    uct_listener_h l;

    memset(&sin, 0, sizeof(sin));
    sin.sin_family      = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sin.sin_port        = 0; /* any free port */
    memset(&params, 0, sizeof(params));
    params.field_mask      = UCT_LISTENER_PARAM_FIELD_CONN_REQUEST_CB;
    params.conn_request_cb = conn_request_cb;
    status = uct_listener_create(cm(), (struct sockaddr*)&sin, sizeof(sin),
                                 &params, &l);
    if (status != UCS_OK) {
        setup_failed("uct_listener_create", status);
    }
    return l;
}

/* closed, destroyed or released twice */
static long c_iface_close_twice(void)
{
    uct_iface_h i = iface();

    uct_iface_close(i);
    bad_call_begin();
    uct_iface_close(i);
    return UCS_OK;
}

static long c_md_close_twice(void)
{
    uct_md_h m = md();

    uct_md_close(m);
    bad_call_begin();
    uct_md_close(m);
    return UCS_OK;
}

static long c_worker_destroy_twice(void)
{
    uct_worker_h w = worker();

    uct_worker_destroy(w);
    bad_call_begin();
    uct_worker_destroy(w);
    return UCS_OK;
}

static long c_config_release_twice(void)
{
    uct_md_config_t *c = md_config();

    uct_config_release(c);
    bad_call_begin();
    uct_config_release(c);
    return UCS_OK;
}

static long c_cm_close_twice(void)
{
    uct_cm_h c = cm();

    uct_cm_close(c);
    bad_call_begin();
    uct_cm_close(c);
    return UCS_OK;
}

static long c_listener_destroy_twice(void)
{
    uct_listener_h l = listener();

    uct_listener_destroy(l);
    bad_call_begin();
    uct_listener_destroy(l);
    return UCS_OK;
}

static long c_component_list_release_twice(void)
{
    uct_component_h *list;
    unsigned n;

    if (uct_query_components(&list, &n) != UCS_OK) {
        setup_failed("uct_query_components", UCS_ERR_IO_ERROR);
    }
    uct_release_component_list(list);
    bad_call_begin();
    uct_release_component_list(list);
    return UCS_OK;
}

static long c_tl_resource_list_release_twice(void)
{
    uct_tl_resource_desc_t *list;
    unsigned n;

    if (uct_md_query_tl_resources(md(), &list, &n) != UCS_OK) {
        setup_failed("uct_md_query_tl_resources", UCS_ERR_IO_ERROR);
    }
    uct_release_tl_resource_list(list);
    bad_call_begin();
    uct_release_tl_resource_list(list);
    return UCS_OK;
}

/* posix: a real remote key, unpacked once and released twice */
static long c_rkey_release_twice_posix(void)
{
    uct_alloc_method_t method = UCT_ALLOC_METHOD_MD;
    uct_mem_alloc_params_t params;
    uct_allocated_memory_t mem;
    uct_md_config_t *mc;
    uct_rkey_bundle_t rkey;
    uint8_t packed[256];
    ucs_status_t status;
    uct_md_h m;

    if ((uct_md_config_read(component("posix"), NULL, NULL, &mc) != UCS_OK) ||
        (uct_md_open(component("posix"), "posix", mc, &m) != UCS_OK)) {
        setup_failed("uct_md_open(posix)", UCS_ERR_IO_ERROR);
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_MEM_ALLOC_PARAM_FIELD_FLAGS |
                        UCT_MEM_ALLOC_PARAM_FIELD_MDS;
    params.flags      = UCT_MD_MEM_ACCESS_ALL;
    params.mds.mds    = &m;
    params.mds.count  = 1;
    status = uct_mem_alloc(4096, &method, 1, &params, &mem);
    if (status != UCS_OK) {
        setup_failed("uct_mem_alloc(posix)", status);
    }
    status = uct_md_mkey_pack(m, mem.memh, packed);
    if (status != UCS_OK) {
        setup_failed("uct_md_mkey_pack(posix)", status);
    }
    status = uct_rkey_unpack(component("posix"), packed, &rkey);
    if (status != UCS_OK) {
        setup_failed("uct_rkey_unpack(posix)", status);
    }
    status = uct_rkey_release(component("posix"), &rkey);
    if (status != UCS_OK) {
        setup_failed("uct_rkey_release(posix)", status);
    }
    bad_call_begin();
    status = uct_rkey_release(component("posix"), &rkey);
    uct_mem_free(&mem);
    return status;
}

/* used after release or close */
static long c_config_modify_after_release(void)
{
    uct_iface_config_t *c = iface_config();

    uct_config_release(c);
    bad_call_begin();
    return uct_config_modify(c, "SEG_SIZE", "4k");
}

static long c_config_get_after_release(void)
{
    uct_iface_config_t *c = iface_config();
    char value[64];

    uct_config_release(c);
    bad_call_begin();
    return uct_config_get(c, "SEG_SIZE", value, sizeof(value));
}

static long c_md_open_released_config(void)
{
    uct_md_config_t *c = md_config();
    uct_md_h m;

    uct_config_release(c);
    bad_call_begin();
    return uct_md_open(component("self"), "self", c, &m);
}

static long c_iface_open_released_config(void)
{
    uct_iface_config_t *c = iface_config();
    uct_iface_params_t params;
    uct_iface_h i;

    uct_config_release(c);
    iface_params(&params);
    bad_call_begin();
    return uct_iface_open(md(), worker(), &params, c, &i);
}

static long c_iface_query_after_close(void)
{
    uct_iface_h i = iface();
    uct_iface_attr_t attr;

    uct_iface_close(i);
    bad_call_begin();
    return uct_iface_query(i, &attr);
}

static long c_set_am_handler_after_close(void)
{
    uct_iface_h i = iface();

    uct_iface_close(i);
    bad_call_begin();
    return uct_iface_set_am_handler(i, 3, am_cb, NULL, 0);
}

static long c_ep_create_on_closed_iface(void)
{
    uct_ep_params_t params;
    uct_ep_h e;

    ep_params(&params);
    uct_iface_close(params.iface);
    bad_call_begin();
    return uct_ep_create(&params, &e);
}

static long c_md_query_after_close(void)
{
    uct_md_h m = md();
    uct_md_attr_t attr;

    uct_md_close(m);
    bad_call_begin();
    return uct_md_query(m, &attr);
}

static long c_md_mem_reg_after_close(void)
{
    uct_md_h m = md();
    uct_mem_h memh;

    uct_md_close(m);
    bad_call_begin();
    return uct_md_mem_reg(m, fx.buffer, 4096, UCT_MD_MEM_ACCESS_ALL, &memh);
}

static long c_iface_open_destroyed_worker(void)
{
    uct_iface_params_t params;
    uct_worker_h w = worker();
    uct_iface_h i;

    iface_config();
    md();
    uct_worker_destroy(w);
    iface_params(&params);
    bad_call_begin();
    return uct_iface_open(md(), w, &params, iface_config(), &i);
}

static long c_progress_register_destroyed_worker(void)
{
    uct_worker_h w = worker();
    uct_worker_cb_id_t id = UCS_CALLBACKQ_ID_NULL;

    uct_worker_destroy(w);
    bad_call_begin();
    uct_worker_progress_register_safe(w, (ucs_callback_t)am_cb, NULL, 0, &id);
    return UCS_OK;
}

static long c_listener_query_after_destroy(void)
{
    uct_listener_h l = listener();
    uct_listener_attr_t attr;

    uct_listener_destroy(l);
    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCT_LISTENER_ATTR_FIELD_SOCKADDR;
    bad_call_begin();
    return uct_listener_query(l, &attr);
}

/* uninitialised pointers: heap garbage */
static long c_md_close_heap_garbage(void)
{
    void *p = garbage_block();

    bad_call_begin();
    uct_md_close((uct_md_h)p);
    return UCS_OK;
}

static long c_md_query_heap_garbage(void)
{
    void *p = garbage_block();
    uct_md_attr_t attr;

    bad_call_begin();
    return uct_md_query((uct_md_h)p, &attr);
}

static long c_iface_close_heap_garbage(void)
{
    void *p = garbage_block();

    bad_call_begin();
    uct_iface_close((uct_iface_h)p);
    return UCS_OK;
}

static long c_iface_query_heap_garbage(void)
{
    void *p = garbage_block();
    uct_iface_attr_t attr;

    bad_call_begin();
    return uct_iface_query((uct_iface_h)p, &attr);
}

static long c_worker_destroy_heap_garbage(void)
{
    void *p = garbage_block();

    bad_call_begin();
    uct_worker_destroy((uct_worker_h)p);
    return UCS_OK;
}

static long c_iface_open_heap_garbage_worker(void)
{
    uct_iface_params_t params;
    void *p = garbage_block();
    uct_iface_h i;

    iface_params(&params);
    md();
    iface_config();
    bad_call_begin();
    return uct_iface_open(md(), (uct_worker_h)p, &params, iface_config(), &i);
}

static long c_config_release_heap_garbage(void)
{
    void *p = garbage_block();

    bad_call_begin();
    uct_config_release((char*)p + 64);
    return UCS_OK;
}

static long c_config_modify_heap_garbage(void)
{
    void *p = garbage_block();

    bad_call_begin();
    return uct_config_modify((char*)p + 64, "SEG_SIZE", "4k");
}

static long c_cm_close_heap_garbage(void)
{
    void *p = garbage_block();

    bad_call_begin();
    uct_cm_close((uct_cm_h)p);
    return UCS_OK;
}

static long c_cm_query_heap_garbage(void)
{
    void *p = garbage_block();
    uct_cm_attr_t attr;

    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCT_CM_ATTR_FIELD_MAX_CONN_PRIV;
    bad_call_begin();
    return uct_cm_query((uct_cm_h)p, &attr);
}

static long c_listener_destroy_heap_garbage(void)
{
    void *p = garbage_block();

    bad_call_begin();
    uct_listener_destroy((uct_listener_h)p);
    return UCS_OK;
}

static long c_rkey_release_heap_garbage_posix(void)
{
    uct_rkey_bundle_t *b = garbage_block();

    bad_call_begin();
    return uct_rkey_release(component("posix"), b);
}

static long c_rkey_ptr_heap_garbage_posix(void)
{
    uct_rkey_bundle_t *b = garbage_block();
    void *ptr;

    bad_call_begin();
    return uct_rkey_ptr(component("posix"), b, (uintptr_t)fx.buffer, &ptr);
}

/* uninitialised pointers: the caller's stack */
static long c_md_close_stack_garbage(void)
{
    STACK_GARBAGE(s);

    bad_call_begin();
    uct_md_close((uct_md_h)s);
    return UCS_OK;
}

static long c_iface_close_stack_garbage(void)
{
    STACK_GARBAGE(s);

    bad_call_begin();
    uct_iface_close((uct_iface_h)s);
    return UCS_OK;
}

static long c_iface_get_address_stack_garbage(void)
{
    uint8_t addr[64];
    STACK_GARBAGE(s);

    bad_call_begin();
    return uct_iface_get_address((uct_iface_h)s, (uct_iface_addr_t*)addr);
}

static long c_worker_destroy_stack_garbage(void)
{
    STACK_GARBAGE(s);

    bad_call_begin();
    uct_worker_destroy((uct_worker_h)s);
    return UCS_OK;
}

static long c_config_release_stack_garbage(void)
{
    STACK_GARBAGE(s);

    bad_call_begin();
    uct_config_release(&s[8]);
    return UCS_OK;
}

static long c_cm_close_stack_garbage(void)
{
    STACK_GARBAGE(s);

    bad_call_begin();
    uct_cm_close((uct_cm_h)s);
    return UCS_OK;
}

static long c_listener_reject_stack_garbage(void)
{
    STACK_GARBAGE(s);

    bad_call_begin();
    return uct_listener_reject((uct_listener_h)s, (uct_conn_request_h)s);
}

static long c_rkey_release_stack_garbage_sysv(void)
{
    uct_rkey_bundle_t b;

    memset(&b, 0xa5, sizeof(b));
    bad_call_begin();
    return uct_rkey_release(component("sysv"), &b);
}

static long c_tl_resource_list_release_stack(void)
{
    STACK_GARBAGE(s);

    bad_call_begin();
    uct_release_tl_resource_list((uct_tl_resource_desc_t*)s);
    return UCS_OK;
}

/* live objects of another kind */
static long c_iface_close_on_md(void)
{
    uct_md_h m = md();

    bad_call_begin();
    uct_iface_close((uct_iface_h)m);
    return UCS_OK;
}

static long c_iface_query_on_md(void)
{
    uct_md_h m = md();
    uct_iface_attr_t attr;

    bad_call_begin();
    return uct_iface_query((uct_iface_h)m, &attr);
}

static long c_md_close_on_worker(void)
{
    uct_worker_h w = worker();

    bad_call_begin();
    uct_md_close((uct_md_h)w);
    return UCS_OK;
}

static long c_worker_destroy_on_iface(void)
{
    uct_iface_h i = iface();

    bad_call_begin();
    uct_worker_destroy((uct_worker_h)i);
    return UCS_OK;
}

static long c_config_release_on_iface(void)
{
    uct_iface_h i = iface();

    bad_call_begin();
    uct_config_release(i);
    return UCS_OK;
}

static long c_iface_open_config_as_worker(void)
{
    uct_iface_params_t params;
    uct_iface_h i;

    iface_params(&params);
    bad_call_begin();
    return uct_iface_open(md(), (uct_worker_h)md_config(), &params,
                          iface_config(), &i);
}

static long c_md_open_md_as_config(void)
{
    uct_md_h m;

    md();
    bad_call_begin();
    return uct_md_open(component("self"), "self", (uct_md_config_t*)md(), &m);
}

static long c_cm_close_on_md(void)
{
    uct_md_h m = md();

    bad_call_begin();
    uct_cm_close((uct_cm_h)m);
    return UCS_OK;
}

static long c_listener_destroy_on_cm(void)
{
    uct_cm_h c = cm();

    bad_call_begin();
    uct_listener_destroy((uct_listener_h)c);
    return UCS_OK;
}

/* ---------------------------------------------------------------------- */

#define CASE_EXACT(_name, _status, _note) \
    { #_name, EXACT, _status, c_##_name, _note, _status, NULL }
#define CASE_NEEDS(_name, _component, _status, _note) \
    { #_name, EXACT, _status, c_##_name, _note, _status, _component }
#define CASE_STRICTER(_name, _orig, _ours, _note) \
    { #_name, STRICTER, _orig, c_##_name, _note, _ours, NULL }
#define CASE_CRASH(_name, _note) \
    { #_name, ORIG_MAY_CRASH, UCS_OK, c_##_name, _note, UCS_OK, NULL }
#define CASE_HANDLE(_name, _note) \
    { #_name, BAD_HANDLE, UCS_OK, c_##_name, _note, UCS_OK, NULL }
#define CASE_HANDLE_VOID(_name, _note) \
    { #_name, BAD_HANDLE_VOID, UCS_OK, c_##_name, _note, UCS_OK, NULL }
#define CASE_HANDLE_NEEDS(_name, _component, _note) \
    { #_name, BAD_HANDLE, UCS_OK, c_##_name, _note, UCS_OK, _component }
#define CASE_HANDLE_VOID_NEEDS(_name, _component, _note) \
    { #_name, BAD_HANDLE_VOID, UCS_OK, c_##_name, _note, UCS_OK, _component }

static const bad_case_t cases[] = {
    /* NULL out-pointers and parameter structs */
    CASE_CRASH(query_components_null_list, "SIGSEGV"),
    CASE_CRASH(query_components_null_count, "SIGSEGV"),
    CASE_CRASH(component_query_null_attr, "SIGSEGV"),
    CASE_CRASH(component_query_null_resources, "SIGSEGV"),
    CASE_CRASH(md_config_read_null_out, "SIGSEGV"),
    CASE_CRASH(md_open_null_out, "SIGSEGV"),
    CASE_CRASH(md_open_null_config, "SIGSEGV"),
    CASE_CRASH(md_query_null_attr, "SIGSEGV"),
    CASE_CRASH(md_query_tl_resources_null_list, "SIGSEGV"),
    CASE_CRASH(md_query_tl_resources_null_count, "SIGSEGV"),
    CASE_CRASH(md_iface_config_read_null_out, "SIGSEGV"),
    CASE_CRASH(worker_create_null_out, "SIGSEGV"),
    CASE_CRASH(iface_open_null_out, "SIGSEGV"),
    CASE_CRASH(iface_open_null_params, "SIGSEGV"),
    CASE_CRASH(iface_open_null_config, "SIGSEGV"),
    CASE_CRASH(iface_open_null_worker, "SIGSEGV"),
    CASE_CRASH(iface_query_null_attr, "SIGSEGV"),
    CASE_CRASH(iface_get_address_null, "SIGSEGV"),
    CASE_CRASH(ep_create_null_out, "SIGSEGV"),
    CASE_CRASH(ep_create_null_params, "SIGSEGV"),
    CASE_CRASH(md_mem_reg_null_memh_out, "SIGSEGV"),
    CASE_CRASH(rkey_unpack_null_bundle, "SIGSEGV"),
    CASE_CRASH(mem_alloc_null_params, "SIGSEGV"),
    CASE_CRASH(mem_alloc_null_out, "SIGSEGV"),
    CASE_EXACT(worker_create_null_async, UCS_ERR_INVALID_PARAM, ""),

    /* unknown names */
    CASE_STRICTER(md_open_unknown_name, UCS_OK, UCS_ERR_NO_DEVICE,
                  "original ignores the md name"),
    CASE_EXACT(md_iface_config_read_unknown_tl, UCS_ERR_NO_DEVICE, ""),
    CASE_EXACT(md_iface_config_read_null_tl, UCS_ERR_NO_DEVICE, ""),
    CASE_EXACT(md_iface_config_read_foreign_tl, UCS_ERR_NO_DEVICE, ""),
    CASE_EXACT(iface_open_unknown_tl, UCS_ERR_NO_DEVICE, ""),
    CASE_EXACT(iface_open_null_tl, UCS_ERR_NO_DEVICE, ""),
    CASE_EXACT(iface_open_foreign_tl, UCS_ERR_NO_DEVICE, ""),
    CASE_STRICTER(iface_open_unknown_device, UCS_OK, UCS_ERR_NO_DEVICE,
                  "original ignores the device name"),

    /* uct_iface_open parameters */
    CASE_EXACT(iface_open_no_open_mode_field, UCS_ERR_INVALID_PARAM, ""),
    CASE_EXACT(iface_open_device_mode_without_field, UCS_ERR_INVALID_PARAM,
               ""),
    CASE_EXACT(iface_open_zero_open_mode, UCS_ERR_INVALID_PARAM, ""),
    CASE_EXACT(iface_open_unknown_open_mode, UCS_ERR_INVALID_PARAM, ""),
    CASE_EXACT(iface_open_sockaddr_mode_on_self, UCS_ERR_NO_DEVICE, ""),
    CASE_EXACT(iface_open_align_offset_without_alignment,
               UCS_ERR_INVALID_PARAM, ""),
    CASE_EXACT(iface_open_multi_thread_worker, UCS_ERR_INVALID_PARAM, ""),
    CASE_STRICTER(iface_open_unknown_field_bits, UCS_OK, UCS_ERR_INVALID_PARAM,
                  "original ignores unknown bits"),

    /* AM handlers */
    CASE_EXACT(set_am_handler_id_32, UCS_ERR_INVALID_PARAM, ""),
    CASE_EXACT(set_am_handler_id_255, UCS_ERR_INVALID_PARAM, ""),
    CASE_EXACT(set_am_handler_null_cb_id_32, UCS_ERR_INVALID_PARAM, ""),
    CASE_EXACT(set_am_handler_reserved_flag, UCS_ERR_INVALID_PARAM, ""),

    /* endpoints */
    CASE_EXACT(ep_create_no_iface_no_cm, UCS_ERR_INVALID_PARAM, ""),
    CASE_EXACT(ep_create_empty_field_mask, UCS_ERR_INVALID_PARAM, ""),
    CASE_STRICTER(ep_create_unknown_field_bits, UCS_OK, UCS_ERR_INVALID_PARAM,
                  "original ignores unknown bits"),
    CASE_STRICTER(component_query_unknown_field_bits, UCS_OK,
                  UCS_ERR_INVALID_PARAM, "original ignores unknown bits"),

    /* configuration */
    CASE_EXACT(config_modify_unknown_key, UCS_ERR_NO_ELEM, ""),
    CASE_EXACT(config_modify_bad_value, UCS_ERR_INVALID_PARAM, ""),
    CASE_EXACT(config_modify_prefixed_key, UCS_ERR_NO_ELEM, ""),
    CASE_EXACT(config_modify_md_unknown_key, UCS_ERR_NO_ELEM, ""),
    CASE_EXACT(config_get_unknown_key, UCS_ERR_NO_ELEM, ""),
    CASE_EXACT(cm_config_read_on_self, UCS_ERR_INVALID_PARAM, ""),
    CASE_NEEDS(cm_open_on_self, "tcp", UCS_ERR_UNSUPPORTED, ""),
    CASE_NEEDS(tcp_tx_max_bufs_below_grow, "tcp", UCS_ERR_INVALID_PARAM, ""),
    CASE_NEEDS(tcp_rx_max_bufs_below_default_grow, "tcp", UCS_ERR_INVALID_PARAM, ""),
    CASE_NEEDS(posix_rx_bufs_grow_zero, "posix", UCS_ERR_INVALID_PARAM, ""),
    CASE_NEEDS(sysv_rx_max_bufs_below_grow, "sysv", UCS_ERR_INVALID_PARAM, ""),
    CASE_NEEDS(cma_tx_max_bufs_below_grow, "cma", UCS_ERR_INVALID_PARAM, ""),

    /* memory */
    CASE_CRASH(md_mem_query_null_address, "SIGSEGV (self md has no mem_query)"),
    CASE_CRASH(md_mem_query_zero_length, "SIGSEGV (self md has no mem_query)"),
    CASE_EXACT(md_mem_reg_null_address, UCS_ERR_INVALID_PARAM, ""),
    CASE_EXACT(md_mem_reg_zero_length, UCS_ERR_INVALID_PARAM, ""),
#if UCT_VERNO_MINOR >= 15
    /* From UCX 1.15 a registration needs no access flag. */
    CASE_EXACT(md_mem_reg_no_access_flags, UCS_OK, ""),
#else
    CASE_EXACT(md_mem_reg_no_access_flags, UCS_ERR_INVALID_PARAM, ""),
#endif
    CASE_EXACT(md_mem_dereg_null_memh, UCS_ERR_INVALID_PARAM, ""),
    CASE_EXACT(md_mem_advise_null_address, UCS_ERR_INVALID_PARAM, ""),
    CASE_EXACT(md_mem_advise_zero_length, UCS_ERR_INVALID_PARAM, ""),
    CASE_EXACT(md_mkey_pack_null_buffer, UCS_ERR_INVALID_PARAM, ""),
    CASE_EXACT(md_mkey_pack_null_memh, UCS_ERR_INVALID_PARAM, ""),
    CASE_EXACT(md_detect_memory_type_self, UCS_ERR_UNSUPPORTED, ""),
    CASE_EXACT(mem_alloc_zero_length, UCS_ERR_INVALID_PARAM, ""),
    CASE_EXACT(mem_alloc_oversize_heap, UCS_ERR_NO_MEMORY, ""),
    CASE_EXACT(mem_alloc_oversize_mmap, UCS_ERR_NO_MEMORY, ""),
    CASE_EXACT(mem_alloc_no_methods, UCS_ERR_NO_MEMORY, ""),
    CASE_EXACT(mem_alloc_md_method_without_mds, UCS_ERR_NO_MEMORY, ""),
#if UCT_VERNO_MINOR >= 15
    CASE_EXACT(mem_alloc_no_access_flags, UCS_OK, ""),
#else
    CASE_EXACT(mem_alloc_no_access_flags, UCS_ERR_INVALID_PARAM, ""),
#endif
    CASE_EXACT(mem_alloc_fixed_without_address, UCS_ERR_INVALID_PARAM, ""),
    CASE_EXACT(mem_alloc_fixed_unaligned_address, UCS_ERR_INVALID_PARAM, ""),
    CASE_STRICTER(mem_alloc_unknown_field_bits, UCS_OK, UCS_ERR_INVALID_PARAM,
                  "original ignores unknown bits"),

    /* remote keys */
    CASE_NEEDS(rkey_unpack_garbage_sysv, "sysv", UCS_ERR_SHMEM_SEGMENT, ""),
    CASE_NEEDS(rkey_unpack_garbage_posix_file, "posix", UCS_ERR_SHMEM_SEGMENT,
               ""),
    CASE_NEEDS(rkey_unpack_garbage_posix_procfs, "posix", UCS_ERR_SHMEM_SEGMENT,
               ""),
    { "rkey_unpack_garbage_posix_zero_length", ORIG_MAY_CRASH, UCS_OK,
      c_rkey_unpack_garbage_posix_zero_length, "SIGABRT (assertion length > 0)",
      UCS_OK, "posix" },
#if UCT_VERNO_MINOR >= 15
    /* From UCX 1.15 self keys map to pointers. */
    CASE_EXACT(rkey_ptr_self, UCS_OK, ""),
#else
    CASE_EXACT(rkey_ptr_self, UCS_ERR_UNSUPPORTED, ""),
#endif

    /* data path */
    CASE_EXACT(ep_am_short_id_32, UCS_ERR_INVALID_PARAM, ""),
    CASE_EXACT(ep_am_bcopy_id_32, UCS_ERR_INVALID_PARAM, ""),
    CASE_EXACT(ep_am_short_oversize, UCS_ERR_INVALID_PARAM, ""),
    CASE_EXACT(ep_am_short_iov_oversize, UCS_ERR_INVALID_PARAM, ""),
    CASE_CRASH(ep_atomic64_post_swap, "SIGABRT (assertion: incorrect opcode)"),
    CASE_CRASH(ep_atomic32_post_cswap, "SIGABRT (assertion: incorrect opcode)"),
    CASE_CRASH(ep_atomic64_fetch_bad_opcode,
               "SIGABRT (assertion: incorrect opcode)"),
    CASE_CRASH(ep_am_zcopy_self, "SIGSEGV (NULL ops slot)"),
    CASE_CRASH(ep_put_zcopy_self, "SIGSEGV (NULL ops slot)"),
    CASE_CRASH(ep_get_zcopy_self, "SIGSEGV (NULL ops slot)"),
    CASE_CRASH(ep_get_short_self, "SIGSEGV (NULL ops slot)"),
    CASE_CRASH(ep_tag_eager_short_self, "SIGSEGV (NULL ops slot)"),
    CASE_CRASH(ep_get_address_self, "SIGSEGV (NULL ops slot)"),
    CASE_CRASH(ep_connect_to_ep_self, "SIGSEGV (NULL ops slot)"),
    CASE_CRASH(iface_event_fd_get_self, "SIGSEGV (NULL ops slot)"),
    CASE_CRASH(iface_event_arm_self, "SIGSEGV (NULL ops slot)"),

    /* handles: closed, destroyed or released twice */
    CASE_HANDLE_VOID(iface_close_twice, "SIGABRT (double free)"),
    CASE_HANDLE_VOID(md_close_twice,
                "returns, nothing logged (frees it again)"),
    CASE_HANDLE_VOID(worker_destroy_twice, "SIGABRT (double free)"),
    CASE_HANDLE_VOID(config_release_twice, "SIGSEGV"),
    CASE_HANDLE_VOID_NEEDS(cm_close_twice, "tcp", "SIGABRT (double free)"),
    CASE_HANDLE_VOID_NEEDS(listener_destroy_twice, "tcp", "SIGSEGV"),
    CASE_HANDLE_VOID(component_list_release_twice, "SIGABRT (double free)"),
    CASE_HANDLE_VOID(tl_resource_list_release_twice, "SIGABRT (double free)"),
    CASE_HANDLE_NEEDS(rkey_release_twice_posix, "posix",
                "UCS_ERR_SHMEM_SEGMENT, nothing logged"),

    /* handles: used after release or close */
    CASE_HANDLE(config_modify_after_release, "SIGSEGV"),
    CASE_HANDLE(config_get_after_release, "SIGSEGV"),
    CASE_HANDLE(md_open_released_config,
                "UCS_OK, nothing logged (reads freed memory)"),
    CASE_HANDLE(iface_open_released_config,
                "UCS_OK, nothing logged (reads freed memory)"),
    CASE_HANDLE(iface_query_after_close,
                "UCS_OK, nothing logged (reads freed memory)"),
    CASE_HANDLE(set_am_handler_after_close,
                "UCS_OK, nothing logged (writes freed memory)"),
    CASE_HANDLE(ep_create_on_closed_iface,
                "UCS_OK, nothing logged (ep on a freed iface)"),
    CASE_HANDLE(md_query_after_close,
                "UCS_OK, nothing logged (reads freed memory)"),
    CASE_HANDLE(md_mem_reg_after_close,
                "UCS_OK, nothing logged (reads freed memory)"),
    CASE_HANDLE(iface_open_destroyed_worker,
                "UCS_OK, nothing logged (iface on a freed worker)"),
    CASE_HANDLE_VOID(progress_register_destroyed_worker, "SIGABRT"),
    CASE_HANDLE_NEEDS(listener_query_after_destroy, "tcp", "SIGSEGV"),

    /* handles: uninitialised pointers (heap garbage, stack garbage) */
    CASE_HANDLE_VOID(md_close_heap_garbage, "SIGSEGV"),
    CASE_HANDLE(md_query_heap_garbage, "SIGSEGV"),
    CASE_HANDLE_VOID(iface_close_heap_garbage, "SIGSEGV"),
    CASE_HANDLE(iface_query_heap_garbage, "SIGSEGV"),
    CASE_HANDLE_VOID(worker_destroy_heap_garbage, "SIGSEGV"),
    CASE_HANDLE(iface_open_heap_garbage_worker,
                "UCS_OK, nothing logged (keeps the garbage worker)"),
    CASE_HANDLE_VOID(config_release_heap_garbage, "SIGSEGV"),
    CASE_HANDLE(config_modify_heap_garbage, "SIGSEGV"),
    CASE_HANDLE_VOID(cm_close_heap_garbage, "SIGSEGV"),
    CASE_HANDLE(cm_query_heap_garbage, "SIGSEGV"),
    CASE_HANDLE_VOID(listener_destroy_heap_garbage, "SIGSEGV"),
    CASE_HANDLE_NEEDS(rkey_release_heap_garbage_posix, "posix", "SIGSEGV"),
    CASE_HANDLE_NEEDS(rkey_ptr_heap_garbage_posix, "posix",
                "UCS_OK, nothing logged (a pointer computed from garbage)"),
    CASE_HANDLE_VOID(md_close_stack_garbage, "SIGSEGV"),
    CASE_HANDLE_VOID(iface_close_stack_garbage, "SIGSEGV"),
    CASE_HANDLE(iface_get_address_stack_garbage, "SIGSEGV"),
    CASE_HANDLE_VOID(worker_destroy_stack_garbage, "SIGSEGV"),
    CASE_HANDLE_VOID(config_release_stack_garbage, "SIGSEGV"),
    CASE_HANDLE_VOID(cm_close_stack_garbage, "SIGSEGV"),
    CASE_HANDLE(listener_reject_stack_garbage, "SIGSEGV"),
    CASE_HANDLE_NEEDS(rkey_release_stack_garbage_sysv, "sysv",
                "UCS_ERR_INVALID_PARAM, nothing logged (shmdt of garbage)"),
    CASE_HANDLE_VOID(tl_resource_list_release_stack,
                "SIGABRT (free of a stack address)"),

    /* handles: a live object of another kind */
    CASE_HANDLE_VOID(iface_close_on_md, "SIGSEGV"),
    CASE_HANDLE(iface_query_on_md, "SIGSEGV"),
    CASE_HANDLE_VOID(md_close_on_worker, "SIGSEGV"),
    CASE_HANDLE_VOID(worker_destroy_on_iface, "SIGABRT"),
    CASE_HANDLE_VOID(config_release_on_iface, "SIGSEGV"),
    CASE_HANDLE(iface_open_config_as_worker,
                "UCS_OK, nothing logged (keeps the config as its worker)"),
    CASE_HANDLE(md_open_md_as_config,
                "UCS_OK, nothing logged (reads the md as a config)"),
    CASE_HANDLE_VOID(cm_close_on_md,
                "returns, nothing logged (calls through the md's ops)"),
    CASE_HANDLE_VOID_NEEDS(listener_destroy_on_cm, "tcp", "SIGSEGV"),
};

#define NUM_CASES (sizeof(cases) / sizeof(cases[0]))

/* ---------------------------------------------------------------------- */
/* Runner                                                                  */

typedef enum {
    OUT_STATUS,
    OUT_SIGNAL,
    OUT_SETUP,
    OUT_NO_RESULT
} outcome_kind_t;

typedef struct {
    outcome_kind_t kind;
    long           value;  /* status, signal number, or exit code */
    int            logged; /* error lines logged since bad_call_begin() */
    char           text[160];
} outcome_t;

static const char *status_name(long s)
{
    if ((s < -128) || (s > 127)) {
        return "(not a status)";
    }
    return ucs_status_string((ucs_status_t)s);
}

static void run_case(const bad_case_t *c, int verbose, outcome_t *out)
{
    char buf[100];
    ssize_t n, total = 0;
    int fds[2], wstatus, devnull;
    pid_t pid;
    long value;

    memset(out, 0, sizeof(*out));
    if (pipe(fds) != 0) {
        perror("pipe");
        exit(2);
    }
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(2);
    }
    if (pid == 0) {
        close(fds[0]);
        g_result_fd = fds[1];
        if (!verbose) {
            devnull = open("/dev/null", O_WRONLY);
            dup2(devnull, STDOUT_FILENO);
            dup2(devnull, STDERR_FILENO);
        }
        alarm(CHILD_TIMEOUT_SEC);
        ucs_log_push_handler(count_errors);
        g_log_errors = 0;
        value = c->run();
        dprintf(g_result_fd, "RESULT %ld LOGGED %d\n", value, g_log_errors);
        _exit(0);
    }

    close(fds[1]);
    while ((total < (ssize_t)sizeof(buf) - 1) &&
           ((n = read(fds[0], buf + total, sizeof(buf) - 1 - total)) != 0)) {
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            break;
        }
        total += n;
    }
    buf[total] = '\0';
    close(fds[0]);
    while (waitpid(pid, &wstatus, 0) < 0) {
        if (errno != EINTR) {
            perror("waitpid");
            exit(2);
        }
    }

    if (WIFSIGNALED(wstatus)) {
        out->kind  = OUT_SIGNAL;
        out->value = WTERMSIG(wstatus);
        snprintf(out->text, sizeof(out->text), "%s%s",
                 (out->value == SIGALRM) ? "timeout: " : "signal ",
                 strsignal((int)out->value));
    } else if (sscanf(buf, "RESULT %ld LOGGED %d", &value, &out->logged) ==
               2) {
        out->kind  = OUT_STATUS;
        out->value = value;
        if (c->kind == BAD_HANDLE_VOID) {
            snprintf(out->text, sizeof(out->text),
                     "returned, %d error line(s) logged", out->logged);
        } else if (c->kind == BAD_HANDLE) {
            snprintf(out->text, sizeof(out->text),
                     "status %ld (%s), %d error line(s) logged", value,
                     status_name(value), out->logged);
        } else {
            snprintf(out->text, sizeof(out->text), "status %ld (%s)", value,
                     status_name(value));
        }
    } else if (!strncmp(buf, "SETUP ", 6)) {
        out->kind = OUT_SETUP;
        buf[strcspn(buf, "\n")] = '\0';
        snprintf(out->text, sizeof(out->text), "setup failed in %s",
                 buf + 6);
    } else {
        out->kind  = OUT_NO_RESULT;
        out->value = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
        snprintf(out->text, sizeof(out->text),
                 "child exited with %ld and no result", out->value);
    }
}

/* Returns 1 when the outcome is acceptable. */
static int judge(const bad_case_t *c, const outcome_t *out, int original_mode,
                 char *why, size_t max)
{
    why[0] = '\0';
    if (c->kind == STRICTER) {
        ucs_status_t want = original_mode ? c->want : c->want_strict;
        if ((out->kind == OUT_STATUS) && (out->value == want)) {
            return 1;
        }
        snprintf(why, max, "want status %d (%s)", (int)want, status_name(want));
        return 0;
    }
    if (c->kind == EXACT) {
        if ((out->kind == OUT_STATUS) && (out->value == c->want)) {
            return 1;
        }
        snprintf(why, max, "want status %d (%s)", (int)c->want,
                 status_name(c->want));
        return 0;
    }

    if ((c->kind == BAD_HANDLE) || (c->kind == BAD_HANDLE_VOID)) {
        if (original_mode) {
            if ((out->kind == OUT_STATUS) ||
                ((out->kind == OUT_SIGNAL) && (out->value != SIGALRM))) {
                snprintf(why, max, "accepted: the original follows the "
                         "pointer");
                return 1;
            }
            snprintf(why, max, "want a result or a crash, not a hang");
            return 0;
        }
        if ((out->kind == OUT_STATUS) && (out->logged > 0) &&
            ((c->kind == BAD_HANDLE_VOID) || (out->value < 0))) {
            return 1;
        }
        snprintf(why, max, "want %sa logged error and no crash",
                 (c->kind == BAD_HANDLE) ? "an error status, " : "");
        return 0;
    }

    /* ORIG_MAY_CRASH */
    if ((out->kind == OUT_STATUS) && (out->value < 0)) {
        return 1;
    }
    if (original_mode && (out->kind == OUT_SIGNAL) && (out->value != SIGALRM)) {
        snprintf(why, max, "accepted: the original may crash here");
        return 1;
    }
    snprintf(why, max, "want an error status and no crash");
    return 0;
}

/* Whether the library under test offers a component (checked in the parent,
 * so that cases needing a transport this library lacks are reported as
 * skipped rather than run). */
static int have_component(const char *name)
{
    uct_component_h *cmpts;
    uct_component_attr_t attr;
    unsigned i, n;
    int found = 0;

    if (uct_query_components(&cmpts, &n) != UCS_OK) {
        return 0;
    }
    for (i = 0; i < n; ++i) {
        memset(&attr, 0, sizeof(attr));
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if ((uct_component_query(cmpts[i], &attr) == UCS_OK) &&
            !strcmp(attr.name, name)) {
            found = 1;
        }
    }
    uct_release_component_list(cmpts);
    return found;
}

static int library_is_original(void)
{
    const char *sys = getenv("UCT_SYSTEM_LIB");
    char a[PATH_MAX], b[PATH_MAX];
    Dl_info info;
    void *sym;

    if ((sys == NULL) || (*sys == '\0')) {
        sys = "/usr/lib/x86_64-linux-gnu/libuct.so.0";
    }
    sym = dlsym(RTLD_DEFAULT, "uct_iface_open");
    if ((sym == NULL) || !dladdr(sym, &info) || (info.dli_fname == NULL) ||
        (realpath(info.dli_fname, a) == NULL) || (realpath(sys, b) == NULL)) {
        return 0;
    }
    printf("# uct_iface_open provided by %s\n", a);
    return !strcmp(a, b);
}

static int selected(const char *name, int argc, char **argv, int first)
{
    int i, any = 0;

    for (i = first; i < argc; ++i) {
        any = 1;
        if (strstr(name, argv[i]) != NULL) {
            return 1;
        }
    }
    return !any;
}

int main(int argc, char **argv)
{
    int original_mode = -1, verbose = 0, list = 0, first = 1;
    int handles_only = 0;
    int passed = 0, failed = 0, detected;
    char why[160];
    outcome_t out;
    size_t i;

    for (; first < argc; ++first) {
        if (!strcmp(argv[first], "--strict")) {
            original_mode = 0;
        } else if (!strcmp(argv[first], "--original")) {
            original_mode = 1;
        } else if (!strcmp(argv[first], "-v")) {
            verbose = 1;
        } else if (!strcmp(argv[first], "--list")) {
            list = 1;
        } else if (!strcmp(argv[first], "--handles")) {
            handles_only = 1;
        } else {
            break;
        }
    }

    if (list) {
        for (i = 0; i < NUM_CASES; ++i) {
            if (cases[i].kind == STRICTER) {
                printf("%-44s STRICTER original %d, uct-rs %d (%s)\n",
                       cases[i].name, (int)cases[i].want,
                       (int)cases[i].want_strict, cases[i].note);
            } else if (cases[i].kind == EXACT) {
                printf("%-44s EXACT %d (%s)\n", cases[i].name,
                       (int)cases[i].want, status_name(cases[i].want));
            } else if ((cases[i].kind == BAD_HANDLE) ||
                       (cases[i].kind == BAD_HANDLE_VOID)) {
                printf("%-44s %s (original: %s)\n", cases[i].name,
                       (cases[i].kind == BAD_HANDLE) ? "BAD_HANDLE" :
                                                       "BAD_HANDLE_VOID",
                       cases[i].note);
            } else {
                printf("%-44s ORIG_MAY_CRASH (original: %s)\n", cases[i].name,
                       cases[i].note);
            }
        }
        return 0;
    }

    setvbuf(stdout, NULL, _IOLBF, 0);
    detected = library_is_original();
    if (original_mode < 0) {
        original_mode = detected;
    }
    printf("# mode: %s\n", original_mode ? "original (crashes accepted where "
                                           "marked ORIG_MAY_CRASH)" : "strict");

    for (i = 0; i < NUM_CASES; ++i) {
        if (!selected(cases[i].name, argc, argv, first) ||
            (handles_only && (cases[i].kind != BAD_HANDLE) &&
             (cases[i].kind != BAD_HANDLE_VOID))) {
            continue;
        }
        if ((cases[i].requires != NULL) && !have_component(cases[i].requires)) {
            printf("SKIP  %-44s this library has no '%s' component yet\n",
                   cases[i].name, cases[i].requires);
            continue;
        }
        run_case(&cases[i], verbose, &out);
        if (judge(&cases[i], &out, original_mode, why, sizeof(why))) {
            ++passed;
            printf("PASS  %-44s %s%s%s%s\n", cases[i].name, out.text,
                   why[0] ? " [" : "", why, why[0] ? "]" : "");
        } else {
            ++failed;
            printf("FAIL  %-44s %s; %s\n", cases[i].name, out.text, why);
        }
    }

    printf("%d passed, %d failed\n", passed, failed);
    return (failed == 0) ? 0 : 1;
}
