/*
 * What the machine itself can do, without UCX: the ceiling the side-by-side
 * benchmarks are read against.  Two processes (fork), pinned to CPUs 0 and
 * 1 when there are two, like the benchmark pairs; both sides busy-poll
 * (non-blocking calls in a loop), as UCX's progress does.
 *
 *   raw_ceiling tcp-pingpong SIZE ITERS   half round trip of SIZE bytes over
 *                                         a loopback TCP connection (NODELAY),
 *                                         one send() and busy recv() per hop
 *       RAW_PP_WAIT=spin|poll|epoll|block (tcp-pingpong): how a side waits
 *                                         for the next message: recv() on the
 *                                         non-blocking socket in a loop (the
 *                                         default), poll() or epoll_wait()
 *                                         with no timeout in a loop until the
 *                                         socket is readable and then recv(),
 *                                         or a blocking recv() (the process
 *                                         sleeps)
 *   raw_ceiling tcp-stream SIZE BYTES     messages of an 8-byte header + SIZE
 *                                         bytes, one sendmsg() each, through a
 *                                         non-blocking socket; the receiver
 *                                         busy-polls recv() into a buffer of
 *                                         SIZE + 8 bytes
 *   raw_ceiling tcp-stream-copy SIZE BYTES
 *                                         tcp-stream, and the receiver copies
 *                                         every byte it received once more,
 *                                         into a second buffer (the copy from
 *                                         a transport's receive buffer into
 *                                         the user's that libucp's eager
 *                                         protocols make)
 *   raw_ceiling tcp-stream-copy2 SIZE BYTES
 *                                         tcp-stream, and the receiver copies
 *                                         every byte twice more (libucp's
 *                                         path for data that arrives before
 *                                         the receive is posted: into its own
 *                                         descriptor, later into the user's
 *                                         buffer)
 *       RAW_TX_BATCH=BYTES (tcp-stream*): the sender copies each message into
 *                                         a staging buffer of BYTES and writes
 *                                         the buffer when the next message
 *                                         would not fit (coalescing by copy)
 *       RAW_RX_BUF=BYTES (tcp-stream*):   the receiver's recv() size (default
 *                                         one message, SIZE + 8)
 *   raw_ceiling tcp-rndv SIZE BYTES       libucp's rendezvous over tcp as a bare
 *                                         exchange of frames: the sender asks
 *                                         (RTS), the receiver answers (RTR), the
 *                                         sender writes the SIZE bytes as puts
 *                                         (a frame and its payload, one
 *                                         sendmsg() each) over RAW_RNDV_LANES
 *                                         connections (default 2), the
 *                                         receiver acknowledges each put on its
 *                                         connection and the sender ends the
 *                                         message (ATP), with RAW_RNDV_WINDOW
 *                                         messages in flight (default 32,
 *                                         ucx_perftest's tag_bw). The puts:
 *                                         RAW_RNDV_PARTS="BYTES@LANE,..." (the
 *                                         sizes add up to SIZE), by default
 *                                         SIZE split evenly over the lanes.
 *                                         Each side writes the small frames a
 *                                         pass over its sockets produced in one
 *                                         call per socket, or with the next put
 *                                         on that socket (the fewest system
 *                                         calls); the receiver receives up to
 *                                         RAW_RX_BUF bytes (default 65536) into
 *                                         a staging buffer, copies the part of
 *                                         a put that came with it and receives
 *                                         the rest straight into the target
 *   raw_ceiling cma-pingpong SIZE ITERS   half round trip of a SIZE-byte
 *                                         process_vm_writev() into the peer,
 *                                         which polls the last byte (what
 *                                         ucx_perftest's put_lat does)
 *   raw_ceiling cma-put SIZE BYTES        back-to-back process_vm_writev() of
 *   raw_ceiling cma-get SIZE BYTES        SIZE bytes into (readv: from) the
 *                                         peer's buffer, time per call (what
 *                                         put_bw / get zcopy over cma do)
 *   raw_ceiling cma-split SIZE BYTES      one SIZE-byte transfer shared by both
 *                                         processes: the reader gets the first
 *                                         half with process_vm_readv() while
 *                                         the owner, asked through shared
 *                                         memory, puts the second half with
 *                                         process_vm_writev() (the ceiling of
 *                                         a split get_zcopy over cma)
 *   raw_ceiling memcpy SIZE BYTES         memcpy of SIZE bytes into a shared
 *                                         mapping, repeated (put_bw's copy)
 *   raw_ceiling shm-pipe FRAG BYTES       a 1 MiB message moved through shared
 *                                         memory in FRAG-byte pieces: the sender
 *                                         copies each piece into a ring of
 *                                         slots, the receiver copies it out into
 *                                         its own buffer (the two copies of an
 *                                         active-message path such as posix's
 *                                         FIFO, with nothing else around them)
 *
 * The tcp modes use the congestion control RAW_TCP_CC (reno when unset; the
 * system's default when empty).
 *
 * Prints one line: "lat_us bw_MBps" (0 for what the mode does not measure).
 * Exit 0 on success, 1 on a system error (with a message on stderr).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DIE(what) do { perror(what); exit(1); } while (0)

static double now_sec(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void pin(int cpu)
{
    cpu_set_t set;
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) return;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof(set), &set);
}

static void nodelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* A connected pair of loopback TCP sockets: *srv accepted, *cli connected. */
static void tcp_pair(int *srv, int *cli)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    if (ls < 0 || bind(ls, (struct sockaddr*)&a, sizeof(a)) || listen(ls, 1) ||
        getsockname(ls, (struct sockaddr*)&a, &len))
        DIE("listen");
    *cli = socket(AF_INET, SOCK_STREAM, 0);
    if (*cli < 0 || connect(*cli, (struct sockaddr*)&a, sizeof(a))) DIE("connect");
    *srv = accept(ls, NULL, NULL);
    if (*srv < 0) DIE("accept");
    close(ls);
    nodelay(*srv);
    nodelay(*cli);
    /* The congestion control of both sockets: RAW_TCP_CC, reno when unset
     * (what our library uses within the host, UCX_TCP_LOCAL_CC), the
     * system's default when empty. */
    const char *cc = getenv("RAW_TCP_CC");
    if (cc == NULL) cc = "reno";
    if (*cc && (setsockopt(*srv, IPPROTO_TCP, TCP_CONGESTION, cc, strlen(cc)) ||
                setsockopt(*cli, IPPROTO_TCP, TCP_CONGESTION, cc, strlen(cc))))
        DIE("TCP_CONGESTION");
    fcntl(*srv, F_SETFL, O_NONBLOCK);
    fcntl(*cli, F_SETFL, O_NONBLOCK);
}

