/*
 * many_eps.c - many endpoints on one iface, across two processes, on an
 * RDMA device (the soft device of tests/softrdma/: run each side under
 * tests/softrdma/run.sh).
 *
 *   many_eps --role a|b --dir DIR [-t ud_verbs|rc_verbs] [-m ep|iface]
 *            [-n EPS] [-k MSGS] [-d DEV] [-T SECONDS]
 *
 * Both sides open one iface on DEV.  They meet through files in DIR (each
 * written under a temporary name and renamed): "<role>.addr" holds a side's
 * device address, iface address and, in ep mode, the addresses of its EPS
 * endpoints; "<role>.conn" says it connected its endpoints; "<role>.done"
 * says it received everything and flushed; "<role>.failed" that it gave up
 * (the other side then stops waiting).
 *
 *   -m ep     (connect to ep) each side creates EPS endpoints, connects
 *             endpoint i to the peer's endpoint i, and sends MSGS active
 *             messages on every one of them;
 *   -m iface  (connect to iface, ud_verbs) side b creates EPS endpoints to
 *             side a's iface address and sends MSGS on each; side a only
 *             receives (its iface makes an endpoint per peer endpoint).
 *
 * Every message carries the sender's endpoint index and a sequence number in
 * its 8-byte header and a payload pattern that depends on both; the
 * receiver checks the sequence per sending endpoint (each endpoint is an
 * ordered reliable channel) and every byte.  Short and bcopy messages
 * alternate (bcopy sizes vary up to 2000 bytes).  Then every endpoint is
 * flushed, the sides wait for each other (progressing), the endpoints are
 * destroyed and the iface closed.
 *
 * Memory: VmRSS (and VmLck + VmPin, the locked/pinned memory registrations
 * may account) read after the iface is up, after the endpoints are created
 * and connected, and after the traffic; printed divided by EPS as
 *   # mem/ep role=R tl=T mode=M eps=N create=B/ep traffic=B/ep locked=B/ep
 * (on the receiving side of iface mode the endpoints are the ones the iface
 * made for its peers).  Informational.
 *
 * Last line "RESULT ok" or "RESULT FAIL <why>"; exit 0 / 1 (77: setup).
 */
#define _GNU_SOURCE
#include <uct/api/uct.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ib_md_open.h"
#include "proc_stats.h"

#define AM_ID      11
#define MAX_EPS    4096
#define SHORT_LEN  40

static const char *g_dev  = "softrdma0:1";
static const char *g_tl   = "ud_verbs";
static const char *g_mode = "ep";
static const char *g_dir;
static char g_role = 0;
static int g_eps = 256;
static int g_msgs = 8;
static int g_timeout = 90;
static int g_idle_ms;    /* -I: side b sleeps this long without progress before it sends */

static ucs_async_context_t *g_async;
static uct_worker_h g_worker;
static uct_md_h g_md;
static uct_iface_h g_iface;
static uct_iface_attr_t g_attr;
static uct_ep_h g_ep[MAX_EPS];

/* receive bookkeeping */
static uint32_t g_expect[MAX_EPS];
static long g_received;
static long g_errors;
static char g_first_error[200];

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t g_deadline;

/* tell the peer we gave up (it stops waiting for us) */
static void mark_failed(void)
{
    char path[4096];
    int fd;

    if (g_dir == NULL || g_role == 0) {
        return;
    }
    snprintf(path, sizeof(path), "%s/%c.failed", g_dir, g_role);
    fd = open(path, O_WRONLY | O_CREAT, 0644);
    if (fd >= 0) {
        close(fd);
    }
}

static void result_fail(const char *why, ucs_status_t st)
{
    printf("RESULT FAIL %s%s%s\n", why, st == UCS_OK ? "" : ": ",
           st == UCS_OK ? "" : ucs_status_string(st));
    fflush(stdout);
    mark_failed();
    _exit(1);
}

static void setup_fail(const char *why, ucs_status_t st)
{
    printf("SETUP %s: %s\n", why, ucs_status_string(st));
    printf("RESULT FAIL setup: %s\n", why);
    fflush(stdout);
    mark_failed();
    _exit(77);
}

static void check_deadline(const char *what)
{
    if (now_ms() > g_deadline) {
        char m[160];

        snprintf(m, sizeof(m), "timeout while %s (received %ld, errors %ld)", what,
                 g_received, g_errors);
        result_fail(m, UCS_OK);
    }
}

