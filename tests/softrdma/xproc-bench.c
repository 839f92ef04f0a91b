/*
 * Raw verbs cost of a device across two processes (fork): RC SEND ping-pong
 * round trip (post, poll the send and the peer's reply) and RDMA WRITE
 * bandwidth at 64 KiB and 1 MiB (one signaled WRITE at a time, then a
 * window of 16). With --local both QPs live in one process (the memcpy
 * floor of the same data path). Prints one line per figure.
 * Then the floor of an active-message ping-pong as a UCT transport does it
 * (receives posted ahead in batches, sends inline and signaled once in 64,
 * only the receive CQ polled while waiting), over RC and over UD: the
 * least any library can take on the device for am_lat.
 * XPROC_PIN=A,B pins the server (forked child) to CPU A, the client to B;
 * --floor runs only the two floor ping-pongs.
 *   tests/softrdma/run.sh tests/softrdma/build/xproc-bench [--local|--floor] [ITERS]
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <sched.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#define MEM (4u << 20)

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	char *mem;
};

struct info {
	uint32_t qpn;
	uint16_t lid;
	uint64_t addr;
	uint32_t rkey;
};

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void die(const char *m)
{
	perror(m);
	exit(2);
}

static void open_side(struct side *s, struct info *me)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_port_attr pa;

	if (!l || !l[0] || !(s->ctx = ibv_open_device(l[0])))
		die("open device");
	ibv_free_device_list(l);
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = ibv_create_cq(s->ctx, 256, NULL, NULL, 0);
	/* transparent huge pages where the kernel offers them, as a UCX
	 * transport's buffer pools have */
	s->mem = aligned_alloc(2u << 20, MEM);
	if (!s->mem)
		die("aligned_alloc");
	madvise(s->mem, MEM, MADV_HUGEPAGE);
	memset(s->mem, 1, MEM);
	s->mr = ibv_reg_mr(s->pd, s->mem, MEM,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	struct ibv_qp_init_attr a = {
		.send_cq = s->cq, .recv_cq = s->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1,
			 .max_recv_sge = 1, .max_inline_data = 64 },
	};
	s->qp = ibv_create_qp(s->pd, &a);
	if (!s->pd || !s->cq || !s->mr || !s->qp)
		die("setup");
	ibv_query_port(s->ctx, 1, &pa);
	me->qpn = s->qp->qp_num;
	me->lid = pa.lid;
	me->addr = (uintptr_t)s->mem;
	me->rkey = s->mr->rkey;
}

static void connect_side(struct side *s, const struct info *peer)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("init");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_4096;
	a.dest_qp_num = peer->qpn;
	a.ah_attr.dlid = peer->lid;
	a.ah_attr.port_num = 1;
	a.min_rnr_timer = 1;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					     IBV_QP_MAX_DEST_RD_ATOMIC |
					     IBV_QP_MIN_RNR_TIMER))
		die("rtr");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
					     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("rts");
}

static void post_recv(struct side *s)
{
	struct ibv_sge g = { (uintptr_t)s->mem, 64, s->mr->lkey };
	struct ibv_recv_wr r = { .sg_list = &g, .num_sge = 1 }, *bad;

	if (ibv_post_recv(s->qp, &r, &bad))
		die("post_recv");
}

static void post(struct side *s, enum ibv_wr_opcode op, uint32_t off,
		 uint32_t len, const struct info *peer, int inl)
{
	uint32_t roff = off + MEM / 2; /* distinct from the source locally */

	struct ibv_sge g = { (uintptr_t)s->mem + off, len, s->mr->lkey };
	struct ibv_send_wr w, *bad;

	memset(&w, 0, sizeof(w));
	w.sg_list = &g;
	w.num_sge = 1;
	w.opcode = op;
	w.send_flags = IBV_SEND_SIGNALED | (inl ? IBV_SEND_INLINE : 0);
	w.wr.rdma.remote_addr = peer->addr + roff;
	w.wr.rdma.rkey = peer->rkey;
	if (ibv_post_send(s->qp, &w, &bad))
		die("post_send");
}

