/*
 * tcp_order - the ordering rule of messages a tcp endpoint holds back
 * (coalescing): once the sender has done operation CASE, what it held must
 * be on the wire, even if the sender never progresses its worker again.
 *
 *   tcp_order CASE
 *
 * Two processes (this one forks the receiver) with one worker each, and in
 * it a tcp interface on lo, a second tcp interface on lo, a posix interface
 * and the tcp connection manager. The sender has two endpoints to the
 * receiver's first tcp interface (two connections), one to its second tcp
 * interface and one to its posix interface; it also has a second worker
 * (same thread) with a posix interface and an endpoint from there to the
 * receiver's posix interface. After a warm-up message on each
 * (and, for the cm-notify and cm-disc cases, a connected CM endpoint), it
 * progresses, sends m1 and m2 back to back on the first endpoint (m2 is
 * what a coalescing transport holds back), does CASE, and then stops
 * calling into UCT: it waits on a socketpair for the receiver's verdict.
 * The receiver progresses for 1.5 s after that and reports whether m2
 * arrived.
 *
 * CASE (what the sender does after m2):
 *   none        nothing (the control: a library that holds m2 shows it here)
 *   ep          am_short on the second endpoint (another connection)
 *   iface       am_short on the endpoint of the second tcp interface
 *   posix       am_short on the posix endpoint (another transport)
 *   progress    uct_iface_progress of the posix interface only
 *   posix-flush uct_iface_flush of the posix interface
 *   check       uct_ep_check on the second endpoint (a keepalive)
 *   ep-flush    uct_ep_flush of the first endpoint
 *   iface-flush uct_iface_flush of the first tcp interface
 *   arm         uct_iface_event_arm of the first tcp interface
 *   destroy     uct_ep_destroy of the first endpoint
 *   cm-create   a CM client endpoint to the receiver's listener
 *   cm-notify   uct_cm_client_ep_conn_notify of a connected CM endpoint
 *   cm-disc     uct_ep_disconnect of a connected CM endpoint
 *   worker2     am_short on the endpoint of the second worker
 *   worker2-progress  uct_worker_progress of the second worker only
 *
 * Output: "RESULT delivered" or "RESULT held". Exit status: 0 delivered,
 * 1 held, 2 setup or usage error, 3 the receiver failed.
 */
#define _GNU_SOURCE
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>

#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define AM_ID 7
#define ADDR_MAX 256

enum { TAG_WARM = 0, TAG_M1 = 1, TAG_M2 = 2, TAG_X = 3 };
enum { RES_DELIVERED = 0, RES_HELD = 1, RES_SETUP = 2, RES_PEER = 3 };

static const char *g_side = "sender";
static const char *g_case;
static uct_worker_h g_worker, g_worker2;

#define DIE(...) do { printf("%s: error: ", g_side); printf(__VA_ARGS__); printf("\n"); exit(RES_SETUP); } while (0)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* ---- the opened pieces */

struct tl {
    uct_md_h     md;
    uct_iface_h  iface;
    unsigned char dev[ADDR_MAX], addr[ADDR_MAX];
    size_t       dev_len, addr_len;
};

static uct_component_h find_component(const char *name)
{
    uct_component_h *comps, c = NULL;
    unsigned n;
    uct_component_attr_t a;

    if (uct_query_components(&comps, &n) != UCS_OK) DIE("uct_query_components");
    for (unsigned i = 0; i < n && !c; i++) {
        a.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if (uct_component_query(comps[i], &a) == UCS_OK && !strcmp(a.name, name)) c = comps[i];
    }
    uct_release_component_list(comps);
    if (!c) DIE("no component %s", name);
    return c;
}

