/*
 * Soak: many endpoints and many messages between two processes, with
 * content checks.
 *
 *   soak TL DEV EPS MSGS     e.g. soak tcp lo 1000 10000000
 *                                 soak posix memory 1000 10000000
 *
 * The process forks: the child receives, the parent sends. The receiver
 * opens TL/DEV and hands its device and iface addresses over a socketpair;
 * the sender creates EPS endpoints to that iface and sends MSGS messages
 * round-robin over them, each endpoint alternating AM short (id 1, the
 * 8-byte header and 24 bytes) and AM bcopy (id 2, 128 bytes packed). The
 * header carries the endpoint index and a per-endpoint sequence number;
 * the rest is a pattern derived from both. The receiver checks every
 * message: id vs length, the pattern, and that each endpoint's sequence
 * numbers arrive in order without gaps; at the end, that every endpoint
 * delivered exactly its share.
 *
 * Each side reports its RSS after warm-up (see warm_at) and at
 * the end, and its open fd count right after creating the worker and after
 * destroying every endpoint, iface and md (both before destroying the
 * worker: what libucs's own async machinery holds is not counted). Lines:
 *   RESULT side=sender|receiver ok=0|1 msgs=N bad=N rss_warm_kb=N rss_end_kb=N
 *          fds_before=N fds_after=N secs=S
 * Exit 0 when both sides are fine; each side gives up after SOAK_STALL
 * seconds (default 60) without progress.
 */
#define _GNU_SOURCE
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>
#include <dirent.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc_stats.h"

#define SHORT_PAYLOAD 24
#define BCOPY_LEN     128
#define SEQ_BITS      40

static const char *g_tl, *g_dev;
static long g_eps, g_msgs;
static double g_stall = 60;
static uct_worker_h g_worker;

/* receiver state */
static uint64_t *g_expect;
static long g_got, g_bad;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Where warm-up ends: a tenth of the run, at least 20000 messages (enough
 * to touch every receive descriptor of a shared-memory peer), at most half. */
static long warm_at(void)
{
    long w = g_msgs / 10;

    w = (w < 20000) ? 20000 : w;
    return (w > g_msgs / 2) ? g_msgs / 2 : w;
}

static inline unsigned char pat(uint64_t ep, uint64_t seq, size_t j)
{
    return (unsigned char)(ep * 7 + seq * 13 + j * 31 + 1);
}

static void fill(unsigned char *p, size_t n, uint64_t ep, uint64_t seq)
{
    for (size_t j = 0; j < n; j++) {
        p[j] = pat(ep, seq, j);
    }
}

static int check(const unsigned char *p, size_t n, uint64_t ep, uint64_t seq)
{
    for (size_t j = 0; j < n; j++) {
        if (p[j] != pat(ep, seq, j)) {
            return 0;
        }
    }
    return 1;
}

static void bad(const char *why, uint64_t ep, uint64_t seq)
{
    if (g_bad++ < 10) {
        fprintf(stderr, "receiver: bad message (%s): ep %lu seq %lu\n", why,
                (unsigned long)ep, (unsigned long)seq);
    }
}

static ucs_status_t am_cb(void *arg, void *data, size_t length, unsigned flags)
{
    int id = (int)(uintptr_t)arg;
    uint64_t hdr, ep, seq;
    size_t want = (id == 1) ? 8 + SHORT_PAYLOAD : BCOPY_LEN;

    (void)flags;
    g_got++;
    if (length != want) {
        bad("length", 0, length);
        return UCS_OK;
    }
    memcpy(&hdr, data, 8);
    ep  = hdr >> SEQ_BITS;
    seq = hdr & ((1ull << SEQ_BITS) - 1);
    if (ep >= (uint64_t)g_eps) {
        bad("endpoint index", ep, seq);
        return UCS_OK;
    }
    if (seq != g_expect[ep]) {
        bad("sequence", ep, seq);
    }
    g_expect[ep] = seq + 1;
    if ((int)(seq & 1) + 1 != id) {
        bad("operation", ep, seq);
    }
    if (!check((unsigned char*)data + 8, length - 8, ep, seq)) {
        bad("payload", ep, seq);
    }
    return UCS_OK;
}

typedef struct {
    uint64_t hdr;
} pack_arg_t;

static size_t pack_cb(void *dest, void *arg)
{
    pack_arg_t *a = arg;
    uint64_t ep = a->hdr >> SEQ_BITS, seq = a->hdr & ((1ull << SEQ_BITS) - 1);

    memcpy(dest, &a->hdr, 8);
    fill((unsigned char*)dest + 8, BCOPY_LEN - 8, ep, seq);
    return BCOPY_LEN;
}

