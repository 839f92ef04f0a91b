/*
 * Target process of the attack suite (tests/attack.sh).
 *
 *   attack_server server        serve: a tcp iface on lo, a registered region
 *                               with canaries around it, a sockcm listener on
 *                               127.0.0.1 port 0; commands on stdin
 *   attack_server cm-client PORT  a real sockcm client of the listener:
 *                               request, answer, notify, disconnect
 *   attack_server mm-client DEV IF  a real UCT posix endpoint to the
 *                               server's posix iface (addresses in hex, from
 *                               the READY line): one AM short and one AM
 *                               bcopy, both well-formed, flush, exit 0
 *   attack_server client DEV IF connect a real UCT tcp endpoint to the server
 *                               (DEV, IF: its device and iface addresses in
 *                               hex, from the server's READY line), send one
 *                               well-formed active message, flush, exit 0
 *
 * Server memory layout: one mapping [before canary | registered region |
 * after canary], pages of their own, plus a far canary (its own mapping) and
 * a heap canary (malloc). Only the region is registered with the tcp md
 * (uct_md_mem_reg). Canaries hold CANARY_BYTE, the region REGION_BYTE; a
 * write anywhere but the region is a write into unregistered memory.
 *
 * A posix (shared-memory) iface on the same worker receives too: its FIFO
 * is what a same-user peer forges elements into (tests/attack/attack.py
 * maps it through /proc/PID/fd). When it cannot be opened, mm=- says so.
 *
 * The READY line (one line on stdout) gives everything a peer needs:
 *   READY pid=P port=IFACE_PORT cm_port=PORT dev=HEX iface=HEX region=ADDR
 *         region_len=N before=ADDR after=ADDR far=ADDR heap=ADDR canary_len=N
 *         far_len=N mmdev=HEX mm=HEX mm_short=N mm_seg=N
 *   (mm: the posix iface's addresses, its AM short and bcopy limits)
 *
 * Commands (one per line, each answered by one line starting with "@@ ", so
 * the library's own log lines on stdout can be told apart):
 *   status       STATUS canary=ok|bad:WHERE@OFF region=ok|written@OFF am=N
 *                ambad=N amids=ID:N,... cmreq=N cmbad=N notify=N notifybad=N
 *                notifyerr=N disc=N eps=N epfail=N errh=N rss=KB fds=N
 *                mm=N mmbad=N mmmax=LEN (posix iface: good and bad
 *                messages, the longest delivered since the last reset)
 *   progress MS  progress the worker for MS milliseconds, answer "OK"
 *   peek OFF LEN the region's bytes [OFF, OFF+LEN) in hex (LEN <= 256)
 *   reset        refill the region and the canaries (before each case), "OK"
 *   quit         clean up and exit 0
 * Between commands the worker is progressed all the time.
 *
 * Active-message handlers for ids 0..31 count what arrives; a message is
 * "good" when its first 8 bytes are AM_MAGIC and the rest is the pattern
 * (byte i = i & 0xff). The posix iface's handlers first copy the whole
 * message out, as a consumer that trusts the length does, then check it the
 * same way. The sockcm listener accepts every request: a server
 * endpoint answers with SRV_PRIV_LEN bytes of pattern; its notify and
 * disconnect callbacks are counted per endpoint (a second notify on one
 * endpoint, or a connection request with lengths over the limits, is
 * "bad"). Callbacks of the C original's CM may run on the async thread: they
 * only record; the main loop creates and destroys endpoints.
 */
#define _GNU_SOURCE
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "proc_stats.h"

#define AM_MAGIC      0x4b434154544155ull /* "UATTACK" */
#define REGION_LEN    (64 * 1024)
#define CANARY_LEN    4096
#define FAR_LEN       (64 * 1024)
#define CANARY_BYTE   0xa5
#define REGION_BYTE   0x5a
#define SRV_PRIV_LEN  32
#define MAX_EPS       8192
#define MAX_CONN_PRIV 2064

static uct_worker_h g_worker;
static uct_md_h g_md;
static uct_iface_h g_iface;
static uct_cm_h g_cm;
static uct_listener_h g_listener;
static size_t g_max_conn_priv = MAX_CONN_PRIV;

static unsigned char *g_map, *g_region, *g_before, *g_after, *g_far, *g_heap;

static unsigned long g_am_good[32], g_am_bad[32];

/* the posix iface (NULL when it could not be opened) */
static uct_md_h g_mm_md;
static uct_iface_h g_mm_iface;
static unsigned long g_mm_good, g_mm_bad;
static size_t g_mm_max;
static unsigned char g_mm_copy[65536];
static unsigned long g_errh;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long g_cmreq, g_cmbad, g_notify, g_notifybad, g_notifyerr, g_disc, g_epfail;