static uint8_t pattern(uint32_t idx, uint32_t seq, size_t k)
{
    return (uint8_t)(idx * 31u + seq * 7u + k * 13u + 1u);
}

static size_t msg_len(uint32_t idx, uint32_t seq)
{
    if ((seq & 1) == 0) {
        return SHORT_LEN;
    }
    return 64 + (idx * 131u + seq * 977u) % 1937u;
}

static void record_error(const char *fmt, uint32_t a, uint32_t b, uint32_t c)
{
    if (g_errors++ == 0) {
        snprintf(g_first_error, sizeof(g_first_error), fmt, a, b, c);
    }
}

static ucs_status_t am_cb(void *arg, void *data, size_t length, unsigned flags)
{
    const uint8_t *p = data;
    uint64_t hdr;
    uint32_t idx, seq;
    size_t k;

    (void)arg; (void)flags;
    if (length < sizeof(hdr)) {
        record_error("message of %u bytes%.0u%.0u", (uint32_t)length, 0, 0);
        return UCS_OK;
    }
    memcpy(&hdr, p, sizeof(hdr));
    idx = (uint32_t)(hdr >> 32);
    seq = (uint32_t)hdr;
    if (idx >= (uint32_t)g_eps) {
        record_error("sender index %u out of range%.0u%.0u", idx, 0, 0);
        return UCS_OK;
    }
    if (seq != g_expect[idx]) {
        record_error("ep %u: sequence %u, expected %u", idx, seq, g_expect[idx]);
    }
    g_expect[idx] = seq + 1;
    if (length != sizeof(hdr) + msg_len(idx, seq)) {
        record_error("ep %u seq %u: length %u", idx, seq, (uint32_t)length);
    } else {
        for (k = 0; k < length - sizeof(hdr); k++) {
            if (p[sizeof(hdr) + k] != pattern(idx, seq, k)) {
                record_error("ep %u seq %u: byte %u differs", idx, seq, (uint32_t)k);
                break;
            }
        }
    }
    g_received++;
    return UCS_OK;
}

typedef struct {
    uint32_t idx, seq;
} pack_arg_t;

static size_t pack_cb(void *dest, void *arg)
{
    pack_arg_t *a = arg;
    uint8_t *d = dest;
    uint64_t hdr = ((uint64_t)a->idx << 32) | a->seq;
    size_t n = msg_len(a->idx, a->seq), k;

    memcpy(d, &hdr, sizeof(hdr));
    for (k = 0; k < n; k++) {
        d[sizeof(hdr) + k] = pattern(a->idx, a->seq, k);
    }
    return sizeof(hdr) + n;
}

static void progress(void)
{
    uct_worker_progress(g_worker);
}

/* ------------------------------------------------------------ memory -- */

static long status_kb(const char *key)
{
    char line[256];
    long kb = 0, v;
    size_t kl = strlen(key);
    FILE *f = fopen("/proc/self/status", "r");

    if (f == NULL) {
        return -1;
    }
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, key, kl) == 0 && sscanf(line + kl, " %ld", &v) == 1) {
            kb = v;
            break;
        }
    }
    fclose(f);
    return kb;
}

static long locked_kb(void)
{
    return status_kb("VmLck:") + status_kb("VmPin:");
}

/* ------------------------------------------------------------- files -- */

static void write_file(const char *name, const void *buf, size_t len)
{
    char tmp[4096], path[4096];
    int fd;

    snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", g_dir, name);
    snprintf(path, sizeof(path), "%s/%s", g_dir, name);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || (len > 0 && write(fd, buf, len) != (ssize_t)len) || close(fd) != 0 ||
        rename(tmp, path) != 0) {
        result_fail("writing an exchange file", UCS_ERR_IO_ERROR);
    }
}

/* wait (progressing) for DIR/name; returns its contents (malloc) */
static void *wait_file(const char *name, size_t *len, const char *what)
{
    char path[4096], failed[4096];
    struct stat sb;
    void *buf;
    int fd;

    snprintf(path, sizeof(path), "%s/%s", g_dir, name);
    snprintf(failed, sizeof(failed), "%s/%c.failed", g_dir, g_role == 'a' ? 'b' : 'a');
    while (stat(path, &sb) != 0) {
        if (stat(failed, &sb) == 0) {
            result_fail("the peer gave up", UCS_OK);
        }
        progress();
        check_deadline(what);
        usleep(200);
    }
    buf = calloc(1, (size_t)sb.st_size + 1);
    fd = open(path, O_RDONLY);
    if (buf == NULL || fd < 0 || read(fd, buf, (size_t)sb.st_size) != sb.st_size) {
        result_fail("reading an exchange file", UCS_ERR_IO_ERROR);
    }
    close(fd);
    if (len != NULL) {
        *len = (size_t)sb.st_size;
    }
    return buf;
}

