/*
 * libucp data check between two processes (run as server and client, each
 * may use another libuct): tag messages of 1 KiB to 4 MiB between buffers
 * libucp allocated (ucp_mem_map with UCP_MEM_MAP_ALLOCATE, the memory of a
 * shared-memory md when one is selected) and plain malloc'ed ones, in both
 * directions; then put, get and 64-bit fetch-add on the peer's allocated
 * and on its registered (malloc'ed) memory. Every byte is checked, on both
 * sides. The addresses and keys travel over a TCP socket.
 *
 *   ucp_data_check -s PORT          the server
 *   ucp_data_check -c HOST PORT     the client
 *
 * With UCP_DATA_TAG_ONLY=1 in the environment, the context has the tag
 * feature only and the one-sided part is left out (libucp chooses its
 * rendezvous lanes by the features asked for). With UCP_DATA_STREAM=1 it
 * has the tag and stream features: the one-sided part is left out, and
 * stream messages of 1 KiB to 4 MiB follow the tag ones, in both
 * directions, each received only after it was sent (so that it is there
 * before its receive is posted: libucp keeps such data as it arrives).
 *
 * Prints "ucp_data_check: OK" (exit 0) or a line per mismatch and
 * "ucp_data_check: FAIL" (exit 1).
 */
#include <ucp/api/ucp.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define BUF_LEN   (4u << 20)
#define FADD_N    1000
#define TAG_DATA  0x10
#define TAG_SYNC  0x20

static ucp_context_h g_ctx;
static ucp_worker_h  g_worker;
static ucp_ep_h      g_ep;
static int           g_fd = -1;
static int           g_errs;
static const char   *g_role;

struct region {
    ucp_mem_h  memh;
    uint8_t   *addr;
    int        allocated;
};

static void die(const char *what, ucs_status_t st)
{
    fprintf(stderr, "%s: %s: %s\n", g_role, what, ucs_status_string(st));
    printf("ucp_data_check: FAIL\n");
    exit(1);
}

static void xfer(void *buf, size_t len, int out)
{
    size_t done = 0;
    while (done < len) {
        ssize_t r = out ? write(g_fd, (char *)buf + done, len - done)
                        : read(g_fd, (char *)buf + done, len - done);
        if (r <= 0) {
            die("control socket", UCS_ERR_IO_ERROR);
        }
        done += (size_t)r;
    }
}

/* send a blob, receive the peer's (both sides in the same order) */
static void *swap_blob(const void *mine, size_t len, size_t *peer_len)
{
    uint64_t l = len, pl;
    void *p;
    xfer(&l, sizeof(l), 1);
    xfer((void *)mine, len, 1);
    xfer(&pl, sizeof(pl), 0);
    p = malloc(pl ? pl : 1);
    xfer(p, pl, 0);
    if (peer_len != NULL) {
        *peer_len = pl;
    }
    return p;
}

static void wait_req(void *req, const char *what)
{
    ucs_status_t st;
    if (req == NULL) {
        return;
    }
    if (UCS_PTR_IS_ERR(req)) {
        die(what, UCS_PTR_STATUS(req));
    }
    do {
        ucp_worker_progress(g_worker);
        st = ucp_request_check_status(req);
    } while (st == UCS_INPROGRESS);
    ucp_request_free(req);
    if (st != UCS_OK) {
        die(what, st);
    }
}

static void region_init(struct region *r, int allocate)
{
    ucp_mem_map_params_t mp;
    ucp_mem_attr_t attr;
    ucs_status_t st;

    memset(&mp, 0, sizeof(mp));
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                    UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    mp.length     = BUF_LEN;
    if (allocate) {
        mp.address = NULL;
        mp.flags   = UCP_MEM_MAP_ALLOCATE;
    } else {
        mp.address = malloc(BUF_LEN);
        if (mp.address == NULL) {
            die("malloc", UCS_ERR_NO_MEMORY);
        }
    }
    st = ucp_mem_map(g_ctx, &mp, &r->memh);
    if (st != UCS_OK) {
        die("ucp_mem_map", st);
    }
    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
    st = ucp_mem_query(r->memh, &attr);
    if (st != UCS_OK) {
        die("ucp_mem_query", st);
    }
    r->addr      = attr.address;
    r->allocated = allocate;
}

static uint8_t pattern(uint32_t seed, size_t i)
{
    return (uint8_t)((i * 131u + seed * 7u + (i >> 9)) ^ (seed >> 3));
}

