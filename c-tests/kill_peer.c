/*
 * kill_peer - SIGKILL one side of a UCT shared-memory connection mid-transfer
 * and check that the survivor notices and exits cleanly.
 *
 *   kill_peer -t TL [-d DEV] [-m short|bcopy|put] [-v sender|receiver]
 *             [-c check|peercheck|none] [-n MSGS] [-s SIZE] [-T SECONDS]
 *             [-i CHECK_MS] [-z REAP_DELAY_MS] [-W WITNESS_MSGS]
 *
 * Three processes: this controller forks a receiver and a sender.  The two
 * children open TL/DEV with an error handler (UCT_IFACE_PARAM_FIELD_ERR_
 * HANDLER*), exchange device and iface addresses over a socketpair, each
 * creates an endpoint to the other's iface (a transport that connects
 * endpoint to endpoint only, as rc_verbs: each creates an unconnected
 * endpoint, the endpoint addresses travel over the socketpair too, and each
 * calls uct_ep_connect_to_ep), and the sender streams AM short
 * or bcopy messages to the receiver, or (-m put) puts into a buffer of the
 * receiver (put_zcopy when the transport has it, as cma; put_short
 * otherwise; the receiver's rkey travels over the socketpair too).  Once
 * MSGS messages went through (counted by the receiver's AM handler, or by
 * the sender for puts) the controller SIGKILLs the victim (-v), reaps it (after
 * -z milliseconds; a killed process stays a zombie until then), and waits
 * for the survivor:
 *
 *   -c check      the survivor calls uct_ep_check(ep, 0, NULL) every CHECK_MS
 *                 and progresses its worker (default);
 *   -c peercheck  the sender passes UCT_SEND_FLAG_PEER_CHECK to am_bcopy
 *                 (the C original checks the peer only when the FIFO is full);
 *   -c none       no explicit check: only what the transport notices itself.
 *
 * The survivor stops when its error handler fires, uct_ep_check or a send
 * returns an error, or a put completes with an error, or after -T seconds without noticing; then it destroys its endpoint,
 * closes everything and exits.  The controller kills a survivor that has not
 * exited T + 10 seconds after the kill (a hang).
 *
 * Output: "key=value" report lines, the last one "RESULT <word>".
 * Exit status: 0 detected, 1 not detected within T (clean exit), 2 the
 * survivor hung, 3 the survivor crashed (or exited oddly), 4 setup failed
 * (e.g. no such transport; both children exited cleanly before the kill),
 * 5 usage or controller error.
 *
 * -W N (AM modes only): a fourth process, the witness, is a second live peer
 * of the survivor: the survivor connects an endpoint to it (over a second
 * socketpair) before the stream starts, and once it has noticed the kill
 * (or given up) sends N AM messages to the witness on that endpoint; the
 * witness counts them.  Reported: "witness rx=.. want=.. sent=.. ok=0|1
 * err_calls=.. handler_wep_calls=..": the messages must all arrive and
 * neither the witness nor the survivor's endpoint to it may see an error.
 *
 * Only anonymous shared memory (MAP_SHARED|MAP_ANONYMOUS, created before
 * fork) is used between the controller and its children, so any /dev/shm
 * file or SysV segment that appears comes from UCT.
 */
#define _GNU_SOURCE
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define AM_ID 3

enum { EXIT_DETECTED = 0, EXIT_UNDETECTED = 1, EXIT_HANG = 2, EXIT_CRASH = 3,
       EXIT_SETUP = 4, EXIT_USAGE = 5 };

enum { VIA_NONE = 0, VIA_ERR_HANDLER = 1, VIA_EP_CHECK = 2, VIA_SEND = 3,
       VIA_COMPLETION = 4 };

static const char *via_names[] = { "none", "err_handler", "ep_check_return",
                                   "send_return", "put_completion" };

enum { MODE_SHORT, MODE_BCOPY, MODE_PUT };
static const char *mode_names[] = { "short", "bcopy", "put" };

/* Controller <-> children, in anonymous shared memory. */
typedef struct {
    volatile int      connected[3];   /* 0 receiver, 1 sender, 2 witness */
    volatile int      setup_failed[3];
    char              setup_msg[3][200];
    volatile uint64_t rx_count;
    volatile uint64_t tx_count;
    volatile uint64_t tx_no_resource;
    volatile int64_t  kill_ns;        /* set by the controller before kill() */
    volatile int64_t  reap_ns;        /* after waitpid() of the victim */
    volatile uint64_t cap_flags[2];
    /* written by the survivor */
    volatile int      detected;
    volatile int      via;
    volatile int      status;         /* ucs_status_t seen */
    volatile int      handler_calls;
    volatile int      handler_ep_ok;  /* handler got our ep */
    volatile int64_t  detect_ns;
    volatile uint64_t checks;         /* uct_ep_check calls after the kill */
    volatile int      check_ret;      /* last uct_ep_check return value */
    volatile int      teardown_done;
    volatile int      put_comp_status; /* first failed put completion */
    /* the witness (-W) */
    volatile uint64_t witness_rx;      /* counted by the witness */
    volatile uint64_t witness_sent;    /* by the survivor, after the kill */
    volatile int      witness_err_calls; /* the witness's error handler */
    volatile int      handler_wep_calls; /* survivor's handler, witness ep */
    volatile int      witness_stop;
} shared_t;

