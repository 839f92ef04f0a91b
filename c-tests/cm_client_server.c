/*
 * Client/server exchange over the connection manager of the "tcp" component
 * (UCX 1.13.1 API), or with CMCS_COMPONENT=rdmacm of the "rdmacm" one (then
 * CMCS_DEV names the device:port both sides must report, and the private
 * data fits RDMA CM's 54 bytes), one process per side:
 *
 *   cm_client_server server PORTFILE MODE   listen on 127.0.0.1 (port 0), write
 *                                            the bound port to PORTFILE
 *   cm_client_server client PORT MODE
 *
 * With CMCS_IPV6=1 in the environment both sides use [::1] instead. With
 * CMCS_ASYNC=poll the worker's async context is a polled one
 * (UCS_ASYNC_MODE_POLL): nothing runs by itself, and the program polls it
 * beside the worker's progress, as libucp does.
 *
 * MODE: srv-disc  exchange private data both ways, server disconnects first
 *       cli-disc  same, client disconnects first
 *       pack      like cli-disc, both sides fill their data with a pack callback
 *       reject    the server rejects; the client must see UCS_ERR_REJECTED
 *       kill-pre  the server prints "HOLD <pid>" once it has the request and
 *                 never answers (the test SIGKILLs it); the client must see
 *                 its connect callback fail within 20 s
 *       kill-post the server holds (prints "HOLD <pid>") once connected; the
 *                 client must see its disconnect callback within 20 s
 *       ckill-post the same with the client held and the server waiting
 *
 * Callbacks may come from UCX's async thread, so they only record what
 * happened; the main thread acts. Exit 0 on success, 77 when the library
 * has no tcp connection manager, 1 on failure.
 */
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* uct_ep_query of UCX 1.13.1 (uct/api/v2/uct_v2.h, not shipped by Debian). */
typedef struct {
    uint64_t                field_mask;
    struct sockaddr_storage local_address;
    struct sockaddr_storage remote_address;
} cmcs_ep_attr_t;
#define CMCS_EP_ATTR_FIELD_LOCAL_SOCKADDR  (1ul << 0)
#define CMCS_EP_ATTR_FIELD_REMOTE_SOCKADDR (1ul << 1)
ucs_status_t uct_ep_query(uct_ep_h ep, cmcs_ep_attr_t *ep_attr);

#define CLIENT_MAX 2000
#define SERVER_MAX 1000
/* tcp: 2000 and 1000 bytes; rdmacm: 54 and 40 */
static size_t g_client_len = CLIENT_MAX, g_server_len = SERVER_MAX;
static int g_rdmacm;
static const char *g_want_dev = "lo";

static volatile int g_resolved, g_connected, g_notified, g_disconnected, g_conn_req;
static volatile ucs_status_t g_status = UCS_OK;
static uct_conn_request_h g_request;
static unsigned char g_remote[4096];
static size_t g_remote_len, g_dev_addr_len;
static char g_dev_name[UCT_DEVICE_NAME_MAX];
static uct_worker_h g_worker;
static ucs_async_context_t *g_async;
static int g_async_poll;

/* What the program's loops call: the worker's progress, and the async
 * context's handlers when it is a polled one. */
static void progress(void)
{
    uct_worker_progress(g_worker);
    if (g_async_poll) {
        ucs_async_poll(g_async);
    }
}
static const char *g_side = "?";
static int g_ipv6;

#define FAIL(...) do { printf("%s: FAIL ", g_side); printf(__VA_ARGS__); printf("\n"); exit(1); } while (0)

static void fill(unsigned char *p, size_t n, unsigned mul, unsigned add)
{
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(i * mul + add);
}

static int check(const unsigned char *p, size_t n, unsigned mul, unsigned add)
{
    for (size_t i = 0; i < n; i++) if (p[i] != (unsigned char)(i * mul + add)) return 0;
    return 1;
}

/* Progress until done(arg) holds; FAIL after more than secs seconds. */
static void wait_until(int (*done)(const void *arg), const void *arg, int secs, const char *what)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (!done(arg)) {
        progress();
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > secs) FAIL("timeout waiting for %s", what);
    }
}