static void tl_open_on(uct_worker_h w, struct tl *t, const char *comp, const char *md_name,
                       const char *tl_name, const char *dev)
{
    uct_component_h c = find_component(comp);
    uct_md_config_t *mc;
    uct_iface_config_t *ic;
    uct_iface_params_t p;
    uct_iface_attr_t a;
    ucs_status_t s;

    if (uct_md_config_read(c, NULL, NULL, &mc) != UCS_OK) DIE("md config %s", md_name);
    s = uct_md_open(c, md_name, mc, &t->md);
    uct_config_release(mc);
    if (s != UCS_OK) DIE("uct_md_open %s: %s", md_name, ucs_status_string(s));
    if (uct_md_iface_config_read(t->md, tl_name, NULL, NULL, &ic) != UCS_OK) DIE("iface config %s", tl_name);
    memset(&p, 0, sizeof(p));
    p.field_mask            = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE;
    p.open_mode             = UCT_IFACE_OPEN_MODE_DEVICE;
    p.mode.device.tl_name   = tl_name;
    p.mode.device.dev_name  = dev;
    s = uct_iface_open(t->md, w, &p, ic, &t->iface);
    uct_config_release(ic);
    if (s != UCS_OK) DIE("uct_iface_open %s/%s: %s", tl_name, dev, ucs_status_string(s));
    if (uct_iface_query(t->iface, &a) != UCS_OK) DIE("uct_iface_query %s", tl_name);
    t->dev_len  = a.device_addr_len;
    t->addr_len = a.iface_addr_len;
    if (t->dev_len > ADDR_MAX || t->addr_len > ADDR_MAX) DIE("address lengths");
    if (uct_iface_get_device_address(t->iface, (uct_device_addr_t*)t->dev) != UCS_OK ||
        uct_iface_get_address(t->iface, (uct_iface_addr_t*)t->addr) != UCS_OK) DIE("addresses of %s", tl_name);
    uct_iface_progress_enable(t->iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
}

static void tl_open(struct tl *t, const char *comp, const char *md_name, const char *tl_name,
                    const char *dev)
{
    tl_open_on(g_worker, t, comp, md_name, tl_name, dev);
}

static void tl_close(struct tl *t)
{
    uct_iface_close(t->iface);
    uct_md_close(t->md);
}

static uct_ep_h ep_to(struct tl *t, const unsigned char *dev, const unsigned char *addr)
{
    uct_ep_params_t p;
    uct_ep_h ep;
    ucs_status_t s;

    memset(&p, 0, sizeof(p));
    p.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR | UCT_EP_PARAM_FIELD_IFACE_ADDR;
    p.iface      = t->iface;
    p.dev_addr   = (const uct_device_addr_t*)dev;
    p.iface_addr = (const uct_iface_addr_t*)addr;
    s = uct_ep_create(&p, &ep);
    if (s != UCS_OK) DIE("uct_ep_create: %s", ucs_status_string(s));
    return ep;
}

/* ---- out-of-band channel */

static void oob_write(int fd, const void *p, size_t n)
{
    if (write(fd, p, n) != (ssize_t)n) DIE("oob write");
}

static void oob_read(int fd, void *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char*)p + got, n - got);
        if (r <= 0) { printf("%s: the peer went away\n", g_side); exit(RES_PEER); }
        got += r;
    }
}

/* A byte from the peer without blocking, or -1. */
static int oob_poll(int fd)
{
    struct pollfd pf = { fd, POLLIN, 0 };
    unsigned char c;
    if (poll(&pf, 1, 0) != 1) return -1;
    oob_read(fd, &c, 1);
    return c;
}

/* ---- the CM */

static volatile int g_conn_req, g_connected, g_notified, g_disconnected;
static uct_conn_request_h g_request;

static void conn_request_cb(uct_listener_h l, void *arg, const uct_cm_listener_conn_request_args_t *a)
{
    (void)l; (void)arg;
    g_request = a->conn_request;
    __atomic_store_n(&g_conn_req, 1, __ATOMIC_RELEASE);
}

static ssize_t pack_cb(void *arg, const uct_cm_ep_priv_data_pack_args_t *a, void *priv)
{
    (void)arg; (void)a;
    memset(priv, 0x5a, 16);
    return 16;
}

static void client_connect_cb(uct_ep_h ep, void *arg, const uct_cm_ep_client_connect_args_t *a)
{
    (void)ep; (void)arg;
    __atomic_store_n(&g_connected, a->status == UCS_OK ? 1 : -1, __ATOMIC_RELEASE);
}

