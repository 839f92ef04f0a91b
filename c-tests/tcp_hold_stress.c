/*
 * tcp_hold_stress - messages held back by coalescing and the safety net's
 * timer that sends them from the async thread, under a sender that keeps
 * stopping and starting.
 *
 *   tcp_hold_stress SECONDS
 *
 * Two processes (this one forks the receiver), one worker each (its async
 * context in thread mode, as libucp and the UCX tools make it), a tcp
 * interface on lo. The sender has two endpoints to the receiver (two
 * connections) and sends bursts of back-to-back active messages (short,
 * bcopy and zero-copy, 0 to 3000 bytes, on one endpoint or alternating
 * between the two). After each burst it does one of: nothing, one
 * progress call, a busy wait of up to 3 ms without calling UCT, or a
 * sleep of up to 2 ms. The pauses are around the timer's tick when it
 * runs at 1 ms (UCX_TCP_TX_COALESCE_TIMEOUT=1ms), so the timer sends what
 * is held while the sender comes back to send more. At the end the sender sends a last burst and then makes
 * no call into UCT until the receiver has answered.
 *
 * The receiver checks every message: its endpoint's next sequence number,
 * its length and every payload byte. Its handler answers every other
 * message with an echo on a connection of its own back to the sender
 * (back to back from inside its progress: holds that start in a handler;
 * it pauses now and then too).
 * It reports when it has all messages (or after 20 s without); then it
 * makes no call into UCT either, while the sender progresses until it has
 * every echo, checked the same way.
 *
 * Output: "RESULT ok N" or "RESULT bad ..." / "RESULT missing ...". Exit
 * status: 0 all arrived intact and in order, 1 otherwise, 2 setup error.
 */
#define _GNU_SOURCE
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>

#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ADDR_MAX  256
#define NEPS      2
#define MAX_LEN   3000
#define AM_BASE   10
#define AM_ECHO   20
#define ECHO_LEN  24
#define BACKLOG   65536

static const char *g_side = "sender";
static uct_worker_h g_worker;

#define DIE(...) do { printf("%s: error: ", g_side); printf(__VA_ARGS__); printf("\n"); exit(2); } while (0)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static uint64_t g_rand = 88172645463325252ull;

static unsigned rnd(unsigned n)
{
    g_rand ^= g_rand << 13;
    g_rand ^= g_rand >> 7;
    g_rand ^= g_rand << 17;
    return (unsigned)(g_rand % n);
}

static void spin_us(unsigned us)
{
    double end = now() + us * 1e-6;
    while (now() < end) {
    }
}

static uint8_t pattern(uint64_t seq, size_t i)
{
    return (uint8_t)(seq * 131 + i * 7 + 1);
}

struct tl {
    uct_component_h comp;
    uct_md_h        md;
    uct_iface_h     iface;
    unsigned char   dev[ADDR_MAX], addr[ADDR_MAX];
    size_t          dev_len, addr_len;
};