static void fill(uint8_t *p, size_t len, uint32_t seed)
{
    for (size_t i = 0; i < len; i++) {
        p[i] = pattern(seed, i);
    }
}

static void check(const uint8_t *p, size_t len, uint32_t seed, const char *what)
{
    for (size_t i = 0; i < len; i++) {
        if (p[i] != pattern(seed, i)) {
            printf("%s: %s: byte %zu of %zu is 0x%02x, want 0x%02x\n", g_role, what, i,
                   len, p[i], pattern(seed, i));
            g_errs++;
            return;
        }
    }
}

static void tag_send(void *buf, size_t len, ucp_tag_t tag)
{
    ucp_request_param_t prm = {0};
    wait_req(ucp_tag_send_nbx(g_ep, buf, len, tag, &prm), "ucp_tag_send_nbx");
}

static void tag_recv(void *buf, size_t len, ucp_tag_t tag)
{
    ucp_request_param_t prm = {0};
    wait_req(ucp_tag_recv_nbx(g_worker, buf, len, tag, (ucp_tag_t)-1, &prm),
             "ucp_tag_recv_nbx");
}

static void sync_peer(void)
{
    uint64_t x = 0;
    tag_send(&x, sizeof(x), TAG_SYNC);
    tag_recv(&x, sizeof(x), TAG_SYNC);
}

static void stream_send(void *buf, size_t len)
{
    ucp_request_param_t prm = {0};
    wait_req(ucp_stream_send_nbx(g_ep, buf, len, &prm), "ucp_stream_send_nbx");
}

/* All of len bytes: one receive that waits for all of them. */
static void stream_recv(void *buf, size_t len)
{
    ucp_request_param_t prm = {0};
    size_t got = 0;
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    prm.flags        = UCP_STREAM_RECV_FLAG_WAITALL;
    wait_req(ucp_stream_recv_nbx(g_ep, buf, len, &got, &prm), "ucp_stream_recv_nbx");
}

/* Stream messages: client -> server, then back; each receive is posted
 * once the peer has sent the message (and said so on the tag side). */