/* ------------------------------------------------------------- setup -- */

static void open_iface(void)
{
    const char *what;
    char md_name[64], *colon;
    uct_iface_config_t *cfg;
    uct_iface_params_t p;
    ucs_status_t st;

    st = ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &g_async);
    if (st != UCS_OK) {
        setup_fail("async context", st);
    }
    st = uct_worker_create(g_async, UCS_THREAD_MODE_SINGLE, &g_worker);
    if (st != UCS_OK) {
        setup_fail("worker", st);
    }
    snprintf(md_name, sizeof(md_name), "%s", g_dev);
    colon = strchr(md_name, ':');
    if (colon != NULL) {
        *colon = '\0';
    }
    st = ib_md_open(md_name, &g_md, NULL, &what);
    if (st != UCS_OK) {
        setup_fail(what, st);
    }
    st = uct_md_iface_config_read(g_md, g_tl, NULL, NULL, &cfg);
    if (st != UCS_OK) {
        setup_fail("iface config (transport missing?)", st);
    }
    memset(&p, 0, sizeof(p));
    p.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE;
    p.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    p.mode.device.tl_name  = g_tl;
    p.mode.device.dev_name = g_dev;
    st = uct_iface_open(g_md, g_worker, &p, cfg, &g_iface);
    uct_config_release(cfg);
    if (st != UCS_OK) {
        setup_fail("uct_iface_open", st);
    }
    st = uct_iface_query(g_iface, &g_attr);
    if (st != UCS_OK) {
        setup_fail("uct_iface_query", st);
    }
    st = uct_iface_set_am_handler(g_iface, AM_ID, am_cb, NULL, 0);
    if (st != UCS_OK) {
        setup_fail("uct_iface_set_am_handler", st);
    }
    uct_iface_progress_enable(g_iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
}

/* my address file: dev_len, iface_len, ep_len, count (u32 each), then the
 * addresses */
static void publish(int with_eps)
{
    uint32_t h[4];
    size_t dl = g_attr.device_addr_len, il = g_attr.iface_addr_len, el = g_attr.ep_addr_len;
    size_t len = sizeof(h) + dl + il + (with_eps ? (size_t)g_eps * el : 0);
    uint8_t *buf = calloc(1, len + 64), *p;
    char name[16];
    int i;
    ucs_status_t st;

    h[0] = (uint32_t)dl; h[1] = (uint32_t)il; h[2] = (uint32_t)el;
    h[3] = with_eps ? (uint32_t)g_eps : 0;
    memcpy(buf, h, sizeof(h));
    p = buf + sizeof(h);
    st = uct_iface_get_device_address(g_iface, (uct_device_addr_t*)p);
    if (st != UCS_OK) {
        result_fail("uct_iface_get_device_address", st);
    }
    p += dl;
    if (il > 0) {
        st = uct_iface_get_address(g_iface, (uct_iface_addr_t*)p);
        if (st != UCS_OK) {
            result_fail("uct_iface_get_address", st);
        }
    }
    p += il;
    for (i = 0; with_eps && i < g_eps; i++, p += el) {
        st = uct_ep_get_address(g_ep[i], (uct_ep_addr_t*)p);
        if (st != UCS_OK) {
            result_fail("uct_ep_get_address", st);
        }
    }
    snprintf(name, sizeof(name), "%c.addr", g_role);
    write_file(name, buf, len);
    free(buf);
}

static void create_ep(int i, const void *dev, const void *iface_addr)
{
    uct_ep_params_t p;
    ucs_status_t st;

    memset(&p, 0, sizeof(p));
    p.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    p.iface      = g_iface;
    if (iface_addr != NULL) {
        p.field_mask |= UCT_EP_PARAM_FIELD_DEV_ADDR | UCT_EP_PARAM_FIELD_IFACE_ADDR;
        p.dev_addr    = dev;
        p.iface_addr  = iface_addr;
    }
    st = uct_ep_create(&p, &g_ep[i]);
    if (st != UCS_OK) {
        result_fail("uct_ep_create", st);
    }
}