static void server_notify_cb(uct_ep_h ep, void *arg, const uct_cm_ep_server_conn_notify_args_t *a)
{
    (void)ep; (void)arg;
    __atomic_store_n(&g_notified, a->status == UCS_OK ? 1 : -1, __ATOMIC_RELEASE);
}

static void disconnect_cb(uct_ep_h ep, void *arg)
{
    (void)ep; (void)arg;
    __atomic_store_n(&g_disconnected, 1, __ATOMIC_RELEASE);
}

static uct_cm_h cm_open(void)
{
    uct_component_h c = find_component("tcp");
    uct_cm_config_t *cfg;
    uct_cm_h cm;
    ucs_status_t s;

    if (uct_cm_config_read(c, NULL, NULL, &cfg) != UCS_OK) DIE("uct_cm_config_read");
    s = uct_cm_open(c, g_worker, cfg, &cm);
    uct_config_release(cfg);
    if (s != UCS_OK) DIE("uct_cm_open: %s", ucs_status_string(s));
    return cm;
}

static uct_ep_h cm_client(uct_cm_h cm, uint16_t port)
{
    static struct sockaddr_in sin;
    static ucs_sock_addr_t sa;
    uct_ep_params_t p;
    uct_ep_h ep;
    ucs_status_t s;

    sin.sin_family      = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sin.sin_port        = htons(port);
    sa.addr             = (struct sockaddr*)&sin;
    sa.addrlen          = sizeof(sin);
    memset(&p, 0, sizeof(p));
    p.field_mask = UCT_EP_PARAM_FIELD_CM | UCT_EP_PARAM_FIELD_SOCKADDR | UCT_EP_PARAM_FIELD_SOCKADDR_CB_FLAGS |
                   UCT_EP_PARAM_FIELD_SOCKADDR_CONNECT_CB_CLIENT | UCT_EP_PARAM_FIELD_SOCKADDR_DISCONNECT_CB |
                   UCT_EP_PARAM_FIELD_SOCKADDR_PACK_CB;
    p.cm                 = cm;
    p.sockaddr           = &sa;
    p.sockaddr_cb_flags  = UCT_CB_FLAG_ASYNC;
    p.sockaddr_cb_client = client_connect_cb;
    p.disconnect_cb      = disconnect_cb;
    p.sockaddr_pack_cb   = pack_cb;
    s = uct_ep_create(&p, &ep);
    if (s != UCS_OK) DIE("CM client uct_ep_create: %s", ucs_status_string(s));
    return ep;
}

/* ---- active messages */

static int g_rx[4];
static int g_rx_m2_before_m1;

static ucs_status_t am_cb(void *arg, void *data, size_t len, unsigned flags)
{
    uint64_t hdr;
    (void)arg; (void)flags;
    if (len < 8) return UCS_OK;
    memcpy(&hdr, data, 8);
    if (hdr < 4) {
        if (hdr == TAG_M2 && !g_rx[TAG_M1]) g_rx_m2_before_m1 = 1;
        g_rx[hdr]++;
    }
    return UCS_OK;
}

static void send_am_on(uct_worker_h w, uct_ep_h ep, uint64_t tag)
{
    double t0 = now();
    ucs_status_t s;
    while ((s = uct_ep_am_short(ep, AM_ID, tag, NULL, 0)) == UCS_ERR_NO_RESOURCE) {
        uct_worker_progress(w);
        if (now() - t0 > 10) DIE("send of tag %d: no resource for 10 s", (int)tag);
    }
    if (s != UCS_OK) DIE("am_short tag %d: %s", (int)tag, ucs_status_string(s));
}

static void send_am(uct_ep_h ep, uint64_t tag)
{
    send_am_on(g_worker, ep, tag);
}

/* ---- the receiver */