static uct_md_h open_md(void)
{
    uct_component_h *cmpts;
    unsigned ncmpts, c, m, t;
    uct_md_h found = NULL;

    if (uct_query_components(&cmpts, &ncmpts) != UCS_OK) {
        return NULL;
    }
    for (c = 0; c < ncmpts && found == NULL; c++) {
        uct_component_attr_t ca;

        memset(&ca, 0, sizeof(ca));
        ca.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        if (uct_component_query(cmpts[c], &ca) != UCS_OK) {
            continue;
        }
        ca.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        ca.md_resources = calloc(ca.md_resource_count + 1, sizeof(*ca.md_resources));
        if (uct_component_query(cmpts[c], &ca) != UCS_OK) {
            free(ca.md_resources);
            continue;
        }
        for (m = 0; m < ca.md_resource_count && found == NULL; m++) {
            uct_md_config_t *cfg;
            uct_tl_resource_desc_t *tls;
            unsigned ntls;
            uct_md_h md;
            int hit = 0;

            if (uct_md_config_read(cmpts[c], NULL, NULL, &cfg) != UCS_OK) {
                continue;
            }
            if (uct_md_open(cmpts[c], ca.md_resources[m].md_name, cfg, &md) != UCS_OK) {
                uct_config_release(cfg);
                continue;
            }
            uct_config_release(cfg);
            if (uct_md_query_tl_resources(md, &tls, &ntls) == UCS_OK) {
                for (t = 0; t < ntls; t++) {
                    hit |= !strcmp(tls[t].tl_name, g_tl) && !strcmp(tls[t].dev_name, g_dev);
                }
                uct_release_tl_resource_list(tls);
            }
            if (hit) {
                found = md;
            } else {
                uct_md_close(md);
            }
        }
        free(ca.md_resources);
    }
    uct_release_component_list(cmpts);
    return found;
}