static void send_all(void)
{
    int i, seq;
    ucs_status_t st;

    for (seq = 0; seq < g_msgs; seq++) {
        for (i = 0; i < g_eps; i++) {
            pack_arg_t a = { (uint32_t)i, (uint32_t)seq };

            for (;;) {
                if (msg_len(a.idx, a.seq) == SHORT_LEN) {
                    uint8_t pl[SHORT_LEN];
                    uint64_t hdr = ((uint64_t)a.idx << 32) | a.seq;
                    size_t k;

                    for (k = 0; k < SHORT_LEN; k++) {
                        pl[k] = pattern(a.idx, a.seq, k);
                    }
                    st = uct_ep_am_short(g_ep[i], AM_ID, hdr, pl, SHORT_LEN);
                } else {
                    ssize_t r = uct_ep_am_bcopy(g_ep[i], AM_ID, pack_cb, &a, 0);

                    st = r >= 0 ? UCS_OK : (ucs_status_t)r;
                }
                if (st == UCS_OK) {
                    break;
                }
                if (st != UCS_ERR_NO_RESOURCE) {
                    result_fail("sending an active message", st);
                }
                progress();
                check_deadline("sending");
            }
        }
    }
}

static void flush_all(void)
{
    int i;
    ucs_status_t st;

    for (i = 0; i < g_eps; i++) {
        while ((st = uct_ep_flush(g_ep[i], 0, NULL)) != UCS_OK) {
            if (st != UCS_INPROGRESS && st != UCS_ERR_NO_RESOURCE) {
                result_fail("uct_ep_flush", st);
            }
            progress();
            check_deadline("flushing endpoints");
        }
    }
    while ((st = uct_iface_flush(g_iface, 0, NULL)) != UCS_OK) {
        if (st != UCS_INPROGRESS && st != UCS_ERR_NO_RESOURCE) {
            result_fail("uct_iface_flush", st);
        }
        progress();
        check_deadline("flushing the iface");
    }
}

