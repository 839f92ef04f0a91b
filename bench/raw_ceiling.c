/*
 * What the machine itself can do, without UCX: the ceiling the side-by-side
 * benchmarks are read against.  Two processes (fork), pinned to CPUs 0 and
 * 1 when there are two, like the benchmark pairs; both sides busy-poll
 * (non-blocking calls in a loop), as UCX's progress does.
 *
 *   raw_ceiling tcp-pingpong SIZE ITERS   half round trip of SIZE bytes over
 *                                         a loopback TCP connection (NODELAY),
 *                                         one send() and busy recv() per hop
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

static int tcp_pingpong(size_t size, long iters)
{
    int srv, cli;
    char *buf = calloc(1, size);
    long warm = iters / 10 + 10;
    tcp_pair(&srv, &cli);
    pid_t pid = fork();
    if (pid == 0) {
        close(cli);
        pin(1);
        for (;;) {
            struct iovec v = {buf, size};
            recv_all(srv, buf, size);
            send_all(srv, &v, 1);
        }
    }
    close(srv);
    pin(0);
    struct iovec v = {buf, size};
    double t0 = 0;
    for (long i = 0; i < warm + iters; i++) {
        if (i == warm) t0 = now_sec();
        send_all(cli, &v, 1);
        recv_all(cli, buf, size);
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
        fprintf(stderr, "usage: %s tcp-pingpong|tcp-stream|tcp-stream-copy|tcp-stream-copy2|cma-pingpong|cma-put|cma-get|cma-split|memcpy|shm-pipe SIZE COUNT\n", argv[0]);
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
    if (!strcmp(argv[1], "cma-pingpong")) return cma_pingpong(size, count);
    if (!strcmp(argv[1], "cma-put")) return cma_stream(size, count, 0);
    if (!strcmp(argv[1], "cma-get")) return cma_stream(size, count, 1);
    if (!strcmp(argv[1], "cma-split")) return cma_split(size, count);
    if (!strcmp(argv[1], "memcpy")) return memcpy_bw(size, count);
    if (!strcmp(argv[1], "shm-pipe")) return shm_pipe(size, count);
    fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
}