/* Wait for n completions on s's CQ; returns receives seen. */
static void wait_n(struct side *s, int n)
{
	struct ibv_wc wc[16];

	while (n > 0) {
		int k = ibv_poll_cq(s->cq, n < 16 ? n : 16, wc), i;

		for (i = 0; i < k; i++)
			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "wc error %s\n",
					ibv_wc_status_str(wc[i].status));
				exit(1);
			}
		n -= k;
	}
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void pingpong_client(struct side *s, const struct info *peer, int iters)
{
	double *t = malloc(iters * sizeof(*t)), sum = 0;
	int i;

	for (i = 0; i < iters + 1000; i++) {
		double t0 = now_us();

		post_recv(s);
		post(s, IBV_WR_SEND, 64, 8, peer, 1);
		wait_n(s, 2); /* our send, the reply */
		if (i >= 1000)
			t[i - 1000] = now_us() - t0;
	}
	qsort(t, iters, sizeof(*t), cmp);
	for (i = 0; i < iters; i++)
		sum += t[i];
	printf("rc send ping-pong round trip (8 B inline): median %.2f us, "
	       "average %.2f us, 99%% %.2f us\n",
	       t[iters / 2], sum / iters, t[iters * 99 / 100]);
	free(t);
}

static void pingpong_server(struct side *s, const struct info *peer, int iters)
{
	int i;

	post_recv(s);
	for (i = 0; i < iters + 1000; i++) {
		wait_n(s, 1); /* the ping */
		post_recv(s);
		post(s, IBV_WR_SEND, 64, 8, peer, 1);
		wait_n(s, 1); /* our reply's send completion */
	}
}

static void write_bw(struct side *s, const struct info *peer, uint32_t size,
		     int window)
{
	int n = (int)((1u << 30) / size), i, out = 0;
	double t0;

	if (n > 20000)
		n = 20000;
	t0 = now_us();
	for (i = 0; i < n; i++) {
		post(s, IBV_WR_RDMA_WRITE, 0, size, peer, 0);
		if (++out == window) {
			wait_n(s, out);
			out = 0;
		}
	}
	wait_n(s, out);
	t0 = now_us() - t0;
	printf("rdma write %u KiB, window %d: %.0f MB/s (%.2f us per write)\n",
	       size >> 10, window, (double)n * size / t0, t0 / n);
}

/* The lean ping-pong: its own QP and CQs on the side's context and
 * memory (receives at offset 1 MiB, one slot per receive). */
#define LEAN_RQ 256
#define LEAN_BATCH 32
#define LEAN_SLOT 4160 /* GRH area + a 4 KiB datagram */
#define LEAN_MODERATION 64
#define LEAN_QKEY 0x1ee7

struct lean {
	struct side *s;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	int ud;
	unsigned next_slot, consumed, sends;
};

struct lean_info {
	uint32_t qpn;
	uint16_t lid;
};

static void lean_open(struct lean *l, struct side *s, int ud, struct lean_info *me)
{
	struct ibv_port_attr pa;

	memset(l, 0, sizeof(*l));
	l->s = s;
	l->ud = ud;
	l->scq = ibv_create_cq(s->ctx, 256, NULL, NULL, 0);
	l->rcq = ibv_create_cq(s->ctx, LEAN_RQ, NULL, NULL, 0);
	if (!l->scq || !l->rcq)
		die("lean cq");
	struct ibv_qp_init_attr a = {
		.send_cq = l->scq, .recv_cq = l->rcq,
		.qp_type = ud ? IBV_QPT_UD : IBV_QPT_RC,
		.cap = { .max_send_wr = 128, .max_recv_wr = LEAN_RQ, .max_send_sge = 1,
			 .max_recv_sge = 1, .max_inline_data = 64 },
	};
	l->qp = ibv_create_qp(s->pd, &a);
	if (!l->qp)
		die("lean qp");
	ibv_query_port(s->ctx, 1, &pa);
	me->qpn = l->qp->qp_num;
	me->lid = pa.lid;
}

