/*
 * Event-driven libucp between two processes: every wait is the pattern of
 * programs that sleep on the worker's event descriptor (ucx-py's default
 * mode, ucxx's progress thread): progress until nothing is left, then
 * ucp_worker_arm and poll() on ucp_worker_get_efd's descriptor, never a
 * timed progress loop. A process that is not woken by what it waits for
 * never gets there: each wait gives up after WAIT_MS (10 s) with a FAIL
 * line, so a missing wake-up shows as a failure, not as a slow pass.
 *
 *   ucp_wakeup -s PORT [-n CLIENTS]   the server (listener, sockaddr CM)
 *   ucp_wakeup -c HOST PORT           a client
 *   ucp_wakeup -S PORT / -C HOST PORT the same without the CM: the worker
 *                                     addresses travel over a TCP socket
 *                                     and the endpoints are created from
 *                                     them (so that UCX_TLS may name
 *                                     transports that have no CM, such as
 *                                     shared memory)
 *
 * The exchange, each step started by one side while the other sleeps
 * (the side that causes it waits CAUSE_DELAY_MS first, so that its peer is
 * asleep by then):
 *   connect    the client creates its endpoint: wakes the listening server
 *   accept     the server creates its endpoint on the request: wakes the
 *              client, whose first send (posted before) then completes
 *   s2c/c2s    a small tag message each way (eager), then a large one
 *              (UCP_WAKEUP_LARGE bytes, 1 MiB: rendezvous; 0 leaves it
 *              out), every byte checked
 *   close      one side closes its endpoint (UCP_WAKEUP_CLOSER=server or
 *              client, default client): wakes the other through its error
 *              callback (peer error handling), which then closes its own;
 *              both close requests must complete
 * With UCP_WAKEUP_EXIT=client (or server) that side leaves after the data
 * without closing anything (_exit, CAUSE_DELAY_MS after the data), and the
 * other must be woken by the loss ("close" too) and finish its own close;
 * or, when it is the closer, its close (started at once) must complete
 * although the peer leaves in the middle of it: a peer lost during
 * shutdown.
 *
 * Without the CM the steps are the same except: no connect/accept (the
 * server sleeps for the client's first message, "first"), and at the end
 * both sides close their endpoints (flush) at the same time, and neither
 * leaves before both closes completed (their socket says when); with
 * UCP_WAKEUP_EXIT the endpoints have peer error handling, and the end is
 * the one described above (the transport itself reports the loss).
 *
 * Every step prints "cause NAME T" on the side that causes it and "wake
 * NAME T" on the side woken (T: CLOCK_MONOTONIC in nanoseconds, the same
 * clock in both processes), so the wake-up latency of each step is the
 * difference; tests/ucp-wakeup.sh pairs them. Each side ends with
 * "ucp_wakeup: OK (N wake-ups)" (exit 0) or "ucp_wakeup: FAIL" (exit 1).
 * With -n N the server serves N clients one after the other on one
 * listener (each client process runs the whole exchange).
 */
#include <ucp/api/ucp.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>

#define WAIT_MS        10000
#define CAUSE_DELAY_MS 30
#define SMALL          64
#define TAG_S2C        0x51
#define TAG_C2S        0x52

static const char *g_role = "?";
static ucp_context_h g_ctx;
static ucp_worker_h g_worker;
static int g_efd = -1;
static unsigned long g_wakeups;
static int g_failed;
static int g_by_address;
static int g_oob_fd = -1;

/* what the callbacks set */
static ucp_conn_request_h g_conn_req;
static ucp_listener_h g_listener;
static volatile int g_ep_error;
static ucs_status_t g_ep_error_status;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void stamp(const char *kind, const char *name)
{
    printf("%s %s %llu\n", kind, name, (unsigned long long)now_ns());
    fflush(stdout);
}

static void fail(const char *what, const char *why)
{
    printf("FAIL %s: %s: %s\n", g_role, what, why);
    fflush(stdout);
    g_failed = 1;
}

static void die(const char *what, const char *why)
{
    fail(what, why);
    printf("ucp_wakeup: FAIL\n");
    fflush(stdout);
    exit(1);
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Sleep on the worker's event descriptor until *done is set (by a
 * callback run from progress) or WAIT_MS pass without it. */
typedef int (*cond_fn)(void *arg);

