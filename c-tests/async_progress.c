/*
 * async_progress - the worker's progress queue and the error handler used
 * the way libucp uses them: from other threads, from libucs's async thread
 * and from inside progress callbacks.
 *
 *   async_progress [TL/DEV ...]     (default: posix/memory tcp/lo)
 *
 * Cases (each prints "async: <name>: ok" or "async: <name>: FAIL <why>"):
 *   threads      4 threads register 2000 one-shot callbacks each with
 *                uct_worker_progress_register_safe while the main thread
 *                progresses: every callback runs exactly once.
 *   chain        a one-shot callback registers the next one, 1000 times.
 *   self-remove  a persistent callback unregisters itself on its 10th call:
 *                it is never called again.
 *   unregister   another thread registers a persistent callback, waits for
 *                it to run, unregisters it; two full progress calls later it
 *                must not run any more (500 rounds).
 *   timer        libucs's async thread (a 1 ms timer) registers 200
 *                one-shot callbacks; each runs once, in the main thread.
 *   event TL     adaptive progress as libucp does it: the receiving iface's
 *                progress is off and its event fd armed; libucs's async
 *                thread sees the fd, registers a one-shot callback, which
 *                enables the iface's progress (UCT_PROGRESS_THREAD_SAFE) in
 *                the main thread; the message arrives; progress off, re-arm;
 *                20 messages, all with their content, none delivered while
 *                the iface's progress is off (except by uct_iface_progress
 *                when the arm answers BUSY).
 *   peer-dead    a child process opens posix, the parent connects to it,
 *                the child is killed; uct_ep_check from libucs's async
 *                thread; the error handler (UCT_CB_FLAG_ASYNC) runs once,
 *                in the main thread, with the endpoint, and the endpoint
 *                can then be destroyed.
 * Exit status 0 when every case passes.
 */
#define _GNU_SOURCE
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define AM_ID 7
#define NTHREADS 4
#define PER_THREAD 2000

static uct_worker_h g_worker;
static ucs_async_context_t *g_async;
static pthread_t g_main;
static int g_failed;

static double now_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void report(const char *name, int ok, const char *why)
{
    if (ok) {
        printf("async: %s: ok\n", name);
    } else {
        printf("async: %s: FAIL %s\n", name, why);
        g_failed = 1;
    }
    fflush(stdout);
}

/* libucs exports this but installs no header declaring it */
double ucs_get_cpu_clocks_per_sec(void);

/* 1 ms of the libucs clock (ucs_time_t is in CPU clock ticks) */
static ucs_time_t ms_interval(void)
{
    return (ucs_time_t)(ucs_get_cpu_clocks_per_sec() / 1000.0);
}

/* --------------------------------------------------------- threads -- */
static atomic_int g_counts[NTHREADS * PER_THREAD];
static uct_worker_cb_id_t g_ids[NTHREADS * PER_THREAD];
static atomic_int g_ran, g_threads_done;

static unsigned count_once(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
    atomic_fetch_add(&g_ran, 1);
    return 1;
}

static void *register_many(void *arg)
{
    int t = (int)(intptr_t)arg;
    for (int i = 0; i < PER_THREAD; i++) {
        int k = t * PER_THREAD + i;
        uct_worker_progress_register_safe(g_worker, count_once, &g_counts[k],
                                          UCS_CALLBACKQ_FLAG_ONESHOT, &g_ids[k]);
        if (i % 64 == 0) {
            sched_yield();
        }
    }
    atomic_fetch_add(&g_threads_done, 1);
    return NULL;
}

static void case_threads(void)
{
    pthread_t th[NTHREADS];
    char why[128] = "";
    double end = now_sec() + 30;
    int ok = 1;

    for (int k = 0; k < NTHREADS * PER_THREAD; k++) {
        g_ids[k] = UCS_CALLBACKQ_ID_NULL;
    }
    for (int t = 0; t < NTHREADS; t++) {
        pthread_create(&th[t], NULL, register_many, (void *)(intptr_t)t);
    }
    while ((atomic_load(&g_threads_done) < NTHREADS ||
            atomic_load(&g_ran) < NTHREADS * PER_THREAD) && now_sec() < end) {
        uct_worker_progress(g_worker);
    }
    for (int t = 0; t < NTHREADS; t++) {
        pthread_join(th[t], NULL);
    }
    /* nothing may run twice: a few more rounds */
    for (int i = 0; i < 100; i++) {
        uct_worker_progress(g_worker);
    }
    for (int k = 0; k < NTHREADS * PER_THREAD; k++) {
        if (atomic_load(&g_counts[k]) != 1) {
            snprintf(why, sizeof(why), "callback %d ran %d times", k, atomic_load(&g_counts[k]));
            ok = 0;
            break;
        }
    }
    report("threads register 8000 one-shot callbacks", ok, why);
}

