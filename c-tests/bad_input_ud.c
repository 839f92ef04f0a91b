/*
 * bad_input_ud.c - a hostile peer for the ud_verbs transport, on an RDMA
 * device (the soft device of tests/softrdma/: run it under
 * tests/softrdma/run.sh).  Linked with libibverbs: the hostile peer is a raw
 * UD QP of this process that sends hand-made datagrams.
 *
 *   bad_input_ud [-d DEV] [--strict|--original] [-v] [CASE-FILTER...]
 *
 * Every case runs in a forked child (alarm() bounds it).  The child opens,
 * in one worker, the victim iface V and a legitimate peer iface L (both
 * ud_verbs with error handlers), connects a pair of endpoints V.e <-> L.e,
 * and opens a raw UD QP F (Q_Key 0x1ee7a330, receives posted) on the same
 * device.  It learns V's address the way a remote attacker could: the QP
 * number from V's iface address (3 bytes), the LID from the port.  V also
 * gets an endpoint V.f connected to a made-up endpoint of F (F's QP number,
 * endpoint id 5), so F can talk to a live endpoint in sequence.  The wire
 * format is in docs/rdma/ud-verbs-facts.md (8-byte neth, 40-byte control
 * header, the receiver's 40-byte GRH).
 *
 * After the case's datagrams, V is progressed for a while, then:
 *   rt     an AM round trip L.e -> V.e -> L.e, every byte checked;
 *   fresh  a new endpoint pair V <-> L (connect to ep), a round trip;
 *   iface  a new L endpoint to V's iface address (connection request), an
 *          AM checked by V;
 * and it prints
 *   CASE <name> rt=<ok|FAIL> fresh=<ok|FAIL> iface=<ok|FAIL> delivered=<n>
 *        errh=<calls> log=<errors>/<warnings> <case details> -> <verdict>
 * ("delivered": forged AMs with a handled id that reached V's handler).
 *
 * Verdicts.  Our library ("strict"): rt, fresh and iface must be ok, the
 * case's own rule (below) must hold, no crash, no hang.  The C original
 * ("original" mode, when uct_iface_open resolves to $UCT_SYSTEM_LIB): only
 * a hang fails; a crash is reported as "the original crashed" and accepted.
 * The original is never sent a PUT to an address other than 0 (its put
 * emulation writes the datagram's payload to the address it names), also
 * not when --strict forces the strict verdicts on it.
 *
 * Case rules (strict): "dup": every new psn delivered exactly once, dups and
 * replays never; "put": the canary word named by the PUT is unchanged and a
 * PUT to an unmapped page does not crash; "am ids": the AM with a handled
 * id that follows is delivered.
 *
 * Output ends with "N passed, M failed"; exit status 1 when M > 0.
 */
#define _GNU_SOURCE
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>
#include <ucs/debug/log_def.h>
#include <infiniband/verbs.h>

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

#define CASE_TIMEOUT_SEC 25
#define AM_REQ           1    /* L -> V */
#define AM_REP           2    /* V -> L */
#define AM_FORGED        3    /* F -> V, handled */
#define QKEY             0x1ee7a330u
#define FORGE_EPID       5u
#define NULL_ID          0xffffffu
#define F_AM             0x01000000u
#define F_ACK_REQ        0x02000000u
#define F_NAK            0x08000000u
#define F_PUT            0x10000000u
#define F_CTL            0x20000000u
#define RT_BYTES         1500
#define F_RECVS          64
#define F_BUF            4352

static const char *g_dev = "softrdma0:1";
static int g_strict;
static int g_is_original;
static int g_verbose;

/* ------------------------------------------------------------ fixture -- */

typedef struct {
    uct_iface_h iface;
    uct_iface_attr_t attr;
    uint8_t dev_addr[64];
    uint8_t iface_addr[16];
    volatile int errh_calls;
} side_t;

static struct {
    ucs_async_context_t *async;
    uct_worker_h worker;
    uct_md_h md;
    side_t v, l;
    uct_ep_h ve, le;        /* the legitimate pair */
    uct_ep_h vf;            /* V's endpoint to the forged peer */
    uint32_t ve_id, vf_id;  /* their ids on V */
    uint32_t v_qpn;
    /* raw verbs */
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_cq *scq, *rcq;
    struct ibv_qp *qp;
    struct ibv_mr *mr;
    struct ibv_ah *ah;
    uint8_t *buf;           /* F_RECVS receive buffers, then the send buffer */
    uint16_t lid;
    uint16_t f_psn;         /* the forged peer's next psn to V.f */
    long f_recvd, f_creps;
    /* receive checks */
    volatile int req_seen, req_bad, req_pair, rep_seen, rep_bad, iface_seen;
    volatile long forged;
    volatile uint64_t forged_last;
} fx;

static volatile int g_log_errors, g_log_warns;
static char g_first_log[96];