static void send_all(int fd, const struct iovec *iov, int cnt)
{
    struct iovec v[2];
    size_t total = 0, off = 0;
    for (int i = 0; i < cnt; i++) total += iov[i].iov_len;
    while (off < total) {
        int n = 0;
        size_t skip = off;
        for (int i = 0; i < cnt; i++) {
            if (skip >= iov[i].iov_len) { skip -= iov[i].iov_len; continue; }
            v[n].iov_base = (char*)iov[i].iov_base + skip;
            v[n].iov_len  = iov[i].iov_len - skip;
            skip = 0;
            n++;
        }
        struct msghdr m = {.msg_iov = v, .msg_iovlen = n};
        ssize_t r = sendmsg(fd, &m, MSG_NOSIGNAL);
        if (r > 0) off += r;
        else if (r < 0 && errno != EAGAIN && errno != EINTR) DIE("sendmsg");
    }
}

static void recv_all(int fd, char *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = recv(fd, buf + got, n - got, 0);
        if (r > 0) got += r;
        else if (r == 0) exit(0);
        else if (errno != EAGAIN && errno != EINTR) DIE("recv");
    }
}

/* How tcp-pingpong waits (RAW_PP_WAIT). */
enum pp_wait { PP_SPIN, PP_POLL, PP_EPOLL, PP_BLOCK };

/* One message of n bytes, waited for as `how` says (`ep`: an epoll set
 * with fd in it, for PP_EPOLL). */