/* ----------------------------------------------------------- chain -- */
static int g_chain;
static uct_worker_cb_id_t g_chain_id = UCS_CALLBACKQ_ID_NULL;

static unsigned chain_cb(void *arg)
{
    g_chain_id = UCS_CALLBACKQ_ID_NULL; /* a one-shot callback's id is spent */
    if (++g_chain < 1000) {
        uct_worker_progress_register_safe(g_worker, chain_cb, NULL, UCS_CALLBACKQ_FLAG_ONESHOT,
                                          &g_chain_id);
    }
    return 1;
}

static void case_chain(void)
{
    char why[128] = "";
    uct_worker_progress_register_safe(g_worker, chain_cb, NULL, UCS_CALLBACKQ_FLAG_ONESHOT,
                                      &g_chain_id);
    for (int i = 0; i < 100000 && g_chain < 1000; i++) {
        uct_worker_progress(g_worker);
    }
    for (int i = 0; i < 100; i++) {
        uct_worker_progress(g_worker);
    }
    snprintf(why, sizeof(why), "%d calls", g_chain);
    report("a callback registers the next one (1000)", g_chain == 1000, why);
}

/* ----------------------------------------------------- self-remove -- */
static int g_self_calls;
static uct_worker_cb_id_t g_self_id = UCS_CALLBACKQ_ID_NULL;

static unsigned self_remove_cb(void *arg)
{
    if (++g_self_calls == 10) {
        uct_worker_progress_unregister_safe(g_worker, &g_self_id);
    }
    return 0;
}

static void case_self_remove(void)
{
    char why[128];
    uct_worker_progress_register_safe(g_worker, self_remove_cb, NULL, 0, &g_self_id);
    for (int i = 0; i < 200; i++) {
        uct_worker_progress(g_worker);
    }
    snprintf(why, sizeof(why), "%d calls, id %s", g_self_calls,
             g_self_id == UCS_CALLBACKQ_ID_NULL ? "reset" : "not reset");
    report("a callback unregisters itself on its 10th call", g_self_calls == 10 &&
           g_self_id == UCS_CALLBACKQ_ID_NULL, why);
}

/* ------------------------------------------------------ unregister -- */
static atomic_int g_unreg_calls, g_rounds_done, g_unreg_bad;
static atomic_long g_generation;

static unsigned persistent_cb(void *arg)
{
    atomic_fetch_add(&g_unreg_calls, 1);
    return 0;
}

static void *register_unregister(void *arg)
{
    for (int r = 0; r < 500; r++) {
        uct_worker_cb_id_t id = UCS_CALLBACKQ_ID_NULL;
        int before = atomic_load(&g_unreg_calls);
        double end = now_sec() + 10;
        long gen;
        int after;

        uct_worker_progress_register_safe(g_worker, persistent_cb, NULL, 0, &id);
        while (atomic_load(&g_unreg_calls) == before && now_sec() < end) {
            sched_yield();
        }
        uct_worker_progress_unregister_safe(g_worker, &id);
        /* a dispatch already under way may still finish this call; two
         * later progress calls must not see the callback any more */
        gen = atomic_load(&g_generation);
        while (atomic_load(&g_generation) < gen + 2 && now_sec() < end) {
            sched_yield();
        }
        after = atomic_load(&g_unreg_calls);
        gen = atomic_load(&g_generation);
        while (atomic_load(&g_generation) < gen + 3 && now_sec() < end) {
            sched_yield();
        }
        if (atomic_load(&g_unreg_calls) != after || id != UCS_CALLBACKQ_ID_NULL ||
            now_sec() >= end) {
            atomic_fetch_add(&g_unreg_bad, 1);
        }
    }
    atomic_store(&g_rounds_done, 1);
    return NULL;
}