static void usage(void)
{
    fprintf(stderr, "usage: many_eps --role a|b --dir DIR [-t TL] [-m ep|iface] [-n EPS] "
                    "[-k MSGS] [-d DEV] [-T SECONDS] [-I IDLE_MS]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "role", required_argument, NULL, 'r' },
        { "dir", required_argument, NULL, 'D' },
        { NULL, 0, NULL, 0 }
    };
    int iface_mode, sender, receiver, c, i;
    long rss0, rss1, rss2, lck0, lck2, want;
    char peer_name[16], done_name[16];
    uint8_t *peer, *pdev, *piface, *peps;
    uint32_t h[4];
    size_t plen;

    while ((c = getopt_long(argc, argv, "t:m:n:k:d:T:I:", opts, NULL)) != -1) {
        switch (c) {
        case 'r': g_role = optarg[0]; break;
        case 'D': g_dir = optarg; break;
        case 't': g_tl = optarg; break;
        case 'm': g_mode = optarg; break;
        case 'n': g_eps = atoi(optarg); break;
        case 'k': g_msgs = atoi(optarg); break;
        case 'd': g_dev = optarg; break;
        case 'T': g_timeout = atoi(optarg); break;
        case 'I': g_idle_ms = atoi(optarg); break;
        default: usage();
        }
    }
    if ((g_role != 'a' && g_role != 'b') || g_dir == NULL || g_eps < 1 || g_eps > MAX_EPS ||
        g_msgs < 1 || (strcmp(g_mode, "ep") && strcmp(g_mode, "iface"))) {
        usage();
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    g_deadline = now_ms() + (int64_t)g_timeout * 1000;
    iface_mode = !strcmp(g_mode, "iface");
    sender     = !iface_mode || g_role == 'b';
    receiver   = !iface_mode || g_role == 'a';

    open_iface();
    if (iface_mode && !(g_attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE)) {
        result_fail("the transport cannot connect to an iface", UCS_ERR_UNSUPPORTED);
    }
    if (!iface_mode && !(g_attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_EP)) {
        result_fail("the transport cannot connect to an endpoint", UCS_ERR_UNSUPPORTED);
    }
    for (i = 0; i < 200; i++) {
        progress();
    }
    rss0 = rss_kb();
    lck0 = locked_kb();

    /* endpoints and addresses */
    if (!iface_mode) {
        for (i = 0; i < g_eps; i++) {
            create_ep(i, NULL, NULL);
        }
    }
    publish(!iface_mode);
    snprintf(peer_name, sizeof(peer_name), "%c.addr", g_role == 'a' ? 'b' : 'a');
    if (sender) {
        peer = wait_file(peer_name, &plen, "waiting for the peer's address");
        memcpy(h, peer, sizeof(h));
        if (h[0] != g_attr.device_addr_len || h[1] != g_attr.iface_addr_len ||
            h[2] != g_attr.ep_addr_len || (!iface_mode && h[3] != (uint32_t)g_eps) ||
            plen < sizeof(h) + h[0] + h[1] + (size_t)h[2] * h[3]) {
            result_fail("the peer's address file does not match", UCS_ERR_INVALID_ADDR);
        }
        pdev   = peer + sizeof(h);
        piface = pdev + h[0];
        peps   = piface + h[1];
        for (i = 0; i < g_eps; i++) {
            if (iface_mode) {
                create_ep(i, pdev, piface);
            } else {
                ucs_status_t st = uct_ep_connect_to_ep(g_ep[i], (uct_device_addr_t*)pdev,
                                                       (uct_ep_addr_t*)(peps + (size_t)i * h[2]));
                if (st != UCS_OK) {
                    result_fail("uct_ep_connect_to_ep", st);
                }
            }
        }
    }
    rss1 = rss_kb();
    /* both connected before anything is sent (an rc QP must be ready to
     * receive) */
    snprintf(done_name, sizeof(done_name), "%c.conn", g_role);
    write_file(done_name, NULL, 0);
    snprintf(peer_name, sizeof(peer_name), "%c.conn", g_role == 'a' ? 'b' : 'a');
    free(wait_file(peer_name, NULL, "waiting for the peer to connect"));

    if (g_idle_ms > 0 && g_role == 'b') {
        /* an idle peer: only the transport's own async context runs here
         * while side a sends and flushes (a reliable protocol over UD must
         * still acknowledge, or a's flush stalls and a's peer times out) */
        usleep((useconds_t)g_idle_ms * 1000);
    }
    if (sender) {
        int64_t t0 = now_ms();

        send_all();
        flush_all();
        if (g_idle_ms > 0) {
            printf("# flush done after %lld ms (peer idle %d ms)\n", (long long)(now_ms() - t0), g_idle_ms);
        }
    }
    want = receiver ? (long)g_eps * g_msgs : 0;
    while (g_received < want) {
        progress();
        check_deadline("receiving");
    }
    rss2 = rss_kb();
    lck2 = locked_kb();
    printf("received=%ld errors=%ld%s%s\n", g_received, g_errors,
           g_errors ? " first: " : "", g_first_error);
    printf("# mem/ep role=%c tl=%s mode=%s eps=%d create=%ld B/ep traffic=%ld B/ep "
           "locked=%ld B/ep (rss %ld -> %ld -> %ld KB)\n",
           g_role, g_tl, g_mode, g_eps,
           receiver && iface_mode ? 0 : (rss1 - rss0) * 1024 / g_eps,
           (rss2 - rss0) * 1024 / g_eps, (lck2 - lck0) * 1024 / g_eps, rss0, rss1, rss2);

    /* meet, then tear down */
    snprintf(done_name, sizeof(done_name), "%c.done", g_role);
    write_file(done_name, NULL, 0);
    snprintf(peer_name, sizeof(peer_name), "%c.done", g_role == 'a' ? 'b' : 'a');
    free(wait_file(peer_name, NULL, "waiting for the peer to finish"));
    /* the peer may still wait for our acks of its last flush: a little more */
    {
        int64_t until = now_ms() + 100;

        while (now_ms() < until) {
            progress();
        }
    }
    for (i = 0; sender || !iface_mode ? i < g_eps : 0; i++) {
        uct_ep_destroy(g_ep[i]);
    }
    uct_iface_close(g_iface);
    uct_md_close(g_md);
    uct_worker_destroy(g_worker);
    ucs_async_context_destroy(g_async);
    if (g_errors != 0) {
        printf("RESULT FAIL %ld bad messages, first: %s\n", g_errors, g_first_error);
        return 1;
    }
    printf("RESULT ok\n");
    return 0;
}