static int receiver(int fd)
{
    struct tl tcp, tcp2, shm;
    uct_cm_h cm;
    uct_listener_h listener;
    uct_listener_params_t lp;
    uct_listener_attr_t la;
    struct sockaddr_in sin;
    uct_ep_h server_ep = NULL;
    uint16_t port;
    int need_cm = !strcmp(g_case, "cm-disc");
    int ready = 0, stopped = 0, c;
    double t_stop = 0;

    g_side = "receiver";
    tl_open(&tcp, "tcp", "tcp", "tcp", "lo");
    tl_open(&tcp2, "tcp", "tcp", "tcp", "lo");
    tl_open(&shm, "posix", "posix", "posix", "memory");
    uct_iface_set_am_handler(tcp.iface, AM_ID, am_cb, NULL, 0);
    uct_iface_set_am_handler(tcp2.iface, AM_ID, am_cb, NULL, 0);
    uct_iface_set_am_handler(shm.iface, AM_ID, am_cb, NULL, 0);
    cm = cm_open();
    memset(&sin, 0, sizeof(sin));
    sin.sin_family      = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    memset(&lp, 0, sizeof(lp));
    lp.field_mask      = UCT_LISTENER_PARAM_FIELD_CONN_REQUEST_CB | UCT_LISTENER_PARAM_FIELD_BACKLOG;
    lp.conn_request_cb = conn_request_cb;
    lp.backlog         = 16;
    if (uct_listener_create(cm, (struct sockaddr*)&sin, sizeof(sin), &lp, &listener) != UCS_OK)
        DIE("uct_listener_create");
    la.field_mask = UCT_LISTENER_ATTR_FIELD_SOCKADDR;
    if (uct_listener_query(listener, &la) != UCS_OK) DIE("uct_listener_query");
    port = ntohs(((struct sockaddr_in*)&la.sockaddr)->sin_port);

    oob_write(fd, &tcp, sizeof(tcp)); /* the addresses (md/iface handles are meaningless there) */
    oob_write(fd, &tcp2, sizeof(tcp2));
    oob_write(fd, &shm, sizeof(shm));
    oob_write(fd, &port, sizeof(port));

    for (;;) {
        uct_worker_progress(g_worker);
        if (__atomic_load_n(&g_conn_req, __ATOMIC_ACQUIRE) && !server_ep) {
            uct_ep_params_t p;
            memset(&p, 0, sizeof(p));
            p.field_mask = UCT_EP_PARAM_FIELD_CM | UCT_EP_PARAM_FIELD_CONN_REQUEST |
                           UCT_EP_PARAM_FIELD_SOCKADDR_NOTIFY_CB_SERVER | UCT_EP_PARAM_FIELD_SOCKADDR_DISCONNECT_CB |
                           UCT_EP_PARAM_FIELD_SOCKADDR_CB_FLAGS | UCT_EP_PARAM_FIELD_SOCKADDR_PACK_CB;
            p.cm                 = cm;
            p.conn_request       = g_request;
            p.sockaddr_cb_server = server_notify_cb;
            p.disconnect_cb      = disconnect_cb;
            p.sockaddr_cb_flags  = UCT_CB_FLAG_ASYNC;
            p.sockaddr_pack_cb   = pack_cb;
            if (uct_ep_create(&p, &server_ep) != UCS_OK) DIE("CM server uct_ep_create");
        }
        if (!ready && g_rx[TAG_WARM] >= 5 &&
            (!need_cm || __atomic_load_n(&g_notified, __ATOMIC_ACQUIRE) == 1)) {
            oob_write(fd, "R", 1);
            ready = 1;
        }
        if (ready && !stopped && (c = oob_poll(fd)) == 'S') {
            stopped = 1;
            t_stop  = now();
        }
        if (stopped && now() - t_stop > 1.5) break;
    }
    printf("receiver: m1 %d, m2 %d, x %d%s\n", g_rx[TAG_M1], g_rx[TAG_M2], g_rx[TAG_X],
           g_rx_m2_before_m1 ? " (m2 before m1!)" : "");
    {
        char v = g_rx[TAG_M2] == 1 && g_rx[TAG_M1] == 1 && !g_rx_m2_before_m1 ? 'D' : 'H';
        oob_write(fd, &v, 1);
    }
    /* The sender cleans up; keep serving until it is done. */
    while (oob_poll(fd) != 'E') {
        uct_worker_progress(g_worker);
        if (server_ep && __atomic_load_n(&g_disconnected, __ATOMIC_ACQUIRE) == 1) {
            uct_ep_disconnect(server_ep, 0);
            g_disconnected = 2;
        }
    }
    if (server_ep) uct_ep_destroy(server_ep);
    uct_listener_destroy(listener);
    uct_cm_close(cm);
    tl_close(&shm);
    tl_close(&tcp2);
    tl_close(&tcp);
    return 0;
}