static ucs_log_func_rc_t count_log(const char *file, unsigned line, const char *function,
                                   ucs_log_level_t level,
                                   const ucs_log_component_config_t *comp,
                                   const char *message, va_list ap)
{
    (void)file; (void)line; (void)function; (void)comp;
    if (level <= UCS_LOG_LEVEL_ERROR) {
        ++g_log_errors;
    } else if (level == UCS_LOG_LEVEL_WARN) {
        ++g_log_warns;
    } else {
        return UCS_LOG_FUNC_RC_CONTINUE;
    }
    if (g_first_log[0] == '\0') {
        va_list aq;
        char *c;

        va_copy(aq, ap);
        vsnprintf(g_first_log, sizeof(g_first_log), message, aq);
        va_end(aq);
        for (c = g_first_log; *c != '\0'; c++) {
            if (*c == '\n' || *c == '"') {
                *c = ' ';
            }
        }
    }
    /* the first lines only (the missing-handler warning comes with a
     * backtrace) */
    return (g_verbose || g_log_errors + g_log_warns <= 2) ? UCS_LOG_FUNC_RC_CONTINUE
                                                          : UCS_LOG_FUNC_RC_STOP;
}

static ucs_status_t err_handler(void *arg, uct_ep_h ep, ucs_status_t status)
{
    side_t *s = arg;

    (void)ep; (void)status;
    s->errh_calls++;
    return UCS_OK;
}

static void die(const char *what, int st)
{
    printf("SETUP %s: %d\n", what, st);
    fflush(stdout);
    _exit(77);
}

static uint8_t pat(uint32_t seq, size_t k)
{
    return (uint8_t)(seq * 29u + k * 7u + 3u);
}

/* payload: u32 pair (or 0xffffffff for the iface check), u32 seq, pattern */
static int check_payload(const uint8_t *d, size_t len, uint32_t *pair)
{
    uint32_t seq;
    size_t k;

    if (len != RT_BYTES) {
        return 0;
    }
    memcpy(pair, d, 4);
    memcpy(&seq, d + 4, 4);
    for (k = 8; k < len; k++) {
        if (d[k] != pat(seq, k)) {
            return 0;
        }
    }
    return 1;
}

static ucs_status_t am_req(void *arg, void *data, size_t length, unsigned flags)
{
    uint32_t pair;

    (void)arg; (void)flags;
    if (!check_payload(data, length, &pair)) {
        fx.req_bad++;
    } else if (pair == 0xffffffffu) {
        fx.iface_seen++;
    } else {
        fx.req_pair = (int)pair;
        fx.req_seen++;
    }
    return UCS_OK;
}

static ucs_status_t am_rep(void *arg, void *data, size_t length, unsigned flags)
{
    uint32_t pair;

    (void)arg; (void)flags;
    if (!check_payload(data, length, &pair)) {
        fx.rep_bad++;
    } else {
        fx.rep_seen++;
    }
    return UCS_OK;
}

static ucs_status_t am_forged(void *arg, void *data, size_t length, unsigned flags)
{
    (void)arg; (void)flags;
    fx.forged++;
    if (length >= 8) {
        uint64_t h;

        memcpy(&h, data, 8);
        fx.forged_last = h;
    }
    return UCS_OK;
}

typedef struct {
    uint32_t pair, seq;
} pk_t;

static size_t pack(void *dest, void *arg)
{
    pk_t *a = arg;
    uint8_t *d = dest;
    size_t k;

    memcpy(d, &a->pair, 4);
    memcpy(d + 4, &a->seq, 4);
    for (k = 8; k < RT_BYTES; k++) {
        d[k] = pat(a->seq, k);
    }
    return RT_BYTES;
}

static void open_md(const char *md_name)
{
    const char *what;
    ucs_status_t st = ib_md_open(md_name, &fx.md, NULL, &what);

    if (st != UCS_OK) {
        die(what, st);
    }
}