/* requests waiting for the main loop */
static uct_conn_request_h g_pending[MAX_EPS];
static int g_npending;

typedef struct {
    uct_ep_h ep;
    int used;
    int notified;  /* notify callbacks seen */
    int dead;      /* disconnect or failed notify: destroy */
} srv_ep_t;
static srv_ep_t g_eps[MAX_EPS];

#define DIE(...) do { fprintf(stderr, "attack_server: "); fprintf(stderr, __VA_ARGS__); \
                      fprintf(stderr, "\n"); exit(3); } while (0)

static long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int pattern_ok(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != (unsigned char)i) {
            return 0;
        }
    }
    return 1;
}

static ucs_status_t am_handler(void *arg, void *data, size_t length, unsigned flags)
{
    unsigned id = (unsigned)(uintptr_t)arg;
    uint64_t magic;

    (void)flags;
    if (length >= 8) {
        memcpy(&magic, data, 8);
        if (magic == AM_MAGIC && pattern_ok((unsigned char*)data + 8, length - 8)) {
            g_am_good[id]++;
            return UCS_OK;
        }
    }
    g_am_bad[id]++;
    return UCS_OK;
}

/* A consumer that believes the length it is given: copy, then check. */
static ucs_status_t mm_am_handler(void *arg, void *data, size_t length, unsigned flags)
{
    uint64_t magic;

    (void)arg; (void)flags;
    if (length > g_mm_max) {
        g_mm_max = length;
    }
    if (length > sizeof(g_mm_copy)) {
        g_mm_bad++;
        return UCS_OK;
    }
    memcpy(g_mm_copy, data, length);
    if (length >= 8) {
        memcpy(&magic, g_mm_copy, 8);
        if (magic == AM_MAGIC && pattern_ok(g_mm_copy + 8, length - 8)) {
            g_mm_good++;
            return UCS_OK;
        }
    }
    g_mm_bad++;
    return UCS_OK;
}

static ucs_status_t err_handler(void *arg, uct_ep_h ep, ucs_status_t status)
{
    (void)arg; (void)status;
    (void)ep;
    g_errh++;
    return UCS_OK;
}

static void conn_request_cb(uct_listener_h listener, void *arg,
                            const uct_cm_listener_conn_request_args_t *a)
{
    const uct_cm_remote_data_t *rd = a->remote_data;
    int bad = 0;

    (void)listener; (void)arg;
    if (!(a->field_mask & UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_CONN_REQUEST) || rd == NULL) {
        bad = 1;
    } else {
        if ((rd->field_mask & UCT_CM_REMOTE_DATA_FIELD_CONN_PRIV_DATA_LENGTH) &&
            rd->conn_priv_data_length > g_max_conn_priv) {
            bad = 1;
        }
        if ((rd->field_mask & UCT_CM_REMOTE_DATA_FIELD_DEV_ADDR_LENGTH) &&
            rd->dev_addr_length > 64) {
            bad = 1;
        }
    }
    pthread_mutex_lock(&g_lock);
    g_cmreq++;
    g_cmbad += bad;
    if (!bad && g_npending < MAX_EPS) {
        g_pending[g_npending++] = a->conn_request;
    }
    pthread_mutex_unlock(&g_lock);
}

static void notify_cb(uct_ep_h ep, void *arg, const uct_cm_ep_server_conn_notify_args_t *a)
{
    srv_ep_t *s = &g_eps[(uintptr_t)arg];

    (void)ep;
    pthread_mutex_lock(&g_lock);
    g_notify++;
    if (++s->notified > 1) {
        g_notifybad++;
    }
    if ((a->field_mask & UCT_CM_EP_SERVER_CONN_NOTIFY_ARGS_FIELD_STATUS) && a->status != UCS_OK) {
        g_notifyerr++;
        s->dead = 1;
    }
    pthread_mutex_unlock(&g_lock);
}

static void disconnect_cb(uct_ep_h ep, void *arg)
{
    (void)ep;
    pthread_mutex_lock(&g_lock);
    g_disc++;
    g_eps[(uintptr_t)arg].dead = 1;
    pthread_mutex_unlock(&g_lock);
}