/* ---- the sender */

static int sender(int fd, pid_t child)
{
    struct tl tcp, tcp2, shm, shm2, r_tcp, r_tcp2, r_shm;
    uct_ep_h ep1, ep2, ep3, epp, epw, cm_ep = NULL;
    uct_cm_h cm;
    uint16_t port;
    int c, status, destroyed = 0;
    double t0;
    ucs_status_t s;

    tl_open(&tcp, "tcp", "tcp", "tcp", "lo");
    tl_open(&tcp2, "tcp", "tcp", "tcp", "lo");
    tl_open(&shm, "posix", "posix", "posix", "memory");
    tl_open_on(g_worker2, &shm2, "posix", "posix", "posix", "memory");
    cm = cm_open();
    oob_read(fd, &r_tcp, sizeof(r_tcp));
    oob_read(fd, &r_tcp2, sizeof(r_tcp2));
    oob_read(fd, &r_shm, sizeof(r_shm));
    oob_read(fd, &port, sizeof(port));
    ep1 = ep_to(&tcp, r_tcp.dev, r_tcp.addr);
    ep2 = ep_to(&tcp, r_tcp.dev, r_tcp.addr);
    ep3 = ep_to(&tcp2, r_tcp2.dev, r_tcp2.addr);
    epp = ep_to(&shm, r_shm.dev, r_shm.addr);
    epw = ep_to(&shm2, r_shm.dev, r_shm.addr);
    send_am(ep1, TAG_WARM);
    send_am(ep2, TAG_WARM);
    send_am(ep3, TAG_WARM);
    send_am(epp, TAG_WARM);
    send_am_on(g_worker2, epw, TAG_WARM);
    if (!strcmp(g_case, "cm-notify") || !strcmp(g_case, "cm-disc")) {
        cm_ep = cm_client(cm, port);
        for (t0 = now(); !__atomic_load_n(&g_connected, __ATOMIC_ACQUIRE); uct_worker_progress(g_worker))
            if (now() - t0 > 10) DIE("CM connect: timeout");
        if (g_connected != 1) DIE("CM connect failed");
        if (!strcmp(g_case, "cm-disc") && uct_cm_client_ep_conn_notify(cm_ep) != UCS_OK) DIE("conn_notify");
    }
    /* Until the receiver has every warm-up message (and a notified CM
     * endpoint when the case needs one). */
    for (t0 = now(); oob_poll(fd) != 'R'; uct_worker_progress(g_worker))
        if (now() - t0 > 20) DIE("receiver not ready after 20 s");
    for (int i = 0; i < 16; i++) {
        uct_worker_progress(g_worker);
        uct_worker_progress(g_worker2);
    }

    /* m1 goes out; m2 follows it back to back (a coalescing transport
     * holds it); then the case. */
    s = uct_ep_am_short(ep1, AM_ID, TAG_M1, NULL, 0);
    if (s != UCS_OK) DIE("m1: %s", ucs_status_string(s));
    s = uct_ep_am_short(ep1, AM_ID, TAG_M2, NULL, 0);
    if (s != UCS_OK) DIE("m2: %s", ucs_status_string(s));
    if (!strcmp(g_case, "none")) {
    } else if (!strcmp(g_case, "ep")) {
        s = uct_ep_am_short(ep2, AM_ID, TAG_X, NULL, 0);
    } else if (!strcmp(g_case, "iface")) {
        s = uct_ep_am_short(ep3, AM_ID, TAG_X, NULL, 0);
    } else if (!strcmp(g_case, "posix")) {
        s = uct_ep_am_short(epp, AM_ID, TAG_X, NULL, 0);
    } else if (!strcmp(g_case, "progress")) {
        uct_iface_progress(shm.iface);
        s = UCS_OK;
    } else if (!strcmp(g_case, "posix-flush")) {
        s = uct_iface_flush(shm.iface, 0, NULL);
    } else if (!strcmp(g_case, "check")) {
        s = uct_ep_check(ep2, 0, NULL);
    } else if (!strcmp(g_case, "ep-flush")) {
        s = uct_ep_flush(ep1, 0, NULL);
    } else if (!strcmp(g_case, "iface-flush")) {
        s = uct_iface_flush(tcp.iface, 0, NULL);
    } else if (!strcmp(g_case, "arm")) {
        s = uct_iface_event_arm(tcp.iface, UCT_EVENT_SEND_COMP | UCT_EVENT_RECV);
    } else if (!strcmp(g_case, "destroy")) {
        uct_ep_destroy(ep1);
        destroyed = 1;
        s = UCS_OK;
    } else if (!strcmp(g_case, "cm-create")) {
        cm_ep = cm_client(cm, port);
        s = UCS_OK;
    } else if (!strcmp(g_case, "cm-notify")) {
        s = uct_cm_client_ep_conn_notify(cm_ep);
    } else if (!strcmp(g_case, "cm-disc")) {
        s = uct_ep_disconnect(cm_ep, 0);
    } else if (!strcmp(g_case, "worker2")) {
        s = uct_ep_am_short(epw, AM_ID, TAG_X, NULL, 0);
    } else if (!strcmp(g_case, "worker2-progress")) {
        uct_worker_progress(g_worker2);
        s = UCS_OK;
    } else {
        DIE("unknown case %s", g_case);
    }
    /* Any answer will do (a flush may be in progress, the event may be
     * busy): what matters is what is on the wire now. */
    printf("sender: case %s: %s\n", g_case, ucs_status_string(s));
    oob_write(fd, "S", 1);
    c = 0;
    oob_read(fd, &c, 1);
    printf("RESULT %s\n", c == 'D' ? "delivered" : "held");

    /* Clean up, progressing again. */
    for (t0 = now(); now() - t0 < 0.3;) {
        uct_worker_progress(g_worker);
        uct_worker_progress(g_worker2);
    }
    if (cm_ep) {
        if (strcmp(g_case, "cm-disc")) uct_ep_disconnect(cm_ep, 0);
        for (t0 = now(); !__atomic_load_n(&g_disconnected, __ATOMIC_ACQUIRE) && now() - t0 < 5;)
            uct_worker_progress(g_worker);
        uct_ep_destroy(cm_ep);
    }
    oob_write(fd, "E", 1);
    if (!destroyed) uct_ep_destroy(ep1);
    uct_ep_destroy(ep2);
    uct_ep_destroy(ep3);
    uct_ep_destroy(epp);
    uct_ep_destroy(epw);
    uct_cm_close(cm);
    tl_close(&shm2);
    tl_close(&shm);
    tl_close(&tcp2);
    tl_close(&tcp);
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        printf("sender: the receiver failed (status %#x)\n", status);
        return RES_PEER;
    }
    return c == 'D' ? RES_DELIVERED : RES_HELD;
}