static void open_side(side_t *s)
{
    uct_iface_config_t *cfg;
    uct_iface_params_t p;
    ucs_status_t st;

    st = uct_md_iface_config_read(fx.md, "ud_verbs", NULL, NULL, &cfg);
    if (st != UCS_OK) {
        die("ud_verbs config (no ud_verbs?)", st);
    }
    memset(&p, 0, sizeof(p));
    p.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE |
                   UCT_IFACE_PARAM_FIELD_ERR_HANDLER | UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                   UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
    p.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    p.mode.device.tl_name  = "ud_verbs";
    p.mode.device.dev_name = g_dev;
    p.err_handler          = err_handler;
    p.err_handler_arg      = s;
    st = uct_iface_open(fx.md, fx.worker, &p, cfg, &s->iface);
    uct_config_release(cfg);
    if (st != UCS_OK) {
        die("uct_iface_open(ud_verbs)", st);
    }
    if (uct_iface_query(s->iface, &s->attr) != UCS_OK ||
        s->attr.device_addr_len > sizeof(s->dev_addr) ||
        s->attr.iface_addr_len != 3 || s->attr.ep_addr_len != 6) {
        die("uct_iface_query / address lengths", 0);
    }
    uct_iface_set_am_handler(s->iface, AM_REQ, am_req, NULL, 0);
    uct_iface_set_am_handler(s->iface, AM_REP, am_rep, NULL, 0);
    uct_iface_set_am_handler(s->iface, AM_FORGED, am_forged, NULL, 0);
    uct_iface_progress_enable(s->iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    if (uct_iface_get_device_address(s->iface, (uct_device_addr_t*)s->dev_addr) != UCS_OK ||
        uct_iface_get_address(s->iface, (uct_iface_addr_t*)s->iface_addr) != UCS_OK) {
        die("iface addresses", 0);
    }
}

static uct_ep_h new_ep(side_t *s)
{
    uct_ep_params_t p = { .field_mask = UCT_EP_PARAM_FIELD_IFACE };
    uct_ep_h ep;

    p.iface = s->iface;
    if (uct_ep_create(&p, &ep) != UCS_OK) {
        die("uct_ep_create", 0);
    }
    return ep;
}

static uint32_t get24(const uint8_t *p)
{
    return p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16);
}

static void put24(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
}

/* connect a <-> b (ep to ep); returns the id of the V-side ep if wanted */
static int connect_pair(uct_ep_h a, side_t *sa, uct_ep_h b, side_t *sb, uint32_t *a_id)
{
    uint8_t aa[16], ba[16];

    if (uct_ep_get_address(a, (uct_ep_addr_t*)aa) != UCS_OK ||
        uct_ep_get_address(b, (uct_ep_addr_t*)ba) != UCS_OK ||
        uct_ep_connect_to_ep(a, (uct_device_addr_t*)sb->dev_addr, (uct_ep_addr_t*)ba) != UCS_OK ||
        uct_ep_connect_to_ep(b, (uct_device_addr_t*)sa->dev_addr, (uct_ep_addr_t*)aa) != UCS_OK) {
        return -1;
    }
    if (a_id != NULL) {
        *a_id = get24(aa + 3);
    }
    return 0;
}

/* ------------------------------------------------------------ raw QP -- */

static void post_recv(int i)
{
    struct ibv_sge sge = { (uintptr_t)(fx.buf + (size_t)i * F_BUF), F_BUF, fx.mr->lkey };
    struct ibv_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1 }, *bad;

    ibv_post_recv(fx.qp, &wr, &bad);
}