/* Main-loop work of the listener: accept what came, destroy what ended. */
static void cm_work(void)
{
    static unsigned char priv[SRV_PRIV_LEN];
    uct_conn_request_h req[64];
    int n, i, slot = 0;

    for (i = 0; i < SRV_PRIV_LEN; i++) {
        priv[i] = (unsigned char)i;
    }
    pthread_mutex_lock(&g_lock);
    n = g_npending < 64 ? g_npending : 64;
    memcpy(req, g_pending, n * sizeof(req[0]));
    memmove(g_pending, g_pending + n, (g_npending - n) * sizeof(req[0]));
    g_npending -= n;
    pthread_mutex_unlock(&g_lock);

    for (i = 0; i < n; i++) {
        uct_ep_params_t p;
        ucs_status_t s;

        while (slot < MAX_EPS && g_eps[slot].used) {
            slot++;
        }
        if (slot == MAX_EPS) {
            uct_listener_reject(g_listener, req[i]);
            continue;
        }
        memset(&p, 0, sizeof(p));
        p.field_mask = UCT_EP_PARAM_FIELD_CM | UCT_EP_PARAM_FIELD_CONN_REQUEST |
                       UCT_EP_PARAM_FIELD_USER_DATA | UCT_EP_PARAM_FIELD_SOCKADDR_NOTIFY_CB_SERVER |
                       UCT_EP_PARAM_FIELD_SOCKADDR_DISCONNECT_CB | UCT_EP_PARAM_FIELD_SOCKADDR_CB_FLAGS |
                       UCT_EP_PARAM_FIELD_PRIV_DATA | UCT_EP_PARAM_FIELD_PRIV_DATA_LENGTH;
        p.cm                  = g_cm;
        p.conn_request        = req[i];
        p.user_data           = (void*)(uintptr_t)slot;
        p.sockaddr_cb_server  = notify_cb;
        p.disconnect_cb       = disconnect_cb;
        p.sockaddr_cb_flags   = UCT_CB_FLAG_ASYNC;
        p.private_data        = priv;
        p.private_data_length = SRV_PRIV_LEN;
        pthread_mutex_lock(&g_lock);
        g_eps[slot].used = 1;
        g_eps[slot].notified = 0;
        g_eps[slot].dead = 0;
        pthread_mutex_unlock(&g_lock);
        s = uct_ep_create(&p, &g_eps[slot].ep);
        if (s != UCS_OK) {
            pthread_mutex_lock(&g_lock);
            g_epfail++;
            g_eps[slot].used = 0;
            pthread_mutex_unlock(&g_lock);
        }
    }

    for (i = 0; i < MAX_EPS; i++) {
        int dead;

        if (!g_eps[i].used) {
            continue;
        }
        pthread_mutex_lock(&g_lock);
        dead = g_eps[i].dead;
        pthread_mutex_unlock(&g_lock);
        if (dead) {
            uct_ep_disconnect(g_eps[i].ep, 0);
            uct_ep_destroy(g_eps[i].ep);
            pthread_mutex_lock(&g_lock);
            g_eps[i].used = 0;
            pthread_mutex_unlock(&g_lock);
        }
    }
}

static unsigned progress_once(void)
{
    unsigned n = uct_worker_progress(g_worker);
    cm_work();
    return n;
}

static void progress_for(long ms)
{
    long end = now_ms() + ms;

    while (now_ms() < end) {
        if (progress_once() == 0) {
            usleep(200);
        }
    }
}

static long first_not(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != v) {
            return (long)i;
        }
    }
    return -1;
}

static void report_status(void)
{
    char canary[128] = "ok", region[64] = "ok", ids[1024] = "";
    unsigned long good = 0, bad = 0;
    long off;
    size_t len = 0;
    int live = 0, i;
    struct { const char *name; unsigned char *p; size_t n; } c[] = {
        { "before", g_before, CANARY_LEN }, { "after", g_after, CANARY_LEN },
        { "far", g_far, FAR_LEN }, { "heap", g_heap, FAR_LEN } };

    for (i = 0; i < 4; i++) {
        off = first_not(c[i].p, c[i].n, CANARY_BYTE);
        if (off >= 0) {
            snprintf(canary, sizeof(canary), "bad:%s@%ld", c[i].name, off);
            break;
        }
    }
    off = first_not(g_region, REGION_LEN, REGION_BYTE);
    if (off >= 0) {
        snprintf(region, sizeof(region), "written@%ld", off);
    }
    for (i = 0; i < 32; i++) {
        good += g_am_good[i];
        bad += g_am_bad[i];
        if (g_am_good[i] + g_am_bad[i] != 0 && len < sizeof(ids) - 32) {
            len += snprintf(ids + len, sizeof(ids) - len, "%s%d:%lu", len ? "," : "", i,
                            g_am_good[i] + g_am_bad[i]);
        }
    }
    if (len == 0) {
        strcpy(ids, "-");
    }
    pthread_mutex_lock(&g_lock);
    for (i = 0; i < MAX_EPS; i++) {
        live += g_eps[i].used;
    }
    printf("@@ STATUS canary=%s region=%s am=%lu ambad=%lu amids=%s cmreq=%lu cmbad=%lu notify=%lu "
           "notifybad=%lu notifyerr=%lu disc=%lu eps=%d epfail=%lu errh=%lu rss=%ld fds=%d "
           "mm=%lu mmbad=%lu mmmax=%zu\n",
           canary, region, good, bad, ids, g_cmreq, g_cmbad, g_notify, g_notifybad, g_notifyerr,
           g_disc, live, g_epfail, g_errh, rss_kb(), fd_count(), g_mm_good, g_mm_bad, g_mm_max);
    pthread_mutex_unlock(&g_lock);
    fflush(stdout);
}