static void pp_recv(int fd, char *buf, size_t n, enum pp_wait how, int ep)
{
    size_t got = 0;
    while (got < n) {
        if (how == PP_POLL) {
            struct pollfd p = {.fd = fd, .events = POLLIN};
            while (poll(&p, 1, 0) == 0) {}
        } else if (how == PP_EPOLL) {
            struct epoll_event e;
            while (epoll_wait(ep, &e, 1, 0) == 0) {}
        }
        ssize_t r = recv(fd, buf + got, n - got, 0);
        if (r > 0) got += r;
        else if (r == 0) exit(0);
        else if (errno != EAGAIN && errno != EINTR) DIE("recv");
    }
}

/* Prepare fd for `how`: blocking for PP_BLOCK, an epoll set for PP_EPOLL
 * (returned; -1 otherwise). */
static int pp_setup(int fd, enum pp_wait how)
{
    if (how == PP_BLOCK) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    if (how != PP_EPOLL) return -1;
    int ep = epoll_create1(0);
    struct epoll_event e = {.events = EPOLLIN};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e)) DIE("epoll");
    return ep;
}

static int tcp_pingpong(size_t size, long iters)
{
    int srv, cli;
    char *buf = calloc(1, size);
    long warm = iters / 10 + 10;
    const char *w = getenv("RAW_PP_WAIT");
    enum pp_wait how = PP_SPIN;
    if (w && !strcmp(w, "poll")) how = PP_POLL;
    else if (w && !strcmp(w, "epoll")) how = PP_EPOLL;
    else if (w && !strcmp(w, "block")) how = PP_BLOCK;
    else if (w && *w && strcmp(w, "spin")) DIE("RAW_PP_WAIT");
    tcp_pair(&srv, &cli);
    pid_t pid = fork();
    if (pid == 0) {
        close(cli);
        pin(1);
        int ep = pp_setup(srv, how);
        for (;;) {
            struct iovec v = {buf, size};
            pp_recv(srv, buf, size, how, ep);
            send_all(srv, &v, 1);
        }
    }
    close(srv);
    pin(0);
    int ep = pp_setup(cli, how);
    struct iovec v = {buf, size};
    double t0 = 0;
    for (long i = 0; i < warm + iters; i++) {
        if (i == warm) t0 = now_sec();
        send_all(cli, &v, 1);
        pp_recv(cli, buf, size, how, ep);
    }
    double t = now_sec() - t0;
    close(cli);
    waitpid(pid, NULL, 0);
    printf("%.3f %.2f\n", t / iters / 2 * 1e6, size * (double)iters / t / 1e6);
    return 0;
}

static size_t env_size(const char *name, size_t dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtoul(v, NULL, 0) : dflt;
}

/* The receiver's copies of what it received: into dst, and (copies == 2)
 * from there into dst2. */
static void rx_copies(int copies, char *dst, char *dst2, const char *src, size_t n)
{
    if (copies >= 1) {
        memcpy(dst, src, n);
        __asm__ volatile("" : : "r"(dst) : "memory"); /* the copy is kept */
    }
    if (copies >= 2) {
        memcpy(dst2, dst, n);
        __asm__ volatile("" : : "r"(dst2) : "memory");
    }
}