static struct {
    const char *tl;
    const char *dev;
    int         mode;
    int         victim_is_sender;
    const char *check;   /* "check", "peercheck", "none" */
    uint64_t    msgs;
    size_t      size;
    double      timeout;
    int         check_ms;
    int         reap_delay_ms;
    uint64_t    witness_msgs;
} opt = { NULL, "memory", MODE_BCOPY, 1, "check", 2000, 0, 10.0, 10, 0, 0 };

static shared_t *sh;

/* child state */
static int         g_role;      /* 0 receiver, 1 sender, 2 witness */
static uct_ep_h    g_ep;
static uct_ep_h    g_wep;       /* the survivor's endpoint to the witness */
static int         g_wfd = -1;  /* survivor <-> witness socket */
static volatile int g_err_fired;
static volatile int g_put_done;    /* put completion callback ran */
static volatile int g_put_status;

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

    nanosleep(&ts, NULL);
}

/* ---------------------------------------------------------------- child -- */

static void setup_fail(const char *fmt, const char *arg, ucs_status_t st)
{
    snprintf((char*)sh->setup_msg[g_role], sizeof(sh->setup_msg[0]), fmt, arg,
             ucs_status_string(st));
    sh->setup_failed[g_role] = 1;
}

static ucs_status_t err_handler(void *arg, uct_ep_h ep, ucs_status_t status)
{
    (void)arg;
    if ((ep == g_wep) && (g_wep != NULL)) {
        sh->handler_wep_calls++;
        return UCS_OK;
    }
    sh->handler_calls++;
    if (!g_err_fired) {
        g_err_fired       = 1;
        sh->handler_ep_ok = (ep == g_ep);
        sh->status        = status;
        sh->detect_ns     = now_ns();
        sh->via           = VIA_ERR_HANDLER;
        sh->detected      = 1;
    }
    return UCS_OK;
}

static ucs_status_t am_handler(void *arg, void *data, size_t length,
                               unsigned flags)
{
    (void)arg; (void)data; (void)length; (void)flags;
    sh->rx_count++;
    return UCS_OK;
}

static ucs_status_t witness_err_handler(void *arg, uct_ep_h ep,
                                        ucs_status_t status)
{
    (void)arg; (void)ep; (void)status;
    sh->witness_err_calls++;
    return UCS_OK;
}

static ucs_status_t witness_am_handler(void *arg, void *data, size_t length,
                                       unsigned flags)
{
    (void)arg; (void)data; (void)length; (void)flags;
    sh->witness_rx++;
    return UCS_OK;
}

static void put_comp_cb(uct_completion_t *self)
{
    g_put_status = self->status;
    g_put_done   = 1;
    if ((self->status != UCS_OK) && (sh->put_comp_status == 0)) {
        sh->put_comp_status = self->status;
    }
}

static size_t pack_cb(void *dest, void *arg)
{
    memset(dest, 0x5a, opt.size);
    *(uint64_t*)dest = *(uint64_t*)arg;
    return opt.size;
}

static int xfer(int fd, void *buf, size_t len, int out)
{
    char *p = buf;
    ssize_t r;

    while (len > 0) {
        r = out ? write(fd, p, len) : read(fd, p, len);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            return -1;
        }
        p   += r;
        len -= (size_t)r;
    }
    return 0;
}

/* send our blob, receive the peer's (both sides write first: the socket
 * buffer holds these few bytes) */
static void *swap_blob(int fd, const void *mine, size_t len)
{
    uint64_t n = len, peer_len;
    void *peer;

    if (xfer(fd, &n, sizeof(n), 1) || xfer(fd, (void*)mine, len, 1) ||
        xfer(fd, &peer_len, sizeof(peer_len), 0) || peer_len > 65536) {
        return NULL;
    }
    peer = calloc(1, peer_len + 1);
    if (peer == NULL || xfer(fd, peer, peer_len, 0)) {
        free(peer);
        return NULL;
    }
    return peer;
}

/* find TL/DEV among all components; opens the md */
static ucs_status_t open_md(uct_component_h *cmpt_p, uct_md_h *md_p)
{
    uct_component_h *cmpts;
    unsigned ncmpts, c, m, t;
    ucs_status_t st;
    int found = 0;

    st = uct_query_components(&cmpts, &ncmpts);
    if (st != UCS_OK) {
        return st;
    }
    for (c = 0; c < ncmpts && !found; c++) {
        uct_component_attr_t ca;

        memset(&ca, 0, sizeof(ca));
        ca.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
                        UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        if (uct_component_query(cmpts[c], &ca) != UCS_OK) {
            continue;
        }
        ca.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        ca.md_resources = calloc(ca.md_resource_count + 1,
                                 sizeof(*ca.md_resources));
        if (ca.md_resources == NULL ||
            uct_component_query(cmpts[c], &ca) != UCS_OK) {
            free(ca.md_resources);
            continue;
        }
        for (m = 0; m < ca.md_resource_count && !found; m++) {
            uct_md_config_t *cfg;
            uct_tl_resource_desc_t *tls;
            unsigned ntls;
            uct_md_h md;

            if (uct_md_config_read(cmpts[c], NULL, NULL, &cfg) != UCS_OK) {
                continue;
            }
            st = uct_md_open(cmpts[c], ca.md_resources[m].md_name, cfg, &md);
            uct_config_release(cfg);
            if (st != UCS_OK) {
                continue;
            }
            if (uct_md_query_tl_resources(md, &tls, &ntls) == UCS_OK) {
                for (t = 0; t < ntls; t++) {
                    if (!strcmp(tls[t].tl_name, opt.tl) &&
                        !strcmp(tls[t].dev_name, opt.dev)) {
                        found = 1;
                    }
                }
                uct_release_tl_resource_list(tls);
            }
            if (found) {
                *cmpt_p = cmpts[c];
                *md_p   = md;
            } else {
                uct_md_close(md);
            }
        }
        free(ca.md_resources);
    }
    uct_release_component_list(cmpts);
    return found ? UCS_OK : UCS_ERR_NO_DEVICE;
}