static void tl_open(struct tl *t)
{
    uct_component_h *comps;
    unsigned n;
    uct_component_attr_t ca;
    uct_md_config_t *mc;
    uct_iface_config_t *ic;
    uct_iface_params_t p;
    uct_iface_attr_t a;
    ucs_status_t s;

    t->comp = NULL;
    if (uct_query_components(&comps, &n) != UCS_OK) DIE("uct_query_components");
    for (unsigned i = 0; i < n && !t->comp; i++) {
        ca.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if (uct_component_query(comps[i], &ca) == UCS_OK && !strcmp(ca.name, "tcp")) t->comp = comps[i];
    }
    uct_release_component_list(comps);
    if (!t->comp) DIE("no tcp component");
    if (uct_md_config_read(t->comp, NULL, NULL, &mc) != UCS_OK) DIE("md config");
    s = uct_md_open(t->comp, "tcp", mc, &t->md);
    uct_config_release(mc);
    if (s != UCS_OK) DIE("uct_md_open: %s", ucs_status_string(s));
    if (uct_md_iface_config_read(t->md, "tcp", NULL, NULL, &ic) != UCS_OK) DIE("iface config");
    memset(&p, 0, sizeof(p));
    p.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE;
    p.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    p.mode.device.tl_name  = "tcp";
    p.mode.device.dev_name = "lo";
    s = uct_iface_open(t->md, g_worker, &p, ic, &t->iface);
    uct_config_release(ic);
    if (s != UCS_OK) DIE("uct_iface_open: %s", ucs_status_string(s));
    if (uct_iface_query(t->iface, &a) != UCS_OK) DIE("uct_iface_query");
    t->dev_len  = a.device_addr_len;
    t->addr_len = a.iface_addr_len;
    if (t->dev_len > ADDR_MAX || t->addr_len > ADDR_MAX) DIE("address lengths");
    if (!(a.cap.flags & UCT_IFACE_FLAG_AM_ZCOPY) || a.cap.am.max_zcopy < 8 + MAX_LEN || a.cap.am.max_bcopy < 8 + MAX_LEN)
        DIE("tcp capabilities");
    if (uct_iface_get_device_address(t->iface, (uct_device_addr_t*)t->dev) != UCS_OK ||
        uct_iface_get_address(t->iface, (uct_iface_addr_t*)t->addr) != UCS_OK) DIE("addresses");
    uct_iface_progress_enable(t->iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
}

static void oob_write(int fd, const void *p, size_t n)
{
    if (write(fd, p, n) != (ssize_t)n) DIE("oob write");
}

static void oob_read(int fd, void *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char*)p + got, n - got);
        if (r <= 0) DIE("the peer went away");
        got += r;
    }
}

static int oob_ready(int fd)
{
    struct pollfd pf = { fd, POLLIN, 0 };
    return poll(&pf, 1, 0) == 1;
}

/* ---- the receiver */

static uint64_t g_next[NEPS], g_got;
static int g_bad;
static char g_why[200];
static uct_ep_h g_echo_ep;
/* Echoes the handler could not send (no resource), sent in order later. */
static uint64_t g_backlog[BACKLOG];
static unsigned g_bl_head, g_bl_tail;
static uint64_t g_echoes;

static ucs_status_t send_echo(uint64_t seq)
{
    uint8_t p[ECHO_LEN];
    for (size_t i = 0; i < ECHO_LEN; i++) p[i] = pattern(seq, i);
    return uct_ep_am_short(g_echo_ep, AM_ECHO, seq, p, ECHO_LEN);
}

static void echo(uint64_t seq)
{
    if (g_bl_head == g_bl_tail && send_echo(seq) == UCS_OK) return;
    if (g_bl_tail - g_bl_head >= BACKLOG) {
        g_bad = 1;
        snprintf(g_why, sizeof(g_why), "echo backlog full");
        return;
    }
    g_backlog[g_bl_tail++ % BACKLOG] = seq;
}

static void drain_backlog(void)
{
    while (g_bl_head != g_bl_tail) {
        ucs_status_t s = send_echo(g_backlog[g_bl_head % BACKLOG]);
        if (s == UCS_ERR_NO_RESOURCE) return;
        if (s != UCS_OK) {
            g_bad = 1;
            snprintf(g_why, sizeof(g_why), "echo: %s", ucs_status_string(s));
            return;
        }
        g_bl_head++;
    }
}

static ucs_status_t am_cb(void *arg, void *data, size_t len, unsigned flags)
{
    int e = (int)(uintptr_t)arg;
    const uint8_t *d = data;
    uint64_t seq;
    (void)flags;
    if (g_bad) return UCS_OK;
    if (len < 8 || len > 8 + MAX_LEN) {
        g_bad = 1;
        snprintf(g_why, sizeof(g_why), "ep %d: message of %zu bytes", e, len);
        return UCS_OK;
    }
    memcpy(&seq, d, 8);
    if (seq != g_next[e]) {
        g_bad = 1;
        snprintf(g_why, sizeof(g_why), "ep %d: sequence %llu, expected %llu", e, (unsigned long long)seq,
                 (unsigned long long)g_next[e]);
        return UCS_OK;
    }
    for (size_t i = 8; i < len; i++) {
        if (d[i] != pattern(seq, i - 8)) {
            g_bad = 1;
            snprintf(g_why, sizeof(g_why), "ep %d: message %llu byte %zu is %u", e, (unsigned long long)seq, i - 8,
                     d[i]);
            return UCS_OK;
        }
    }
    g_next[e]++;
    g_got++;
    if (seq % 4 < 2) echo(g_echoes++);
    return UCS_OK;
}