static void case_unregister(void)
{
    pthread_t th;
    char why[128];
    double end = now_sec() + 60;

    pthread_create(&th, NULL, register_unregister, NULL);
    while (!atomic_load(&g_rounds_done) && now_sec() < end) {
        uct_worker_progress(g_worker);
        atomic_fetch_add(&g_generation, 1);
    }
    if (!atomic_load(&g_rounds_done)) {
        report("another thread registers and unregisters (500 rounds)", 0, "timed out");
        exit(1); /* the thread is still running */
    }
    pthread_join(th, NULL);
    snprintf(why, sizeof(why), "%d of 500 rounds saw a call after the unregistration",
             atomic_load(&g_unreg_bad));
    report("another thread registers and unregisters (500 rounds)",
           atomic_load(&g_unreg_bad) == 0, why);
}

/* ----------------------------------------------------------- timer -- */
#define TIMER_CBS 200
static atomic_int g_timer_fired, g_timer_ran, g_timer_wrong_thread;
static uct_worker_cb_id_t g_timer_ids[TIMER_CBS];

static unsigned timer_oneshot(void *arg)
{
    if (!pthread_equal(pthread_self(), g_main)) {
        atomic_fetch_add(&g_timer_wrong_thread, 1);
    }
    atomic_fetch_add(&g_timer_ran, 1);
    return 1;
}

static void timer_cb(int id, ucs_event_set_types_t events, void *arg)
{
    int k = atomic_load(&g_timer_fired);
    if (k < TIMER_CBS) {
        uct_worker_progress_register_safe(g_worker, timer_oneshot, NULL,
                                          UCS_CALLBACKQ_FLAG_ONESHOT, &g_timer_ids[k]);
        atomic_store(&g_timer_fired, k + 1);
    }
}

static void case_timer(void)
{
    int timer_id;
    char why[160];
    double end = now_sec() + 30;
    ucs_status_t st;

    for (int k = 0; k < TIMER_CBS; k++) {
        g_timer_ids[k] = UCS_CALLBACKQ_ID_NULL;
    }
    st = ucs_async_add_timer(UCS_ASYNC_MODE_THREAD_SPINLOCK, ms_interval(), timer_cb, NULL,
                             g_async, &timer_id);
    if (st != UCS_OK) {
        report("the async thread registers callbacks (1 ms timer, 200)", 0,
               ucs_status_string(st));
        return;
    }
    while (atomic_load(&g_timer_ran) < TIMER_CBS && now_sec() < end) {
        uct_worker_progress(g_worker);
    }
    ucs_async_remove_handler(timer_id, 1);
    for (int i = 0; i < 100; i++) {
        uct_worker_progress(g_worker);
    }
    snprintf(why, sizeof(why), "fired %d, ran %d, %d outside the main thread",
             atomic_load(&g_timer_fired), atomic_load(&g_timer_ran),
             atomic_load(&g_timer_wrong_thread));
    report("the async thread registers callbacks (1 ms timer, 200)",
           atomic_load(&g_timer_fired) == TIMER_CBS && atomic_load(&g_timer_ran) == TIMER_CBS &&
           atomic_load(&g_timer_wrong_thread) == 0, why);
}

/* ---------------------------------------------------- iface helpers -- */
typedef struct {
    uct_component_h comp;
    uct_md_h md;
    uct_iface_h iface;
    uct_iface_attr_t attr;
} tl_t;