/* the witness link: swap addresses over fd, create (and, endpoint to
 * endpoint, connect) an endpoint to the peer, then a barrier */
static ucs_status_t connect_peer(int fd, uct_iface_h iface,
                                 const uct_iface_attr_t *attr, int to_ep,
                                 uct_ep_h *ep_p)
{
    void *dev = calloc(1, attr->device_addr_len + 1);
    void *ifa = calloc(1, attr->iface_addr_len + 1);
    void *epa = calloc(1, attr->ep_addr_len + 1);
    void *pdev = NULL, *pifa = NULL, *pepa = NULL;
    uct_ep_params_t ep_params;
    ucs_status_t st = UCS_ERR_IO_ERROR;
    char sync = 'w';

    *ep_p = NULL;
    if (dev == NULL || ifa == NULL || epa == NULL ||
        uct_iface_get_device_address(iface, dev) != UCS_OK ||
        uct_iface_get_address(iface, ifa) != UCS_OK ||
        (pdev = swap_blob(fd, dev, attr->device_addr_len)) == NULL ||
        (pifa = swap_blob(fd, ifa, attr->iface_addr_len)) == NULL) {
        goto out;
    }
    if (!uct_iface_is_reachable(iface, pdev, pifa)) {
        st = UCS_ERR_UNREACHABLE;
        goto out;
    }
    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    ep_params.iface      = iface;
    if (!to_ep) {
        ep_params.field_mask |= UCT_EP_PARAM_FIELD_DEV_ADDR |
                                UCT_EP_PARAM_FIELD_IFACE_ADDR;
        ep_params.dev_addr    = pdev;
        ep_params.iface_addr  = pifa;
    }
    st = uct_ep_create(&ep_params, ep_p);
    if (st != UCS_OK) {
        *ep_p = NULL;
        goto out;
    }
    if (to_ep) {
        st = uct_ep_get_address(*ep_p, epa);
        if (st != UCS_OK) {
            goto out;
        }
        pepa = swap_blob(fd, epa, attr->ep_addr_len);
        if (pepa == NULL) {
            st = UCS_ERR_IO_ERROR;
            goto out;
        }
        st = uct_ep_connect_to_ep(*ep_p, pdev, pepa);
        if (st != UCS_OK) {
            goto out;
        }
    }
    st = (xfer(fd, &sync, 1, 1) || xfer(fd, &sync, 1, 0)) ? UCS_ERR_IO_ERROR :
                                                            UCS_OK;
out:
    free(dev);
    free(ifa);
    free(epa);
    free(pdev);
    free(pifa);
    free(pepa);
    return st;
}

/* the survivor, after the kill: opt.witness_msgs AM messages to the
 * witness on its other endpoint, within 10 seconds */
static void witness_phase(uct_worker_h worker, const char *payload)
{
    int64_t deadline = now_ns() + 10LL * 1000000000LL;
    uint64_t seq = 0;
    ucs_status_t st;
    ssize_t r;
    int i;

    while ((sh->witness_rx < opt.witness_msgs) && (now_ns() < deadline)) {
        if (seq < opt.witness_msgs) {
            if (opt.mode == MODE_BCOPY) {
                r  = uct_ep_am_bcopy(g_wep, AM_ID, pack_cb, (void*)payload, 0);
                st = (r >= 0) ? UCS_OK : (ucs_status_t)r;
            } else {
                st = uct_ep_am_short(g_wep, AM_ID, seq, payload + 8,
                                     (unsigned)(opt.size - 8));
            }
            if (st == UCS_OK) {
                sh->witness_sent = ++seq;
            }
        }
        uct_worker_progress(worker);
    }
    /* let the last acknowledgements and a late error handler through */
    for (i = 0; i < 1000; i++) {
        uct_worker_progress(worker);
    }
}