static int tcp_stream(size_t size, long bytes, int copies)
{
    int srv, cli;
    long count = bytes / (long)size + 1;
    size_t frame = size + 8;
    size_t rxbuf = env_size("RAW_RX_BUF", frame);
    size_t batch = env_size("RAW_TX_BATCH", 0);
    if (rxbuf == 0) rxbuf = frame;
    if (batch && batch < frame) batch = frame;
    tcp_pair(&srv, &cli);
    pid_t pid = fork();
    if (pid == 0) {
        close(cli);
        pin(1);
        char *rb = malloc(rxbuf), *dst = malloc(rxbuf), *dst2 = malloc(rxbuf);
        if (!rb || !dst || !dst2) DIE("malloc");
        long got = 0, want = count * (long)frame;
        while (got < want) {
            ssize_t r = recv(srv, rb, rxbuf, 0);
            if (r > 0) {
                got += r;
                rx_copies(copies, dst, dst2, rb, (size_t)r);
            }
            else if (r == 0) exit(1);
            else if (errno != EAGAIN && errno != EINTR) DIE("recv");
        }
        send(srv, "x", 1, MSG_NOSIGNAL);
        exit(0);
    }
    close(srv);
    pin(0);
    char hdr[8] = {0}, c;
    char *payload = malloc(size), *stage = batch ? malloc(batch) : NULL;
    if (!payload || (batch && !stage)) DIE("malloc");
    memset(payload, 1, size);
    size_t fill = 0;
    double t0 = now_sec();
    for (long i = 0; i < count; i++) {
        if (!batch) {
            struct iovec v[2] = {{hdr, sizeof(hdr)}, {payload, size}};
            send_all(cli, v, 2);
            continue;
        }
        if (fill + frame > batch) {
            struct iovec v = {stage, fill};
            send_all(cli, &v, 1);
            fill = 0;
        }
        memcpy(stage + fill, hdr, sizeof(hdr));
        memcpy(stage + fill + sizeof(hdr), payload, size);
        fill += frame;
    }
    if (fill) {
        struct iovec v = {stage, fill};
        send_all(cli, &v, 1);
    }
    recv_all(cli, &c, 1);
    double t = now_sec() - t0;
    close(cli);
    waitpid(pid, NULL, 0);
    printf("%.3f %.2f\n", t / count * 1e6, size * (double)count / t / 1e6);
    return 0;
}

static char *private_buf(size_t size, int fill);

/* tcp-rndv: the frames of the rendezvous exchange (24 bytes each; a put's
 * payload follows its frame and lands at `off` in the receiver's buffer). */
enum { RV_RTS = 1, RV_RTR, RV_PUT, RV_ACK, RV_ATP };
struct rv_frame { uint32_t type, id; uint64_t len, off; };
#define RV_MAX_LANES 4
#define RV_MAX_PARTS 8

/* Small frames a pass produced for one socket, written together. */
struct rv_out { struct rv_frame f[256]; int n; };

static void rv_queue(struct rv_out *o, uint32_t type, uint32_t id, uint64_t len, uint64_t off)
{
    if (o->n == (int)(sizeof(o->f) / sizeof(o->f[0]))) {
        fprintf(stderr, "tcp-rndv: too many frames in one pass\n");
        exit(1);
    }
    o->f[o->n++] = (struct rv_frame){type, id, len, off};
}

static void rv_flush(int fd, struct rv_out *o)
{
    if (!o->n) return;
    struct iovec v = {o->f, o->n * sizeof(o->f[0])};
    send_all(fd, &v, 1);
    o->n = 0;
}

/* One socket's receive side: a staging buffer, and the put being received
 * straight into its target. */
struct rv_in { char *buf; size_t len, cap; char *put_at; size_t put_left; uint32_t put_id; };

/* Receive on `fd` and hand every whole frame to `on_frame` (a put once all
 * its payload is in `target`: the receiver only). */
static void rv_poll(int fd, struct rv_in *in, char *target,
                    void (*on_frame)(int lane, const struct rv_frame *f, void *ctx), int lane, void *ctx)
{
    if (in->put_left) {
        ssize_t r = recv(fd, in->put_at, in->put_left, 0);
        if (r > 0) {
            in->put_at += r;
            in->put_left -= (size_t)r;
            if (!in->put_left) {
                struct rv_frame done = {RV_PUT, in->put_id, 0, 0};
                on_frame(lane, &done, ctx);
            }
        } else if (r == 0) exit(1);
        else if (errno != EAGAIN && errno != EINTR) DIE("recv");
        return;
    }
    ssize_t r = recv(fd, in->buf + in->len, in->cap - in->len, 0);
    if (r == 0) exit(1);
    if (r < 0) {
        if (errno != EAGAIN && errno != EINTR) DIE("recv");
        return;
    }
    in->len += (size_t)r;
    size_t off = 0;
    while (in->len - off >= sizeof(struct rv_frame)) {
        struct rv_frame f;
        memcpy(&f, in->buf + off, sizeof(f));
        off += sizeof(f);
        if (f.type != RV_PUT) {
            on_frame(lane, &f, ctx);
            continue;
        }
        size_t have = in->len - off < f.len ? in->len - off : f.len;
        char *at = target + f.off;
        memcpy(at, in->buf + off, have);
        __asm__ volatile("" : : "r"(at) : "memory");
        off += have;
        if (have < f.len) {
            in->put_at = at + have;
            in->put_left = f.len - have;
            in->put_id = f.id;
            break;
        }
        on_frame(lane, &f, ctx);
    }
    memmove(in->buf, in->buf + off, in->len - off);
    in->len -= off;
}