static void open_raw(void)
{
    struct ibv_device **list;
    struct ibv_qp_init_attr ia;
    struct ibv_qp_attr a;
    struct ibv_port_attr pa;
    struct ibv_ah_attr ah;
    char name[64], *colon;
    int n, i;

    snprintf(name, sizeof(name), "%s", g_dev);
    colon = strchr(name, ':');
    if (colon != NULL) {
        *colon = '\0';
    }
    list = ibv_get_device_list(&n);
    for (i = 0; list != NULL && i < n && fx.ctx == NULL; i++) {
        if (!strcmp(ibv_get_device_name(list[i]), name)) {
            fx.ctx = ibv_open_device(list[i]);
        }
    }
    if (list != NULL) {
        ibv_free_device_list(list);
    }
    if (fx.ctx == NULL || ibv_query_port(fx.ctx, 1, &pa)) {
        die("raw verbs: open device", 0);
    }
    fx.lid = pa.lid;
    fx.pd  = ibv_alloc_pd(fx.ctx);
    fx.scq = fx.pd ? ibv_create_cq(fx.ctx, 64, NULL, NULL, 0) : NULL;
    fx.rcq = fx.pd ? ibv_create_cq(fx.ctx, F_RECVS + 4, NULL, NULL, 0) : NULL;
    fx.buf = calloc(F_RECVS + 1, F_BUF);
    fx.mr  = fx.buf && fx.pd ? ibv_reg_mr(fx.pd, fx.buf, (size_t)(F_RECVS + 1) * F_BUF,
                                           IBV_ACCESS_LOCAL_WRITE) : NULL;
    if (fx.scq == NULL || fx.rcq == NULL || fx.mr == NULL) {
        die("raw verbs: pd/cq/mr", 0);
    }
    memset(&ia, 0, sizeof(ia));
    ia.send_cq = fx.scq;
    ia.recv_cq = fx.rcq;
    ia.qp_type = IBV_QPT_UD;
    ia.cap.max_send_wr = 32;
    ia.cap.max_recv_wr = F_RECVS;
    ia.cap.max_send_sge = 1;
    ia.cap.max_recv_sge = 1;
    fx.qp = ibv_create_qp(fx.pd, &ia);
    if (fx.qp == NULL) {
        die("raw verbs: create UD QP", 0);
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qkey     = QKEY;
    if (ibv_modify_qp(fx.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)) {
        die("raw verbs: QP to INIT", 0);
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    if (ibv_modify_qp(fx.qp, &a, IBV_QP_STATE)) {
        die("raw verbs: QP to RTR", 0);
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    if (ibv_modify_qp(fx.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN)) {
        die("raw verbs: QP to RTS", 0);
    }
    for (i = 0; i < F_RECVS; i++) {
        post_recv(i);
    }
    memset(&ah, 0, sizeof(ah));
    ah.dlid     = fx.lid;
    ah.port_num = 1;
    fx.ah = ibv_create_ah(fx.pd, &ah);
    if (fx.ah == NULL) {
        die("raw verbs: create AH", 0);
    }
}

/* what V sends to F: count, count CREPs, repost */
static void drain_raw(void)
{
    struct ibv_wc wc[16];
    int n, i;

    while ((n = ibv_poll_cq(fx.rcq, 16, wc)) > 0) {
        for (i = 0; i < n; i++) {
            const uint8_t *d = fx.buf + (size_t)wc[i].wr_id * F_BUF + 40;
            uint32_t type;

            fx.f_recvd++;
            if (wc[i].status == IBV_WC_SUCCESS && wc[i].byte_len >= 40 + 9) {
                memcpy(&type, d, 4);
                if ((type & F_CTL) && !(type & F_AM) && d[8] == 2) {
                    fx.f_creps++;
                }
            }
            post_recv((int)wc[i].wr_id);
        }
    }
}

/* send one datagram of len bytes (from pkt) to V's QP */
static void raw_send(const void *pkt, size_t len)
{
    uint8_t *sb = fx.buf + (size_t)F_RECVS * F_BUF;
    struct ibv_sge sge = { (uintptr_t)sb, (uint32_t)len, fx.mr->lkey };
    struct ibv_send_wr wr, *bad;
    struct ibv_wc wc;
    int i;

    memcpy(sb, pkt, len);
    memset(&wr, 0, sizeof(wr));
    wr.sg_list           = &sge;
    wr.num_sge           = 1;
    wr.opcode            = IBV_WR_SEND;
    wr.send_flags        = IBV_SEND_SIGNALED;
    wr.wr.ud.ah          = fx.ah;
    wr.wr.ud.remote_qpn  = fx.v_qpn;
    wr.wr.ud.remote_qkey = QKEY;
    if (ibv_post_send(fx.qp, &wr, &bad)) {
        printf("# raw send of %zu bytes refused\n", len);
        return;
    }
    for (i = 0; i < 1000000 && ibv_poll_cq(fx.scq, 1, &wc) == 0; i++) {
        drain_raw();
    }
}

typedef struct __attribute__((packed)) {
    uint32_t type;
    uint16_t psn, ack_psn;
} neth_t;

/* a datagram with a neth and `extra` payload bytes */
static void send_neth(uint32_t type, uint16_t psn, uint16_t ack, const void *extra, size_t elen)
{
    uint8_t pkt[F_BUF];
    neth_t n = { type, psn, ack };

    memcpy(pkt, &n, sizeof(n));
    if (elen > 0) {
        memcpy(pkt + sizeof(n), extra, elen);
    }
    raw_send(pkt, sizeof(n) + elen);
}

/* a forged AM to V.f with the next psn, id am_id, header h, len bytes */
static void forged_am(uint32_t am_id, uint64_t h, size_t len)
{
    uint8_t p[64] = { 0 };

    memcpy(p, &h, 8);
    send_neth((am_id << 27) | F_AM | fx.vf_id, fx.f_psn++, 0, p, len < 8 ? 8 : len);
}

/* a connection request body (40 + addr bytes): ep address = F's QPN + id */
static size_t creq_body(uint8_t *b, uint32_t epid, uint32_t conn_sn, const uint8_t *dev,
                        size_t dev_len)
{
    memset(b, 0, 40 + dev_len);
    b[0] = 1;
    put24(b + 4, fx.qp->qp_num);
    put24(b + 7, epid);
    memcpy(b + 12, &conn_sn, 4);
    b[16] = 0;
    snprintf((char*)b + 20, 16, "forger");
    memcpy(b + 36, &(int32_t){ (int32_t)getpid() }, 4);
    memcpy(b + 40, dev, dev_len);
    return 40 + dev_len;
}

/* ------------------------------------------------------------ checks -- */

static void spin(int ms)
{
    int64_t end = bi_now_ms() + ms;

    while (bi_now_ms() < end) {
        uct_worker_progress(fx.worker);
        drain_raw();
    }
}

static int wait_for(volatile int *v, int want, int ms)
{
    int64_t end = bi_now_ms() + ms;

    while (*v < want && bi_now_ms() < end) {
        uct_worker_progress(fx.worker);
        drain_raw();
    }
    return *v >= want;
}

static int send_am(uct_ep_h ep, uint8_t id, uint32_t pair, uint32_t seq, int ms)
{
    pk_t a = { pair, seq };
    int64_t end = bi_now_ms() + ms;
    ssize_t r;

    do {
        r = uct_ep_am_bcopy(ep, id, pack, &a, 0);
        if (r >= 0) {
            return 1;
        }
        if (r != UCS_ERR_NO_RESOURCE) {
            return 0;
        }
        uct_worker_progress(fx.worker);
        drain_raw();
    } while (bi_now_ms() < end);
    return 0;
}

static uint32_t g_seq = 100;

/* a round trip L -> V -> L on (le, ve), pair index pair */
static int round_trip(uct_ep_h le, uct_ep_h ve, uint32_t pair)
{
    int req0 = fx.req_seen, rep0 = fx.rep_seen, bad0 = fx.req_bad + fx.rep_bad;

    if (!send_am(le, AM_REQ, pair, g_seq++, 2000) || !wait_for(&fx.req_seen, req0 + 1, 3000) ||
        fx.req_pair != (int)pair) {
        return 0;
    }
    if (!send_am(ve, AM_REP, pair, g_seq++, 2000) || !wait_for(&fx.rep_seen, rep0 + 1, 3000)) {
        return 0;
    }
    return fx.req_bad + fx.rep_bad == bad0;
}

static int iface_check(void)
{
    uct_ep_params_t p;
    uct_ep_h ep;
    int seen0 = fx.iface_seen, ok;

    memset(&p, 0, sizeof(p));
    p.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                   UCT_EP_PARAM_FIELD_IFACE_ADDR;
    p.iface      = fx.l.iface;
    p.dev_addr   = (uct_device_addr_t*)fx.v.dev_addr;
    p.iface_addr = (uct_iface_addr_t*)fx.v.iface_addr;
    if (uct_ep_create(&p, &ep) != UCS_OK) {
        return 0;
    }
    ok = send_am(ep, AM_REQ, 0xffffffffu, g_seq++, 3000) && wait_for(&fx.iface_seen, seen0 + 1, 3000);
    return ok;
}

static char g_details[512];
static int g_rule_ok = 1;

static void detail(const char *fmt, long v)
{
    size_t l = strlen(g_details);

    snprintf(g_details + l, sizeof(g_details) - l, fmt, v);
}

static void rule(int ok, const char *what)
{
    if (!ok) {
        g_rule_ok = 0;
        detail(" rule-broken:%s", 0);
        detail(what, 0);
    }
}

static void verdict(const char *name)
{
    int rt, fresh, iface;
    uct_ep_h v2, l2;

    spin(300);
    rt = round_trip(fx.le, fx.ve, 0);
    v2 = new_ep(&fx.v);
    l2 = new_ep(&fx.l);
    fresh = connect_pair(v2, &fx.v, l2, &fx.l, NULL) == 0 && round_trip(l2, v2, 1);
    iface = iface_check();
    drain_raw();
    printf("CASE %s rt=%s fresh=%s iface=%s delivered=%ld errh=%d/%d log=%d/%d creps=%ld%s"
           "%s%s%s -> %s\n",
           name, rt ? "ok" : "FAIL", fresh ? "ok" : "FAIL", iface ? "ok" : "FAIL",
           fx.forged, fx.v.errh_calls, fx.l.errh_calls, g_log_errors, g_log_warns, fx.f_creps,
           g_details, g_first_log[0] ? " first-log=\"" : "", g_first_log,
           g_first_log[0] ? "\"" : "",
           (!g_strict || (rt && fresh && iface && g_rule_ok)) ? "ok" : "FAIL");
    fflush(stdout);
    _exit(!g_strict || (rt && fresh && iface && g_rule_ok) ? 0 : 1);
}

static void fixture(void)
{
    char md_name[64], *colon;
    uint8_t fake[6];

    ucs_log_push_handler(count_log);
    if (ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &fx.async) != UCS_OK ||
        uct_worker_create(fx.async, UCS_THREAD_MODE_SINGLE, &fx.worker) != UCS_OK) {
        die("async/worker", 0);
    }
    snprintf(md_name, sizeof(md_name), "%s", g_dev);
    colon = strchr(md_name, ':');
    if (colon != NULL) {
        *colon = '\0';
    }
    open_md(md_name);
    open_side(&fx.v);
    open_side(&fx.l);
    fx.v_qpn = get24(fx.v.iface_addr);
    open_raw();
    fx.ve = new_ep(&fx.v);
    fx.le = new_ep(&fx.l);
    if (connect_pair(fx.ve, &fx.v, fx.le, &fx.l, &fx.ve_id) != 0) {
        die("connect the legitimate pair", 0);
    }
    fx.vf = new_ep(&fx.v);
    {
        uint8_t a[16];

        if (uct_ep_get_address(fx.vf, (uct_ep_addr_t*)a) != UCS_OK) {
            die("uct_ep_get_address", 0);
        }
        fx.vf_id = get24(a + 3);
    }
    put24(fake, fx.qp->qp_num);
    put24(fake + 3, FORGE_EPID);
    if (uct_ep_connect_to_ep(fx.vf, (uct_device_addr_t*)fx.v.dev_addr, (uct_ep_addr_t*)fake) !=
        UCS_OK) {
        die("connect V to the forged peer", 0);
    }
    fx.f_psn = 1;
    if (!round_trip(fx.le, fx.ve, 0)) {
        die("a round trip before the attack", 0);
    }
    if (g_verbose) {
        fprintf(stderr, "V qpn 0x%x lid %u ve_id %u vf_id %u F qpn 0x%x\n", fx.v_qpn, fx.lid,
                fx.ve_id, fx.vf_id, fx.qp->qp_num);
    }
}

/* -------------------------------------------------------------- cases -- */

/* what is about to be sent (so a crash shows where) */
static void step(const char *what, long v)
{
    printf("# step: ");
    printf(what, v);
    printf("\n");
    fflush(stdout);
}

static int g_arg;

static void c_runt(void)
{
    uint8_t z[8] = { 0 };
    size_t lens[] = { 0, 1, 4, 7 };
    unsigned i;

    memcpy(z, &(uint32_t){ F_AM | (AM_FORGED << 27) | fx.vf_id }, 4);
    for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        raw_send(z, lens[i]);
    }
    verdict("runt datagrams (0, 1, 4, 7 bytes)");
}

static void c_unknown_ep(void)
{
    uint8_t p[24] = { 0 };

    send_neth(F_AM | (AM_FORGED << 27) | 0x00abcd, 1, 0, p, sizeof(p));
    send_neth(F_AM | (AM_FORGED << 27) | 0x7ffffe, 1, 0, p, sizeof(p));
    send_neth(F_ACK_REQ | 0x000777, 1, 5, NULL, 0);
    send_neth(F_PUT | 0x000777, 1, 0, p, 16);
    verdict("neth for unknown ep ids (AM, ack, put)");
}

static void c_creq_short(void)
{
    uint8_t b[128];
    char name[96];
    size_t lens[] = { 4, 12, 39, 40, 42 }, i;

    creq_body(b, 9, 77, fx.v.dev_addr, fx.v.attr.device_addr_len);
    if (g_arg == 0) {
        /* the receive buffer behind the neth keeps an earlier datagram's
         * bytes: make them a non-CREQ type */
        step("connection request of 8 bytes (the neth only)%.0ld", 0);
        send_neth(NULL_ID | F_CTL, 1, 0, NULL, 0);
        snprintf(name, sizeof(name), "truncated connection request: 8 bytes (neth only)");
    } else {
        for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
            step("connection request of %ld bytes", 8 + (long)lens[i]);
            send_neth(NULL_ID | F_CTL, 1, 0, b, lens[i]);
        }
        snprintf(name, sizeof(name), "truncated connection requests: 12, 20, 47, 48, 50 bytes");
    }
    verdict(name);
}