static int wait_for(const char *what, cond_fn done, void *arg)
{
    uint64_t deadline = now_ns() + (uint64_t)WAIT_MS * 1000000ull;
    for (;;) {
        while (ucp_worker_progress(g_worker) != 0) {
        }
        if (done(arg)) {
            return 0;
        }
        ucs_status_t st = ucp_worker_arm(g_worker);
        if (st == UCS_ERR_BUSY) {
            continue;
        }
        if (st != UCS_OK) {
            die("ucp_worker_arm", ucs_status_string(st));
        }
        uint64_t t = now_ns();
        if (t >= deadline) {
            char why[96];
            snprintf(why, sizeof(why), "not woken within %d ms", WAIT_MS);
            fail(what, why);
            return -1;
        }
        struct pollfd p = { .fd = g_efd, .events = POLLIN };
        int n = poll(&p, 1, (int)((deadline - t) / 1000000ull) + 1);
        if (n < 0 && errno != EINTR) {
            die("poll", strerror(errno));
        }
        if (n > 0) {
            g_wakeups++;
        }
    }
}

struct req_wait {
    void *req;
    ucs_status_t status;
};

static int req_done(void *arg)
{
    struct req_wait *w = arg;
    if (w->req == NULL) {
        return 1;
    }
    w->status = ucp_request_check_status(w->req);
    return w->status != UCS_INPROGRESS;
}

/* Wait for a request from a *_nbx call; returns its status. */
static ucs_status_t wait_req(const char *what, void *req)
{
    if (req == NULL) {
        return UCS_OK;
    }
    if (UCS_PTR_IS_ERR(req)) {
        return UCS_PTR_STATUS(req);
    }
    struct req_wait w = { req, UCS_INPROGRESS };
    if (wait_for(what, req_done, &w) != 0) {
        ucp_request_cancel(g_worker, req);
        while (!req_done(&w)) {
            ucp_worker_progress(g_worker);
        }
        ucp_request_free(req);
        return UCS_ERR_TIMED_OUT;
    }
    ucp_request_free(req);
    return w.status;
}

static void ep_err_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)arg;
    (void)ep;
    g_ep_error_status = status;
    g_ep_error = 1;
}

static int ep_error_seen(void *arg)
{
    (void)arg;
    return g_ep_error;
}

static void conn_cb(ucp_conn_request_h req, void *arg)
{
    (void)arg;
    if (g_conn_req != NULL) {
        /* one at a time: a second request waits for the next round */
        ucp_listener_reject(g_listener, req);
        return;
    }
    g_conn_req = req;
}

static int conn_seen(void *arg)
{
    (void)arg;
    return g_conn_req != NULL;
}

static void init(void)
{
    ucp_params_t p = {
        .field_mask = UCP_PARAM_FIELD_FEATURES,
        .features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP,
    };
    ucp_config_t *cfg;
    ucs_status_t st = ucp_config_read(NULL, NULL, &cfg);
    if (st != UCS_OK) {
        die("ucp_config_read", ucs_status_string(st));
    }
    st = ucp_init(&p, cfg, &g_ctx);
    ucp_config_release(cfg);
    if (st != UCS_OK) {
        die("ucp_init", ucs_status_string(st));
    }
    ucp_worker_params_t wp = {
        .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_SINGLE,
    };
    st = ucp_worker_create(g_ctx, &wp, &g_worker);
    if (st != UCS_OK) {
        die("ucp_worker_create", ucs_status_string(st));
    }
    st = ucp_worker_get_efd(g_worker, &g_efd);
    if (st != UCS_OK) {
        die("ucp_worker_get_efd", ucs_status_string(st));
    }
}

static void fill(uint8_t *buf, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++) {
        buf[i] = (uint8_t)(i * 131u + seed * 7u + (i >> 8));
    }
}

static int check(const uint8_t *buf, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++) {
        if (buf[i] != (uint8_t)(i * 131u + seed * 7u + (i >> 8))) {
            return -1;
        }
    }
    return 0;
}

static ucp_request_param_t plain_param(void)
{
    ucp_request_param_t prm;
    memset(&prm, 0, sizeof(prm));
    return prm;
}

/* The receiver posts its receive and sleeps; the sender waits
 * CAUSE_DELAY_MS, stamps and sends, then sleeps until its send completes. */
static void send_msg(ucp_ep_h ep, const char *name, uint64_t tag, size_t len, unsigned seed)
{
    uint8_t *buf = malloc(len);
    if (buf == NULL) {
        die(name, "out of memory");
    }
    fill(buf, len, seed);
    sleep_ms(CAUSE_DELAY_MS);
    ucp_request_param_t prm = plain_param();
    stamp("cause", name);
    ucs_status_t st = wait_req(name, ucp_tag_send_nbx(ep, buf, len, tag, &prm));
    if (st != UCS_OK) {
        fail(name, ucs_status_string(st));
    }
    free(buf);
}