struct rv_state {
    int lanes, fd[RV_MAX_LANES];
    int nparts, part_lane[RV_MAX_PARTS];
    size_t part_len[RV_MAX_PARTS];
    struct rv_out out[RV_MAX_LANES];
    long done;                 /* receiver: ATPs; sender: completed messages */
    unsigned char *acks;       /* sender: acknowledgements per window slot */
    long window, outstanding;
    char *payload;
};

static void rv_receiver_frame(int lane, const struct rv_frame *f, void *ctx)
{
    struct rv_state *s = ctx;
    switch (f->type) {
    case RV_RTS: rv_queue(&s->out[0], RV_RTR, f->id, 0, 0); break;
    case RV_PUT: rv_queue(&s->out[lane], RV_ACK, f->id, 0, 0); break;
    case RV_ATP: s->done++; break;
    default: fprintf(stderr, "tcp-rndv: frame %u at the receiver\n", f->type); exit(1);
    }
}

static void rv_sender_frame(int lane, const struct rv_frame *f, void *ctx)
{
    struct rv_state *s = ctx;
    (void)lane;
    switch (f->type) {
    case RV_RTR: {
        size_t off = 0;
        for (int k = 0; k < s->nparts; k++) {
            /* What the pass queued for this socket goes first, then the
             * put's frame and payload: one sendmsg(). */
            int l = s->part_lane[k];
            struct rv_out *o = &s->out[l];
            rv_queue(o, RV_PUT, f->id, s->part_len[k], off);
            struct iovec v[2] = {{o->f, o->n * sizeof(o->f[0])}, {s->payload + off, s->part_len[k]}};
            send_all(s->fd[l], v, 2);
            o->n = 0;
            off += s->part_len[k];
        }
        break;
    }
    case RV_ACK:
        if (++s->acks[f->id % s->window] == s->nparts) {
            s->acks[f->id % s->window] = 0;
            rv_queue(&s->out[0], RV_ATP, f->id, 0, 0);
            s->done++;
            s->outstanding--;
        }
        break;
    default: fprintf(stderr, "tcp-rndv: frame %u at the sender\n", f->type); exit(1);
    }
}

/* RAW_RNDV_PARTS="BYTES@LANE,...": the puts of one message in order (their
 * sizes must add up to SIZE); by default SIZE split evenly over the lanes. */
static int rv_parts(struct rv_state *s, size_t size)
{
    const char *spec = getenv("RAW_RNDV_PARTS");
    size_t total = 0;
    s->nparts = 0;
    if (!spec || !*spec) {
        for (int l = 0; l < s->lanes; l++) {
            s->part_lane[l] = l;
            s->part_len[l] = size / (size_t)s->lanes + (l == s->lanes - 1 ? size % (size_t)s->lanes : 0);
        }
        s->nparts = s->lanes;
        return 0;
    }
    for (const char *p = spec; *p && s->nparts < RV_MAX_PARTS;) {
        char *end;
        unsigned long len = strtoul(p, &end, 0), lane = 0;
        if (*end == '@') lane = strtoul(end + 1, &end, 0);
        if (len == 0 || lane >= (unsigned long)s->lanes) return -1;
        s->part_len[s->nparts] = len;
        s->part_lane[s->nparts++] = (int)lane;
        total += len;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return -1;
    }
    return total == size ? 0 : -1;
}