static void hex(const unsigned char *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) {
        sprintf(out + 2 * i, "%02x", p[i]);
    }
    out[2 * n] = 0;
}

static size_t unhex(const char *s, unsigned char *out, size_t max)
{
    size_t n = 0;
    unsigned v;

    while (s[0] && s[1] && n < max && sscanf(s, "%2x", &v) == 1) {
        out[n++] = (unsigned char)v;
        s += 2;
    }
    return n;
}

static uct_component_h find_component(const char *name)
{
    uct_component_h *comps, c = NULL;
    unsigned n, i;
    uct_component_attr_t attr;

    if (uct_query_components(&comps, &n) != UCS_OK) {
        DIE("uct_query_components");
    }
    for (i = 0; i < n && c == NULL; i++) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if (uct_component_query(comps[i], &attr) == UCS_OK && !strcmp(attr.name, name)) {
            c = comps[i];
        }
    }
    uct_release_component_list(comps);
    return c;
}

static uct_component_h find_tcp(void)
{
    uct_component_h c = find_component("tcp");

    if (c == NULL) {
        DIE("no tcp component");
    }
    return c;
}

/* The posix iface on device "memory"; UCS_OK or why not (then nothing is
 * left open). */
static ucs_status_t open_mm(uct_iface_attr_t *attr)
{
    uct_component_h comp = find_component("posix");
    uct_md_config_t *mcfg;
    uct_iface_config_t *icfg;
    uct_iface_params_t ip;
    ucs_status_t s;

    if (comp == NULL) {
        return UCS_ERR_NO_DEVICE;
    }
    if ((s = uct_md_config_read(comp, NULL, NULL, &mcfg)) != UCS_OK) {
        return s;
    }
    s = uct_md_open(comp, "posix", mcfg, &g_mm_md);
    uct_config_release(mcfg);
    if (s != UCS_OK) {
        return s;
    }
    if ((s = uct_md_iface_config_read(g_mm_md, "posix", NULL, NULL, &icfg)) != UCS_OK) {
        uct_md_close(g_mm_md);
        return s;
    }
    memset(&ip, 0, sizeof(ip));
    ip.field_mask            = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE;
    ip.open_mode             = UCT_IFACE_OPEN_MODE_DEVICE;
    ip.mode.device.tl_name   = "posix";
    ip.mode.device.dev_name  = "memory";
    s = uct_iface_open(g_mm_md, g_worker, &ip, icfg, &g_mm_iface);
    uct_config_release(icfg);
    if (s == UCS_OK) {
        s = uct_iface_query(g_mm_iface, attr);
        if (s != UCS_OK) {
            uct_iface_close(g_mm_iface);
        }
    }
    if (s != UCS_OK) {
        g_mm_iface = NULL;
        uct_md_close(g_mm_md);
        return s;
    }
    uct_iface_progress_enable(g_mm_iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    return UCS_OK;
}

typedef struct {
    size_t len;
} mm_pack_arg_t;

/* AM bcopy payload: the magic, then the pattern. */
static size_t mm_pack(void *dest, void *arg)
{
    size_t len = ((mm_pack_arg_t*)arg)->len;
    uint64_t magic = AM_MAGIC;
    unsigned char *d = dest;

    memcpy(d, &magic, 8);
    for (size_t i = 0; i + 8 < len; i++) {
        d[8 + i] = (unsigned char)i;
    }
    return len;
}

/* An endpoint on IFACE to the peer whose device and iface addresses are
 * given in hex, then a 64-byte AM short on it, retried while the peer has
 * no room until *END (5 s from now); NULL after a line naming WHO on
 * failure. */
static uct_ep_h connect_send_short(uct_iface_h iface, const char *dev_hex, const char *if_hex, const char *who,
                                   long *end)
{
    unsigned char dev[256], ifa[256], payload[64];
    uct_ep_params_t p;
    uct_ep_h ep;
    ucs_status_t s;
    int i;

    unhex(dev_hex, dev, sizeof(dev));
    unhex(if_hex, ifa, sizeof(ifa));
    memset(&p, 0, sizeof(p));
    p.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR | UCT_EP_PARAM_FIELD_IFACE_ADDR;
    p.iface      = iface;
    p.dev_addr   = (uct_device_addr_t*)dev;
    p.iface_addr = (uct_iface_addr_t*)ifa;
    s = uct_ep_create(&p, &ep);
    if (s != UCS_OK) {
        printf("%s: uct_ep_create: %s\n", who, ucs_status_string(s));
        return NULL;
    }
    for (i = 0; i < (int)sizeof(payload); i++) {
        payload[i] = (unsigned char)i;
    }
    *end = now_ms() + 5000;
    do {
        s = uct_ep_am_short(ep, 7, AM_MAGIC, payload, sizeof(payload));
        if (s == UCS_ERR_NO_RESOURCE) {
            uct_worker_progress(g_worker);
        }
    } while (s == UCS_ERR_NO_RESOURCE && now_ms() < *end);
    if (s != UCS_OK) {
        printf("%s: uct_ep_am_short: %s\n", who, ucs_status_string(s));
        return NULL;
    }
    return ep;
}

/* A real posix sender: an AM short and an AM bcopy to the server's posix
 * iface, each retried while the FIFO is full. */
static int mm_client_main(const char *dev_hex, const char *if_hex)
{
    mm_pack_arg_t pa = { 3000 };
    uct_iface_attr_t attr;
    uct_ep_h ep;
    ucs_status_t s;
    ssize_t r;
    long end;

    if ((s = open_mm(&attr)) != UCS_OK) {
        printf("mm client: posix iface: %s\n", ucs_status_string(s));
        return 1;
    }
    if ((ep = connect_send_short(g_mm_iface, dev_hex, if_hex, "mm client", &end)) == NULL) {
        return 1;
    }
    do {
        r = uct_ep_am_bcopy(ep, 7, mm_pack, &pa, 0);
        if (r == UCS_ERR_NO_RESOURCE) {
            uct_worker_progress(g_worker);
        }
    } while (r == UCS_ERR_NO_RESOURCE && now_ms() < end);
    if (r != (ssize_t)pa.len) {
        printf("mm client: uct_ep_am_bcopy: %zd\n", r);
        return 1;
    }
    do {
        s = uct_ep_flush(ep, 0, NULL);
        uct_worker_progress(g_worker);
    } while ((s == UCS_INPROGRESS || s == UCS_ERR_NO_RESOURCE) && now_ms() < end);
    printf("mm client: sent, flush %s\n", ucs_status_string(s));
    uct_ep_destroy(ep);
    uct_iface_close(g_mm_iface);
    uct_md_close(g_mm_md);
    return s == UCS_OK ? 0 : 1;
}

static void open_iface(uct_component_h comp, uct_iface_attr_t *attr)
{
    uct_md_config_t *mcfg;
    uct_iface_config_t *icfg;
    uct_iface_params_t ip;
    ucs_status_t s;

    if (uct_md_config_read(comp, NULL, NULL, &mcfg) != UCS_OK) {
        DIE("md config");
    }
    s = uct_md_open(comp, "tcp", mcfg, &g_md);
    uct_config_release(mcfg);
    if (s != UCS_OK) {
        DIE("uct_md_open(tcp): %s", ucs_status_string(s));
    }
    if (uct_md_iface_config_read(g_md, "tcp", NULL, NULL, &icfg) != UCS_OK) {
        DIE("iface config");
    }
    memset(&ip, 0, sizeof(ip));
    ip.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE |
                    UCT_IFACE_PARAM_FIELD_ERR_HANDLER | UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                    UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
    ip.open_mode             = UCT_IFACE_OPEN_MODE_DEVICE;
    ip.mode.device.tl_name   = "tcp";
    ip.mode.device.dev_name  = "lo";
    ip.err_handler           = err_handler;
    ip.err_handler_arg       = NULL;
    ip.err_handler_flags     = 0;
    s = uct_iface_open(g_md, g_worker, &ip, icfg, &g_iface);
    uct_config_release(icfg);
    if (s != UCS_OK) {
        DIE("uct_iface_open(tcp/lo): %s", ucs_status_string(s));
    }
    if (uct_iface_query(g_iface, attr) != UCS_OK) {
        DIE("uct_iface_query");
    }
    uct_iface_progress_enable(g_iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
}

static int client_main(const char *dev_hex, const char *if_hex)
{
    uct_iface_attr_t attr;
    uct_ep_h ep;
    ucs_status_t s;
    long end;

    open_iface(find_tcp(), &attr);
    if ((ep = connect_send_short(g_iface, dev_hex, if_hex, "client", &end)) == NULL) {
        return 1;
    }
    do {
        s = uct_ep_flush(ep, 0, NULL);
        uct_worker_progress(g_worker);
    } while (s == UCS_INPROGRESS || s == UCS_ERR_NO_RESOURCE);
    /* keep the connection a moment so the server reads the frame */
    end = now_ms() + 200;
    while (now_ms() < end) {
        uct_worker_progress(g_worker);
    }
    printf("client: sent, flush %s\n", ucs_status_string(s));
    uct_ep_destroy(ep);
    uct_iface_close(g_iface);
    uct_md_close(g_md);
    return s == UCS_OK ? 0 : 1;
}

static volatile int g_cli_connected, g_cli_disc, g_cli_resolved;
static volatile ucs_status_t g_cli_status = UCS_OK;

static ucs_status_t cli_resolve_cb(void *arg, const uct_cm_ep_resolve_args_t *a)
{
    (void)arg; (void)a;
    __atomic_store_n(&g_cli_resolved, 1, __ATOMIC_RELEASE);
    return UCS_OK;
}

static void cli_connect_cb(uct_ep_h ep, void *arg, const uct_cm_ep_client_connect_args_t *a)
{
    (void)ep; (void)arg;
    g_cli_status = a->status;
    __atomic_store_n(&g_cli_connected, 1, __ATOMIC_RELEASE);
}

static void cli_disconnect_cb(uct_ep_h ep, void *arg)
{
    (void)ep; (void)arg;
    __atomic_store_n(&g_cli_disc, 1, __ATOMIC_RELEASE);
}

/* A real sockcm client: request with private data, wait for the server's
 * answer, notify, disconnect. */
static int cm_client_main(int port)
{
    uct_component_h comp = find_tcp();
    uct_cm_config_t *ccfg;
    uct_ep_params_t p;
    uct_ep_connect_params_t cp;
    struct sockaddr_in sin;
    ucs_sock_addr_t sa;
    unsigned char priv[64];
    uct_ep_h ep;
    ucs_status_t s;
    long end;
    int i;

    if (uct_cm_config_read(comp, NULL, NULL, &ccfg) != UCS_OK) {
        DIE("cm config");
    }
    s = uct_cm_open(comp, g_worker, ccfg, &g_cm);
    uct_config_release(ccfg);
    if (s != UCS_OK) {
        DIE("uct_cm_open: %s", ucs_status_string(s));
    }
    memset(&sin, 0, sizeof(sin));
    sin.sin_family      = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sin.sin_port        = htons(port);
    sa.addr    = (struct sockaddr*)&sin;
    sa.addrlen = sizeof(sin);
    memset(&p, 0, sizeof(p));
    p.field_mask = UCT_EP_PARAM_FIELD_CM | UCT_EP_PARAM_FIELD_SOCKADDR | UCT_EP_PARAM_FIELD_USER_DATA |
                   UCT_EP_PARAM_FIELD_SOCKADDR_CB_FLAGS | UCT_EP_PARAM_FIELD_SOCKADDR_CONNECT_CB_CLIENT |
                   UCT_EP_PARAM_FIELD_SOCKADDR_DISCONNECT_CB | UCT_EP_PARAM_FIELD_CM_RESOLVE_CB;
    p.cm                 = g_cm;
    p.sockaddr           = &sa;
    p.user_data          = NULL;
    p.sockaddr_cb_flags  = UCT_CB_FLAG_ASYNC;
    p.sockaddr_cb_client = cli_connect_cb;
    p.disconnect_cb      = cli_disconnect_cb;
    p.cm_resolve_cb      = cli_resolve_cb;
    s = uct_ep_create(&p, &ep);
    if (s != UCS_OK) {
        printf("cm client: uct_ep_create: %s\n", ucs_status_string(s));
        return 1;
    }
    for (i = 0; i < (int)sizeof(priv); i++) {
        priv[i] = (unsigned char)i;
    }
    end = now_ms() + 5000;
    memset(&cp, 0, sizeof(cp));
    cp.field_mask          = UCT_EP_CONNECT_PARAM_FIELD_PRIVATE_DATA |
                             UCT_EP_CONNECT_PARAM_FIELD_PRIVATE_DATA_LENGTH;
    cp.private_data        = priv;
    cp.private_data_length = sizeof(priv);
    while (!__atomic_load_n(&g_cli_resolved, __ATOMIC_ACQUIRE) && now_ms() < end) {
        uct_worker_progress(g_worker);
    }
    s = uct_ep_connect(ep, &cp);
    if (s != UCS_OK) {
        printf("cm client: uct_ep_connect: %s\n", ucs_status_string(s));
        return 1;
    }
    while (!__atomic_load_n(&g_cli_connected, __ATOMIC_ACQUIRE) && now_ms() < end) {
        uct_worker_progress(g_worker);
    }
    if (!g_cli_connected || g_cli_status != UCS_OK) {
        printf("cm client: connect callback %s\n",
               g_cli_connected ? ucs_status_string(g_cli_status) : "never called");
        return 1;
    }
    s = uct_cm_client_ep_conn_notify(ep);
    if (s != UCS_OK) {
        printf("cm client: notify: %s\n", ucs_status_string(s));
        return 1;
    }
    end = now_ms() + 200;
    while (now_ms() < end) {
        uct_worker_progress(g_worker);
    }
    uct_ep_disconnect(ep, 0);
    end = now_ms() + 2000;
    while (!g_cli_disc && now_ms() < end) {
        uct_worker_progress(g_worker);
    }
    uct_ep_destroy(ep);
    uct_cm_close(g_cm);
    printf("cm client: connected, notified, disconnected\n");
    return 0;
}

int main(int argc, char **argv)
{
    ucs_async_context_t *async;
    uct_component_h comp;
    uct_iface_attr_t attr;
    uct_cm_config_t *ccfg;
    uct_cm_attr_t cm_attr;
    uct_listener_params_t lp;
    uct_listener_attr_t la;
    struct sockaddr_in sin;
    uct_mem_h memh;
    unsigned char dev[256], ifa[256], mm_dev[256], mm_ifa[256];
    char dev_hex[600], if_hex[600], mm_dev_hex[600], mm_if_hex[600], line[256];
    uct_iface_attr_t mm_attr;
    struct pollfd pfd;
    ucs_status_t s;
    int i;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2 || (strcmp(argv[1], "server") && (strcmp(argv[1], "client") || argc != 4) &&
                     (strcmp(argv[1], "mm-client") || argc != 4) &&
                     (strcmp(argv[1], "cm-client") || argc != 3))) {
        fprintf(stderr, "usage: %s server | client DEVHEX IFACEHEX | mm-client DEVHEX IFACEHEX | "
                "cm-client PORT\n", argv[0]);
        return 2;
    }
    if (ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async) != UCS_OK) {
        DIE("async context");
    }
    if (uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &g_worker) != UCS_OK) {
        DIE("worker");
    }
    if (!strcmp(argv[1], "client")) {
        return client_main(argv[2], argv[3]);
    }
    if (!strcmp(argv[1], "cm-client")) {
        return cm_client_main(atoi(argv[2]));
    }
    if (!strcmp(argv[1], "mm-client")) {
        return mm_client_main(argv[2], argv[3]);
    }

    comp = find_tcp();
    open_iface(comp, &attr);
    for (i = 0; i < 32; i++) {
        s = uct_iface_set_am_handler(g_iface, i, am_handler, (void*)(uintptr_t)i, 0);
        if (s != UCS_OK) {
            DIE("am handler %d: %s", i, ucs_status_string(s));
        }
    }

    g_map = mmap(NULL, CANARY_LEN + REGION_LEN + CANARY_LEN, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    g_far = mmap(NULL, FAR_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    g_heap = malloc(FAR_LEN);
    if (g_map == MAP_FAILED || g_far == MAP_FAILED || g_heap == NULL) {
        DIE("memory");
    }
    g_before = g_map;
    g_region = g_map + CANARY_LEN;
    g_after  = g_region + REGION_LEN;
    memset(g_before, CANARY_BYTE, CANARY_LEN);
    memset(g_after, CANARY_BYTE, CANARY_LEN);
    memset(g_far, CANARY_BYTE, FAR_LEN);
    memset(g_heap, CANARY_BYTE, FAR_LEN);
    memset(g_region, REGION_BYTE, REGION_LEN);
    s = uct_md_mem_reg(g_md, g_region, REGION_LEN, UCT_MD_MEM_ACCESS_ALL, &memh);
    if (s != UCS_OK) {
        DIE("uct_md_mem_reg: %s", ucs_status_string(s));
    }

    if (uct_cm_config_read(comp, NULL, NULL, &ccfg) != UCS_OK) {
        DIE("cm config");
    }
    s = uct_cm_open(comp, g_worker, ccfg, &g_cm);
    uct_config_release(ccfg);
    if (s != UCS_OK) {
        DIE("uct_cm_open: %s", ucs_status_string(s));
    }
    cm_attr.field_mask = UCT_CM_ATTR_FIELD_MAX_CONN_PRIV;
    if (uct_cm_query(g_cm, &cm_attr) == UCS_OK) {
        g_max_conn_priv = cm_attr.max_conn_priv;
    }
    memset(&sin, 0, sizeof(sin));
    sin.sin_family      = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    memset(&lp, 0, sizeof(lp));
    lp.field_mask      = UCT_LISTENER_PARAM_FIELD_CONN_REQUEST_CB | UCT_LISTENER_PARAM_FIELD_USER_DATA |
                         UCT_LISTENER_PARAM_FIELD_BACKLOG;
    lp.conn_request_cb = conn_request_cb;
    lp.user_data       = NULL;
    lp.backlog         = 1024;
    s = uct_listener_create(g_cm, (struct sockaddr*)&sin, sizeof(sin), &lp, &g_listener);
    if (s != UCS_OK) {
        DIE("uct_listener_create: %s", ucs_status_string(s));
    }
    la.field_mask = UCT_LISTENER_ATTR_FIELD_SOCKADDR;
    if (uct_listener_query(g_listener, &la) != UCS_OK) {
        DIE("uct_listener_query");
    }

    if (attr.device_addr_len > sizeof(dev) || attr.iface_addr_len > sizeof(ifa) ||
        uct_iface_get_device_address(g_iface, (uct_device_addr_t*)dev) != UCS_OK ||
        uct_iface_get_address(g_iface, (uct_iface_addr_t*)ifa) != UCS_OK) {
        DIE("addresses");
    }
    hex(dev, attr.device_addr_len, dev_hex);
    hex(ifa, attr.iface_addr_len, if_hex);
    strcpy(mm_dev_hex, "-");
    strcpy(mm_if_hex, "-");
    s = open_mm(&mm_attr);
    if (s == UCS_OK) {
        for (i = 0; i < 32; i++) {
            s = uct_iface_set_am_handler(g_mm_iface, i, mm_am_handler, (void*)(uintptr_t)i, 0);
            if (s != UCS_OK) {
                DIE("posix am handler %d: %s", i, ucs_status_string(s));
            }
        }
        if (mm_attr.device_addr_len > sizeof(mm_dev) || mm_attr.iface_addr_len > sizeof(mm_ifa) ||
            uct_iface_get_device_address(g_mm_iface, (uct_device_addr_t*)mm_dev) != UCS_OK ||
            uct_iface_get_address(g_mm_iface, (uct_iface_addr_t*)mm_ifa) != UCS_OK) {
            DIE("posix addresses");
        }
        hex(mm_dev, mm_attr.device_addr_len, mm_dev_hex);
        hex(mm_ifa, mm_attr.iface_addr_len, mm_if_hex);
    } else {
        fprintf(stderr, "attack_server: no posix iface: %s\n", ucs_status_string(s));
        memset(&mm_attr, 0, sizeof(mm_attr));
    }
    printf("@@ READY pid=%d port=%u cm_port=%u dev=%s iface=%s region=0x%lx region_len=%d before=0x%lx "
           "after=0x%lx far=0x%lx heap=0x%lx canary_len=%d far_len=%d mmdev=%s mm=%s mm_short=%zu "
           "mm_seg=%zu\n",
           (int)getpid(), attr.iface_addr_len >= 2 ? (unsigned)(ifa[0] << 8 | ifa[1]) : 0,
           ntohs(((struct sockaddr_in*)&la.sockaddr)->sin_port), dev_hex, if_hex,
           (unsigned long)g_region, REGION_LEN, (unsigned long)g_before, (unsigned long)g_after,
           (unsigned long)g_far, (unsigned long)g_heap, CANARY_LEN, FAR_LEN, mm_dev_hex, mm_if_hex,
           mm_attr.cap.am.max_short, mm_attr.cap.am.max_bcopy);

    pfd.fd = 0;
    pfd.events = POLLIN;
    for (;;) {
        unsigned n = progress_once();
        int r = poll(&pfd, 1, n ? 0 : 1);
        long ms, off, plen;

        if (r <= 0) {
            continue;
        }
        if (fgets(line, sizeof(line), stdin) == NULL) {
            break;
        }
        if (!strncmp(line, "status", 6)) {
            report_status();
        } else if (sscanf(line, "progress %ld", &ms) == 1) {
            progress_for(ms);
            printf("@@ OK\n");
        } else if (sscanf(line, "peek %ld %ld", &off, &plen) == 2 && off >= 0 && plen > 0 &&
                   plen <= 256 && off + plen <= REGION_LEN) {
            char out[600];
            hex(g_region + off, plen, out);
            printf("@@ %s\n", out);
        } else if (!strncmp(line, "reset", 5)) {
            g_mm_max = 0;
            memset(g_region, REGION_BYTE, REGION_LEN);
            memset(g_before, CANARY_BYTE, CANARY_LEN);
            memset(g_after, CANARY_BYTE, CANARY_LEN);
            memset(g_far, CANARY_BYTE, FAR_LEN);
            memset(g_heap, CANARY_BYTE, FAR_LEN);
            printf("@@ OK\n");
        } else if (!strncmp(line, "quit", 4)) {
            break;
        } else {
            printf("@@ ERR unknown command\n");
        }
    }
    for (i = 0; i < MAX_EPS; i++) {
        if (g_eps[i].used) {
            uct_ep_destroy(g_eps[i].ep);
        }
    }
    uct_listener_destroy(g_listener);
    uct_cm_close(g_cm);
    uct_md_mem_dereg(g_md, memh);
    uct_iface_close(g_iface);
    uct_md_close(g_md);
    if (g_mm_iface != NULL) {
        uct_iface_close(g_mm_iface);
        uct_md_close(g_mm_md);
    }
    uct_worker_destroy(g_worker);
    ucs_async_context_destroy(async);
    return 0;
}