static void recv_msg(const char *name, uint64_t tag, size_t len, unsigned seed)
{
    uint8_t *buf = calloc(1, len);
    if (buf == NULL) {
        die(name, "out of memory");
    }
    ucp_request_param_t prm = plain_param();
    void *req = ucp_tag_recv_nbx(g_worker, buf, len, tag, (uint64_t)-1, &prm);
    if (UCS_PTR_IS_ERR(req)) {
        die(name, ucs_status_string(UCS_PTR_STATUS(req)));
    }
    struct req_wait w = { req, UCS_INPROGRESS };
    if (wait_for(name, req_done, &w) != 0) {
        die(name, "message never arrived");
    }
    stamp("wake", name);
    ucp_request_free(req);
    if (w.status != UCS_OK) {
        fail(name, ucs_status_string(w.status));
    } else if (check(buf, len, seed) != 0) {
        fail(name, "data differs");
    }
    free(buf);
}

/* Close an endpoint and wait for the close to complete. "force" when the
 * peer is known to be gone. */
static void close_ep(ucp_ep_h ep, const char *name, int force)
{
    ucp_request_param_t prm = plain_param();
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    prm.flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    void *req = ucp_ep_close_nbx(ep, &prm);
    if (req == NULL || !UCS_PTR_IS_PTR(req)) {
        return;
    }
    struct req_wait w = { req, UCS_INPROGRESS };
    if (wait_for(name, req_done, &w) != 0) {
        die(name, "close never completed");
    }
    ucp_request_free(req);
}

static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v != NULL && *v != '\0' ? v : dflt;
}

static void oob_xfer(int fd, void *buf, size_t len, int out);

/* Both sides reach this point (address mode, over its socket). */
static void oob_barrier(void)
{
    char c = 1;
    oob_xfer(g_oob_fd, &c, 1, 1);
    oob_xfer(g_oob_fd, &c, 1, 0);
}

/* The data steps and the end, the same on both sides. */
static void exchange(ucp_ep_h ep, int server)
{
    const char *closer = env_or("UCP_WAKEUP_CLOSER", "client");
    const char *leaver = env_or("UCP_WAKEUP_EXIT", "");
    struct { const char *name; size_t len; } steps[] = {
        { "small", SMALL }, { "large", (size_t)strtoul(env_or("UCP_WAKEUP_LARGE", "1048576"), NULL, 0) },
    };
    for (unsigned i = 0; i < 2 && steps[i].len > 0; i++) {
        char s2c[32], c2s[32];
        snprintf(s2c, sizeof(s2c), "s2c-%s", steps[i].name);
        snprintf(c2s, sizeof(c2s), "c2s-%s", steps[i].name);
        if (server) {
            send_msg(ep, s2c, TAG_S2C, steps[i].len, 10 + i);
            recv_msg(c2s, TAG_C2S, steps[i].len, 20 + i);
        } else {
            recv_msg(s2c, TAG_S2C, steps[i].len, 10 + i);
            send_msg(ep, c2s, TAG_C2S, steps[i].len, 20 + i);
        }
    }
    const char *me = server ? "server" : "client";
    if (g_by_address && *leaver == '\0') {
        /* both close together, and neither leaves while the other's close
         * still waits for it (a flush waits for the peer's answer) */
        oob_barrier();
        close_ep(ep, "close", 0);
        oob_barrier();
        return;
    }
    if (strcmp(leaver, me) == 0) {
        /* gone without a word: the process exits, the kernel closes its
         * sockets and unmaps its memory */
        sleep_ms(CAUSE_DELAY_MS);
        stamp("cause", "close");
        printf("ucp_wakeup: OK (%lu wake-ups, left without closing)\n", g_wakeups);
        fflush(stdout);
        _exit(0);
    }
    if (*leaver != '\0') {
        if (strcmp(closer, me) == 0) {
            /* the peer leaves while we close: the close completes */
            close_ep(ep, "close while the peer leaves", 0);
            stamp("wake", "close");
            return;
        }
        /* the peer leaves: woken by its loss, then close */
        if (wait_for("close", ep_error_seen, NULL) == 0) {
            stamp("wake", "close");
        }
        close_ep(ep, "close after loss", 1);
        return;
    }
    if (strcmp(closer, me) == 0) {
        sleep_ms(CAUSE_DELAY_MS);
        stamp("cause", "close");
        close_ep(ep, "close", 0);
    } else {
        if (wait_for("close", ep_error_seen, NULL) == 0) {
            stamp("wake", "close");
        }
        close_ep(ep, "close after peer's", 1);
    }
}