static int tcp_rndv(size_t size, long bytes)
{
    struct rv_state s = {.lanes = (int)env_size("RAW_RNDV_LANES", 2), .window = (long)env_size("RAW_RNDV_WINDOW", 32)};
    int peer[RV_MAX_LANES];
    long count = bytes / (long)size + 1;
    size_t cap = env_size("RAW_RX_BUF", 65536);
    if (s.lanes < 1 || s.lanes > RV_MAX_LANES || s.window < 1 || s.window > 200 || cap < sizeof(struct rv_frame) ||
        rv_parts(&s, size)) {
        fprintf(stderr, "tcp-rndv: RAW_RNDV_LANES 1-%d, RAW_RNDV_WINDOW 1-200, RAW_RX_BUF >= %zu, "
                "RAW_RNDV_PARTS=BYTES@LANE,... adding up to SIZE (at most %d)\n",
                RV_MAX_LANES, sizeof(struct rv_frame), RV_MAX_PARTS);
        return 2;
    }
    for (int l = 0; l < s.lanes; l++) tcp_pair(&peer[l], &s.fd[l]);
    struct rv_in in[RV_MAX_LANES] = {{0}};
    for (int l = 0; l < s.lanes; l++) {
        in[l].cap = cap;
        in[l].buf = malloc(cap);
        if (!in[l].buf) DIE("malloc");
    }
    pid_t pid = fork();
    if (pid == 0) {
        for (int l = 0; l < s.lanes; l++) {
            close(s.fd[l]);
            s.fd[l] = peer[l];
        }
        pin(1);
        char *target = private_buf(size, 0);
        while (s.done < count) {
            for (int l = 0; l < s.lanes; l++) rv_poll(s.fd[l], &in[l], target, rv_receiver_frame, l, &s);
            for (int l = 0; l < s.lanes; l++) rv_flush(s.fd[l], &s.out[l]);
        }
        exit(0);
    }
    for (int l = 0; l < s.lanes; l++) close(peer[l]);
    pin(0);
    s.payload = private_buf(size, 1);
    s.acks = calloc((size_t)s.window, 1);
    if (!s.acks) DIE("calloc");
    long next = 0;
    double t0 = now_sec();
    while (s.done < count) {
        while (s.outstanding < s.window && next < count) {
            rv_queue(&s.out[0], RV_RTS, (uint32_t)next++, 0, 0);
            s.outstanding++;
        }
        for (int l = 0; l < s.lanes; l++) rv_flush(s.fd[l], &s.out[l]);
        for (int l = 0; l < s.lanes; l++) rv_poll(s.fd[l], &in[l], NULL, rv_sender_frame, l, &s);
    }
    for (int l = 0; l < s.lanes; l++) rv_flush(s.fd[l], &s.out[l]);
    double t = now_sec() - t0;
    int st;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "tcp-rndv: the receiver failed\n");
        return 1;
    }
    printf("%.3f %.2f\n", t / count * 1e6, size * (double)count / t / 1e6);
    return 0;
}

/* Shared between the two processes: each one's buffer address. */
/* A private anonymous buffer of SIZE bytes, every byte FILL (touched, so
 * its pages exist before the timing starts). */
static char *private_buf(size_t size, int fill)
{
    char *b = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (b == MAP_FAILED) DIE("mmap");
    memset(b, fill, size);
    return b;
}

struct cma_shared {
    volatile uintptr_t addr[2];
};

static int cma_pingpong(size_t size, long iters)
{
    struct cma_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) DIE("mmap");
    long warm = iters / 10 + 10;
    pid_t parent = getpid();
    pid_t pid = fork();
    int me = pid == 0;
    pid_t peer = me ? parent : pid;
    char *buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *src = malloc(size);
    if (buf == MAP_FAILED || !src) DIE("buffers");
    memset(buf, 0, size);
    memset(src, 0, size);
    pin(me);
    sh->addr[me] = (uintptr_t)buf;
    while (!sh->addr[!me]) ;
    double t0 = 0;
    for (long i = 1; i <= warm + iters; i++) {
        char sn = (char)(i % 127 + 1);
        if (i == warm + 1) t0 = now_sec();
        if (me == 0) {
            src[size - 1] = sn;
            struct iovec l = {src, size}, r = {(void*)sh->addr[1], size};
            if (process_vm_writev(peer, &l, 1, &r, 1, 0) != (ssize_t)size) DIE("process_vm_writev");
            while (((volatile char*)buf)[size - 1] != sn) ;
        } else {
            while (((volatile char*)buf)[size - 1] != sn) ;
            src[size - 1] = sn;
            struct iovec l = {src, size}, r = {(void*)sh->addr[0], size};
            if (process_vm_writev(peer, &l, 1, &r, 1, 0) != (ssize_t)size) DIE("process_vm_writev");
        }
    }
    if (me == 1) exit(0);
    double t = now_sec() - t0;
    waitpid(pid, NULL, 0);
    printf("%.3f %.2f\n", t / iters / 2 * 1e6, size * (double)iters / t / 1e6);
    return 0;
}