static void c_creq_badaddr(void)
{
    uint8_t b[128], dev[32];
    size_t dl = fx.v.attr.device_addr_len;
    char name[96];

    memcpy(dev, fx.v.dev_addr, dl);
    dev[0] = (uint8_t)g_arg;
    creq_body(b, 20, 200, dev, dl);
    step("connection request, device address flags 0x%lx", g_arg);
    send_neth(NULL_ID | F_CTL, 1, 0, b, 40 + dl);
    snprintf(name, sizeof(name), "connection request, device address flags 0x%02x (%zu bytes)",
             g_arg, dl);
    verdict(name);
}

static void c_ctl_type(void)
{
    uint8_t b[128];

    creq_body(b, 30, 300, fx.v.dev_addr, fx.v.attr.device_addr_len);
    b[0] = 7;
    send_neth(NULL_ID | F_CTL, 1, 0, b, 40 + fx.v.attr.device_addr_len);
    verdict("control packet of unknown type to the null id");
}

static void c_ctl_type_ep(void)
{
    uint8_t b[128];

    creq_body(b, 30, 300, fx.v.dev_addr, fx.v.attr.device_addr_len);
    b[0] = 7;
    send_neth(fx.vf_id | F_CTL, fx.f_psn++, 0, b, 40);
    verdict("control packet of unknown type to a live ep");
}