static void stream_part(uint8_t *buf, uint8_t *back, int server)
{
    static const size_t ssizes[] = {1024, 16384, 40000, 65536, 100000, 262144, 1u << 20, 4u << 20};
    for (size_t s = 0; s < sizeof(ssizes) / sizeof(ssizes[0]); s++) {
        size_t len = ssizes[s];
        uint32_t seed = (uint32_t)(500 + s);
        char what[64];
        snprintf(what, sizeof(what), "stream %zu bytes", len);
        if (server) {
            memset(back, 0, len);
            sync_peer(); /* the client's message is sent */
            stream_recv(back, len);
            check(back, len, seed, what);
            fill(buf, len, seed + 1000);
            stream_send(buf, len);
            sync_peer();
        } else {
            fill(buf, len, seed);
            stream_send(buf, len);
            sync_peer();
            memset(back, 0, len);
            sync_peer(); /* the server's message is sent */
            stream_recv(back, len);
            check(back, len, seed + 1000, what);
        }
    }
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {1024, 65536, 262144, 1u << 20, 4u << 20};
    int server = (argc == 3) && !strcmp(argv[1], "-s");
    ucp_params_t params;
    ucp_worker_params_t wp;
    ucp_ep_params_t ep;
    ucp_config_t *config;
    ucp_address_t *addr;
    size_t addr_len;
    ucs_status_t st;
    struct region reg[2]; /* 0: allocated, 1: malloc'ed and registered */
    ucp_rkey_h rkey[2];
    uint64_t raddr[2];
    void *peer_addr;
    int k;
    const char *tag_env = getenv("UCP_DATA_TAG_ONLY");
    const char *stream_env = getenv("UCP_DATA_STREAM");
    int stream = (stream_env != NULL) && !strcmp(stream_env, "1");
    int tag_only = ((tag_env != NULL) && !strcmp(tag_env, "1")) || stream;

    if (!server && !((argc == 4) && !strcmp(argv[1], "-c"))) {
        fprintf(stderr, "usage: %s -s PORT | -c HOST PORT\n", argv[0]);
        return 2;
    }
    g_role = server ? "server" : "client";
    /* the control connection first, so a peer that fails early is seen */
    if (server) {
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
        int one = 1, l = socket(AF_INET, SOCK_STREAM, 0);
        setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 1)) {
            die("bind/listen", UCS_ERR_IO_ERROR);
        }
        g_fd = accept(l, NULL, NULL);
        close(l);
    } else {
        struct addrinfo *ai, hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
        if (getaddrinfo(argv[2], argv[3], &hints, &ai)) {
            die("getaddrinfo", UCS_ERR_INVALID_ADDR);
        }
        for (int i = 0; i < 100; i++) {
            g_fd = socket(AF_INET, SOCK_STREAM, 0);
            if (!connect(g_fd, ai->ai_addr, ai->ai_addrlen)) {
                break;
            }
            close(g_fd);
            g_fd = -1;
            usleep(100000);
        }
        freeaddrinfo(ai);
    }
    if (g_fd < 0) {
        die("control connection", UCS_ERR_UNREACHABLE);
    }

    st = ucp_config_read(NULL, NULL, &config);
    if (st != UCS_OK) {
        die("ucp_config_read", st);
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = stream ? (UCP_FEATURE_TAG | UCP_FEATURE_STREAM) :
                        tag_only ? UCP_FEATURE_TAG :
                        (UCP_FEATURE_TAG | UCP_FEATURE_RMA | UCP_FEATURE_AMO64);
    st = ucp_init(&params, config, &g_ctx);
    ucp_config_release(config);
    if (st != UCS_OK) {
        die("ucp_init", st);
    }
    memset(&wp, 0, sizeof(wp));
    wp.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;
    st = ucp_worker_create(g_ctx, &wp, &g_worker);
    if (st != UCS_OK) {
        die("ucp_worker_create", st);
    }
    st = ucp_worker_get_address(g_worker, &addr, &addr_len);
    if (st != UCS_OK) {
        die("ucp_worker_get_address", st);
    }
    peer_addr = swap_blob(addr, addr_len, NULL);
    ucp_worker_release_address(g_worker, addr);
    memset(&ep, 0, sizeof(ep));
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep.address    = peer_addr;
    st = ucp_ep_create(g_worker, &ep, &g_ep);
    if (st != UCS_OK) {
        die("ucp_ep_create", st);
    }

    region_init(&reg[0], 1);
    region_init(&reg[1], 0);
    for (k = 0; k < 2 && !tag_only; k++) {
        void *rk, *prk;
        size_t rk_len;
        uint64_t a = (uintptr_t)reg[k].addr, *pa;
        st = ucp_rkey_pack(g_ctx, reg[k].memh, &rk, &rk_len);
        if (st != UCS_OK) {
            die("ucp_rkey_pack", st);
        }
        prk = swap_blob(rk, rk_len, NULL);
        ucp_rkey_buffer_release(rk);
        st = ucp_ep_rkey_unpack(g_ep, prk, &rkey[k]);
        if (st != UCS_OK) {
            die("ucp_ep_rkey_unpack", st);
        }
        free(prk);
        pa = swap_blob(&a, sizeof(a), NULL);
        raddr[k] = *pa;
        free(pa);
    }

    /* tag messages: client -> server, then back, for each pair of kinds */
    for (int src = 0; src < 2; src++) {
        for (int dst = 0; dst < 2; dst++) {
            for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
                size_t len = sizes[s];
                uint32_t seed = (uint32_t)(s * 4 + src * 2 + dst + 1);
                char what[96];
                snprintf(what, sizeof(what), "tag %zu bytes %s -> %s", len,
                         src ? "malloc" : "allocated", dst ? "malloc" : "allocated");
                if (server) {
                    memset(reg[dst].addr, 0, len);
                    tag_recv(reg[dst].addr, len, TAG_DATA);
                    check(reg[dst].addr, len, seed, what);
                    fill(reg[src].addr, len, seed + 1000);
                    tag_send(reg[src].addr, len, TAG_DATA);
                } else {
                    fill(reg[src].addr, len, seed);
                    tag_send(reg[src].addr, len, TAG_DATA);
                    memset(reg[dst].addr, 0, len);
                    tag_recv(reg[dst].addr, len, TAG_DATA);
                    check(reg[dst].addr, len, seed + 1000, what);
                }
            }
        }
    }

    if (stream) {
        stream_part(reg[0].addr, reg[1].addr, server);
    }

    /* one-sided: each side in turn puts, gets back and adds to the peer's
     * allocated and registered memory; the other checks its memory */
    for (int turn = 0; turn < 2 && !tag_only; turn++) {
        int active = (turn == 0) != server;
        for (k = 0; k < 2; k++) {
            size_t len = 1u << 20;
            uint32_t seed = (uint32_t)(100 + turn * 2 + k);
            char what[96];
            uint64_t *ctr_remote = (uint64_t *)(uintptr_t)(raddr[k] + BUF_LEN - 64);
            snprintf(what, sizeof(what), "put into the peer's %s memory",
                     k ? "registered" : "allocated");
            if (active) {
                ucp_request_param_t prm = {0};
                uint8_t *src = reg[1 - k].addr, *back = reg[k].addr + (2u << 20);
                sync_peer(); /* the peer has cleared its memory */
                fill(src, len, seed);
                wait_req(ucp_put_nbx(g_ep, src, len, raddr[k], rkey[k], &prm), "ucp_put_nbx");
                wait_req(ucp_ep_flush_nbx(g_ep, &prm), "ucp_ep_flush_nbx");
                memset(back, 0, len);
                wait_req(ucp_get_nbx(g_ep, back, len, raddr[k], rkey[k], &prm), "ucp_get_nbx");
                check(back, len, seed, "get back what was put");
                for (int i = 0; i < FADD_N; i++) {
                    uint64_t one = 1, old = 0;
                    ucp_request_param_t ap = {0};
                    ap.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
                    ap.datatype     = ucp_dt_make_contig(sizeof(uint64_t));
                    ap.reply_buffer = &old;
                    wait_req(ucp_atomic_op_nbx(g_ep, UCP_ATOMIC_OP_ADD, &one, 1,
                                               (uint64_t)(uintptr_t)ctr_remote, rkey[k], &ap),
                             "ucp_atomic_op_nbx");
                    if (old != (uint64_t)i + 7) {
                        printf("%s: fetch-add %d: old value %llu, want %d\n", g_role, i,
                               (unsigned long long)old, i + 7);
                        g_errs++;
                        break;
                    }
                }
                wait_req(ucp_ep_flush_nbx(g_ep, &prm), "ucp_ep_flush_nbx");
                sync_peer(); /* done */
            } else {
                volatile uint64_t *ctr = (volatile uint64_t *)(reg[k].addr + BUF_LEN - 64);
                memset(reg[k].addr, 0, len);
                *ctr = 7;
                sync_peer();
                sync_peer();
                check(reg[k].addr, len, seed, what);
                if (*ctr != 7 + FADD_N) {
                    printf("%s: counter %llu after %d fetch-adds, want %d\n", g_role,
                           (unsigned long long)*ctr, FADD_N, 7 + FADD_N);
                    g_errs++;
                }
            }
        }
    }

    /* A completed send only means its buffer may be reused, so the worker
     * is flushed before the wait on the control connection (a receive that
     * libucp completes from data already there calls no transport at all).
     * UCP_DATA_NO_FLUSH=1 leaves the flush out, as many applications do:
     * the data must arrive all the same. */
    if (!getenv("UCP_DATA_NO_FLUSH")) {
        ucp_request_param_t prm = {0};
        wait_req(ucp_worker_flush_nbx(g_worker, &prm), "ucp_worker_flush_nbx");
    }
    {
        int32_t mine = g_errs, theirs;
        xfer(&mine, sizeof(mine), 1);
        xfer(&theirs, sizeof(theirs), 0);
        (void)theirs;
    }
    for (k = 0; k < 2 && !tag_only; k++) {
        ucp_rkey_destroy(rkey[k]);
    }
    {
        ucp_request_param_t prm = {0};
        prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        prm.flags        = UCP_EP_CLOSE_FLAG_FORCE;
        void *req = ucp_ep_close_nbx(g_ep, &prm);
        if (req != NULL && !UCS_PTR_IS_ERR(req)) {
            while (ucp_request_check_status(req) == UCS_INPROGRESS) {
                ucp_worker_progress(g_worker);
            }
            ucp_request_free(req);
        }
    }
    for (k = 0; k < 2; k++) {
        void *a = reg[k].addr;
        ucp_mem_unmap(g_ctx, reg[k].memh);
        if (!reg[k].allocated) {
            free(a);
        }
    }
    ucp_worker_destroy(g_worker);
    ucp_cleanup(g_ctx);
    free(peer_addr);
    close(g_fd);
    printf("ucp_data_check: %s\n", g_errs ? "FAIL" : "OK");
    return g_errs ? 1 : 0;
}