/* One step of the receiver: progress, the echoes left over, and now and
 * then a pause without any call (so that echoes held from its handlers
 * stay over the timer's tick). */
static void recv_step(void)
{
    uct_worker_progress(g_worker);
    drain_backlog();
    if (rnd(16) == 0) spin_us(rnd(3000));
}

static uct_ep_h connect_to(struct tl *t, const unsigned char *dev, const unsigned char *addr)
{
    uct_ep_params_t p;
    uct_ep_h ep;
    memset(&p, 0, sizeof(p));
    p.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR | UCT_EP_PARAM_FIELD_IFACE_ADDR;
    p.iface      = t->iface;
    p.dev_addr   = (const uct_device_addr_t*)dev;
    p.iface_addr = (const uct_iface_addr_t*)addr;
    if (uct_ep_create(&p, &ep) != UCS_OK) DIE("uct_ep_create");
    return ep;
}

static void send_addr(int fd, struct tl *t)
{
    oob_write(fd, &t->dev_len, sizeof(t->dev_len));
    oob_write(fd, t->dev, t->dev_len);
    oob_write(fd, &t->addr_len, sizeof(t->addr_len));
    oob_write(fd, t->addr, t->addr_len);
}

static void recv_addr(int fd, unsigned char *dev, unsigned char *addr)
{
    size_t dev_len, addr_len;
    oob_read(fd, &dev_len, sizeof(dev_len));
    if (dev_len > ADDR_MAX) DIE("device address length");
    oob_read(fd, dev, dev_len);
    oob_read(fd, &addr_len, sizeof(addr_len));
    if (addr_len > ADDR_MAX) DIE("iface address length");
    oob_read(fd, addr, addr_len);
}

static int receiver(int fd)
{
    struct tl t;
    unsigned char dev[ADDR_MAX], addr[ADDR_MAX];
    uint64_t want[NEPS];
    double t0;
    char verdict;

    g_side = "receiver";
    tl_open(&t);
    for (int e = 0; e < NEPS; e++) uct_iface_set_am_handler(t.iface, AM_BASE + e, am_cb, (void*)(uintptr_t)e, 0);
    send_addr(fd, &t);
    recv_addr(fd, dev, addr);
    g_echo_ep = connect_to(&t, dev, addr);
    /* Progress until the sender tells how many it sent. */
    while (!oob_ready(fd)) recv_step();
    oob_read(fd, want, sizeof(want));
    t0 = now();
    while (!g_bad && (g_next[0] < want[0] || g_next[1] < want[1] || g_bl_head != g_bl_tail) && now() - t0 < 20)
        recv_step();
    if (g_bad) {
        printf("RESULT bad %s\n", g_why);
        verdict = 'B';
    } else if (g_next[0] < want[0] || g_next[1] < want[1]) {
        printf("RESULT missing: %llu of %llu and %llu of %llu after 20 s\n", (unsigned long long)g_next[0],
               (unsigned long long)want[0], (unsigned long long)g_next[1], (unsigned long long)want[1]);
        verdict = 'M';
    } else {
        printf("RESULT ok %llu\n", (unsigned long long)g_got);
        verdict = 'O';
    }
    fflush(stdout);
    /* The verdict and the number of echoes, then no call into UCT until
     * the sender has them all (the last ones may be held). */
    oob_write(fd, &verdict, 1);
    oob_write(fd, &g_echoes, sizeof(g_echoes));
    oob_read(fd, &verdict, 1);
    uct_ep_destroy(g_echo_ep);
    uct_iface_close(t.iface);
    uct_md_close(t.md);
    return verdict == 'O' ? 0 : 1;
}