static void c_crep_wrong(void)
{
    uint8_t b[40] = { 0 };

    b[0] = 2;
    memcpy(b + 4, &(uint32_t){ 0x1234 }, 4);
    send_neth(fx.ve_id | F_CTL | F_ACK_REQ, 1, 0, b, sizeof(b));
    verdict("connection reply with a wrong source id to a connected ep");
}

static void c_crep_unsolicited(void)
{
    uint8_t b[40] = { 0 };

    b[0] = 2;
    memcpy(b + 4, &(uint32_t){ FORGE_EPID }, 4);
    send_neth(fx.vf_id | F_CTL | F_ACK_REQ, fx.f_psn++, 0, b, sizeof(b));
    send_neth(0x000999 | F_CTL | F_ACK_REQ, 1, 0, b, sizeof(b));
    forged_am(AM_FORGED, 0x4242, 16);
    verdict("connection reply to an ep that sent no request");
}

static void c_psn_far(void)
{
    uint8_t p[24] = { 0 };

    send_neth(F_AM | (AM_FORGED << 27) | fx.vf_id, 0x4000, 0, p, sizeof(p));
    send_neth(F_AM | (AM_FORGED << 27) | fx.vf_id, 0x8001, 0, p, sizeof(p));
    send_neth(F_AM | (AM_FORGED << 27) | fx.ve_id, 0x4000, 0, p, sizeof(p));
    forged_am(AM_FORGED, 0x4343, 16);
    verdict("psn far out of window");
}