static int cma_stream(size_t size, long bytes, int get)
{
    struct cma_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) DIE("mmap");
    pid_t pid = fork();
    if (pid == 0) {
        char *buf = private_buf(size, 2);
        pin(1);
        sh->addr[1] = (uintptr_t)buf;
        while (!sh->addr[0]) usleep(1000);
        exit(0);
    }
    /* after fork: a buffer shared copy-on-write with the child would be
     * copied again by the kernel on the first write of every page */
    char *local = private_buf(size, 1);
    pin(0);
    while (!sh->addr[1]) ;
    long count = bytes / (long)size + 1;
    struct iovec l = {local, size}, r = {(void*)sh->addr[1], size};
    double t0 = now_sec();
    for (long i = 0; i < count; i++) {
        ssize_t n = get ? process_vm_readv(pid, &l, 1, &r, 1, 0) : process_vm_writev(pid, &l, 1, &r, 1, 0);
        if (n != (ssize_t)size) DIE(get ? "process_vm_readv" : "process_vm_writev");
    }
    double t = now_sec() - t0;
    sh->addr[0] = 1;
    waitpid(pid, NULL, 0);
    printf("%.3f %.2f\n", t / count * 1e6, size * (double)count / t / 1e6);
    return 0;
}

/* The owner (parent) serves the reader's requests: request k asks for the
 * second half of the buffer to be written into the reader's buffer; the
 * reader gets the first half itself meanwhile, then waits for done == k. */
struct split_shared {
    uintptr_t dst;
    long ready, req, done, stop;
};

static int cma_split(size_t size, long bytes)
{
    struct split_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) DIE("mmap");
    size_t own = (size / 2) & ~(size_t)4095, mine = size - own;
    char *src = private_buf(size, 1);
    pid_t owner = getpid();
    long count = bytes / (long)size + 1;
    pid_t pid = fork();
    if (pid == 0) {
        char *dst = private_buf(size, 2);
        pin(1);
        sh->dst = (uintptr_t)dst;
        __atomic_store_n(&sh->ready, 1, __ATOMIC_RELEASE);
        double t0 = now_sec();
        for (long k = 1; k <= count; k++) {
            __atomic_store_n(&sh->req, k, __ATOMIC_RELEASE);
            struct iovec l = {dst, mine}, r = {src, mine};
            if (process_vm_readv(owner, &l, 1, &r, 1, 0) != (ssize_t)mine) DIE("process_vm_readv");
            while (own && __atomic_load_n(&sh->done, __ATOMIC_ACQUIRE) != k) ;
        }
        double t = now_sec() - t0;
        printf("%.3f %.2f\n", t / count * 1e6, size * (double)count / t / 1e6);
        fflush(stdout);
        __atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
        exit(0);
    }
    pin(0);
    while (!__atomic_load_n(&sh->ready, __ATOMIC_ACQUIRE)) ;
    long served = 0;
    while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
        long k = __atomic_load_n(&sh->req, __ATOMIC_ACQUIRE);
        if (k == served) continue;
        struct iovec l = {src + mine, own}, r = {(void *)(sh->dst + mine), own};
        if (own && process_vm_writev(pid, &l, 1, &r, 1, 0) != (ssize_t)own) DIE("process_vm_writev");
        served = k;
        __atomic_store_n(&sh->done, k, __ATOMIC_RELEASE);
    }
    waitpid(pid, NULL, 0);
    return 0;
}

static int memcpy_bw(size_t size, long bytes)
{
    char *dst = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    char *src = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (dst == MAP_FAILED || src == MAP_FAILED) DIE("mmap");
    memset(src, 1, size);
    memset(dst, 0, size);
    pin(0);
    long count = bytes / (long)size + 1;
    double t0 = now_sec();
    for (long i = 0; i < count; i++) {
        memcpy(dst, src, size);
        __asm__ volatile("" : : "r"(dst) : "memory");
    }
    double t = now_sec() - t0;
    printf("%.3f %.2f\n", t / count * 1e6, size * (double)count / t / 1e6);
    return 0;
}