static ucs_status_t open_tl(const char *tl, const char *dev, tl_t *t, uct_error_handler_t eh,
                            void *eh_arg)
{
    uct_component_h *comps;
    unsigned ncomps;
    ucs_status_t st = uct_query_components(&comps, &ncomps);
    if (st != UCS_OK) {
        return st;
    }
    st = UCS_ERR_NO_DEVICE;
    for (unsigned c = 0; c < ncomps && st == UCS_ERR_NO_DEVICE; c++) {
        uct_md_resource_desc_t mdr[16];
        uct_component_attr_t ca = {.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT |
                                                 UCT_COMPONENT_ATTR_FIELD_NAME};
        if (uct_component_query(comps[c], &ca) != UCS_OK || ca.md_resource_count > 16) {
            continue;
        }
        ca.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        ca.md_resources = mdr;
        if (uct_component_query(comps[c], &ca) != UCS_OK) {
            continue;
        }
        for (unsigned m = 0; m < ca.md_resource_count && st == UCS_ERR_NO_DEVICE; m++) {
            uct_md_config_t *mc;
            uct_md_h md;
            uct_tl_resource_desc_t *res;
            unsigned nres;
            if (uct_md_config_read(comps[c], NULL, NULL, &mc) != UCS_OK) {
                continue;
            }
            if (uct_md_open(comps[c], mdr[m].md_name, mc, &md) != UCS_OK) {
                uct_config_release(mc);
                continue;
            }
            uct_config_release(mc);
            if (uct_md_query_tl_resources(md, &res, &nres) != UCS_OK) {
                uct_md_close(md);
                continue;
            }
            for (unsigned r = 0; r < nres; r++) {
                if (strcmp(res[r].tl_name, tl) || strcmp(res[r].dev_name, dev)) {
                    continue;
                }
                uct_iface_config_t *ic;
                uct_iface_params_t p = {0};
                st = uct_md_iface_config_read(md, tl, NULL, NULL, &ic);
                if (st != UCS_OK) {
                    break;
                }
                p.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE |
                               UCT_IFACE_PARAM_FIELD_RX_HEADROOM;
                p.open_mode = UCT_IFACE_OPEN_MODE_DEVICE;
                p.mode.device.tl_name = tl;
                p.mode.device.dev_name = dev;
                if (eh != NULL) {
                    p.field_mask |= UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                                    UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                                    UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
                    p.err_handler = eh;
                    p.err_handler_arg = eh_arg;
                    p.err_handler_flags = UCT_CB_FLAG_ASYNC;
                }
                st = uct_iface_open(md, g_worker, &p, ic, &t->iface);
                uct_config_release(ic);
                if (st == UCS_OK) {
                    st = uct_iface_query(t->iface, &t->attr);
                }
                break;
            }
            uct_release_tl_resource_list(res);
            if (st == UCS_OK) {
                t->comp = comps[c];
                t->md = md;
            } else {
                if (st == UCS_ERR_NO_DEVICE) {
                    uct_md_close(md);
                } else {
                    uct_md_close(md);
                    uct_release_component_list(comps);
                    return st;
                }
            }
        }
    }
    uct_release_component_list(comps);
    return st;
}

static void close_tl(tl_t *t)
{
    uct_iface_close(t->iface);
    uct_md_close(t->md);
}

/* connect `from` to `to` (both in this process); *ep_p on success */
static ucs_status_t connect_tl(tl_t *from, tl_t *to, uct_ep_h *ep_p)
{
    uint8_t dev[256], ifa[256];
    uct_ep_params_t ep = {0};
    ucs_status_t st;

    if (!(to->attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE) ||
        to->attr.device_addr_len > sizeof(dev) || to->attr.iface_addr_len > sizeof(ifa)) {
        return UCS_ERR_UNSUPPORTED;
    }
    st = uct_iface_get_device_address(to->iface, (uct_device_addr_t *)dev);
    if (st == UCS_OK) {
        st = uct_iface_get_address(to->iface, (uct_iface_addr_t *)ifa);
    }
    if (st != UCS_OK) {
        return st;
    }
    ep.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                    UCT_EP_PARAM_FIELD_IFACE_ADDR;
    ep.iface = from->iface;
    ep.dev_addr = (uct_device_addr_t *)dev;
    ep.iface_addr = (uct_iface_addr_t *)ifa;
    return uct_ep_create(&ep, ep_p);
}

/* ----------------------------------------------------------- event -- */
static tl_t g_rx;
static uct_worker_cb_id_t g_activate_id = UCS_CALLBACKQ_ID_NULL;
static atomic_int g_events, g_activations;
static int g_received, g_bad_content, g_rx_enabled, g_draining, g_recv_while_off;
static uint64_t g_expect;

static unsigned activate_rx(void *arg)
{
    g_activate_id = UCS_CALLBACKQ_ID_NULL;
    atomic_fetch_add(&g_activations, 1);
    g_rx_enabled = 1;
    uct_iface_progress_enable(g_rx.iface, UCT_PROGRESS_RECV | UCT_PROGRESS_THREAD_SAFE);
    return 1;
}

static void rx_event(int id, ucs_event_set_types_t events, void *arg)
{
    atomic_fetch_add(&g_events, 1);
    uct_worker_progress_register_safe(g_worker, activate_rx, NULL, UCS_CALLBACKQ_FLAG_ONESHOT,
                                      &g_activate_id);
}