static int sent_or_failed(void *arg)
{
    return req_done(arg) || g_ep_error;
}

static void run_client(const char *host, const char *port)
{
    struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
    if (getaddrinfo(host, port, &hints, &ai) != 0) {
        die("getaddrinfo", host);
    }
    init();
    sleep_ms(CAUSE_DELAY_MS);
    ucp_ep_params_t ep_params = {
        .field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE
                      | UCP_EP_PARAM_FIELD_ERR_HANDLER,
        .flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER,
        .sockaddr = { .addr = ai->ai_addr, .addrlen = ai->ai_addrlen },
        .err_mode = UCP_ERR_HANDLING_MODE_PEER,
        .err_handler = { .cb = ep_err_cb, .arg = NULL },
    };
    ucp_ep_h ep;
    stamp("cause", "connect");
    ucs_status_t st = ucp_ep_create(g_worker, &ep_params, &ep);
    freeaddrinfo(ai);
    if (st != UCS_OK) {
        die("ucp_ep_create", ucs_status_string(st));
    }
    /* the first message goes once the server accepted: posted now, it
     * completes when its answer wakes us */
    static uint8_t hello[SMALL];
    fill(hello, sizeof(hello), 1);
    ucp_request_param_t prm = plain_param();
    void *req = ucp_tag_send_nbx(ep, hello, sizeof(hello), TAG_C2S, &prm);
    if (UCS_PTR_IS_ERR(req)) {
        die("first send", ucs_status_string(UCS_PTR_STATUS(req)));
    }
    struct req_wait w = { req, UCS_INPROGRESS };
    if (req != NULL) {
        if (wait_for("accept", sent_or_failed, &w) != 0) {
            die("accept", "the first send never completed");
        }
        stamp("wake", "accept");
        if (g_ep_error) {
            die("accept", ucs_status_string(g_ep_error_status));
        }
        ucp_request_free(req);
        if (w.status != UCS_OK) {
            die("first send", ucs_status_string(w.status));
        }
    } else {
        /* completed in place (cannot be: the endpoint is not connected
         * yet); count it as a failure of the test's assumption */
        fail("accept", "the first send completed before the server answered");
    }
    exchange(ep, 0);
}

static void run_server(const char *port, unsigned clients)
{
    init();
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port)) };
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
    ucp_listener_params_t lp = {
        .field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER,
        .sockaddr = { .addr = (struct sockaddr *)&sa, .addrlen = sizeof(sa) },
        .conn_handler = { .cb = conn_cb, .arg = NULL },
    };
    ucs_status_t st = ucp_listener_create(g_worker, &lp, &g_listener);
    if (st != UCS_OK) {
        die("ucp_listener_create", ucs_status_string(st));
    }
    printf("listening on %s\n", port);
    fflush(stdout);
    for (unsigned c = 0; c < clients; c++) {
        g_conn_req = NULL;
        g_ep_error = 0;
        if (wait_for("connect", conn_seen, NULL) != 0) {
            die("connect", "no connection request");
        }
        stamp("wake", "connect");
        sleep_ms(CAUSE_DELAY_MS);
        ucp_ep_params_t ep_params = {
            .field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE
                          | UCP_EP_PARAM_FIELD_ERR_HANDLER,
            .conn_request = g_conn_req,
            .err_mode = UCP_ERR_HANDLING_MODE_PEER,
            .err_handler = { .cb = ep_err_cb, .arg = NULL },
        };
        ucp_ep_h ep;
        stamp("cause", "accept");
        st = ucp_ep_create(g_worker, &ep_params, &ep);
        if (st != UCS_OK) {
            die("ucp_ep_create", ucs_status_string(st));
        }
        /* the client's first message */
        uint8_t hello[SMALL];
        ucp_request_param_t prm = plain_param();
        void *req = ucp_tag_recv_nbx(g_worker, hello, sizeof(hello), TAG_C2S, (uint64_t)-1, &prm);
        st = wait_req("first message", req);
        if (st != UCS_OK) {
            die("first message", ucs_status_string(st));
        }
        if (check(hello, sizeof(hello), 1) != 0) {
            fail("first message", "data differs");
        }
        exchange(ep, 1);
    }
    ucp_listener_destroy(g_listener);
}