/* shm-pipe: a ring of slots in a shared mapping; head counts the pieces
 * written by the sender, tail the pieces the receiver has copied out. */
#define PIPE_MSG (1UL << 20)
struct pipe_shared {
    long head __attribute__((aligned(64)));
    long tail __attribute__((aligned(64)));
};

static int shm_pipe(size_t frag, long bytes)
{
    if (frag > PIPE_MSG) frag = PIPE_MSG;
    size_t nslots = (4UL << 20) / frag;
    if (nslots < 2) nslots = 2;
    struct pipe_shared *sh = mmap(NULL, sizeof(*sh) + nslots * frag, PROT_READ | PROT_WRITE,
                                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) DIE("mmap");
    char *ring = (char *)(sh + 1);
    size_t per_msg = (PIPE_MSG + frag - 1) / frag;
    long msgs = bytes / (long)PIPE_MSG + 1;
    long total = msgs * (long)per_msg;
    pid_t pid = fork();
    if (pid == 0) {
        char *dst = private_buf(PIPE_MSG, 2);
        pin(1);
        for (long k = 0; k < total; k++) {
            while (__atomic_load_n(&sh->head, __ATOMIC_ACQUIRE) == k) ;
            size_t off = (k % per_msg) * frag, n = PIPE_MSG - off < frag ? PIPE_MSG - off : frag;
            memcpy(dst + off, ring + (k % nslots) * frag, n);
            __atomic_store_n(&sh->tail, k + 1, __ATOMIC_RELEASE);
        }
        __asm__ volatile("" : : "r"(dst) : "memory");
        exit(0);
    }
    char *src = private_buf(PIPE_MSG, 1);
    pin(0);
    double t0 = now_sec();
    for (long k = 0; k < total; k++) {
        while (k - __atomic_load_n(&sh->tail, __ATOMIC_ACQUIRE) >= (long)nslots) ;
        size_t off = (k % per_msg) * frag, n = PIPE_MSG - off < frag ? PIPE_MSG - off : frag;
        memcpy(ring + (k % nslots) * frag, src + off, n);
        __atomic_store_n(&sh->head, k + 1, __ATOMIC_RELEASE);
    }
    while (__atomic_load_n(&sh->tail, __ATOMIC_ACQUIRE) != total) ;
    double t = now_sec() - t0;
    waitpid(pid, NULL, 0);
    printf("%.3f %.2f\n", t / msgs * 1e6, PIPE_MSG * (double)msgs / t / 1e6);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s tcp-pingpong|tcp-stream|tcp-stream-copy|tcp-stream-copy2|tcp-rndv|cma-pingpong|cma-put|cma-get|cma-split|memcpy|shm-pipe SIZE COUNT\n", argv[0]);
        return 2;
    }
    size_t size = strtoul(argv[2], NULL, 0);
    long count = strtol(argv[3], NULL, 0);
    if (size == 0 || count <= 0) {
        fprintf(stderr, "SIZE and COUNT must be positive\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    if (!strcmp(argv[1], "tcp-pingpong")) return tcp_pingpong(size, count);
    if (!strcmp(argv[1], "tcp-stream")) return tcp_stream(size, count, 0);
    if (!strcmp(argv[1], "tcp-stream-copy")) return tcp_stream(size, count, 1);
    if (!strcmp(argv[1], "tcp-stream-copy2")) return tcp_stream(size, count, 2);
    if (!strcmp(argv[1], "tcp-rndv")) return tcp_rndv(size, count);
    if (!strcmp(argv[1], "cma-pingpong")) return cma_pingpong(size, count);
    if (!strcmp(argv[1], "cma-put")) return cma_stream(size, count, 0);
    if (!strcmp(argv[1], "cma-get")) return cma_stream(size, count, 1);
    if (!strcmp(argv[1], "cma-split")) return cma_split(size, count);
    if (!strcmp(argv[1], "memcpy")) return memcpy_bw(size, count);
    if (!strcmp(argv[1], "shm-pipe")) return shm_pipe(size, count);
    fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
}