static void lean_post_recvs(struct lean *l, int n)
{
	struct ibv_sge g[LEAN_RQ];
	struct ibv_recv_wr r[LEAN_RQ], *bad;
	int i;

	for (i = 0; i < n; i++) {
		uint64_t off = (1u << 20) + (uint64_t)(l->next_slot++ % LEAN_RQ) * LEAN_SLOT;

		g[i] = (struct ibv_sge){ (uintptr_t)l->s->mem + off, LEAN_SLOT, l->s->mr->lkey };
		r[i] = (struct ibv_recv_wr){ .sg_list = &g[i], .num_sge = 1,
					     .next = i + 1 < n ? &r[i + 1] : NULL };
	}
	if (ibv_post_recv(l->qp, r, &bad))
		die("lean post_recv");
}

static void lean_connect(struct lean *l, const struct lean_info *peer)
{
	struct ibv_qp_attr a;

	if (!l->ud) {
		struct side tmp = *l->s;
		struct info pi = { .qpn = peer->qpn, .lid = peer->lid };

		tmp.qp = l->qp;
		connect_side(&tmp, &pi);
	} else {
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		a.qkey = LEAN_QKEY;
		if (ibv_modify_qp(l->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
						     IBV_QP_PORT | IBV_QP_QKEY))
			die("ud init");
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		if (ibv_modify_qp(l->qp, &a, IBV_QP_STATE))
			die("ud rtr");
		a.qp_state = IBV_QPS_RTS;
		if (ibv_modify_qp(l->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
			die("ud rts");
		struct ibv_ah_attr ah = { .dlid = peer->lid, .port_num = 1 };

		l->ah = ibv_create_ah(l->s->pd, &ah);
		if (!l->ah)
			die("ud ah");
	}
	lean_post_recvs(l, LEAN_RQ);
}

static void lean_send(struct lean *l, const struct lean_info *peer)
{
	struct ibv_sge g = { (uintptr_t)l->s->mem + 64, 8, l->s->mr->lkey };
	struct ibv_send_wr w, *bad;
	int sig = ++l->sends % LEAN_MODERATION == 0;

	memset(&w, 0, sizeof(w));
	w.sg_list = &g;
	w.num_sge = 1;
	w.opcode = IBV_WR_SEND;
	w.send_flags = IBV_SEND_INLINE | (sig ? IBV_SEND_SIGNALED : 0);
	if (l->ud) {
		w.wr.ud.ah = l->ah;
		w.wr.ud.remote_qpn = peer->qpn;
		w.wr.ud.remote_qkey = LEAN_QKEY;
	}
	if (ibv_post_send(l->qp, &w, &bad))
		die("lean post_send");
	if (sig) {
		struct ibv_wc wc;

		while (ibv_poll_cq(l->scq, 1, &wc) == 0)
			;
		if (wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "lean send: %s\n", ibv_wc_status_str(wc.status));
			exit(1);
		}
	}
}

static void lean_wait_recv(struct lean *l)
{
	struct ibv_wc wc;

	while (ibv_poll_cq(l->rcq, 1, &wc) == 0)
		;
	if (wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "lean recv: %s\n", ibv_wc_status_str(wc.status));
		exit(1);
	}
	if (++l->consumed == LEAN_BATCH) {
		lean_post_recvs(l, LEAN_BATCH);
		l->consumed = 0;
	}
}

static void lean_client(struct lean *l, const struct lean_info *peer, int iters)
{
	double *t = malloc(iters * sizeof(*t)), sum = 0;
	int i;

	for (i = 0; i < iters + 1000; i++) {
		double t0 = now_us();

		lean_send(l, peer);
		lean_wait_recv(l);
		if (i >= 1000)
			t[i - 1000] = now_us() - t0;
	}
	qsort(t, iters, sizeof(*t), cmp);
	for (i = 0; i < iters; i++)
		sum += t[i];
	printf("%s am ping-pong floor (8 B inline, receives ahead, 1 in %d signaled): "
	       "one way median %.3f us, average %.3f us\n", l->ud ? "ud" : "rc",
	       LEAN_MODERATION, t[iters / 2] / 2, sum / iters / 2);
	free(t);
}

static void lean_server(struct lean *l, const struct lean_info *peer, int iters)
{
	int i;

	for (i = 0; i < iters + 1000; i++) {
		lean_wait_recv(l);
		lean_send(l, peer);
	}
}

