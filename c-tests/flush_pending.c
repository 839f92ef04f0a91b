/*
 * flush_pending.c - a flush must not overtake a request waiting on the
 * pending queue.
 *
 *   flush_pending TL DEV [EPS]        e.g. flush_pending ud_verbs softrdma0:1
 *
 * One process, one worker with an async context in poll mode (its timers
 * run only when this program polls it), two interfaces A and B of TL on
 * DEV. A gets EPS endpoints (default 1024): to B's interface address, or
 * (a transport connecting endpoint to endpoint) each paired with one of
 * B; all are connected first (flushed while both sides progress). Then,
 * without progressing anything, A sends AM short messages round robin
 * until one endpoint (X) gets UCS_ERR_NO_RESOURCE: the send queue, the
 * completion queue or a window is exhausted (run it with a short
 * UCX_RC_VERBS_TX_CQ_LEN for rc_verbs). Then:
 *   - uct_ep_pending_add(X, R) must return UCS_OK (R sends X's message);
 *   - uct_ep_flush(X) must not return UCS_OK: R is not out yet. It may
 *     return UCS_ERR_NO_RESOURCE (then the program adds its flush to the
 *     pending queue, behind R, as libucp does) or UCS_INPROGRESS, whose
 *     completion must not come before R ran;
 *   - uct_iface_flush(A) must not return UCS_OK.
 * Then both interfaces are progressed until R ran and X's flush completed,
 * and B must have received every message, each endpoint's in order.
 *
 * libucp relies on exactly this: a remote operation emulated with active
 * messages counts as outstanding only once its message is sent, so a flush
 * completing while the message waits in the pending queue reports an
 * operation complete before it was even sent.
 *
 * Prints "PASS ..."/"FAIL ..." lines and "N passed, M failed" before the
 * teardown (endpoints, ifaces, md, worker), then "# teardown done"; exit
 * status 0 when nothing failed, 77 when TL/DEV is not there.
 */
#define _GNU_SOURCE
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define AM_ID 7

static int g_pass, g_fail;
static uint32_t *g_next_seq;       /* per endpoint: the next sequence B expects */
static uint32_t *g_sent;           /* per endpoint: messages A sent */
static unsigned g_eps;
static long g_received, g_bad;
static int g_r_ran, g_flush_done, g_flush_before_r;

static void check(int ok, const char *what, const char *detail)
{
    if (ok) {
        g_pass++;
        printf("PASS %s\n", what);
    } else {
        g_fail++;
        printf("FAIL %s: %s\n", what, detail);
    }
}

static void die(const char *what, ucs_status_t s)
{
    printf("FAIL %s: %s\n", what, ucs_status_string(s));
    printf("%d passed, %d failed\n", g_pass, g_fail + 1);
    exit(1);
}