static uct_iface_h open_iface(uct_md_h md, uct_iface_attr_t *attr)
{
    uct_iface_config_t *icfg;
    uct_iface_params_t ip;
    uct_iface_h iface;
    ucs_status_t s;

    if (uct_md_iface_config_read(md, g_tl, NULL, NULL, &icfg) != UCS_OK) {
        return NULL;
    }
    memset(&ip, 0, sizeof(ip));
    ip.field_mask            = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE;
    ip.open_mode             = UCT_IFACE_OPEN_MODE_DEVICE;
    ip.mode.device.tl_name   = g_tl;
    ip.mode.device.dev_name  = g_dev;
    s = uct_iface_open(md, g_worker, &ip, icfg, &iface);
    uct_config_release(icfg);
    if (s != UCS_OK || uct_iface_query(iface, attr) != UCS_OK) {
        fprintf(stderr, "uct_iface_open(%s/%s): %s\n", g_tl, g_dev, ucs_status_string(s));
        return NULL;
    }
    uct_iface_progress_enable(iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    return iface;
}

static int xfer(int fd, void *p, size_t n, int wr)
{
    size_t off = 0;

    while (off < n) {
        ssize_t r = wr ? write(fd, (char*)p + off, n - off) : read(fd, (char*)p + off, n - off);
        if (r <= 0) {
            return -1;
        }
        off += r;
    }
    return 0;
}

/* Is a byte from the peer waiting? (non-blocking) */
static int peer_says(int fd, char *c)
{
    struct pollfd p = { fd, POLLIN, 0 };

    return poll(&p, 1, 0) == 1 && read(fd, c, 1) == 1;
}

/* RSS at every tenth of the run: a leak grows with the messages, a buffer
 * that grew once stays flat. */
static void print_series(const char *side, const long *kb, int n)
{
    printf("RSS side=%s every_tenth_kb=", side);
    for (int i = 0; i < n; i++) {
        printf("%s%ld", i ? "," : "", kb[i]);
    }
    printf("\n");
}

static void report(const char *side, int ok, long msgs, long nbad, long rw, long re, int fb, int fa,
                   double secs)
{
    printf("RESULT side=%s ok=%d msgs=%ld bad=%ld rss_warm_kb=%ld rss_end_kb=%ld fds_before=%d "
           "fds_after=%d secs=%.2f\n", side, ok, msgs, nbad, rw, re, fb, fa, secs);
    fflush(stdout);
}

static int receiver(int fd)
{
    uct_iface_attr_t attr;
    uct_md_h md;
    uct_iface_h iface;
    unsigned char addr[512];
    uint32_t lens[2];
    long rss_warm = -1, last = 0, e, short_eps, next_mark = g_msgs / 10;
    long series[10] = { 0 };
    int fds_before = fd_count(), ok, nmarks = 0;
    double t0 = 0, last_t = now();
    char c;

    g_expect = calloc(g_eps, sizeof(*g_expect));
    md = open_md();
    iface = md ? open_iface(md, &attr) : NULL;
    if (iface == NULL) {
        lens[0] = lens[1] = 0;
        xfer(fd, lens, sizeof(lens), 1);
        return 1;
    }
    uct_iface_set_am_handler(iface, 1, am_cb, (void*)1, 0);
    uct_iface_set_am_handler(iface, 2, am_cb, (void*)2, 0);
    lens[0] = attr.device_addr_len;
    lens[1] = attr.iface_addr_len;
    uct_iface_get_device_address(iface, (uct_device_addr_t*)addr);
    uct_iface_get_address(iface, (uct_iface_addr_t*)(addr + lens[0]));
    if (xfer(fd, lens, sizeof(lens), 1) || xfer(fd, addr, lens[0] + lens[1], 1)) {
        return 1;
    }
    while (g_got < g_msgs) {
        if (uct_worker_progress(g_worker) == 0) {
            /* let the sender run when both share a core */
            sched_yield();
            if (g_got != last) {
                last = g_got;
                last_t = now();
            } else if (now() - last_t > g_stall) {
                fprintf(stderr, "receiver: stalled at %ld of %ld messages\n", g_got, g_msgs);
                break;
            }
        }
        if (t0 == 0 && g_got > 0) {
            t0 = now();
        }
        if (rss_warm < 0 && g_got >= warm_at()) {
            rss_warm = rss_kb();
        }
        if (g_got >= next_mark && nmarks < 10) {
            series[nmarks++] = rss_kb();
            next_mark += g_msgs / 10;
        }
    }
    print_series("receiver", series, nmarks);
    long rss_end = rss_kb();
    double secs = t0 ? now() - t0 : 0;
    /* every endpoint delivered its share */
    short_eps = g_msgs % g_eps;
    for (e = 0; e < g_eps; e++) {
        uint64_t want = g_msgs / g_eps + (e < short_eps);
        if (g_expect[e] != want && g_got == g_msgs) {
            bad("count", e, g_expect[e]);
        }
    }
    c = (g_got == g_msgs) ? 'D' : 'F';
    xfer(fd, &c, 1, 1);
    /* wait for the sender to have destroyed its endpoints, progressing so
     * that a transport's disconnect traffic is handled */
    while (!peer_says(fd, &c)) {
        if (uct_worker_progress(g_worker) == 0) {
            usleep(100);
        }
    }
    uct_iface_close(iface);
    uct_md_close(md);
    int fds_after = fd_count();
    ok = g_got == g_msgs && g_bad == 0 && fds_after == fds_before;
    report("receiver", ok, g_got, g_bad, rss_warm, rss_end, fds_before, fds_after, secs);
    free(g_expect);
    return ok ? 0 : 1;
}

static int sender(int fd)
{
    uct_iface_attr_t attr;
    uct_md_h md;
    uct_iface_h iface;
    unsigned char addr[512];
    uint32_t lens[2];
    uct_ep_h *eps;
    uint64_t *seqs;
    unsigned char payload[SHORT_PAYLOAD];
    long i, rss_warm = -1, nbad = 0, next_mark = g_msgs / 10;
    long series[10] = { 0 };
    int fds_before = fd_count(), ok = 1, nmarks = 0;
    double t0, last_t, secs;
    ucs_status_t s;
    char c = 0;

    md = open_md();
    iface = md ? open_iface(md, &attr) : NULL;
    if (xfer(fd, lens, sizeof(lens), 0) || lens[0] == 0 || lens[0] + lens[1] > sizeof(addr) ||
        xfer(fd, addr, lens[0] + lens[1], 0) || iface == NULL) {
        fprintf(stderr, "sender: setup failed\n");
        return 1;
    }
    eps = calloc(g_eps, sizeof(*eps));
    seqs = calloc(g_eps, sizeof(*seqs));
    for (i = 0; i < g_eps; i++) {
        uct_ep_params_t p;

        memset(&p, 0, sizeof(p));
        p.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                       UCT_EP_PARAM_FIELD_IFACE_ADDR;
        p.iface      = iface;
        p.dev_addr   = (uct_device_addr_t*)addr;
        p.iface_addr = (uct_iface_addr_t*)(addr + lens[0]);
        s = uct_ep_create(&p, &eps[i]);
        if (s != UCS_OK) {
            fprintf(stderr, "sender: uct_ep_create #%ld: %s\n", i, ucs_status_string(s));
            return 1;
        }
    }
    t0 = last_t = now();
    for (i = 0; i < g_msgs && ok; i++) {
        long e = i % g_eps;
        uint64_t seq = seqs[e];
        uint64_t hdr = ((uint64_t)e << SEQ_BITS) | seq;

        for (;;) {
            if (seq & 1) {
                pack_arg_t a = { hdr };
                ssize_t n = uct_ep_am_bcopy(eps[e], 2, pack_cb, &a, 0);
                s = (n >= 0) ? UCS_OK : (ucs_status_t)n;
            } else {
                fill(payload, SHORT_PAYLOAD, e, seq);
                s = uct_ep_am_short(eps[e], 1, hdr, payload, SHORT_PAYLOAD);
            }
            if (s == UCS_OK) {
                break;
            }
            if (s != UCS_ERR_NO_RESOURCE) {
                fprintf(stderr, "sender: ep %ld seq %lu: %s\n", e, (unsigned long)seq,
                        ucs_status_string(s));
                ok = 0;
                nbad++;
                break;
            }
            if (uct_worker_progress(g_worker) == 0) {
                if (now() - last_t > g_stall) {
                    fprintf(stderr, "sender: stalled at message %ld\n", i);
                    ok = 0;
                    break;
                }
                sched_yield(); /* the receiver may need our core */
            }
        }
        last_t = (i & 1023) ? last_t : now();
        seqs[e]++;
        if (i == warm_at()) {
            rss_warm = rss_kb();
        }
        if (i + 1 == next_mark && nmarks < 10) {
            series[nmarks++] = rss_kb();
            next_mark += g_msgs / 10;
        }
    }
    do {
        s = uct_iface_flush(iface, 0, NULL);
        uct_worker_progress(g_worker);
    } while (s == UCS_INPROGRESS || s == UCS_ERR_NO_RESOURCE);
    secs = now() - t0;
    long rss_end = rss_kb();
    print_series("sender", series, nmarks);
    /* the receiver's verdict, progressing meanwhile */
    last_t = now();
    while (!peer_says(fd, &c) && now() - last_t < g_stall + 5) {
        if (uct_worker_progress(g_worker) == 0) {
            usleep(50);
        }
    }
    long sent = i;
    for (i = 0; i < g_eps; i++) {
        uct_ep_destroy(eps[i]);
    }
    uct_iface_close(iface);
    uct_md_close(md);
    int fds_after = fd_count();
    xfer(fd, "X", 1, 1);
    ok = ok && c == 'D' && fds_after == fds_before;
    report("sender", ok, sent, nbad, rss_warm, rss_end, fds_before, fds_after, secs);
    printf("rate=%.0f msgs/s\n", secs > 0 ? sent / secs : 0);
    free(eps);
    free(seqs);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    ucs_async_context_t *async;
    int sv[2], status, rc;
    pid_t pid;
    const char *stall = getenv("SOAK_STALL");

    if (argc != 5) {
        fprintf(stderr, "usage: %s TL DEV EPS MSGS\n", argv[0]);
        return 2;
    }
    g_tl = argv[1];
    g_dev = argv[2];
    g_eps = atol(argv[3]);
    g_msgs = atol(argv[4]);
    if (stall) {
        g_stall = atof(stall);
    }
    if (g_eps <= 0 || g_msgs <= 0 || g_eps >= (1l << 20)) {
        fprintf(stderr, "bad EPS/MSGS\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
        perror("socketpair");
        return 1;
    }
    pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    close(sv[pid == 0 ? 0 : 1]);
    if (ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async) != UCS_OK ||
        uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &g_worker) != UCS_OK) {
        fprintf(stderr, "async/worker\n");
        return 1;
    }
    rc = (pid == 0) ? receiver(sv[1]) : sender(sv[0]);
    uct_worker_destroy(g_worker);
    ucs_async_context_destroy(async);
    if (pid == 0) {
        _exit(rc);
    }
    close(sv[0]);
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "receiver ended with status 0x%x\n", status);
        rc = 1;
    }
    return rc;
}
