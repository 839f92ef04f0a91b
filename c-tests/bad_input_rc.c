/*
 * bad_input_rc.c - bad input for the rc_verbs transport, on an RDMA device
 * (the soft device of tests/softrdma/: run it under tests/softrdma/run.sh).
 *
 *   bad_input_rc [-d DEV] [--strict|--original] [-v] [CASE-FILTER...]
 *
 * Every case runs in a forked child (a crash or a hang of one case does not
 * stop the others; alarm() bounds each).  The child builds a fixture: the ib
 * md of DEV's device, two rc_verbs ifaces on DEV (with error handlers) in
 * one worker, a target buffer registered between two guard pages (remote
 * writes must never land outside it), a local registered buffer, and
 * a libucs log handler counting error lines.  Then it does one bad thing
 * and prints what happened:
 *
 *   CASE <name> post=<status> comp=<status> errh=<calls>/<status>
 *        log=<error lines> guard=<ok|CHANGED> target=<ok|CHANGED> -> <verdict>
 *
 * Verdicts.  Library under test = our library ("strict" mode): the case's
 * rule (below, per case) must hold; a crash or a hang is a failure.  Library
 * under test = the C original ("original" mode, chosen when uct_iface_open
 * resolves to $UCT_SYSTEM_LIB): what it does is recorded; only a write
 * outside registered memory, or a hang, fails; a crash is reported and
 * accepted (ours must not crash there).
 *
 * Rules (strict):
 *   op        garbage rkey / address outside the region: the failure shows
 *             (an error returned, the completion's status, or the error
 *             handler) and neither the guard pages nor the target change
 *             (for garbage rkeys the target too);
 *   addr      a device address with unknown flags, the RoCE flag on an IB
 *             port, a whole RoCE address given to an IB port, or flags
 *             that promise fields past the address's length
 *             (it sits right before an inaccessible page: reading past it
 *             faults): "not reachable", connect_to_ep fails, an error line;
 *             an ep address with unknown flag bits: no crash (the flags
 *             only announce an optional atomic MR id byte); a peer whose
 *             valid device address is longer (another path MTU): reachable,
 *             connect and a put work;
 *   qpn       connect to a QP number that does not exist: connect returns
 *             OK (nothing is checked before the first packet, as on IB),
 *             the first operation fails (error handler), no hang;
 *   dead      operations on an endpoint whose QP went to error: each
 *             returns an error status (or is accepted and then fails);
 *             none may crash or hang;
 *   handle    uct_md_mem_dereg of a garbage handle / twice, uct_md_mkey_pack
 *             of a garbage handle: an error status and an error line.
 *
 * Output ends with "N passed, M failed"; exit status 1 when M > 0.
 */
#define _GNU_SOURCE
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>
#include <ucs/debug/log_def.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bad_input_verbs.h"

#define CASE_TIMEOUT_SEC 20
#define AM_ID            5
#define GARBAGE_RKEY_1   0x9e3779b97f4a7c15ULL
#define GARBAGE_RKEY_2   0xdeadbeefcafe1234ULL

static const char *g_dev = "softrdma0:1";
static int g_strict;
static int g_verbose;

/* ------------------------------------------------------------ fixture -- */

typedef struct {
    uct_iface_h iface;
    uct_iface_attr_t attr;
    void *dev_addr;
    volatile int errh_calls;
    volatile int errh_status;
} side_t;

static struct {
    ucs_async_context_t *async;
    uct_worker_h worker;
    uct_component_h cmpt;
    uct_md_h md;
    uct_md_attr_t md_attr;
    side_t s[2];
    uct_ep_h ep[2];
    /* target: guard page, registered page, guard page */
    uint8_t *region;
    size_t page;
    uint8_t *target;
    uct_mem_h target_memh;
    uct_rkey_bundle_t rkey;
    int rkey_ok;
    uint8_t *local;
    uct_mem_h local_memh;
} fx;

static volatile int g_log_errors;

static ucs_log_func_rc_t count_log(const char *file, unsigned line, const char *function,
                                   ucs_log_level_t level,
                                   const ucs_log_component_config_t *comp,
                                   const char *message, va_list ap)
{
    (void)file; (void)line; (void)function; (void)comp; (void)message; (void)ap;
    if (level <= UCS_LOG_LEVEL_ERROR) {
        ++g_log_errors;
    }
    return UCS_LOG_FUNC_RC_CONTINUE;
}

