/*
 * Raw verbs cost of a device across two processes (fork): RC SEND ping-pong
 * round trip (post, poll the send and the peer's reply) and RDMA WRITE
 * bandwidth at 64 KiB and 1 MiB (one signaled WRITE at a time, then a
 * window of 16). With --local both QPs live in one process (the memcpy
 * floor of the same data path). Prints one line per figure.
 *   tests/softrdma/run.sh tests/softrdma/build/xproc-bench [--local] [ITERS]
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
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
	s->mem = aligned_alloc(4096, MEM);
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

int main(int argc, char **argv)
{
	int local = argc > 1 && !strcmp(argv[1], "--local");
	int iters = argc > 1 + local ? atoi(argv[1 + local]) : 20000;
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

		open_side(&b, &ib);
		if (write(sv[1], &ib, sizeof(ib)) != sizeof(ib) ||
		    read(sv[1], &ia, sizeof(ia)) != sizeof(ia))
			die("exchange");
		connect_side(&b, &ia);
		if (write(sv[1], "r", 1) != 1 || read(sv[1], &c, 1) != 1)
			die("sync");
		pingpong_server(&b, &ia, iters);
		/* stay while the client writes into our memory */
		if (read(sv[1], &c, 1) < 0)
			die("sync");
		return 0;
	}
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
	pingpong_client(&a, &ib, iters);
	write_bw(&a, &ib, 65536, 1);
	write_bw(&a, &ib, 65536, 16);
	write_bw(&a, &ib, 1u << 20, 1);
	write_bw(&a, &ib, 1u << 20, 16);
	if (write(sv[0], "x", 1) != 1)
		die("sync");
	waitpid(pid, NULL, 0);
	return 0;
}