/* The out-of-band socket of the address mode: send ours, read the peer's. */
static void oob_xfer(int fd, void *buf, size_t len, int out)
{
    size_t done = 0;
    while (done < len) {
        ssize_t r = out ? write(fd, (char *)buf + done, len - done) : read(fd, (char *)buf + done, len - done);
        if (r <= 0) {
            die("address exchange", r == 0 ? "peer closed" : strerror(errno));
        }
        done += (size_t)r;
    }
}

static ucp_ep_h ep_by_address(int fd)
{
    ucp_address_t *mine;
    size_t len;
    ucs_status_t st = ucp_worker_get_address(g_worker, &mine, &len);
    if (st != UCS_OK) {
        die("ucp_worker_get_address", ucs_status_string(st));
    }
    uint64_t l = len, pl;
    oob_xfer(fd, &l, sizeof(l), 1);
    oob_xfer(fd, mine, len, 1);
    oob_xfer(fd, &pl, sizeof(pl), 0);
    if (pl == 0 || pl > (1u << 20)) {
        die("address exchange", "bad length");
    }
    void *peer = malloc(pl);
    if (peer == NULL) {
        die("address exchange", "out of memory");
    }
    oob_xfer(fd, peer, pl, 0);
    ucp_worker_release_address(g_worker, mine);
    ucp_ep_params_t ep_params = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
        .address = peer,
    };
    if (*env_or("UCP_WAKEUP_EXIT", "") != '\0') {
        /* a peer will leave: its loss reaches the error callback */
        ep_params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
        ep_params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
        ep_params.err_handler.cb = ep_err_cb;
        ep_params.err_handler.arg = NULL;
    }
    ucp_ep_h ep;
    st = ucp_ep_create(g_worker, &ep_params, &ep);
    free(peer);
    if (st != UCS_OK) {
        die("ucp_ep_create", ucs_status_string(st));
    }
    g_oob_fd = fd;
    return ep;
}

/* The first message of the address mode: the server sleeps for it. */
static void run_by_address(const char *host, const char *port, int server)
{
    struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai;
    if (getaddrinfo(host, port, &hints, &ai) != 0) {
        die("getaddrinfo", port);
    }
    int fd = socket(ai->ai_family, SOCK_STREAM, 0);
    if (fd < 0) {
        die("socket", strerror(errno));
    }
    init();
    if (server) {
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 1) != 0) {
            die("bind/listen", strerror(errno));
        }
        printf("listening on %s\n", port);
        fflush(stdout);
        int c = accept(fd, NULL, NULL);
        if (c < 0) {
            die("accept", strerror(errno));
        }
        close(fd);
        fd = c;
    } else if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        die("connect", strerror(errno));
    }
    freeaddrinfo(ai);
    ucp_ep_h ep = ep_by_address(fd);
    if (server) {
        recv_msg("first", TAG_C2S, SMALL, 1);
    } else {
        send_msg(ep, "first", TAG_C2S, SMALL, 1);
    }
    exchange(ep, server);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 3 && strcmp(argv[1], "-s") == 0) {
        unsigned clients = 1;
        if (argc >= 5 && strcmp(argv[3], "-n") == 0) {
            clients = (unsigned)atoi(argv[4]);
        }
        g_role = "server";
        run_server(argv[2], clients ? clients : 1);
    } else if (argc >= 3 && strcmp(argv[1], "-S") == 0) {
        g_role = "server";
        g_by_address = 1;
        run_by_address(NULL, argv[2], 1);
    } else if (argc >= 4 && strcmp(argv[1], "-C") == 0) {
        g_role = "client";
        g_by_address = 1;
        run_by_address(argv[2], argv[3], 0);
    } else if (argc >= 4 && strcmp(argv[1], "-c") == 0) {
        g_role = "client";
        run_client(argv[2], argv[3]);
    } else {
        fprintf(stderr, "usage: %s -s PORT [-n CLIENTS] | -c HOST PORT | -S PORT | -C HOST PORT\n", argv[0]);
        return 2;
    }
    ucp_worker_destroy(g_worker);
    ucp_cleanup(g_ctx);
    if (g_failed) {
        printf("ucp_wakeup: FAIL\n");
        return 1;
    }
    printf("ucp_wakeup: OK (%lu wake-ups)\n", g_wakeups);
    return 0;
}