static void c_ack_beyond(void)
{
    int i, ok = 1;

    for (i = 0; i < 2; i++) {
        ok &= send_am(fx.vf, AM_FORGED, 7, (uint32_t)i, 1000);
    }
    spin(50);
    step("a pure ack with ack_psn 0x%lx (2 packets sent)", 0x2000);
    send_neth(fx.vf_id, fx.f_psn - 1, 0x2000, NULL, 0);
    step("an AM with ack_psn 0x%lx", 0x7000);
    send_neth(fx.vf_id | F_AM | (AM_FORGED << 27), fx.f_psn++, 0x7000, (uint8_t[16]){ 0 }, 16);
    spin(50);
    for (i = 0; i < 2; i++) {
        ok &= send_am(fx.vf, AM_FORGED, 7, 10 + (uint32_t)i, 1000);
    }
    detail(" sends_after=%ld", ok);
    {
        ucs_status_t st = uct_ep_flush(fx.vf, 0, NULL);

        detail(" vf_flush=%ld", st);
    }
    verdict("ack_psn beyond what was sent");
}

static void c_am_ids(void)
{
    long before;

    forged_am(17, 1, 16);
    forged_am(31, 2, 16);
    forged_am(0, 3, 16);
    before = fx.forged;
    forged_am(AM_FORGED, 0x4444, 16);
    spin(100);
    detail(" handled_after=%ld", fx.forged - before);
    rule(fx.forged - before == 1, "the AM after them was not delivered");
    verdict("AM ids without a handler (0, 17, 31)");
}

static void c_put(void)
{
    uint8_t p[32] = { 0 };
    uint64_t zero = 0;

    /* address 0, length 0 (what ep_check sends), then an AM in sequence:
     * delivered on both */
    memcpy(p, &zero, 8);
    step("PUT to address 0, length 0%.0ld", 0);
    send_neth(F_PUT | fx.vf_id, fx.f_psn++, 0, p, 8);
    forged_am(AM_FORGED, 0x4545, 16);
    spin(50);
    if (!g_is_original) {
        static volatile uint64_t canary = 0x1122334455667788ULL;
        uint64_t addr = (uint64_t)(uintptr_t)&canary, v = 0x6666666666666666ULL;
        void *none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        memcpy(p, &addr, 8);
        memcpy(p + 8, &v, 8);
        step("PUT of 8 bytes to a canary word of the process%.0ld", 0);
        send_neth(F_PUT | fx.vf_id, fx.f_psn++, 0, p, 16);
        addr = (uint64_t)(uintptr_t)none;
        memcpy(p, &addr, 8);
        step("PUT of 8 bytes to an unmapped page%.0ld", 0);
        send_neth(F_PUT | fx.vf_id, fx.f_psn++, 0, p, 16);
        addr = 0x10;
        memcpy(p, &addr, 8);
        step("PUT of 8 bytes to address 0x10%.0ld", 0);
        send_neth(F_PUT | fx.vf_id, fx.f_psn++, 0, p, 16);
        spin(100);
        rule(canary == 0x1122334455667788ULL, "the PUT wrote to the process's memory");
        detail(canary == 0x1122334455667788ULL ? " canary=unchanged%.0ld" : " canary=CHANGED%.0ld",
               0);
    } else {
        detail(" (original: address 0, length 0 only)%.0ld", 0);
    }
    verdict("put emulation packets");
}