static int flag_set(const void *flag)
{
    return __atomic_load_n((const volatile int*)flag, __ATOMIC_ACQUIRE);
}

static void wait_for(volatile int *flag, const char *what)
{
    wait_until(flag_set, (const void*)flag, 10, what);
}

/* Be killed: say so with our pid and keep the connection served. */
static void hold(void)
{
    printf("%s: HOLD %d\n", g_side, (int)getpid());
    for (;;) progress();
}

static void wait_long(volatile int *flag, const char *what)
{
    wait_until(flag_set, (const void*)flag, 20, what);
}

/* CMCS_SYNC names a file the server creates once it has checked that its
 * new endpoint refuses to disconnect before the client's notification; the
 * client waits for it before notifying, so that check cannot race with a
 * slow-scheduled server. Without the variable neither side waits. */
static void sync_mark(void)
{
    const char *path = getenv("CMCS_SYNC");
    FILE *f;
    if (path == NULL) return;
    f = fopen(path, "w");
    if (f == NULL) FAIL("cannot create %s", path);
    fclose(f);
}

static int file_exists(const void *path)
{
    return access(path, F_OK) == 0;
}

static void sync_wait(void)
{
    const char *path = getenv("CMCS_SYNC");
    if (path != NULL) wait_until(file_exists, path, 10, "the server's check (CMCS_SYNC)");
}

static void progress_for(int ms)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        progress();
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
}

static size_t expected_dev_addr_len(void)
{
    return g_ipv6 ? 18 : 6;
}

static uint16_t port_of(const struct sockaddr_storage *ss)
{
    return ntohs(ss->ss_family == AF_INET6 ? ((const struct sockaddr_in6*)ss)->sin6_port
                                           : ((const struct sockaddr_in*)ss)->sin_port);
}

static void save_remote(const uct_cm_remote_data_t *rd)
{
    if (!(rd->field_mask & UCT_CM_REMOTE_DATA_FIELD_CONN_PRIV_DATA) ||
        rd->conn_priv_data_length > sizeof(g_remote)) {
        g_remote_len = (size_t)-1;
        return;
    }
    memcpy(g_remote, rd->conn_priv_data, rd->conn_priv_data_length);
    g_remote_len   = rd->conn_priv_data_length;
    g_dev_addr_len = (rd->field_mask & UCT_CM_REMOTE_DATA_FIELD_DEV_ADDR_LENGTH) ? rd->dev_addr_length : 0;
    if (g_rdmacm) {
        /* an IB device address: a flags byte and at least a LID or a GID */
        if (!(rd->field_mask & UCT_CM_REMOTE_DATA_FIELD_DEV_ADDR) || rd->dev_addr_length < 3 ||
            rd->dev_addr_length > 23)
            g_dev_addr_len = 0;
        return;
    }
    if ((rd->field_mask & UCT_CM_REMOTE_DATA_FIELD_DEV_ADDR) && rd->dev_addr_length == expected_dev_addr_len()) {
        /* the tcp device address: flags, address family, then the address */
        const unsigned char *d = (const unsigned char*)rd->dev_addr;
        static const unsigned char v4_loop[4] = {127, 0, 0, 1};
        if (d[0] != 0 || d[1] != (g_ipv6 ? AF_INET6 : AF_INET) ||
            (g_ipv6 ? memcmp(d + 2, &in6addr_loopback, 16) : memcmp(d + 2, v4_loop, 4)))
            g_dev_addr_len = 0; /* wrong content */
    }
}

static void conn_request_cb(uct_listener_h listener, void *arg, const uct_cm_listener_conn_request_args_t *a)
{
    (void)listener; (void)arg;
    save_remote(a->remote_data);
    snprintf(g_dev_name, sizeof(g_dev_name), "%s", a->dev_name);
    g_request = a->conn_request;
    __atomic_store_n(&g_conn_req, 1, __ATOMIC_RELEASE);
}