static int child_main(int fd)
{
    ucs_async_context_t *async = NULL;
    uct_worker_h worker = NULL;
    uct_component_h cmpt = NULL;
    uct_md_h md = NULL;
    uct_iface_config_t *icfg;
    uct_iface_params_t ip;
    uct_iface_attr_t attr;
    uct_iface_h iface = NULL;
    uct_ep_params_t ep_params;
    void *dev = NULL, *ifa = NULL, *peer_dev = NULL, *peer_ifa = NULL;
    char sync = 'x';
    char *payload = NULL;
    uct_allocated_memory_t mem;
    int mem_ok = 0, rkey_ok = 0, put_zcopy = 0, put_busy = 0, to_ep = 0;
    void *epa = NULL, *peer_epa = NULL;
    uct_md_attr_t md_attr;
    uct_rkey_bundle_t rkey;
    uint64_t remote_addr = 0;
    void *rkey_buf = NULL, *peer_rkey = NULL;
    uct_completion_t comp;
    ucs_status_t st;
    int64_t last_check = 0, kill_seen = 0, give_up_ns;
    int ret = EXIT_SETUP, survivor;
    uint64_t seq = 0;

    survivor = (g_role == 2) || ((g_role == 1) != opt.victim_is_sender);

    st = ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async);
    if (st != UCS_OK) {
        setup_fail("async context%s: %s", "", st);
        goto out;
    }
    st = uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker);
    if (st != UCS_OK) {
        setup_fail("worker%s: %s", "", st);
        goto out;
    }
    st = open_md(&cmpt, &md);
    if (st != UCS_OK) {
        setup_fail("no transport %s: %s", opt.tl, st);
        md = NULL;
        goto out;
    }
    st = uct_md_iface_config_read(md, opt.tl, NULL, NULL, &icfg);
    if (st != UCS_OK) {
        setup_fail("iface config of %s: %s", opt.tl, st);
        goto out;
    }
    memset(&ip, 0, sizeof(ip));
    ip.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                    UCT_IFACE_PARAM_FIELD_DEVICE |
                    UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                    UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                    UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
    ip.open_mode                   = UCT_IFACE_OPEN_MODE_DEVICE;
    ip.mode.device.tl_name         = opt.tl;
    ip.mode.device.dev_name        = opt.dev;
    ip.err_handler                 = (g_role == 2) ? witness_err_handler :
                                                     err_handler;
    ip.err_handler_arg             = NULL;
    ip.err_handler_flags           = 0;
    st = uct_iface_open(md, worker, &ip, icfg, &iface);
    uct_config_release(icfg);
    if (st != UCS_OK) {
        setup_fail("uct_iface_open(%s): %s", opt.tl, st);
        iface = NULL;
        goto out;
    }
    st = uct_iface_query(iface, &attr);
    if (st != UCS_OK) {
        setup_fail("uct_iface_query(%s): %s", opt.tl, st);
        goto out;
    }
    if (g_role < 2) {
        sh->cap_flags[g_role] = attr.cap.flags;
    }
    put_zcopy = !!(attr.cap.flags & UCT_IFACE_FLAG_PUT_ZCOPY);
    /* endpoint-to-endpoint only when the transport cannot connect to an
     * iface (a transport with both keeps the iface path, as before) */
    to_ep = !(attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE) &&
            !!(attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_EP);
    if (!(attr.cap.flags & (UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                            UCT_IFACE_FLAG_CONNECT_TO_EP)) ||
        !(attr.cap.flags & ((opt.mode == MODE_BCOPY) ? UCT_IFACE_FLAG_AM_BCOPY :
                            (opt.mode == MODE_SHORT) ? UCT_IFACE_FLAG_AM_SHORT :
                            (UCT_IFACE_FLAG_PUT_ZCOPY |
                             UCT_IFACE_FLAG_PUT_SHORT)))) {
        setup_fail("%s cannot connect (iface or ep) or do this operation: %s",
                   opt.tl, UCS_ERR_UNSUPPORTED);
        goto out;
    }
    if (opt.size == 0) {
        opt.size = (opt.mode == MODE_SHORT) ? 64 : 4096;
    }
    if ((opt.mode == MODE_BCOPY) && (opt.size > attr.cap.am.max_bcopy)) {
        opt.size = attr.cap.am.max_bcopy;
    } else if ((opt.mode == MODE_SHORT) && (opt.size > attr.cap.am.max_short)) {
        /* max_short counts the 8-byte header with the payload */
        opt.size = attr.cap.am.max_short;
    } else if ((opt.mode == MODE_PUT) && !put_zcopy &&
               (opt.size > attr.cap.put.max_short)) {
        opt.size = attr.cap.put.max_short;
    }
    if (opt.size < sizeof(uint64_t)) {
        opt.size = sizeof(uint64_t);
    }
    if (opt.mode != MODE_PUT) {
        st = uct_iface_set_am_handler(iface, AM_ID, (g_role == 2) ?
                                      witness_am_handler : am_handler, NULL, 0);
        if (st != UCS_OK) {
            setup_fail("set am handler%s: %s", "", st);
            goto out;
        }
    }
    uct_iface_progress_enable(iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    if (g_role == 2) {
        /* the witness: connect to the survivor, count its messages */
        uct_ep_h wep;

        st = connect_peer(fd, iface, &attr, to_ep, &wep);
        if (st != UCS_OK) {
            setup_fail("witness link%s: %s", "", st);
            if (wep != NULL) {
                uct_ep_destroy(wep);
            }
            goto out;
        }
        sh->connected[2] = 1;
        while (!sh->witness_stop) {
            uct_worker_progress(worker);
            if (sh->witness_sent == 0) {
                sleep_ms(1); /* idle until the survivor sends: leave the CPU */
            }
        }
        for (int i = 0; i < 1000; i++) {
            uct_worker_progress(worker);
        }
        uct_ep_destroy(wep);
        ret = 0;
        goto out;
    }

    dev = calloc(1, attr.device_addr_len + 1);
    ifa = calloc(1, attr.iface_addr_len + 1);
    if (dev == NULL || ifa == NULL ||
        uct_iface_get_device_address(iface, dev) != UCS_OK ||
        uct_iface_get_address(iface, ifa) != UCS_OK) {
        setup_fail("get addresses%s: %s", "", UCS_ERR_IO_ERROR);
        goto out;
    }
    peer_dev = swap_blob(fd, dev, attr.device_addr_len);
    peer_ifa = (peer_dev != NULL) ? swap_blob(fd, ifa, attr.iface_addr_len) :
                                    NULL;
    if (peer_ifa == NULL) {
        setup_fail("address exchange (peer gone?)%s: %s", "", UCS_ERR_IO_ERROR);
        goto out;
    }
    if (!uct_iface_is_reachable(iface, peer_dev, peer_ifa)) {
        setup_fail("peer not reachable%s: %s", "", UCS_ERR_UNREACHABLE);
        goto out;
    }
    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    ep_params.iface      = iface;
    if (!to_ep) {
        ep_params.field_mask |= UCT_EP_PARAM_FIELD_DEV_ADDR |
                                UCT_EP_PARAM_FIELD_IFACE_ADDR;
        ep_params.dev_addr    = peer_dev;
        ep_params.iface_addr  = peer_ifa;
    }
    st = uct_ep_create(&ep_params, &g_ep);
    if (st != UCS_OK) {
        setup_fail("uct_ep_create%s: %s", "", st);
        g_ep = NULL;
        goto out;
    }
    if (to_ep) {
        epa = calloc(1, attr.ep_addr_len + 1);
        if (epa == NULL) {
            setup_fail("malloc%s: %s", "", UCS_ERR_NO_MEMORY);
            goto out;
        }
        st = uct_ep_get_address(g_ep, epa);
        if (st != UCS_OK) {
            setup_fail("uct_ep_get_address%s: %s", "", st);
            goto out;
        }
        peer_epa = swap_blob(fd, epa, attr.ep_addr_len);
        if (peer_epa == NULL) {
            setup_fail("ep address exchange (peer gone?)%s: %s", "",
                       UCS_ERR_IO_ERROR);
            goto out;
        }
        st = uct_ep_connect_to_ep(g_ep, peer_dev, peer_epa);
        if (st != UCS_OK) {
            setup_fail("uct_ep_connect_to_ep%s: %s", "", st);
            goto out;
        }
    }
    if (opt.mode == MODE_PUT) {
        /* a registered buffer on both sides; the receiver's rkey goes over */
        st = uct_md_query(md, &md_attr);
        if (st == UCS_OK) {
            st = uct_iface_mem_alloc(iface, opt.size, UCT_MD_MEM_ACCESS_ALL,
                                     "kill_peer", &mem);
        }
        if (st != UCS_OK) {
            setup_fail("buffer for %s: %s", opt.tl, st);
            goto out;
        }
        mem_ok   = 1;
        rkey_buf = calloc(1, sizeof(uint64_t) + md_attr.rkey_packed_size);
        if (rkey_buf == NULL) {
            setup_fail("malloc%s: %s", "", UCS_ERR_NO_MEMORY);
            goto out;
        }
        *(uint64_t*)rkey_buf = (uintptr_t)mem.address;
        if (md_attr.rkey_packed_size > 0) {
            st = uct_md_mkey_pack(md, mem.memh, (char*)rkey_buf + 8);
            if (st != UCS_OK) {
                setup_fail("uct_md_mkey_pack(%s): %s", opt.tl, st);
                goto out;
            }
        }
        peer_rkey = swap_blob(fd, rkey_buf, 8 + md_attr.rkey_packed_size);
        if (peer_rkey == NULL) {
            setup_fail("rkey exchange (peer gone?)%s: %s", "", UCS_ERR_IO_ERROR);
            goto out;
        }
        remote_addr = *(uint64_t*)peer_rkey;
        st = uct_rkey_unpack(cmpt, (char*)peer_rkey + 8, &rkey);
        if (st != UCS_OK) {
            setup_fail("uct_rkey_unpack(%s): %s", opt.tl, st);
            goto out;
        }
        rkey_ok = 1;
    }
    /* barrier: both endpoints exist */
    if (xfer(fd, &sync, 1, 1) || xfer(fd, &sync, 1, 0)) {
        setup_fail("barrier (peer gone?)%s: %s", "", UCS_ERR_IO_ERROR);
        goto out;
    }
    sh->connected[g_role] = 1;
    if (survivor && (g_wfd >= 0)) {
        st = connect_peer(g_wfd, iface, &attr, to_ep, &g_wep);
        if (st != UCS_OK) {
            setup_fail("link to the witness%s: %s", "", st);
            goto out;
        }
    }

    payload = calloc(1, opt.size);
    if (payload == NULL) {
        setup_fail("malloc%s: %s", "", UCS_ERR_NO_MEMORY);
        goto out;
    }
    /* data phase: until the survivor notices the kill, or gives up */
    give_up_ns = 0;
    for (;;) {
        int64_t now = now_ns();

        if ((g_role == 1) && (opt.mode == MODE_PUT)) {
            if (put_busy && g_put_done) {
                put_busy = 0;
                if (g_put_status == UCS_OK) {
                    sh->tx_count = ++seq;
                } else if (survivor && sh->kill_ns && !sh->detected) {
                    sh->status    = g_put_status;
                    sh->detect_ns = now;
                    sh->via       = VIA_COMPLETION;
                    sh->detected  = 1;
                }
            }
            if (!put_busy && !sh->detected) {
                *(uint64_t*)mem.address = seq;
                if (put_zcopy) {
                    uct_iov_t iov = { mem.address, opt.size, mem.memh, 0, 1 };

                    comp.func   = put_comp_cb;
                    comp.count  = 1;
                    comp.status = UCS_OK;
                    g_put_done  = 0;
                    st = uct_ep_put_zcopy(g_ep, &iov, 1, remote_addr,
                                          rkey.rkey, &comp);
                    if (st == UCS_INPROGRESS) {
                        put_busy = 1;
                        st       = UCS_OK;
                    } else if (st == UCS_OK) {
                        sh->tx_count = ++seq;
                    }
                } else {
                    st = uct_ep_put_short(g_ep, mem.address,
                                          (unsigned)opt.size, remote_addr,
                                          rkey.rkey);
                    if (st == UCS_OK) {
                        sh->tx_count = ++seq;
                    }
                }
                if (st == UCS_ERR_NO_RESOURCE) {
                    sh->tx_no_resource++;
                } else if (st != UCS_OK && survivor && sh->kill_ns &&
                           !sh->detected) {
                    sh->status    = st;
                    sh->detect_ns = now;
                    sh->via       = VIA_SEND;
                    sh->detected  = 1;
                }
            }
        } else if (g_role == 1) {
            ssize_t r;

            *(uint64_t*)payload = seq;
            if (opt.mode == MODE_BCOPY) {
                r = uct_ep_am_bcopy(g_ep, AM_ID, pack_cb, payload,
                                    strcmp(opt.check, "peercheck") ? 0 :
                                    UCT_SEND_FLAG_PEER_CHECK);
                st = (r >= 0) ? UCS_OK : (ucs_status_t)r;
            } else {
                st = uct_ep_am_short(g_ep, AM_ID, seq, payload + 8,
                                     (unsigned)(opt.size - 8));
            }
            if (st == UCS_OK) {
                seq++;
                sh->tx_count = seq;
            } else if (st == UCS_ERR_NO_RESOURCE) {
                sh->tx_no_resource++;
            } else if (survivor && sh->kill_ns && !sh->detected) {
                /* a send error after the kill also tells */
                sh->status    = st;
                sh->detect_ns = now;
                sh->via       = VIA_SEND;
                sh->detected  = 1;
            }
        }
        uct_worker_progress(worker);

        if (!survivor) {
            continue; /* the victim runs until it is killed */
        }
        if (sh->kill_ns && !kill_seen) {
            kill_seen  = sh->kill_ns;
            give_up_ns = kill_seen + (int64_t)(opt.timeout * 1e9);
        }
        if (sh->detected) {
            ret = EXIT_DETECTED;
            break;
        }
        if (kill_seen && now > give_up_ns) {
            ret = EXIT_UNDETECTED;
            break;
        }
        if (!kill_seen && sh->setup_failed[!g_role]) {
            ret = EXIT_SETUP; /* the peer gave up during its setup */
            break;
        }
        if (!strcmp(opt.check, "check") &&
            now - last_check >= (int64_t)opt.check_ms * 1000000) {
            last_check = now;
            st = uct_ep_check(g_ep, 0, NULL);
            sh->check_ret = st;
            if (kill_seen) {
                sh->checks++;
            }
            if (st != UCS_OK && st != UCS_INPROGRESS &&
                st != UCS_ERR_NO_RESOURCE && kill_seen && !sh->detected) {
                sh->status    = st;
                sh->detect_ns = now_ns();
                sh->via       = VIA_EP_CHECK;
                sh->detected  = 1;
            }
        }
        if (g_role == 0) {
            /* the receiver only polls; do not burn the CPU the sender and
             * the controller need more than once per 100 us or so */
            if (kill_seen) {
                sleep_ms(1);
            }
        }
    }
    /* a few more progress calls: a scheduled handler may still be queued,
     * and an outstanding put must complete before its buffer goes */
    for (int i = 0; (i < 100) || (put_busy && !g_put_done && i < 1000000);
         i++) {
        uct_worker_progress(worker);
    }
    if (g_wep != NULL) {
        witness_phase(worker, payload);
    }

out:
    if (g_role != 2) {
        sh->witness_stop = 1;
    }
    if (rkey_ok) {
        uct_rkey_release(cmpt, &rkey);
    }
    if (g_wep != NULL) {
        uct_ep_destroy(g_wep);
    }
    if (g_ep != NULL) {
        uct_ep_destroy(g_ep);
    }
    if (mem_ok) {
        uct_iface_mem_free(&mem);
    }
    if (iface != NULL) {
        uct_iface_close(iface);
    }
    if (md != NULL) {
        uct_md_close(md);
    }
    if (worker != NULL) {
        uct_worker_destroy(worker);
    }
    if (async != NULL) {
        ucs_async_context_destroy(async);
    }
    free(dev);
    free(ifa);
    free(peer_dev);
    free(peer_ifa);
    free(epa);
    free(peer_epa);
    free(payload);
    free(rkey_buf);
    free(peer_rkey);
    close(fd);
    if (g_wfd >= 0) {
        close(g_wfd);
    }
    if (ret != EXIT_SETUP || survivor) {
        sh->teardown_done = 1;
    }
    return ret;
}