static void pin(int which)
{
	const char *e = getenv("XPROC_PIN");
	int a, b;
	cpu_set_t set;

	if (!e || sscanf(e, "%d,%d", &a, &b) != 2)
		return;
	CPU_ZERO(&set);
	CPU_SET(which ? b : a, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity");
}

int main(int argc, char **argv)
{
	int local = argc > 1 && !strcmp(argv[1], "--local");
	int floor_only = argc > 1 && !strcmp(argv[1], "--floor");
	int opt = local || floor_only;
	int iters = argc > 1 + opt ? atoi(argv[1 + opt]) : 20000;
	struct side a, b;
	struct info ia, ib;
	int sv[2];
	pid_t pid;

	if (local) {
		open_side(&a, &ia);
		b = a;
		{
			struct ibv_qp_init_attr qa = {
				.send_cq = a.cq, .recv_cq = a.cq,
				.qp_type = IBV_QPT_RC,
				.cap = { 64, 64, 1, 1, 64 },
			};
			b.qp = ibv_create_qp(a.pd, &qa);
		}
		ib = ia;
		ib.qpn = b.qp->qp_num;
		connect_side(&a, &ib);
		connect_side(&b, &ia);
		printf("# one process\n");
		write_bw(&a, &ib, 65536, 1);
		write_bw(&a, &ib, 65536, 16);
		write_bw(&a, &ib, 1u << 20, 1);
		write_bw(&a, &ib, 1u << 20, 16);
		return 0;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		die("socketpair");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		char c;

		pin(0);
		open_side(&b, &ib);
		if (write(sv[1], &ib, sizeof(ib)) != sizeof(ib) ||
		    read(sv[1], &ia, sizeof(ia)) != sizeof(ia))
			die("exchange");
		connect_side(&b, &ia);
		if (write(sv[1], "r", 1) != 1 || read(sv[1], &c, 1) != 1)
			die("sync");
		if (!floor_only)
			pingpong_server(&b, &ia, iters);
		for (int ud = 0; ud < 2; ud++) {
			struct lean l;
			struct lean_info me, peer;

			lean_open(&l, &b, ud, &me);
			if (write(sv[1], &me, sizeof(me)) != sizeof(me) ||
			    read(sv[1], &peer, sizeof(peer)) != sizeof(peer))
				die("exchange");
			lean_connect(&l, &peer);
			if (write(sv[1], "r", 1) != 1)
				die("sync");
			lean_server(&l, &peer, iters);
		}
		/* stay while the client writes into our memory */
		if (read(sv[1], &c, 1) < 0)
			die("sync");
		return 0;
	}
	pin(1);
	open_side(&a, &ia);
	if (read(sv[0], &ib, sizeof(ib)) != sizeof(ib) ||
	    write(sv[0], &ia, sizeof(ia)) != sizeof(ia))
		die("exchange");
	connect_side(&a, &ib);
	{
		char c;

		if (read(sv[0], &c, 1) != 1 || write(sv[0], "g", 1) != 1)
			die("sync");
	}
	printf("# two processes (fork)\n");
	if (!floor_only)
		pingpong_client(&a, &ib, iters);
	for (int ud = 0; ud < 2; ud++) {
		struct lean l;
		struct lean_info me, peer;
		char c;

		lean_open(&l, &a, ud, &me);
		if (read(sv[0], &peer, sizeof(peer)) != sizeof(peer) ||
		    write(sv[0], &me, sizeof(me)) != sizeof(me))
			die("exchange");
		lean_connect(&l, &peer);
		if (read(sv[0], &c, 1) != 1)
			die("sync");
		lean_client(&l, &peer, iters);
	}
	if (!floor_only) {
		write_bw(&a, &ib, 65536, 1);
		write_bw(&a, &ib, 65536, 16);
		write_bw(&a, &ib, 1u << 20, 1);
		write_bw(&a, &ib, 1u << 20, 16);
	}
	if (write(sv[0], "x", 1) != 1)
		die("sync");
	waitpid(pid, NULL, 0);
	return 0;
}