static ucs_status_t resolve_cb(void *arg, const uct_cm_ep_resolve_args_t *a)
{
    (void)arg;
    snprintf(g_dev_name, sizeof(g_dev_name), "%s", a->dev_name);
    g_status = a->status;
    __atomic_store_n(&g_resolved, 1, __ATOMIC_RELEASE);
    return UCS_OK;
}

static ssize_t pack_cb(void *arg, const uct_cm_ep_priv_data_pack_args_t *a, void *priv)
{
    int server = (int)(long)arg == 2;
    (void)a;
    if (server) { fill(priv, g_server_len, 3, 5); return g_server_len; }
    fill(priv, g_client_len, 7, 1);
    __atomic_store_n(&g_resolved, 1, __ATOMIC_RELEASE);
    return g_client_len;
}

static void client_connect_cb(uct_ep_h ep, void *arg, const uct_cm_ep_client_connect_args_t *a)
{
    (void)ep; (void)arg;
    g_status = a->status;
    if (a->status == UCS_OK) save_remote(a->remote_data);
    __atomic_store_n(&g_connected, 1, __ATOMIC_RELEASE);
}

static void server_notify_cb(uct_ep_h ep, void *arg, const uct_cm_ep_server_conn_notify_args_t *a)
{
    (void)ep; (void)arg;
    g_status = a->status;
    __atomic_store_n(&g_notified, 1, __ATOMIC_RELEASE);
}

static void disconnect_cb(uct_ep_h ep, void *arg)
{
    (void)ep; (void)arg;
    __atomic_store_n(&g_disconnected, 1, __ATOMIC_RELEASE);
}

static uct_component_h find_tcp(void)
{
    const char *want = g_rdmacm ? "rdmacm" : "tcp";
    uct_component_h *comps;
    unsigned n;
    uct_component_attr_t attr;
    if (uct_query_components(&comps, &n) != UCS_OK) FAIL("uct_query_components");
    for (unsigned i = 0; i < n; i++) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME | UCT_COMPONENT_ATTR_FIELD_FLAGS;
        if (uct_component_query(comps[i], &attr) != UCS_OK) continue;
        if (!strcmp(attr.name, want) && (attr.flags & UCT_COMPONENT_FLAG_CM)) {
            uct_component_h c = comps[i];
            uct_release_component_list(comps);
            return c;
        }
    }
    uct_release_component_list(comps);
    printf("%s: SKIP no %s component with a connection manager\n", g_side, want);
    exit(77);
}

/* Disconnect in the order MODE asks; `first` is true on the side that starts. */
static void do_disconnect(uct_ep_h ep, int first)
{
    ucs_status_t s;
    if (first) {
        s = uct_ep_disconnect(ep, 0);
        if (s != UCS_OK) FAIL("uct_ep_disconnect: %s", ucs_status_string(s));
        /* In progress until the peer's own disconnect arrives; on a loaded
         * machine the peer can answer (through the async thread) before this
         * second call, and then the endpoint is already not connected. */
        s = uct_ep_disconnect(ep, 0);
        if (s != UCS_INPROGRESS && s != UCS_ERR_NOT_CONNECTED)
            FAIL("second uct_ep_disconnect: %s (expected in progress or not connected)",
                 ucs_status_string(s));
        wait_for(&g_disconnected, "disconnect_cb after our disconnect");
    } else {
        wait_for(&g_disconnected, "disconnect_cb from the peer");
        s = uct_ep_disconnect(ep, 0);
        if (s != UCS_OK) FAIL("uct_ep_disconnect after the peer's: %s", ucs_status_string(s));
    }
    printf("%s: disconnected (%s first)\n", g_side, first ? "we" : "peer");
}