/* ----------------------------------------------------------- controller -- */

static const char *describe(int status, char *buf, size_t len)
{
    if (WIFEXITED(status)) {
        snprintf(buf, len, "exit %d", WEXITSTATUS(status));
    } else if (WIFSIGNALED(status)) {
        snprintf(buf, len, "signal %d", WTERMSIG(status));
    } else {
        snprintf(buf, len, "status 0x%x", status);
    }
    return buf;
}

/* wait for pid up to deadline_ns; returns 1 and *status when it ended */
static int wait_until(pid_t pid, int64_t deadline_ns, int *status)
{
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);

        if (r == pid) {
            return 1;
        }
        if (r < 0 && errno != EINTR) {
            *status = 0;
            return 1;
        }
        if (now_ns() > deadline_ns) {
            return 0;
        }
        sleep_ms(2);
    }
}

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s -t TL [-d DEV] [-m short|bcopy|put] [-v sender|receiver]\n"
            "          [-c check|peercheck|none] [-n MSGS] [-s SIZE] [-T SECONDS]\n"
            "          [-i CHECK_MS] [-z REAP_DELAY_MS] [-W WITNESS_MSGS]\n", prog);
}

/* the witness (-W): tell it to stop, reap it (killed after 10 s), report */
static void stop_witness(pid_t pid, int reaped, int reaped_status)
{
    char b[32];
    int st = reaped_status;

    sh->witness_stop = 1;
    if (!reaped && !wait_until(pid, now_ns() + 10LL * 1000000000LL, &st)) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        printf("witness pid=%d: did not stop within 10 s (killed)\n", (int)pid);
    } else {
        printf("witness pid=%d: %s\n", (int)pid, describe(st, b, sizeof(b)));
    }
    printf("witness rx=%llu want=%llu sent=%llu ok=%d err_calls=%d "
           "handler_wep_calls=%d\n", (unsigned long long)sh->witness_rx,
           (unsigned long long)opt.witness_msgs,
           (unsigned long long)sh->witness_sent,
           sh->witness_rx >= opt.witness_msgs, sh->witness_err_calls,
           sh->handler_wep_calls);
}