int main(int argc, char **argv)
{
    ucs_async_context_t *async;
    int sv[2], r;
    pid_t pid;

    if (argc != 2) {
        fprintf(stderr, "usage: %s CASE\n", argv[0]);
        return RES_SETUP;
    }
    g_case = argv[1];
    setvbuf(stdout, NULL, _IONBF, 0);
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) DIE("socketpair");
    pid = fork();
    if (pid < 0) DIE("fork");
    if (ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async) != UCS_OK) DIE("async");
    /* TCP_ORDER_SERIALIZED=1: the first worker is serialized (a library
     * must not hold there, where the worker may change threads). */
    if (uct_worker_create(async, getenv("TCP_ORDER_SERIALIZED") ? UCS_THREAD_MODE_SERIALIZED : UCS_THREAD_MODE_SINGLE,
                          &g_worker) != UCS_OK) DIE("worker");
    if (pid > 0 && uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &g_worker2) != UCS_OK) DIE("worker 2");
    if (pid == 0) {
        close(sv[0]);
        alarm(60);
        r = receiver(sv[1]);
    } else {
        close(sv[1]);
        alarm(60);
        r = sender(sv[0], pid);
    }
    if (g_worker2) uct_worker_destroy(g_worker2);
    uct_worker_destroy(g_worker);
    ucs_async_context_destroy(async);
    return r;
}