int main(int argc, char **argv)
{
    ucs_async_context_t *async;
    uct_cm_config_t *cfg;
    uct_cm_h cm;
    uct_cm_attr_t cm_attr;
    uct_ep_h ep = NULL;
    uct_ep_params_t ep_params;
    ucs_status_t s;
    struct sockaddr_storage sin;
    socklen_t sin_len;
    const char *v6;
    const char *mode;
    int server, use_pack;

    if (argc != 4) {
        fprintf(stderr, "usage: %s server PORTFILE MODE | client PORT MODE\n", argv[0]);
        return 2;
    }
    server   = !strcmp(argv[1], "server");
    g_side   = server ? "server" : "client";
    mode     = argv[3];
    use_pack = !strcmp(mode, "pack");
    setvbuf(stdout, NULL, _IONBF, 0);

    g_rdmacm = getenv("CMCS_COMPONENT") != NULL && !strcmp(getenv("CMCS_COMPONENT"), "rdmacm");
    if (g_rdmacm) {
        g_client_len = 54;
        g_server_len = 40;
        g_want_dev = getenv("CMCS_DEV") ? getenv("CMCS_DEV") : "softrdma0:1";
    }
    uct_component_h comp = find_tcp();
    g_async_poll = getenv("CMCS_ASYNC") != NULL && !strcmp(getenv("CMCS_ASYNC"), "poll");
    if (ucs_async_context_create(g_async_poll ? UCS_ASYNC_MODE_POLL : UCS_ASYNC_MODE_THREAD_SPINLOCK, &async)
        != UCS_OK) FAIL("async");
    g_async = async;
    if (uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &g_worker) != UCS_OK) FAIL("worker");
    if (uct_cm_config_read(comp, NULL, NULL, &cfg) != UCS_OK) FAIL("uct_cm_config_read");
    s = uct_cm_open(comp, g_worker, cfg, &cm);
    uct_config_release(cfg);
    if (s != UCS_OK) FAIL("uct_cm_open: %s", ucs_status_string(s));
    cm_attr.field_mask = UCT_CM_ATTR_FIELD_MAX_CONN_PRIV;
    if (uct_cm_query(cm, &cm_attr) != UCS_OK || cm_attr.max_conn_priv != (g_rdmacm ? 54 : 2064))
        FAIL("uct_cm_query: max_conn_priv %zu", cm_attr.max_conn_priv);

    v6      = getenv("CMCS_IPV6");
    g_ipv6  = v6 != NULL && !strcmp(v6, "1");
    memset(&sin, 0, sizeof(sin));
    if (g_ipv6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6*)&sin;
        a->sin6_family = AF_INET6;
        a->sin6_addr   = in6addr_loopback;
        sin_len        = sizeof(*a);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in*)&sin;
        a->sin_family      = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        sin_len            = sizeof(*a);
    }

    if (server) {
        uct_listener_params_t lp = {0};
        uct_listener_attr_t la;
        uct_listener_h listener;
        FILE *f;

        lp.field_mask      = UCT_LISTENER_PARAM_FIELD_CONN_REQUEST_CB | UCT_LISTENER_PARAM_FIELD_USER_DATA |
                             UCT_LISTENER_PARAM_FIELD_BACKLOG;
        lp.conn_request_cb = conn_request_cb;
        lp.user_data       = NULL;
        lp.backlog         = 16;
        s = uct_listener_create(cm, (struct sockaddr*)&sin, sin_len, &lp, &listener);
        if (s != UCS_OK) FAIL("uct_listener_create: %s", ucs_status_string(s));
        la.field_mask = UCT_LISTENER_ATTR_FIELD_SOCKADDR;
        if (uct_listener_query(listener, &la) != UCS_OK) FAIL("uct_listener_query");
        f = fopen(argv[2], "w");
        if (la.sockaddr.ss_family != sin.ss_family) FAIL("listener family %d", la.sockaddr.ss_family);
        fprintf(f, "%d\n", port_of(&la.sockaddr));
        fclose(f);

        wait_for(&g_conn_req, "a connection request");
        if (g_remote_len != g_client_len || !check(g_remote, g_client_len, 7, 1))
            FAIL("client private data: %zu bytes, pattern %s", g_remote_len,
                 check(g_remote, g_client_len, 7, 1) ? "ok" : "bad");
        if (g_rdmacm ? g_dev_addr_len == 0 : g_dev_addr_len != expected_dev_addr_len()) FAIL("remote device address length/content (%zu)", g_dev_addr_len);
        if (strcmp(g_dev_name, g_want_dev)) FAIL("dev_name '%s' (expected %s)", g_dev_name, g_want_dev);
        printf("server: connection request with %zu bytes from the client on %s\n", g_remote_len, g_dev_name);
        if (!strcmp(mode, "kill-pre")) hold();

        if (!strcmp(mode, "reject")) {
            s = uct_listener_reject(listener, g_request);
            if (s != UCS_OK) FAIL("uct_listener_reject: %s", ucs_status_string(s));
            progress_for(300);
            printf("server: rejected\n");
        } else {
            unsigned char data[SERVER_MAX];
            fill(data, g_server_len, 3, 5);
            memset(&ep_params, 0, sizeof(ep_params));
            ep_params.field_mask = UCT_EP_PARAM_FIELD_CM | UCT_EP_PARAM_FIELD_CONN_REQUEST |
                                   UCT_EP_PARAM_FIELD_USER_DATA | UCT_EP_PARAM_FIELD_SOCKADDR_NOTIFY_CB_SERVER |
                                   UCT_EP_PARAM_FIELD_SOCKADDR_DISCONNECT_CB | UCT_EP_PARAM_FIELD_SOCKADDR_CB_FLAGS;
            ep_params.cm                 = cm;
            ep_params.conn_request       = g_request;
            ep_params.user_data          = (void*)2L;
            ep_params.sockaddr_cb_server = server_notify_cb;
            ep_params.disconnect_cb      = disconnect_cb;
            ep_params.sockaddr_cb_flags  = UCT_CB_FLAG_ASYNC;
            if (use_pack) {
                ep_params.field_mask      |= UCT_EP_PARAM_FIELD_SOCKADDR_PACK_CB;
                ep_params.sockaddr_pack_cb = pack_cb;
            } else {
                ep_params.field_mask         |= UCT_EP_PARAM_FIELD_PRIV_DATA | UCT_EP_PARAM_FIELD_PRIV_DATA_LENGTH;
                ep_params.private_data        = data;
                ep_params.private_data_length = g_server_len;
            }
            s = uct_ep_create(&ep_params, &ep);
            if (s != UCS_OK) FAIL("server uct_ep_create: %s", ucs_status_string(s));
            s = uct_ep_disconnect(ep, 0);
            if (s != UCS_ERR_BUSY) FAIL("disconnect before connected: %s (expected busy)", ucs_status_string(s));
            sync_mark();
            wait_for(&g_notified, "the client's notification");
            if (g_status != UCS_OK) FAIL("notify status %s", ucs_status_string(g_status));
            printf("server: client notified\n");
            if (!strcmp(mode, "kill-post")) hold();
            if (!strcmp(mode, "ckill-post")) {
                wait_long(&g_disconnected, "the disconnect callback after the client died");
                printf("server: the client's death seen as a disconnection\n");
                uct_ep_destroy(ep);
                uct_listener_destroy(listener);
                goto out;
            }
            {
                cmcs_ep_attr_t ea;
                ea.field_mask = CMCS_EP_ATTR_FIELD_LOCAL_SOCKADDR | CMCS_EP_ATTR_FIELD_REMOTE_SOCKADDR;
                s = uct_ep_query(ep, &ea);
                if (s != UCS_OK || ea.local_address.ss_family != sin.ss_family ||
                    ea.remote_address.ss_family != sin.ss_family ||
                    port_of(&ea.local_address) != port_of(&la.sockaddr))
                    FAIL("uct_ep_query: %s", ucs_status_string(s));
            }
            do_disconnect(ep, !strcmp(mode, "srv-disc"));
            uct_ep_destroy(ep);
        }
        uct_listener_destroy(listener);
    } else {
        ucs_sock_addr_t sa;
        unsigned char data[CLIENT_MAX];

        if (g_ipv6) ((struct sockaddr_in6*)&sin)->sin6_port = htons(atoi(argv[2]));
        else ((struct sockaddr_in*)&sin)->sin_port = htons(atoi(argv[2]));
        sa.addr    = (struct sockaddr*)&sin;
        sa.addrlen = sin_len;
        memset(&ep_params, 0, sizeof(ep_params));
        ep_params.field_mask = UCT_EP_PARAM_FIELD_CM | UCT_EP_PARAM_FIELD_SOCKADDR | UCT_EP_PARAM_FIELD_USER_DATA |
                               UCT_EP_PARAM_FIELD_SOCKADDR_CB_FLAGS | UCT_EP_PARAM_FIELD_SOCKADDR_CONNECT_CB_CLIENT |
                               UCT_EP_PARAM_FIELD_SOCKADDR_DISCONNECT_CB;
        ep_params.cm                 = cm;
        ep_params.sockaddr           = &sa;
        ep_params.user_data          = (void*)1L;
        ep_params.sockaddr_cb_flags  = UCT_CB_FLAG_ASYNC;
        ep_params.sockaddr_cb_client = client_connect_cb;
        ep_params.disconnect_cb      = disconnect_cb;
        if (use_pack) {
            ep_params.field_mask      |= UCT_EP_PARAM_FIELD_SOCKADDR_PACK_CB;
            ep_params.sockaddr_pack_cb = pack_cb;
        } else {
            ep_params.field_mask   |= UCT_EP_PARAM_FIELD_CM_RESOLVE_CB;
            ep_params.cm_resolve_cb = resolve_cb;
        }
        s = uct_ep_create(&ep_params, &ep);
        if (s != UCS_OK) FAIL("client uct_ep_create: %s", ucs_status_string(s));
        wait_for(&g_resolved, "resolve");
        if (!use_pack) {
            uct_ep_connect_params_t cp;
            if (g_status != UCS_OK) FAIL("resolve status %s", ucs_status_string(g_status));
            if (strcmp(g_dev_name, g_want_dev)) FAIL("resolved dev_name '%s' (expected %s)", g_dev_name, g_want_dev);
            fill(data, g_client_len, 7, 1);
            cp.field_mask          = UCT_EP_CONNECT_PARAM_FIELD_PRIVATE_DATA |
                                     UCT_EP_CONNECT_PARAM_FIELD_PRIVATE_DATA_LENGTH;
            cp.private_data        = data;
            cp.private_data_length = g_client_len;
            s = uct_ep_connect(ep, &cp);
            if (s != UCS_OK) FAIL("uct_ep_connect: %s", ucs_status_string(s));
        }
        if (!strcmp(mode, "kill-pre")) {
            wait_long(&g_connected, "the connect callback after the server died");
            if (g_status == UCS_OK) FAIL("connected to a dead server");
            printf("client: the server's death reported as %s\n", ucs_status_string(g_status));
            uct_ep_destroy(ep);
            goto out;
        }
        wait_for(&g_connected, "the server's answer");
        if (!strcmp(mode, "reject")) {
            if (g_status != UCS_ERR_REJECTED) FAIL("status %s (expected rejected)", ucs_status_string(g_status));
            printf("client: rejected as expected\n");
        } else {
            if (g_status != UCS_OK) FAIL("connect status %s", ucs_status_string(g_status));
            if (g_remote_len != g_server_len || !check(g_remote, g_server_len, 3, 5))
                FAIL("server private data: %zu bytes", g_remote_len);
            if (!g_rdmacm && g_dev_addr_len != expected_dev_addr_len()) FAIL("remote device address length/content (%zu)", g_dev_addr_len);
            printf("client: connected, %zu bytes from the server\n", g_remote_len);
            sync_wait();
            s = uct_cm_client_ep_conn_notify(ep);
            if (s != UCS_OK) FAIL("uct_cm_client_ep_conn_notify: %s", ucs_status_string(s));
            if (!strcmp(mode, "ckill-post")) hold();
            if (!strcmp(mode, "kill-post")) {
                wait_long(&g_disconnected, "the disconnect callback after the server died");
                printf("client: the server's death seen as a disconnection\n");
            } else {
                do_disconnect(ep, strcmp(mode, "srv-disc") != 0);
            }
        }
        uct_ep_destroy(ep);
    }

out:
    uct_cm_close(cm);
    uct_worker_destroy(g_worker);
    ucs_async_context_destroy(async);
    printf("%s: OK\n", g_side);
    return 0;
}