static ucs_status_t rx_am(void *arg, void *data, size_t length, unsigned flags)
{
    uint64_t hdr, payload;
    if (length != 16) {
        g_bad_content++;
        return UCS_OK;
    }
    memcpy(&hdr, data, 8);
    memcpy(&payload, (char *)data + 8, 8);
    if (hdr != g_expect || payload != ~g_expect) {
        g_bad_content++;
    }
    if (!g_rx_enabled && !g_draining) {
        g_recv_while_off++; /* the worker reached a disabled iface */
    }
    g_received++;
    return UCS_OK;
}

static void case_event(const char *tl, const char *dev)
{
    char name[96], why[200] = "";
    tl_t tx = {0};
    uct_ep_h ep = NULL;
    int fd, async_id = -1, ok = 0, i;
    ucs_status_t st;

    snprintf(name, sizeof(name), "event fd wakes the async thread, progress enabled (%s/%s)",
             tl, dev);
    memset(&g_rx, 0, sizeof(g_rx));
    g_received = g_bad_content = g_recv_while_off = g_draining = 0;
    g_rx_enabled = 1; /* until the first disable */
    atomic_store(&g_events, 0);
    atomic_store(&g_activations, 0);
    st = open_tl(tl, dev, &g_rx, NULL, NULL);
    if (st != UCS_OK) {
        snprintf(why, sizeof(why), "open rx: %s", ucs_status_string(st));
        report(name, 0, why);
        return;
    }
    st = open_tl(tl, dev, &tx, NULL, NULL);
    if (st != UCS_OK) {
        snprintf(why, sizeof(why), "open tx: %s", ucs_status_string(st));
        goto out_rx;
    }
    if (!(g_rx.attr.cap.event_flags & UCT_IFACE_FLAG_EVENT_FD) ||
        !(g_rx.attr.cap.event_flags & UCT_IFACE_FLAG_EVENT_RECV) ||
        !(tx.attr.cap.flags & UCT_IFACE_FLAG_AM_SHORT)) {
        snprintf(why, sizeof(why), "no event fd / recv events / am short");
        goto out_tx;
    }
    uct_iface_set_am_handler(g_rx.iface, AM_ID, rx_am, NULL, UCT_CB_FLAG_ASYNC);
    uct_iface_progress_enable(tx.iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    st = connect_tl(&tx, &g_rx, &ep);
    if (st == UCS_OK && !(g_rx.attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE)) {
        st = UCS_ERR_UNSUPPORTED;
    }
    if (st != UCS_OK) {
        snprintf(why, sizeof(why), "connect: %s", ucs_status_string(st));
        goto out_tx;
    }
    st = uct_iface_event_fd_get(g_rx.iface, &fd);
    if (st != UCS_OK) {
        snprintf(why, sizeof(why), "event_fd_get: %s", ucs_status_string(st));
        goto out_ep;
    }
    st = ucs_async_set_event_handler(UCS_ASYNC_MODE_THREAD_SPINLOCK, fd, UCS_EVENT_SET_EVREAD,
                                     rx_event, NULL, g_async);
    if (st != UCS_OK) {
        snprintf(why, sizeof(why), "ucs_async_set_event_handler: %s", ucs_status_string(st));
        goto out_ep;
    }
    async_id = fd;
    for (i = 0; i < 20; i++) {
        double end = now_sec() + 10;
        int want = g_received + 1;
        /* progress off, then arm; BUSY means events are waiting: drain */
        for (;;) {
            uct_iface_progress_disable(g_rx.iface, UCT_PROGRESS_RECV); /* as libucp: not THREAD_SAFE */
            g_rx_enabled = 0;
            st = uct_iface_event_arm(g_rx.iface, UCT_EVENT_RECV);
            if (st != UCS_ERR_BUSY || now_sec() > end) {
                break;
            }
            g_draining = 1;
            uct_iface_progress(g_rx.iface);
            g_draining = 0;
            uct_worker_progress(g_worker);
        }
        if (st != UCS_OK) {
            snprintf(why, sizeof(why), "message %d: event_arm: %s", i, ucs_status_string(st));
            goto out_handler;
        }
        g_expect = 0x1000 + i;
        do {
            uint64_t payload = ~g_expect;
            st = uct_ep_am_short(ep, AM_ID, g_expect, &payload, sizeof(payload));
            uct_worker_progress(g_worker);
        } while (st == UCS_ERR_NO_RESOURCE && now_sec() < end);
        if (st != UCS_OK) {
            snprintf(why, sizeof(why), "message %d: am_short: %s", i, ucs_status_string(st));
            goto out_handler;
        }
        while (g_received < want && now_sec() < end) {
            uct_worker_progress(g_worker);
        }
        if (g_received < want) {
            snprintf(why, sizeof(why), "message %d not received (events %d, activations %d)", i,
                     atomic_load(&g_events), atomic_load(&g_activations));
            goto out_handler;
        }
    }
    if (g_bad_content) {
        snprintf(why, sizeof(why), "%d messages with wrong content", g_bad_content);
    } else if (g_recv_while_off) {
        snprintf(why, sizeof(why), "%d messages delivered while the iface's progress was off",
                 g_recv_while_off);
    } else if (atomic_load(&g_activations) == 0 || atomic_load(&g_events) == 0) {
        snprintf(why, sizeof(why), "%d events, %d activations through the async thread",
                 atomic_load(&g_events), atomic_load(&g_activations));
    } else {
        ok = 1;
    }
out_handler:
    ucs_async_remove_handler(async_id, 1);
    /* a registration the async thread made last is still queued */
    for (i = 0; i < 10; i++) {
        uct_worker_progress(g_worker);
    }
out_ep:
    {
        double end = now_sec() + 5;
        uct_iface_progress_enable(g_rx.iface, UCT_PROGRESS_RECV | UCT_PROGRESS_SEND);
        while (uct_ep_flush(ep, 0, NULL) == UCS_ERR_NO_RESOURCE && now_sec() < end) {
            uct_worker_progress(g_worker);
        }
    }
    uct_ep_destroy(ep);
out_tx:
    close_tl(&tx);
out_rx:
    close_tl(&g_rx);
    report(name, ok, why);
}

/* ------------------------------------------------------- peer-dead -- */
static atomic_int g_err_calls, g_err_wrong_thread;
static uct_ep_h g_err_ep, g_err_seen_ep;
static ucs_status_t g_err_status, g_check_status = UCS_ERR_LAST;
static atomic_int g_check_done;

static ucs_status_t on_error(void *arg, uct_ep_h ep, ucs_status_t status)
{
    if (!pthread_equal(pthread_self(), g_main)) {
        atomic_fetch_add(&g_err_wrong_thread, 1);
    }
    g_err_seen_ep = ep;
    g_err_status = status;
    atomic_fetch_add(&g_err_calls, 1);
    return UCS_OK;
}

static void check_from_async(int id, ucs_event_set_types_t events, void *arg)
{
    if (!atomic_load(&g_check_done)) {
        g_check_status = uct_ep_check(g_err_ep, 0, NULL);
        atomic_store(&g_check_done, 1);
    }
}

static void case_peer_dead(void)
{
    const char *name = "peer killed, ep_check from the async thread, error handler";
    int to_parent[2], to_child[2], timer_id, ok = 0;
    char why[200] = "";
    tl_t me = {0};
    pid_t child;
    ucs_status_t st;
    uint8_t addr[512];
    size_t dlen, ilen;
    double end;

    if (pipe(to_parent) || pipe(to_child)) {
        report(name, 0, "pipe");
        return;
    }
    child = fork();
    if (child == 0) {
        tl_t peer = {0};
        char c;
        /* a fresh worker of its own: the parent's belongs to the parent */
        ucs_async_context_t *a;
        close(to_parent[0]);
        close(to_child[1]);
        if (ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &a) != UCS_OK ||
            uct_worker_create(a, UCS_THREAD_MODE_SINGLE, &g_worker) != UCS_OK ||
            open_tl("posix", "memory", &peer, NULL, NULL) != UCS_OK) {
            _exit(2);
        }
        dlen = peer.attr.device_addr_len;
        ilen = peer.attr.iface_addr_len;
        uct_iface_get_device_address(peer.iface, (uct_device_addr_t *)addr);
        uct_iface_get_address(peer.iface, (uct_iface_addr_t *)(addr + dlen));
        if (write(to_parent[1], &dlen, sizeof(dlen)) != sizeof(dlen) ||
            write(to_parent[1], &ilen, sizeof(ilen)) != sizeof(ilen) ||
            write(to_parent[1], addr, dlen + ilen) != (ssize_t)(dlen + ilen)) {
            _exit(3);
        }
        /* wait to be killed */
        while (read(to_child[0], &c, 1) < 0) {
        }
        _exit(0);
    }
    close(to_parent[1]);
    close(to_child[0]);
    if (read(to_parent[0], &dlen, sizeof(dlen)) != sizeof(dlen) ||
        read(to_parent[0], &ilen, sizeof(ilen)) != sizeof(ilen) || dlen + ilen > sizeof(addr) ||
        read(to_parent[0], addr, dlen + ilen) != (ssize_t)(dlen + ilen)) {
        snprintf(why, sizeof(why), "the child did not send its address");
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        goto out;
    }
    st = open_tl("posix", "memory", &me, on_error, NULL);
    if (st != UCS_OK) {
        snprintf(why, sizeof(why), "open: %s", ucs_status_string(st));
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        goto out;
    }
    uct_iface_progress_enable(me.iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    {
        uct_ep_params_t ep = {0};
        ep.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
        ep.iface = me.iface;
        ep.dev_addr = (uct_device_addr_t *)addr;
        ep.iface_addr = (uct_iface_addr_t *)(addr + dlen);
        st = uct_ep_create(&ep, &g_err_ep);
    }
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    if (st != UCS_OK) {
        snprintf(why, sizeof(why), "ep_create: %s", ucs_status_string(st));
        goto out_iface;
    }
    st = ucs_async_add_timer(UCS_ASYNC_MODE_THREAD_SPINLOCK, ms_interval(), check_from_async,
                             NULL, g_async, &timer_id);
    if (st != UCS_OK) {
        snprintf(why, sizeof(why), "add_timer: %s", ucs_status_string(st));
        goto out_ep;
    }
    end = now_sec() + 10;
    while ((!atomic_load(&g_check_done) || atomic_load(&g_err_calls) == 0) && now_sec() < end) {
        uct_worker_progress(g_worker);
    }
    ucs_async_remove_handler(timer_id, 1);
    for (int i = 0; i < 100; i++) {
        uct_worker_progress(g_worker);
    }
    if (!atomic_load(&g_check_done)) {
        snprintf(why, sizeof(why), "the async timer never ran");
    } else if (g_check_status != UCS_OK) {
        snprintf(why, sizeof(why), "uct_ep_check returned %s", ucs_status_string(g_check_status));
    } else if (atomic_load(&g_err_calls) != 1) {
        snprintf(why, sizeof(why), "the error handler ran %d times", atomic_load(&g_err_calls));
    } else if (g_err_seen_ep != g_err_ep) {
        snprintf(why, sizeof(why), "the error handler got another endpoint");
    } else if (atomic_load(&g_err_wrong_thread)) {
        snprintf(why, sizeof(why), "the error handler ran outside the main thread");
    } else {
        ok = 1;
        snprintf(why, sizeof(why), "%s", ucs_status_string(g_err_status));
    }
out_ep:
    uct_ep_destroy(g_err_ep);
out_iface:
    close_tl(&me);
out:
    close(to_parent[0]);
    close(to_child[1]);
    report(name, ok, why);
    if (ok) {
        printf("async: peer-dead status: %s\n", why);
    }
}

int main(int argc, char **argv)
{
    ucs_status_t st;

    setvbuf(stdout, NULL, _IOLBF, 0);
    g_main = pthread_self();
    st = ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &g_async);
    if (st != UCS_OK) {
        printf("async: setup: FAIL ucs_async_context_create: %s\n", ucs_status_string(st));
        return 1;
    }
    st = uct_worker_create(g_async, UCS_THREAD_MODE_SINGLE, &g_worker);
    if (st != UCS_OK) {
        printf("async: setup: FAIL uct_worker_create: %s\n", ucs_status_string(st));
        return 1;
    }

    case_threads();
    case_chain();
    case_self_remove();
    case_unregister();
    case_timer();
    if (argc > 1) {
        for (int i = 1; i < argc; i++) {
            char tl[64], *dev;
            snprintf(tl, sizeof(tl), "%s", argv[i]);
            dev = strchr(tl, '/');
            if (dev == NULL) {
                printf("async: usage: FAIL argument %s is not TL/DEV\n", argv[i]);
                return 1;
            }
            *dev++ = '\0';
            case_event(tl, dev);
        }
    } else {
        case_event("posix", "memory");
        case_event("tcp", "lo");
    }
    case_peer_dead();

    uct_worker_destroy(g_worker);
    ucs_async_context_destroy(g_async);
    return g_failed;
}