static ucs_status_t err_handler(void *arg, uct_ep_h ep, ucs_status_t status)
{
    side_t *s = arg;

    (void)ep;
    if (s->errh_calls++ == 0) {
        s->errh_status = status;
    }
    return UCS_OK;
}

static ucs_status_t am_handler(void *arg, void *data, size_t length, unsigned flags)
{
    (void)arg; (void)data; (void)length; (void)flags;
    return UCS_OK;
}

static void die(const char *what, ucs_status_t st)
{
    printf("SETUP %s: %s\n", what, ucs_status_string(st));
    fflush(stdout);
    _exit(77);
}

static void open_md(const char *md_name)
{
    const char *what;
    ucs_status_t st = ib_md_open(md_name, &fx.md, &fx.cmpt, &what);

    if (st != UCS_OK) {
        die(what, st);
    }
}

static void open_side(side_t *s, const char *path_mtu)
{
    uct_iface_config_t *cfg;
    uct_iface_params_t p;
    ucs_status_t st;

    if (path_mtu != NULL) {
        setenv("UCX_IB_PATH_MTU", path_mtu, 1);
    }
    st = uct_md_iface_config_read(fx.md, "rc_verbs", NULL, NULL, &cfg);
    unsetenv("UCX_IB_PATH_MTU");
    if (st != UCS_OK) {
        die("rc_verbs config", st);
    }
    memset(&p, 0, sizeof(p));
    p.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE |
                   UCT_IFACE_PARAM_FIELD_ERR_HANDLER | UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                   UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
    p.open_mode             = UCT_IFACE_OPEN_MODE_DEVICE;
    p.mode.device.tl_name   = "rc_verbs";
    p.mode.device.dev_name  = g_dev;
    p.err_handler           = err_handler;
    p.err_handler_arg       = s;
    p.err_handler_flags     = 0;
    st = uct_iface_open(fx.md, fx.worker, &p, cfg, &s->iface);
    uct_config_release(cfg);
    if (st != UCS_OK) {
        die("uct_iface_open(rc_verbs)", st);
    }
    st = uct_iface_query(s->iface, &s->attr);
    if (st != UCS_OK) {
        die("uct_iface_query", st);
    }
    uct_iface_set_am_handler(s->iface, AM_ID, am_handler, NULL, 0);
    uct_iface_progress_enable(s->iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    s->dev_addr = calloc(1, s->attr.device_addr_len + 16);
    st = uct_iface_get_device_address(s->iface, s->dev_addr);
    if (st != UCS_OK) {
        die("uct_iface_get_device_address", st);
    }
}

static uct_ep_h new_ep(int side)
{
    uct_ep_params_t p = { .field_mask = UCT_EP_PARAM_FIELD_IFACE };
    uct_ep_h ep;
    ucs_status_t st;

    p.iface = fx.s[side].iface;
    st = uct_ep_create(&p, &ep);
    if (st != UCS_OK) {
        die("uct_ep_create", st);
    }
    return ep;
}

static void *ep_address(uct_ep_h ep, int side)
{
    void *a = calloc(1, fx.s[side].attr.ep_addr_len + 16);
    ucs_status_t st = uct_ep_get_address(ep, a);

    if (st != UCS_OK) {
        die("uct_ep_get_address", st);
    }
    return a;
}

/* ifaces, a connected pair of endpoints 0 -> 1, the buffers */
static void fixture(int connect)
{
    char md_name[64];
    ucs_status_t st;
    char *colon;
    void *a0, *a1;

    ucs_log_push_handler(count_log);
    st = ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &fx.async);
    if (st != UCS_OK) {
        die("async context", st);
    }
    st = uct_worker_create(fx.async, UCS_THREAD_MODE_SINGLE, &fx.worker);
    if (st != UCS_OK) {
        die("worker", st);
    }
    snprintf(md_name, sizeof(md_name), "%s", g_dev);
    colon = strchr(md_name, ':');
    if (colon != NULL) {
        *colon = '\0';
    }
    open_md(md_name);
    st = uct_md_query(fx.md, &fx.md_attr);
    if (st != UCS_OK) {
        die("uct_md_query", st);
    }
    open_side(&fx.s[0], NULL);
    open_side(&fx.s[1], NULL);

    fx.page   = (size_t)sysconf(_SC_PAGESIZE);
    fx.region = mmap(NULL, 3 * fx.page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    fx.local  = mmap(NULL, fx.page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (fx.region == MAP_FAILED || fx.local == MAP_FAILED) {
        die("mmap", UCS_ERR_NO_MEMORY);
    }
    memset(fx.region, 0xaa, 3 * fx.page);
    fx.target = fx.region + fx.page;
    memset(fx.target, 0xbb, fx.page);
    memset(fx.local, 0x11, fx.page);
    st = uct_md_mem_reg(fx.md, fx.target, fx.page, UCT_MD_MEM_ACCESS_ALL, &fx.target_memh);
    if (st != UCS_OK) {
        die("uct_md_mem_reg(target)", st);
    }
    st = uct_md_mem_reg(fx.md, fx.local, fx.page, UCT_MD_MEM_ACCESS_ALL, &fx.local_memh);
    if (st != UCS_OK) {
        die("uct_md_mem_reg(local)", st);
    }
    {
        void *packed = calloc(1, fx.md_attr.rkey_packed_size + 8);

        st = uct_md_mkey_pack(fx.md, fx.target_memh, packed);
        if (st == UCS_OK) {
            st = uct_rkey_unpack(fx.cmpt, packed, &fx.rkey);
        }
        free(packed);
        if (st != UCS_OK) {
            die("rkey pack/unpack", st);
        }
        fx.rkey_ok = 1;
    }
    if (!connect) {
        return;
    }
    fx.ep[0] = new_ep(0);
    fx.ep[1] = new_ep(1);
    a0 = ep_address(fx.ep[0], 0);
    a1 = ep_address(fx.ep[1], 1);
    st = uct_ep_connect_to_ep(fx.ep[0], fx.s[1].dev_addr, a1);
    if (st == UCS_OK) {
        st = uct_ep_connect_to_ep(fx.ep[1], fx.s[0].dev_addr, a0);
    }
    if (st != UCS_OK) {
        die("uct_ep_connect_to_ep", st);
    }
    free(a0);
    free(a1);
}

/* progress until *done (if given) or an error handler ran, at most ms */
static void progress_for(volatile int *done, int ms)
{
    int64_t end = bi_now_ms() + ms;

    while (bi_now_ms() < end) {
        uct_worker_progress(fx.worker);
        if ((done != NULL && *done) || fx.s[0].errh_calls || fx.s[1].errh_calls) {
            break;
        }
    }
    for (int i = 0; i < 1000; i++) {
        uct_worker_progress(fx.worker);
    }
}

/* ------------------------------------------------------------ results -- */

typedef struct {
    int post;      /* status returned by the call */
    int comp;      /* completion status (1 = none ran) */
    int log;       /* error lines since the call */
} obs_t;

static struct {
    volatile int done;
    volatile int status;
} g_comp;

static void comp_cb(uct_completion_t *self)
{
    g_comp.status = self->status;
    g_comp.done   = 1;
}

static uct_completion_t *new_comp(void)
{
    static uct_completion_t c;

    c.func       = comp_cb;
    c.count      = 1;
    c.status     = UCS_OK;
    g_comp.done  = 0;
    g_comp.status = 1;
    return &c;
}

static int guard_ok(void)
{
    for (size_t i = 0; i < fx.page; i++) {
        if (fx.region[i] != 0xaa || fx.region[2 * fx.page + i] != 0xaa) {
            return 0;
        }
    }
    return 1;
}

static int target_ok(void)
{
    for (size_t i = 0; i < fx.page; i++) {
        if (fx.target[i] != 0xbb) {
            return 0;
        }
    }
    return 1;
}

static int g_failed_rule;
static const char *g_rule_msg = "";

static void rule(int ok, const char *msg)
{
    if (!ok && !g_failed_rule) {
        g_failed_rule = 1;
        g_rule_msg    = msg;
    }
}

static void report(const char *name, obs_t o, int check_target)
{
    int g = guard_ok(), t = target_ok();
    const char *verdict;

    if (!g || (check_target && !t)) {
        rule(0, "remote write outside registered memory");
        g_failed_rule = 2; /* fails in both modes */
    }
    if (g_failed_rule == 2 || (g_strict && g_failed_rule)) {
        verdict = "FAIL";
    } else {
        verdict = "ok";
    }
    printf("CASE %s post=%d comp=%d errh=%d/%d,%d/%d log=%d guard=%s target=%s -> %s%s%s\n",
           name, o.post, o.comp, fx.s[0].errh_calls, fx.s[0].errh_status,
           fx.s[1].errh_calls, fx.s[1].errh_status, o.log, g ? "ok" : "CHANGED",
           t ? "ok" : "CHANGED", verdict, g_failed_rule ? ": " : "",
           g_failed_rule ? g_rule_msg : "");
    fflush(stdout);
    _exit(!strcmp(verdict, "ok") ? 0 : 1);
}

static int failure_seen(obs_t o)
{
    return (o.post < 0) || (o.comp != 1 && o.comp < 0) || fx.s[0].errh_calls > 0;
}

/* -------------------------------------------------------------- cases -- */

typedef enum { OP_PUT_SHORT, OP_PUT_BCOPY, OP_PUT_ZCOPY, OP_GET_BCOPY, OP_GET_ZCOPY,
               OP_FADD, OP_CSWAP, OP_ADD } op_t;

static size_t pack_local(void *dest, void *arg)
{
    (void)arg;
    memcpy(dest, fx.local, 64);
    return 64;
}

static void unpack_local(void *arg, const void *data, size_t length)
{
    (void)arg;
    memcpy(fx.local, data, length);
}

static obs_t do_op(op_t op, uint64_t raddr, uct_rkey_t rkey, size_t len)
{
    uct_iov_t iov = { fx.local, len, fx.local_memh, len, 1 };
    uint64_t result = 0;
    obs_t o = { 0, 1, 0 };
    ssize_t r;

    g_log_errors = 0;
    switch (op) {
    case OP_PUT_SHORT:
        o.post = uct_ep_put_short(fx.ep[0], fx.local, (unsigned)len, raddr, rkey);
        break;
    case OP_PUT_BCOPY:
        r      = uct_ep_put_bcopy(fx.ep[0], pack_local, NULL, raddr, rkey);
        o.post = (r < 0) ? (int)r : UCS_OK;
        break;
    case OP_PUT_ZCOPY:
        o.post = uct_ep_put_zcopy(fx.ep[0], &iov, 1, raddr, rkey, new_comp());
        break;
    case OP_GET_BCOPY:
        o.post = uct_ep_get_bcopy(fx.ep[0], unpack_local, NULL, len, raddr, rkey, new_comp());
        break;
    case OP_GET_ZCOPY:
        o.post = uct_ep_get_zcopy(fx.ep[0], &iov, 1, raddr, rkey, new_comp());
        break;
    case OP_FADD:
        o.post = uct_ep_atomic64_fetch(fx.ep[0], UCT_ATOMIC_OP_ADD, 1, &result, raddr, rkey,
                                       new_comp());
        break;
    case OP_CSWAP:
        o.post = uct_ep_atomic_cswap64(fx.ep[0], 0, 1, raddr, rkey, &result, new_comp());
        break;
    case OP_ADD:
        o.post = uct_ep_atomic64_post(fx.ep[0], UCT_ATOMIC_OP_ADD, 1, raddr, rkey);
        break;
    }
    if (o.post == UCS_INPROGRESS) {
        progress_for(&g_comp.done, 3000);
        o.comp = g_comp.done ? g_comp.status : 1;
        if (!g_comp.done) {
            rule(0, "the operation never completed");
        }
    } else {
        /* a flush makes an unsignaled operation's outcome visible */
        uct_completion_t *c = new_comp();
        ucs_status_t fs = uct_ep_flush(fx.ep[0], 0, c);

        if (fs == UCS_INPROGRESS) {
            progress_for(&g_comp.done, 3000);
        } else {
            progress_for(NULL, 200);
        }
        o.comp = (fs == UCS_INPROGRESS) ? (g_comp.done ? g_comp.status : 1) : fs;
    }
    o.log = g_log_errors;
    return o;
}

static const struct { const char *name; op_t op; size_t len; } op_table[] = {
    { "put_short", OP_PUT_SHORT, 8 },
    { "put_bcopy", OP_PUT_BCOPY, 64 },
    { "put_zcopy", OP_PUT_ZCOPY, 256 },
    { "get_bcopy", OP_GET_BCOPY, 64 },
    { "get_zcopy", OP_GET_ZCOPY, 256 },
    { "atomic_fadd64", OP_FADD, 8 },
    { "atomic_cswap64", OP_CSWAP, 8 },
    { "atomic_add64", OP_ADD, 8 },
};
#define NUM_OPS (sizeof(op_table) / sizeof(op_table[0]))

/* kind: 0 garbage rkey 1, 1 garbage rkey 2, 2 below the region, 3 across its end */
static void case_op(int opi, int kind)
{
    uint64_t raddr = (uintptr_t)fx.target;
    uct_rkey_t rkey = fx.rkey.rkey;
    char name[96];
    obs_t o;

    switch (kind) {
    case 0: rkey = (uct_rkey_t)GARBAGE_RKEY_1; break;
    case 1: rkey = (uct_rkey_t)GARBAGE_RKEY_2; raddr += 64; break;
    case 2: raddr -= 64; break;
    case 3: raddr += fx.page - (op_table[opi].len > 8 ? op_table[opi].len / 2 : 0); break;
    }
    snprintf(name, sizeof(name), "%s %s", op_table[opi].name,
             kind == 0 ? "garbage rkey" : kind == 1 ? "garbage rkey (2)" :
             kind == 2 ? "address below the region" : "range past the region's end");
    o = do_op(op_table[opi].op, raddr, rkey, op_table[opi].len);
    rule(failure_seen(o), "the failure did not show (status, completion or error handler)");
    report(name, o, kind <= 1);
}

/* a device address with flags or length that are not ours */
static void case_addr(int which)
{
    size_t dlen = fx.s[0].attr.device_addr_len;
    uint8_t *page2, *dev;
    obs_t o = { 0, 1, 0 };
    uct_ep_h ep;
    void *epa;
    const char *name = "?";
    int reach;

    /* the address sits at the end of a page followed by an inaccessible one:
     * reading past it faults */
    page2 = mmap(NULL, 2 * fx.page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mprotect(page2 + fx.page, fx.page, PROT_NONE);
    if (which == 5) {
        /* a whole RoCE device address: RoCE v2, IPv4, ::ffff:10.1.2.3 */
        static const uint8_t roce[17] = { 0x48, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                          0xff, 0xff, 10, 1, 2, 3 };
        dlen = sizeof(roce);
        dev  = page2 + fx.page - dlen;
        memcpy(dev, roce, dlen);
    } else {
        dev = page2 + fx.page - dlen;
        memcpy(dev, fx.s[1].dev_addr, dlen);
    }
    ep  = new_ep(0);
    epa = ep_address(fx.ep[1], 1);
    switch (which) {
    case 0: name = "device address: unknown flag 0x80"; dev[0] |= 0x80; break;
    case 1: name = "device address: RoCE flag on an IB port"; dev[0] |= 0x08; break;
    case 2: name = "device address: flags promise an interface id past its end"; dev[0] |= 0x40; break;
    case 3: name = "device address: flags promise pkey + mtu past its end"; dev[0] |= 0x06; break;
    case 4: name = "ep address: unknown flags 0xfe"; ((uint8_t*)epa)[0] = 0xfe; break;
    case 5: name = "device address: a RoCE peer's, on an IB port"; break;
    }
    g_log_errors = 0;
    reach  = uct_iface_is_reachable(fx.s[0].iface, (uct_device_addr_t*)dev, NULL);
    o.post = uct_ep_connect_to_ep(ep, (uct_device_addr_t*)dev, epa);
    o.log  = g_log_errors;
    printf("# %s: is_reachable=%d connect_to_ep=%d (%s)\n", name, reach, o.post,
           ucs_status_string((ucs_status_t)o.post));
    if (which == 4 || which == 0) {
        /* ep address: the flags byte only tells whether an atomic MR id
         * follows; device address: the original ignores flag bits it does
         * not know (later releases define more). Accepting (as the
         * original) or refusing with an error line are both fine. */
        rule(o.post == UCS_OK || o.log > 0, "refused without an error line");
    } else {
        rule(!reach, "a malformed device address is reachable");
        rule(o.post < 0, "connect_to_ep accepted a malformed device address");
        rule(o.log > 0, "no error line");
    }
    report(name, o, 1);
}

/* a peer with a longer (but valid) device address: another path MTU */
static void case_longer_addr(void)
{
    side_t b;
    obs_t o = { 0, 1, 0 };
    uct_ep_h ep, epb;
    void *a, *ab;
    int reach;

    memset(&b, 0, sizeof(b));
    open_side(&b, "2048");
    printf("# device address lengths: default %zu, path MTU 2048 %zu\n",
           fx.s[0].attr.device_addr_len, b.attr.device_addr_len);
    g_log_errors = 0;
    reach = uct_iface_is_reachable(fx.s[0].iface, b.dev_addr, NULL);
    ep  = new_ep(0);
    epb = ({ uct_ep_params_t p = { .field_mask = UCT_EP_PARAM_FIELD_IFACE, .iface = b.iface };
             uct_ep_h e = NULL; uct_ep_create(&p, &e); e; });
    a  = ep_address(ep, 0);
    ab = calloc(1, 64);
    uct_ep_get_address(epb, ab);
    o.post = uct_ep_connect_to_ep(ep, b.dev_addr, ab);
    if (o.post == UCS_OK) {
        o.post = uct_ep_connect_to_ep(epb, fx.s[0].dev_addr, a);
    }
    if (o.post == UCS_OK) {
        o.post = uct_ep_put_short(ep, fx.local, 8, (uintptr_t)fx.target, fx.rkey.rkey);
        o.comp = uct_ep_flush(ep, 0, NULL);
        progress_for(NULL, 200);
        while ((o.comp = uct_ep_flush(ep, 0, NULL)) == UCS_INPROGRESS ||
               o.comp == UCS_ERR_NO_RESOURCE) {
            uct_worker_progress(fx.worker);
        }
    }
    o.log = g_log_errors;
    printf("# peer with path MTU 2048: is_reachable=%d connect=%d\n", reach, o.post);
    rule(reach, "a valid longer device address is not reachable");
    rule(o.post == UCS_OK && o.comp == UCS_OK, "connecting to it or a put over it failed");
    memset(fx.target, 0xbb, 8); /* the put was legitimate */
    report("device address of a peer with another path MTU (longer, valid)", o, 1);
}

/* connect to a QP number nobody has */
static void case_no_qpn(int op)
{
    uint8_t epa[64] = { 0 };
    obs_t o = { 0, 1, 0 };
    uct_ep_h ep = new_ep(0);
    const char *name;

    epa[1] = 0xf0; epa[2] = 0xff; epa[3] = 0xff; /* QPN 0xfffff0 */
    g_log_errors = 0;
    o.post = uct_ep_connect_to_ep(ep, fx.s[1].dev_addr, (uct_ep_addr_t*)epa);
    printf("# connect_to_ep to QPN 0xfffff0: %d (%s)\n", o.post, ucs_status_string((ucs_status_t)o.post));
    if (o.post == UCS_OK) {
        fx.ep[0] = ep;
        if (op == 0) {
            name   = "made-up QP number: first put_short";
            o      = do_op(OP_PUT_SHORT, (uintptr_t)fx.target, fx.rkey.rkey, 8);
        } else {
            name   = "made-up QP number: first am_short";
            g_log_errors = 0;
            o.post = uct_ep_am_short(ep, AM_ID, 0, fx.local, 8);
            progress_for(NULL, 3000);
            o.comp = uct_ep_flush(ep, 0, NULL);
            o.log  = g_log_errors;
        }
        rule(failure_seen(o), "the first operation to a QP that does not exist did not fail");
    } else {
        name = op ? "made-up QP number: first am_short" : "made-up QP number: first put_short";
    }
    report(name, o, 1);
}

/* operations on an endpoint whose QP went to error (after a garbage rkey) */
static void case_dead(int which)
{
    static const char *names[] = { "put_short", "am_short", "am_bcopy", "put_zcopy", "get_zcopy",
                                   "atomic_fadd64", "flush", "ep_check", "pending_add" };
    uct_iov_t iov = { fx.local, 256, fx.local_memh, 256, 1 };
    uct_pending_req_t req;
    uint64_t res;
    char name[80];
    obs_t o;
    ssize_t r;

    o = do_op(OP_PUT_SHORT, (uintptr_t)fx.target, (uct_rkey_t)GARBAGE_RKEY_1, 8);
    if (!failure_seen(o)) {
        rule(0, "the QP did not go to error first");
        report("dead endpoint: setup", o, 1);
    }
    progress_for(NULL, 100);
    memset(&o, 0, sizeof(o));
    o.comp = 1;
    g_log_errors = 0;
    switch (which) {
    case 0: o.post = uct_ep_put_short(fx.ep[0], fx.local, 8, (uintptr_t)fx.target, fx.rkey.rkey); break;
    case 1: o.post = uct_ep_am_short(fx.ep[0], AM_ID, 0, fx.local, 8); break;
    case 2: r = uct_ep_am_bcopy(fx.ep[0], AM_ID, pack_local, NULL, 0); o.post = r < 0 ? (int)r : 0; break;
    case 3: o.post = uct_ep_put_zcopy(fx.ep[0], &iov, 1, (uintptr_t)fx.target, fx.rkey.rkey, new_comp()); break;
    case 4: o.post = uct_ep_get_zcopy(fx.ep[0], &iov, 1, (uintptr_t)fx.target, fx.rkey.rkey, new_comp()); break;
    case 5: o.post = uct_ep_atomic64_fetch(fx.ep[0], UCT_ATOMIC_OP_ADD, 1, &res, (uintptr_t)fx.target,
                                          fx.rkey.rkey, new_comp()); break;
    case 6: o.post = uct_ep_flush(fx.ep[0], 0, new_comp()); break;
    case 7: o.post = uct_ep_check(fx.ep[0], 0, NULL); break;
    case 8: req.func = NULL; o.post = uct_ep_pending_add(fx.ep[0], &req, 0); break;
    }
    if (o.post == UCS_INPROGRESS) {
        progress_for(&g_comp.done, 3000);
        o.comp = g_comp.done ? g_comp.status : 1;
        rule(g_comp.done, "the operation never completed");
        rule(!g_comp.done || g_comp.status < 0, "an operation on a failed endpoint completed OK");
    } else if (which == 8) {
        /* pending_add on a failed ep: BUSY would queue forever */
        rule(o.post != UCS_OK, "a pending request was queued on a failed endpoint");
    } else if (which == 7 || which == 6) {
        rule(1, ""); /* ep_check, flush: OK (nothing outstanding) or an error */
    } else {
        rule(o.post < 0, "an operation on a failed endpoint returned OK");
    }
    o.log = g_log_errors;
    snprintf(name, sizeof(name), "failed endpoint: %s", names[which]);
    if (which == 8 && o.post == UCS_OK) {
        uct_ep_pending_purge(fx.ep[0], NULL, NULL);
    }
    report(name, o, 0);
}

/* memory handles that are not live registrations */
static void case_handle(int which)
{
    obs_t o = { 0, 1, 0 };
    uct_mem_h memh;
    void *buf, *packed;
    const char *name = "?";
    static uint64_t garbage[16] = { 0x4141414141414141ULL, 0x4242424242424242ULL };

    /* A buffer of its own: with a registration cache, registering the
     * fixture's (registered) buffer again would hand out the fixture's
     * handle, which then stays live after one deregistration. */
    buf    = aligned_alloc(4096, 4096);
    packed = calloc(1, fx.md_attr.rkey_packed_size + 64);
    switch (which) {
    case 0:
        name = "uct_md_mem_dereg of a garbage handle";
        g_log_errors = 0;
        o.post = uct_md_mem_dereg(fx.md, (uct_mem_h)garbage);
        break;
    case 1:
        name = "uct_md_mem_dereg twice";
        if (uct_md_mem_reg(fx.md, buf, 4096, UCT_MD_MEM_ACCESS_ALL, &memh) != UCS_OK) {
            die("uct_md_mem_reg", UCS_ERR_IO_ERROR);
        }
        uct_md_mem_dereg(fx.md, memh);
        g_log_errors = 0;
        o.post = uct_md_mem_dereg(fx.md, memh);
        break;
    case 2:
        name = "uct_md_mkey_pack of a garbage handle";
        g_log_errors = 0;
        o.post = uct_md_mkey_pack(fx.md, (uct_mem_h)garbage, packed);
        break;
    case 3:
        name = "uct_md_mkey_pack of a released handle";
        if (uct_md_mem_reg(fx.md, buf, 4096, UCT_MD_MEM_ACCESS_ALL, &memh) != UCS_OK) {
            die("uct_md_mem_reg", UCS_ERR_IO_ERROR);
        }
        uct_md_mem_dereg(fx.md, memh);
        g_log_errors = 0;
        o.post = uct_md_mkey_pack(fx.md, memh, packed);
        break;
    }
    o.log = g_log_errors;
    rule(o.post < 0, "an error status");
    rule(o.log > 0, "an error line");
    report(name, o, 0);
    free(packed);
    free(buf);
}

/* ---------------------------------------------------------------- main -- */

typedef struct { char name[96]; void (*fn)(int); int arg; int connect; } entry_t;

static entry_t g_cases[128];
static int g_ncases;

static void add(const char *name, void (*fn)(int), int arg, int connect)
{
    entry_t *e = &g_cases[g_ncases++];

    snprintf(e->name, sizeof(e->name), "%s", name);
    e->fn      = fn;
    e->arg     = arg;
    e->connect = connect;
}

static void longer(int a) { (void)a; case_longer_addr(); }

static void build_table(void)
{
    static const char *kinds[] = { "garbage rkey", "garbage rkey (2)", "address below the region",
                                   "range past the region's end" };
    char n[96];

    for (unsigned i = 0; i < NUM_OPS; i++) {
        for (int k = 0; k < 4; k++) {
            snprintf(n, sizeof(n), "%s %s", op_table[i].name, kinds[k]);
            add(n, NULL, (int)(i * 4 + k), 1);
        }
    }
    add("device address: unknown flag 0x80", case_addr, 0, 1);
    add("device address: RoCE flag on an IB port", case_addr, 1, 1);
    add("device address: flags promise an interface id past its end", case_addr, 2, 1);
    add("device address: flags promise pkey + mtu past its end", case_addr, 3, 1);
    add("ep address: unknown flags 0xfe", case_addr, 4, 1);
    add("device address: a RoCE peer's, on an IB port", case_addr, 5, 1);
    add("device address of a peer with another path MTU (longer, valid)", longer, 0, 0);
    add("made-up QP number: first put_short", case_no_qpn, 0, 0);
    add("made-up QP number: first am_short", case_no_qpn, 1, 0);
    for (int w = 0; w < 9; w++) {
        static const char *d[] = { "put_short", "am_short", "am_bcopy", "put_zcopy", "get_zcopy",
                                   "atomic_fadd64", "flush", "ep_check", "pending_add" };
        snprintf(n, sizeof(n), "failed endpoint: %s", d[w]);
        add(n, case_dead, w, 1);
    }
    add("uct_md_mem_dereg of a garbage handle", case_handle, 0, 0);
    add("uct_md_mem_dereg twice", case_handle, 1, 0);
    add("uct_md_mkey_pack of a garbage handle", case_handle, 2, 0);
    add("uct_md_mkey_pack of a released handle", case_handle, 3, 0);
}

int main(int argc, char **argv)
{
    int passed = 0, failed = 0, c;
    bi_args_t args = { .dev = g_dev };

    bi_parse_args(argc, argv, &args);
    g_dev     = args.dev;
    g_verbose = args.verbose;
    setvbuf(stdout, NULL, _IOLBF, 0);
    g_strict = (args.forced >= 0) ? args.forced : !bi_library_is_original();
    printf("# mode: %s, device %s\n", g_strict ? "strict (our library)" : "original", g_dev);
    build_table();
    for (c = 0; c < g_ncases; c++) {
        int st, pfd[2];
        pid_t pid;

        if (!bi_selected(g_cases[c].name, argc, argv, args.first)) {
            continue;
        }
        if (pipe(pfd)) {
            return 2;
        }
        pid = fork();
        if (pid == 0) {
            close(pfd[0]);
            dup2(pfd[1], STDOUT_FILENO);
            if (!g_verbose) {
                int devnull = open("/dev/null", 1);
                if (devnull >= 0) {
                    dup2(devnull, STDERR_FILENO);
                }
            }
            alarm(CASE_TIMEOUT_SEC);
            fixture(g_cases[c].connect);
            if (g_cases[c].fn == NULL) {
                case_op(g_cases[c].arg / 4, g_cases[c].arg % 4);
            } else {
                g_cases[c].fn(g_cases[c].arg);
            }
            printf("CASE %s: returned without a verdict\n", g_cases[c].name);
            _exit(1);
        }
        close(pfd[1]);
        {
            char out[8192];

            bi_read_child(pfd[0], out, sizeof(out));
            waitpid(pid, &st, 0);
            fputs(out, stdout);
            if (bi_judge(g_cases[c].name, st, g_strict, CASE_TIMEOUT_SEC)) {
                passed++;
            } else {
                failed++;
            }
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