static ucs_status_t am_cb(void *arg, void *data, size_t length, unsigned flags)
{
    uint64_t hdr;
    (void)arg; (void)flags;
    if (length < sizeof(hdr)) {
        g_bad++;
        return UCS_OK;
    }
    memcpy(&hdr, data, sizeof(hdr));
    unsigned ep = (unsigned)(hdr >> 32);
    uint32_t seq = (uint32_t)hdr;
    if (ep >= g_eps || seq != g_next_seq[ep]) {
        if (g_bad++ < 5)
            fprintf(stderr, "unexpected message: ep %u seq %u (expected %u)\n", ep, seq,
                    ep < g_eps ? g_next_seq[ep] : 0);
    } else {
        g_next_seq[ep]++;
    }
    g_received++;
    return UCS_OK;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static ucs_async_context_t *g_async;
static uct_worker_h g_worker;
static uct_iface_h g_a, g_b;
static uct_ep_h *g_ep;
static unsigned g_x;

static void progress(void)
{
    ucs_async_poll(g_async);
    uct_worker_progress(g_worker);
}

static ucs_status_t send_one(unsigned i)
{
    uint64_t hdr = ((uint64_t)i << 32) | g_sent[i];
    uint64_t payload[2] = { hdr ^ 0x5a5a5a5a5a5a5a5aull, ~hdr };
    ucs_status_t s = uct_ep_am_short(g_ep[i], AM_ID, hdr, payload, sizeof(payload));
    if (s == UCS_OK)
        g_sent[i]++;
    return s;
}

static ucs_status_t r_cb(uct_pending_req_t *req)
{
    (void)req;
    ucs_status_t s = send_one(g_x);
    if (s == UCS_OK)
        g_r_ran = 1;
    return s;
}

static void flush_comp_cb(uct_completion_t *c)
{
    (void)c;
    if (!g_r_ran)
        g_flush_before_r = 1;
    g_flush_done = 1;
}

static uct_completion_t g_flush_comp;

static ucs_status_t flush_req_cb(uct_pending_req_t *req)
{
    (void)req;
    g_flush_comp.func = flush_comp_cb;
    g_flush_comp.count = 1;
    g_flush_comp.status = UCS_OK;
    ucs_status_t s = uct_ep_flush(g_ep[g_x], 0, &g_flush_comp);
    if (s == UCS_OK) {
        flush_comp_cb(&g_flush_comp);
        return UCS_OK;
    }
    if (s == UCS_INPROGRESS)
        return UCS_OK;
    return s;
}

static uct_iface_h open_iface(uct_md_h md, uct_component_h comp, const char *tl, const char *dev)
{
    uct_iface_config_t *cfg;
    uct_iface_params_t p;
    uct_iface_h iface;
    ucs_status_t s;
    (void)comp;
    s = uct_md_iface_config_read(md, tl, NULL, NULL, &cfg);
    if (s != UCS_OK) die("uct_md_iface_config_read", s);
    memset(&p, 0, sizeof(p));
    p.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE |
                   UCT_IFACE_PARAM_FIELD_STATS_ROOT | UCT_IFACE_PARAM_FIELD_RX_HEADROOM;
    p.open_mode = UCT_IFACE_OPEN_MODE_DEVICE;
    p.mode.device.tl_name = tl;
    p.mode.device.dev_name = dev;
    p.stats_root = NULL;
    p.rx_headroom = 0;
    s = uct_iface_open(md, g_worker, &p, cfg, &iface);
    uct_config_release(cfg);
    if (s != UCS_OK) die("uct_iface_open", s);
    return iface;
}

int main(int argc, char **argv)
{
    uct_component_h *comps;
    unsigned ncomps;
    uct_md_h md = NULL;
    uct_component_h comp = NULL;
    ucs_status_t s;
    const char *tl, *dev;

    if (argc < 3) {
        fprintf(stderr, "usage: %s TL DEV [EPS]\n", argv[0]);
        return 2;
    }
    tl = argv[1];
    dev = argv[2];
    g_eps = argc > 3 ? (unsigned)atoi(argv[3]) : 1024;
    setvbuf(stdout, NULL, _IONBF, 0);

    /* the md whose component lists TL on DEV */
    if (uct_query_components(&comps, &ncomps) != UCS_OK) die("uct_query_components", UCS_ERR_IO_ERROR);
    for (unsigned c = 0; c < ncomps && md == NULL; c++) {
        uct_component_attr_t ca = { .field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT };
        if (uct_component_query(comps[c], &ca) != UCS_OK) continue;
        uct_md_resource_desc_t *res = calloc(ca.md_resource_count + 1, sizeof(*res));
        ca.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        ca.md_resources = res;
        if (uct_component_query(comps[c], &ca) == UCS_OK) {
            for (unsigned m = 0; m < ca.md_resource_count && md == NULL; m++) {
                uct_md_config_t *mc;
                uct_md_h h;
                uct_tl_resource_desc_t *tls;
                unsigned ntls;
                if (uct_md_config_read(comps[c], NULL, NULL, &mc) != UCS_OK) continue;
                s = uct_md_open(comps[c], res[m].md_name, mc, &h);
                uct_config_release(mc);
                if (s != UCS_OK) continue;
                if (uct_md_query_tl_resources(h, &tls, &ntls) == UCS_OK) {
                    for (unsigned t = 0; t < ntls; t++)
                        if (!strcmp(tls[t].tl_name, tl) && !strcmp(tls[t].dev_name, dev)) {
                            md = h;
                            comp = comps[c];
                        }
                    uct_release_tl_resource_list(tls);
                }
                if (md == NULL) uct_md_close(h);
            }
        }
        free(res);
    }
    if (md == NULL) {
        printf("SKIP no %s on %s\n", tl, dev);
        uct_release_component_list(comps);
        return 77;
    }

    if ((s = ucs_async_context_create(UCS_ASYNC_MODE_POLL, &g_async)) != UCS_OK) die("async", s);
    if ((s = uct_worker_create(g_async, UCS_THREAD_MODE_SINGLE, &g_worker)) != UCS_OK) die("worker", s);
    g_a = open_iface(md, comp, tl, dev);
    g_b = open_iface(md, comp, tl, dev);
    if ((s = uct_iface_set_am_handler(g_b, AM_ID, am_cb, NULL, 0)) != UCS_OK) die("set_am_handler", s);

    uct_iface_attr_t attr;
    if ((s = uct_iface_query(g_b, &attr)) != UCS_OK) die("iface_query", s);
    int to_iface = (attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE) != 0;
    if (!(to_iface || (attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_EP)) ||
        !(attr.cap.flags & UCT_IFACE_FLAG_AM_SHORT) || !(attr.cap.flags & UCT_IFACE_FLAG_PENDING)) {
        printf("SKIP %s: needs a way to connect, AM short and pending\n", tl);
        return 77;
    }
    void *dev_addr = calloc(1, attr.device_addr_len + 1);
    void *iface_addr = calloc(1, attr.iface_addr_len + 1);
    if ((s = uct_iface_get_device_address(g_b, dev_addr)) != UCS_OK) die("get_device_address", s);
    if ((s = uct_iface_get_address(g_b, iface_addr)) != UCS_OK) die("get_address", s);
    uct_iface_progress_enable(g_a, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    uct_iface_progress_enable(g_b, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);

    g_ep = calloc(g_eps, sizeof(*g_ep));
    uct_ep_h *b_ep = calloc(g_eps, sizeof(*b_ep));
    void *a_dev = calloc(1, attr.device_addr_len + 1);
    void *a_ep_addr = calloc(1, attr.ep_addr_len + 1);
    void *b_ep_addr = calloc(1, attr.ep_addr_len + 1);
    if ((s = uct_iface_get_device_address(g_a, a_dev)) != UCS_OK) die("get_device_address", s);
    g_next_seq = calloc(g_eps, sizeof(*g_next_seq));
    g_sent = calloc(g_eps, sizeof(*g_sent));
    for (unsigned i = 0; i < g_eps; i++) {
        uct_ep_params_t ep = {0};
        if (to_iface) {
            ep.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR | UCT_EP_PARAM_FIELD_IFACE_ADDR;
            ep.iface = g_a;
            ep.dev_addr = dev_addr;
            ep.iface_addr = iface_addr;
            if ((s = uct_ep_create(&ep, &g_ep[i])) != UCS_OK) die("uct_ep_create", s);
            continue;
        }
        ep.field_mask = UCT_EP_PARAM_FIELD_IFACE;
        ep.iface = g_a;
        if ((s = uct_ep_create(&ep, &g_ep[i])) != UCS_OK) die("uct_ep_create (A)", s);
        ep.iface = g_b;
        if ((s = uct_ep_create(&ep, &b_ep[i])) != UCS_OK) die("uct_ep_create (B)", s);
        if ((s = uct_ep_get_address(g_ep[i], a_ep_addr)) != UCS_OK) die("uct_ep_get_address (A)", s);
        if ((s = uct_ep_get_address(b_ep[i], b_ep_addr)) != UCS_OK) die("uct_ep_get_address (B)", s);
        if ((s = uct_ep_connect_to_ep(g_ep[i], dev_addr, b_ep_addr)) != UCS_OK) die("connect_to_ep (A)", s);
        if ((s = uct_ep_connect_to_ep(b_ep[i], a_dev, a_ep_addr)) != UCS_OK) die("connect_to_ep (B)", s);
    }
    /* connect everything: flush every endpoint until it is flushed */
    double t0 = now();
    for (unsigned i = 0; i < g_eps; i++) {
        while ((s = uct_ep_flush(g_ep[i], 0, NULL)) != UCS_OK) {
            if (UCS_STATUS_IS_ERR(s) && s != UCS_ERR_NO_RESOURCE) die("uct_ep_flush (connect)", s);
            progress();
            if (now() - t0 > 60) die("connecting the endpoints", UCS_ERR_TIMED_OUT);
        }
    }
    while (uct_iface_flush(g_a, 0, NULL) != UCS_OK) {
        progress();
        if (now() - t0 > 60) die("uct_iface_flush (connect)", UCS_ERR_TIMED_OUT);
    }
    printf("# %u endpoints connected\n", g_eps);

    /* exhaust the send resources without progressing: round robin, one
     * message per endpoint per round, until an endpoint gets
     * UCS_ERR_NO_RESOURCE */
    long total = 0;
    int found = 0;
    unsigned round;
    for (round = 0; round < 4096 && !found; round++) {
        for (unsigned i = 0; i < g_eps && !found; i++) {
            s = send_one(i);
            if (s == UCS_OK) {
                total++;
            } else if (s == UCS_ERR_NO_RESOURCE) {
                g_x = i;
                found = 1;
            } else {
                die("uct_ep_am_short", s);
            }
        }
    }
    if (!found) {
        printf("FAIL the send resources were not exhausted by %ld messages\n", total);
        printf("%d passed, %d failed\n", g_pass, g_fail + 1);
        return 1;
    }
    printf("# %ld messages went out; endpoint %u got UCS_ERR_NO_RESOURCE (its message %u, round %u)\n",
           total, g_x, g_sent[g_x], round);

    uct_pending_req_t r = { .func = r_cb };
    s = uct_ep_pending_add(g_ep[g_x], &r, 0);
    check(s == UCS_OK, "uct_ep_pending_add on the endpoint out of resources", ucs_status_string(s));
    if (s != UCS_OK) {
        printf("%d passed, %d failed\n", g_pass, g_fail);
        return 1;
    }

    uct_pending_req_t fr = { .func = flush_req_cb };
    g_flush_comp.func = flush_comp_cb;
    g_flush_comp.count = 1;
    g_flush_comp.status = UCS_OK;
    s = uct_ep_flush(g_ep[g_x], 0, &g_flush_comp);
    {
        char d[128];
        snprintf(d, sizeof(d), "%s while a send waits on its pending queue", ucs_status_string(s));
        check(s != UCS_OK, "uct_ep_flush of the endpoint with a pending send is not complete", d);
    }
    if (s == UCS_ERR_NO_RESOURCE) {
        ucs_status_t p = uct_ep_pending_add(g_ep[g_x], &fr, 0);
        check(p == UCS_OK, "uct_ep_pending_add of the flush", ucs_status_string(p));
    } else if (s == UCS_OK) {
        g_flush_done = 1;
        g_flush_before_r = 1;
    } else if (s != UCS_INPROGRESS) {
        die("uct_ep_flush", s);
    }
    s = uct_iface_flush(g_a, 0, NULL);
    {
        char d[128];
        snprintf(d, sizeof(d), "%s while a send waits on a pending queue", ucs_status_string(s));
        check(s != UCS_OK, "uct_iface_flush with a pending send is not complete", d);
    }

    /* progress until R ran and the flush completed */
    t0 = now();
    while (!g_r_ran || !g_flush_done) {
        progress();
        if (now() - t0 > 60) {
            char d[96];
            snprintf(d, sizeof(d), "after 60 s: request %s, flush %s", g_r_ran ? "ran" : "did not run",
                     g_flush_done ? "done" : "not done");
            check(0, "the pending send and the flush complete", d);
            break;
        }
    }
    check(!g_flush_before_r, "the flush completed after the pending send went out",
          "the flush completion came first");
    /* everything arrives */
    long want = total + (g_r_ran ? 1 : 0);
    t0 = now();
    while (g_received < want && now() - t0 < 60)
        progress();
    while (uct_iface_flush(g_a, 0, NULL) != UCS_OK && now() - t0 < 60)
        progress();
    {
        char d[128];
        snprintf(d, sizeof(d), "received %ld of %ld, %ld out of order or malformed", g_received, want, g_bad);
        check(g_received == want && g_bad == 0, "B received every message, each endpoint's in order", d);
    }
    /* the verdict comes before the teardown, which is reported apart */
    printf("%d passed, %d failed\n", g_pass, g_fail);

    for (unsigned i = 0; i < g_eps; i++) {
        uct_ep_destroy(g_ep[i]);
        if (b_ep[i] != NULL) uct_ep_destroy(b_ep[i]);
    }
    free(b_ep);
    free(a_dev);
    free(a_ep_addr);
    free(b_ep_addr);
    uct_iface_close(g_a);
    uct_iface_close(g_b);
    uct_md_close(md);
    uct_worker_destroy(g_worker);
    ucs_async_context_destroy(g_async);
    uct_release_component_list(comps);
    free(g_ep);
    free(g_next_seq);
    free(g_sent);
    free(dev_addr);
    free(iface_addr);
    printf("# teardown done\n");
    return g_fail ? 1 : 0;
}