/* ---- the sender */

static uint64_t g_echo_next;
static int g_echo_bad;
static char g_echo_why[200];

static ucs_status_t echo_cb(void *arg, void *data, size_t len, unsigned flags)
{
    const uint8_t *d = data;
    uint64_t seq;
    (void)arg; (void)flags;
    if (g_echo_bad) return UCS_OK;
    if (len != 8 + ECHO_LEN) {
        g_echo_bad = 1;
        snprintf(g_echo_why, sizeof(g_echo_why), "echo of %zu bytes", len);
        return UCS_OK;
    }
    memcpy(&seq, d, 8);
    if (seq != g_echo_next) {
        g_echo_bad = 1;
        snprintf(g_echo_why, sizeof(g_echo_why), "echo %llu, expected %llu", (unsigned long long)seq,
                 (unsigned long long)g_echo_next);
        return UCS_OK;
    }
    for (size_t i = 0; i < ECHO_LEN; i++) {
        if (d[8 + i] != pattern(seq, i)) {
            g_echo_bad = 1;
            snprintf(g_echo_why, sizeof(g_echo_why), "echo %llu byte %zu", (unsigned long long)seq, i);
            return UCS_OK;
        }
    }
    g_echo_next++;
    return UCS_OK;
}

static uint64_t g_seq[NEPS];
static uint8_t g_buf[8 + MAX_LEN];
static uint8_t g_zbuf[8 + MAX_LEN];

struct pack_arg {
    uint64_t seq;
    size_t   len;
};

static size_t pack_cb(void *dest, void *arg)
{
    struct pack_arg *a = arg;
    uint8_t *d = dest;
    memcpy(d, &a->seq, 8);
    for (size_t i = 0; i < a->len; i++) d[8 + i] = pattern(a->seq, i);
    return 8 + a->len;
}

static int g_zdone;

static void zcomp_cb(uct_completion_t *c)
{
    (void)c;
    g_zdone = 1;
}

/* Send message number g_seq[e] on ep e (retrying while there is no
 * resource). */
static void send_one(uct_ep_h ep, int e)
{
    uint64_t seq = g_seq[e];
    size_t len = rnd(4) == 0 ? rnd(MAX_LEN + 1) : rnd(200);
    unsigned kind = rnd(3);
    double t0 = now();
    ucs_status_t s;

    for (;;) {
        if (kind == 0 && len <= 200) {
            for (size_t i = 0; i < len; i++) g_buf[i] = pattern(seq, i);
            s = uct_ep_am_short(ep, AM_BASE + e, seq, g_buf, len);
        } else if (kind <= 1) {
            struct pack_arg a = { seq, len };
            ssize_t n = uct_ep_am_bcopy(ep, AM_BASE + e, pack_cb, &a, 0);
            s = n < 0 ? (ucs_status_t)n : UCS_OK;
        } else {
            uct_iov_t iov;
            uct_completion_t comp;
            for (size_t i = 0; i < len; i++) g_zbuf[8 + i] = pattern(seq, i);
            memset(&iov, 0, sizeof(iov));
            iov.buffer = g_zbuf + 8;
            iov.length = len;
            iov.count  = 1;
            comp.func   = zcomp_cb;
            comp.count  = 1;
            comp.status = UCS_OK;
            g_zdone     = 0;
            s = uct_ep_am_zcopy(ep, AM_BASE + e, &seq, 8, &iov, 1, 0, &comp);
            if (s == UCS_INPROGRESS) {
                /* The buffer is reused for the next one: wait for it. */
                while (!g_zdone) {
                    uct_worker_progress(g_worker);
                    if (now() - t0 > 10) DIE("zcopy %llu: no completion for 10 s", (unsigned long long)seq);
                }
                s = comp.status;
            }
        }
        if (s != UCS_ERR_NO_RESOURCE) break;
        uct_worker_progress(g_worker);
        if (now() - t0 > 10) DIE("send %llu: no resource for 10 s", (unsigned long long)seq);
    }
    if (s != UCS_OK) DIE("send %llu on ep %d: %s", (unsigned long long)seq, e, ucs_status_string(s));
    g_seq[e]++;
}