static void c_dup(void)
{
    uint16_t p0 = fx.f_psn;
    uint8_t b[16] = { 0 };

    forged_am(AM_FORGED, 1, 16);             /* p0: new */
    send_neth(F_AM | (AM_FORGED << 27) | fx.vf_id, p0, 0, b, 16);      /* dup */
    send_neth(F_AM | (AM_FORGED << 27) | fx.vf_id, p0, 0, b, 16);      /* dup */
    forged_am(AM_FORGED, 2, 16);             /* p0+1: new */
    send_neth(F_AM | (AM_FORGED << 27) | fx.vf_id, p0, 0, b, 16);      /* replay */
    send_neth(F_AM | (AM_FORGED << 27) | fx.vf_id, (uint16_t)(p0 - 1), 0, b, 16);
    forged_am(AM_FORGED, 3, 16);             /* p0+2: new */
    spin(100);
    rule(fx.forged == 3, "a duplicate was delivered or a new packet lost");
    verdict("duplicated and replayed packets");
}

static void c_flood(void)
{
    uint8_t b[128];
    size_t len;
    uint32_t i, n = 300;

    for (i = 0; i < n; i++) {
        len = creq_body(b, 1000, i, fx.v.dev_addr, fx.v.attr.device_addr_len);
        send_neth(NULL_ID | F_CTL, 1, 0, b, len);
        if (i % 32 == 0) {
            spin(5);
        }
    }
    len = creq_body(b, 2000, 9999, fx.v.dev_addr, fx.v.attr.device_addr_len);
    send_neth(NULL_ID | F_CTL, 1, 0, b, len);
    send_neth(NULL_ID | F_CTL, 1, 0, b, len);
    spin(300);
    detail(" creqs=%ld", (long)n + 2);
    verdict("flood of connection requests (300 conn_sn, one replayed)");
}

typedef struct {
    const char *name;
    void (*fn)(void);
    int arg;
} case_t;

static const case_t g_cases[] = {
    { "runt", c_runt, 0 },
    { "unknown-ep", c_unknown_ep, 0 },
    { "creq-neth-only", c_creq_short, 0 },
    { "creq-cut", c_creq_short, 1 },
    { "creq-addr-0x80", c_creq_badaddr, 0x80 },
    { "creq-addr-0x40", c_creq_badaddr, 0x40 },
    { "creq-addr-0x10", c_creq_badaddr, 0x10 },
    { "creq-addr-0x08", c_creq_badaddr, 0x08 },
    { "creq-addr-0xff", c_creq_badaddr, 0xff },
    { "ctl-type-null", c_ctl_type, 0 },
    { "ctl-type-ep", c_ctl_type_ep, 0 },
    { "crep-wrong-src", c_crep_wrong, 0 },
    { "crep-unsolicited", c_crep_unsolicited, 0 },
    { "psn-far", c_psn_far, 0 },
    { "ack-beyond", c_ack_beyond, 0 },
    { "am-ids", c_am_ids, 0 },
    { "put", c_put, 0 },
    { "dup-replay", c_dup, 0 },
    { "creq-flood", c_flood, 0 },
};

int main(int argc, char **argv)
{
    int passed = 0, failed = 0;
    size_t c;
    bi_args_t args = { .dev = g_dev };

    bi_parse_args(argc, argv, &args);
    g_dev     = args.dev;
    g_verbose = args.verbose;
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* the original is never sent a PUT to an address other than 0 (its put
     * emulation would write where the datagram says), even with --strict */
    g_is_original = bi_library_is_original();
    g_strict      = args.forced >= 0 ? args.forced : !g_is_original;
    printf("# mode: %s, device %s\n", g_strict ? "strict (our library)" : "original", g_dev);
    for (c = 0; c < sizeof(g_cases) / sizeof(g_cases[0]); c++) {
        int st, pfd[2];
        pid_t pid;

        if (!bi_selected(g_cases[c].name, argc, argv, args.first) || pipe(pfd)) {
            continue;
        }
        pid = fork();
        if (pid == 0) {
            close(pfd[0]);
            dup2(pfd[1], STDOUT_FILENO);
            if (!g_verbose) {
                dup2(pfd[1], STDERR_FILENO);   /* for the assertion lines */
            }
            alarm(CASE_TIMEOUT_SEC);
            g_arg = g_cases[c].arg;
            fixture();
            g_cases[c].fn();
            printf("CASE %s: returned without a verdict\n", g_cases[c].name);
            _exit(1);
        }
        close(pfd[1]);
        {
            char out[65536];

            bi_read_child(pfd[0], out, sizeof(out));
            waitpid(pid, &st, 0);
            if (g_verbose) {
                fputs(out, stdout);
            } else {
                /* the verdict lines and what a crash said, not the log */
                char *line, *save = NULL;

                for (line = strtok_r(out, "\n", &save); line != NULL;
                     line = strtok_r(NULL, "\n", &save)) {
                    const char *a = strstr(line, "Assertion");

                    if (a == NULL) {
                        a = strstr(line, "Fatal:");
                    }
                    if (!strncmp(line, "CASE ", 5) || !strncmp(line, "# ", 2) ||
                        !strncmp(line, "SETUP ", 6)) {
                        puts(line);
                    } else if (a != NULL) {
                        printf("# crash: %.200s\n", a);
                    }
                }
            }
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