int main(int argc, char **argv)
{
    int sv[2], sw[2] = { -1, -1 }, c, st_victim = 0, st_surv = 0, st_other;
    int nproc, w_reaped = 0, st_w = 0;
    pid_t pid[3] = { -1, -1, -1 }, victim, surv;
    int64_t deadline;
    char b1[32], b2[32];
    int vi, si, result;
    const char *word;

    while ((c = getopt(argc, argv, "t:d:m:v:c:n:s:T:i:z:W:h")) != -1) {
        switch (c) {
        case 't': opt.tl = optarg; break;
        case 'd': opt.dev = optarg; break;
        case 'm':
            opt.mode = !strcmp(optarg, "short") ? MODE_SHORT :
                       !strcmp(optarg, "put") ? MODE_PUT :
                       !strcmp(optarg, "bcopy") ? MODE_BCOPY : -1;
            break;
        case 'v': opt.victim_is_sender = !strcmp(optarg, "sender"); break;
        case 'c': opt.check = optarg; break;
        case 'n': opt.msgs = strtoull(optarg, NULL, 0); break;
        case 's': opt.size = strtoull(optarg, NULL, 0); break;
        case 'T': opt.timeout = atof(optarg); break;
        case 'i': opt.check_ms = atoi(optarg); break;
        case 'z': opt.reap_delay_ms = atoi(optarg); break;
        case 'W': opt.witness_msgs = strtoull(optarg, NULL, 0); break;
        default: usage(argv[0]); return EXIT_USAGE;
        }
    }
    if (opt.tl == NULL || opt.mode < 0 || (strcmp(opt.check, "check") &&
        strcmp(opt.check, "peercheck") && strcmp(opt.check, "none")) ||
        (opt.witness_msgs && (opt.mode == MODE_PUT))) {
        usage(argv[0]);
        return EXIT_USAGE;
    }
    vi    = opt.victim_is_sender ? 1 : 0;
    si    = !vi;
    nproc = opt.witness_msgs ? 3 : 2;
    setvbuf(stdout, NULL, _IOLBF, 0);

    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) ||
        (opt.witness_msgs && socketpair(AF_UNIX, SOCK_STREAM, 0, sw))) {
        perror("kill_peer setup");
        return EXIT_USAGE;
    }
    memset(sh, 0, sizeof(*sh));
    printf("config tl=%s dev=%s op=%s victim=%s check=%s msgs=%llu timeout=%g\n",
           opt.tl, opt.dev, mode_names[opt.mode],
           opt.victim_is_sender ? "sender" : "receiver", opt.check,
           (unsigned long long)opt.msgs, opt.timeout);

    for (g_role = 0; g_role < nproc; g_role++) {
        pid[g_role] = fork();
        if (pid[g_role] < 0) {
            perror("fork");
            return EXIT_USAGE;
        }
        if (pid[g_role] == 0) {
            /* never outlive the controller */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() == 1) {
                _exit(EXIT_SETUP);
            }
            if (g_role == 2) {
                /* the witness talks to the survivor only */
                close(sv[0]);
                close(sv[1]);
                close(sw[0]);
                _exit(child_main(sw[1]));
            }
            close(sv[!g_role]);
            if (opt.witness_msgs) {
                close(sw[1]);
                if (g_role == si) {
                    g_wfd = sw[0];
                } else {
                    close(sw[0]);
                }
            }
            _exit(child_main(sv[g_role]));
        }
    }
    close(sv[0]);
    close(sv[1]);
    if (opt.witness_msgs) {
        close(sw[0]);
        close(sw[1]);
        printf("pids receiver=%d sender=%d witness=%d\n", (int)pid[0],
               (int)pid[1], (int)pid[2]);
    } else {
        printf("pids receiver=%d sender=%d\n", (int)pid[0], (int)pid[1]);
    }

    victim = pid[vi];
    surv   = pid[si];

    /* wait for the stream to run (or for a setup failure) */
    deadline = now_ns() + 30LL * 1000000000LL;
    while (((opt.mode == MODE_PUT) ? sh->tx_count : sh->rx_count) < opt.msgs) {
        int ended = waitpid(-1, &st_other, WNOHANG);

        if ((ended > 0) && (ended == pid[2])) {
            w_reaped = 1;
            st_w     = st_other;
        }
        if (ended > 0 || sh->setup_failed[0] || sh->setup_failed[1] ||
            sh->setup_failed[2] || now_ns() > deadline) {
            /* setup failed or stalled: stop both, report */
            int64_t d = now_ns() + 10LL * 1000000000LL;
            int st0 = 0, st1 = 0, e0, e1;

            if (ended == pid[0]) {
                st0 = st_other;
                e0  = 1;
            } else {
                e0 = wait_until(pid[0], d, &st0);
            }
            if (ended == pid[1]) {
                st1 = st_other;
                e1  = 1;
            } else {
                e1 = wait_until(pid[1], d, &st1);
            }
            if (!e0) {
                kill(pid[0], SIGKILL);
                waitpid(pid[0], &st0, 0);
            }
            if (!e1) {
                kill(pid[1], SIGKILL);
                waitpid(pid[1], &st1, 0);
            }
            printf("setup receiver: %s%s%s\n", describe(st0, b1, sizeof(b1)),
                   sh->setup_failed[0] ? ": " : "", (char*)sh->setup_msg[0]);
            printf("setup sender: %s%s%s\n", describe(st1, b2, sizeof(b2)),
                   sh->setup_failed[1] ? ": " : "", (char*)sh->setup_msg[1]);
            printf("rx_count=%llu tx_count=%llu\n", (unsigned long long)sh->rx_count,
                   (unsigned long long)sh->tx_count);
            if (opt.witness_msgs) {
                printf("setup witness%s%s\n", sh->setup_failed[2] ? ": " : "",
                       (char*)sh->setup_msg[2]);
                stop_witness(pid[2], w_reaped, st_w);
            }
            if (!e0 || !e1) {
                printf("RESULT setup-hang\n");
                return EXIT_HANG;
            }
            if ((WIFSIGNALED(st0) || WIFSIGNALED(st1))) {
                printf("RESULT setup-crash\n");
                return EXIT_CRASH;
            }
            printf("RESULT setup-failed\n");
            return EXIT_SETUP;
        }
        sleep_ms(1);
    }
    printf("caps receiver=0x%llx sender=0x%llx errhandle_peer_failure=%d ep_check=%d\n",
           (unsigned long long)sh->cap_flags[0],
           (unsigned long long)sh->cap_flags[1],
           !!(sh->cap_flags[si] & UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE),
           !!(sh->cap_flags[si] & UCT_IFACE_FLAG_EP_CHECK));

    sh->kill_ns = now_ns();
    kill(victim, SIGKILL);
    if (opt.reap_delay_ms > 0) {
        sleep_ms(opt.reap_delay_ms);
    }
    waitpid(victim, &st_victim, 0);
    sh->reap_ns = now_ns();
    printf("rx_at_reap=%llu tx_at_reap=%llu tx_no_resource=%llu\n",
           (unsigned long long)sh->rx_count, (unsigned long long)sh->tx_count,
           (unsigned long long)sh->tx_no_resource);
    printf("victim %s pid=%d: %s\n", vi ? "sender" : "receiver", (int)victim,
           describe(st_victim, b1, sizeof(b1)));

    deadline = sh->kill_ns + (int64_t)((opt.timeout + 10.0) * 1e9);
    if (!wait_until(surv, deadline, &st_surv)) {
        kill(surv, SIGKILL);
        waitpid(surv, &st_surv, 0);
        printf("survivor %s pid=%d: did not exit within %g s after the kill "
               "(teardown_done=%d detected=%d)\n", si ? "sender" : "receiver",
               (int)surv, opt.timeout + 10.0, sh->teardown_done, sh->detected);
        if (opt.witness_msgs) {
            stop_witness(pid[2], w_reaped, st_w);
        }
        printf("RESULT hang\n");
        return EXIT_HANG;
    }
    printf("survivor %s pid=%d: %s\n", si ? "sender" : "receiver", (int)surv,
           describe(st_surv, b2, sizeof(b2)));
    printf("detected=%d via=%s status=%d (%s) handler_calls=%d handler_ep_ok=%d\n",
           sh->detected, via_names[sh->via], sh->status,
           sh->detected ? ucs_status_string((ucs_status_t)sh->status) : "-",
           sh->handler_calls, sh->handler_ep_ok);
    if (sh->detected) {
        printf("detect_ms_after_kill=%.3f detect_ms_after_reap=%.3f\n",
               (sh->detect_ns - sh->kill_ns) / 1e6,
               (sh->detect_ns - sh->reap_ns) / 1e6);
    }
    printf("ep_checks_after_kill=%llu last_ep_check=%d (%s)\n",
           (unsigned long long)sh->checks, sh->check_ret,
           ucs_status_string((ucs_status_t)sh->check_ret));
    if (opt.mode == MODE_PUT) {
        printf("failed_put_completion=%d (%s)\n", sh->put_comp_status,
               ucs_status_string((ucs_status_t)sh->put_comp_status));
    }

    if (opt.witness_msgs) {
        stop_witness(pid[2], w_reaped, st_w);
    }

    if (!WIFEXITED(st_surv)) {
        word   = "crash";
        result = EXIT_CRASH;
    } else if (WEXITSTATUS(st_surv) == EXIT_DETECTED && sh->detected) {
        word   = "detected";
        result = EXIT_DETECTED;
    } else if (WEXITSTATUS(st_surv) == EXIT_UNDETECTED) {
        word   = "not-detected";
        result = EXIT_UNDETECTED;
    } else {
        word   = "bad-exit";
        result = EXIT_CRASH;
    }
    printf("RESULT %s\n", word);
    return result;
}