static void burst(uct_ep_h *eps)
{
    unsigned k = 1 + rnd(32), mode = rnd(4);
    for (unsigned i = 0; i < k; i++) {
        int e = mode == 0 ? (int)(i & 1) : (mode == 1 ? 1 : 0);
        send_one(eps[e], e);
    }
}

static int sender(int fd, double seconds)
{
    struct tl t;
    unsigned char dev[ADDR_MAX], addr[ADDR_MAX];
    uct_ep_h eps[NEPS];
    char verdict;
    uint64_t echoes;
    unsigned long bursts = 0;
    double end, t0;
    int ok;

    tl_open(&t);
    uct_iface_set_am_handler(t.iface, AM_ECHO, echo_cb, NULL, 0);
    recv_addr(fd, dev, addr);
    send_addr(fd, &t);
    for (int e = 0; e < NEPS; e++) eps[e] = connect_to(&t, dev, addr);
    end = now() + seconds;
    while (now() < end) {
        burst(eps);
        bursts++;
        switch (rnd(4)) {
        case 0: break;
        case 1: uct_worker_progress(g_worker); break;
        case 2: spin_us(rnd(3000)); break;
        default: usleep(rnd(2000)); break;
        }
    }
    /* The last burst, then no call into UCT until the receiver answers. */
    burst(eps);
    printf("sender: %lu bursts, %llu + %llu messages\n", bursts + 1, (unsigned long long)g_seq[0],
           (unsigned long long)g_seq[1]);
    fflush(stdout);
    oob_write(fd, g_seq, sizeof(g_seq));
    oob_read(fd, &verdict, 1);
    oob_read(fd, &echoes, sizeof(echoes));
    ok = verdict == 'O';
    /* Every echo, while the receiver makes no call. */
    t0 = now();
    while (!g_echo_bad && g_echo_next < echoes && now() - t0 < 20) uct_worker_progress(g_worker);
    if (g_echo_bad) {
        printf("RESULT bad echo: %s\n", g_echo_why);
        ok = 0;
    } else if (g_echo_next < echoes) {
        printf("RESULT missing echoes: %llu of %llu after 20 s\n", (unsigned long long)g_echo_next,
               (unsigned long long)echoes);
        ok = 0;
    } else {
        printf("sender: %llu echoes\n", (unsigned long long)echoes);
    }
    fflush(stdout);
    verdict = ok ? 'O' : 'B';
    oob_write(fd, &verdict, 1);
    for (int e = 0; e < NEPS; e++) uct_ep_destroy(eps[e]);
    uct_iface_close(t.iface);
    uct_md_close(t.md);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    ucs_async_context_t *async;
    int sv[2], r, st;
    double seconds;
    pid_t pid;

    if (argc != 2 || (seconds = atof(argv[1])) <= 0) {
        fprintf(stderr, "usage: %s SECONDS\n", argv[0]);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) DIE("socketpair");
    pid = fork();
    if (pid < 0) DIE("fork");
    if (pid == 0) g_side = "receiver";
    if (ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async) != UCS_OK) DIE("async");
    if (uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &g_worker) != UCS_OK) DIE("worker");
    if (pid == 0) {
        close(sv[0]);
        r = receiver(sv[1]);
    } else {
        close(sv[1]);
        g_rand ^= (uint64_t)getpid() << 20;
        r = sender(sv[0], seconds);
    }
    uct_worker_destroy(g_worker);
    ucs_async_context_destroy(async);
    if (pid > 0) {
        if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) return 2;
        if (r == 0 && WEXITSTATUS(st) != 0) r = WEXITSTATUS(st);
    }
    return r;
}
