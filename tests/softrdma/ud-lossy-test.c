/*
 * The lossy UD knobs of the soft RDMA device, across two processes (fork:
 * the child sends, the parent receives). One case per run, chosen by the
 * first argument; the knobs come from the environment (ud-lossy-test.sh
 * sets them), as the provider reads them at load:
 *   drop N     SOFTRDMA_UD_DROP=10: N datagrams; about 90 % arrive (6 sigma
 *              bounds), in order, each consuming the next posted receive
 *              (a lost one consumes none); every send completes with
 *              success; an RC exchange beside it loses nothing. Prints
 *              "digest X" of the arrived sequence numbers (same seed, same
 *              digest).
 *   delay N    SOFTRDMA_UD_DELAY_US=50000: N datagrams, the sender then
 *              sleeps (no verbs call); each arrives once, in order, no
 *              sooner than the delay after it was sent.
 *   reorder N  SOFTRDMA_UD_REORDER=30: N datagrams all arrive once, some
 *              swapped with their successor, none further than one place.
 * TAP output; exit status 0 when every check passed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include "test-util.h"

#define QKEY 0x1234
#define SLOT 128 /* bytes per receive: GRH + payload */
#define GRH 40

struct msg {
	uint32_t seq;
	uint32_t pad;
	uint64_t sent_ns;
};

static int tests, fails;

static void ok(int cond, const char *what)
{
	tests++;
	if (!cond)
		fails++;
	printf("%sok %d - %s\n", cond ? "" : "not ", tests, what);
	fflush(stdout);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void xwrite(int fd, const void *p, size_t n)
{
	if (write(fd, p, n) != (ssize_t)n) {
		perror("write");
		exit(2);
	}
}

static int xread(int fd, void *p, size_t n)
{
	return read(fd, p, n) == (ssize_t)n ? 0 : -1;
}

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *ud, *rc;
	struct ibv_mr *mr;
	char *mem;
	size_t len;
};

static int side_open(struct side *s, const char *devname, int nrecv)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_qp_init_attr a;
	int i;

	memset(s, 0, sizeof(*s));
	for (i = 0; l && l[i]; i++)
		if (!strcmp(ibv_get_device_name(l[i]), devname))
			s->ctx = ibv_open_device(l[i]);
	if (l)
		ibv_free_device_list(l);
	if (!s->ctx)
		return -1;
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = ibv_create_cq(s->ctx, 2 * nrecv + 64, NULL, NULL, 0);
	s->len = (size_t)(nrecv + 16) * SLOT;
	s->mem = calloc(1, s->len);
	if (!s->pd || !s->cq || !s->mem)
		return -1;
	s->mr = ibv_reg_mr(s->pd, s->mem, s->len, IBV_ACCESS_LOCAL_WRITE);
	memset(&a, 0, sizeof(a));
	a.send_cq = a.recv_cq = s->cq;
	a.cap.max_send_wr = 64;
	a.cap.max_recv_wr = nrecv + 8;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	a.qp_type = IBV_QPT_UD;
	s->ud = ibv_create_qp(s->pd, &a);
	a.qp_type = IBV_QPT_RC;
	s->rc = ibv_create_qp(s->pd, &a);
	return s->mr && s->ud && s->rc ? 0 : -1;
}

static int post_recv(struct side *s, struct ibv_qp *q, int i, uint64_t wr_id)
{
	struct ibv_sge g = { (uintptr_t)(s->mem + (size_t)i * SLOT), SLOT,
			     s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &g, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return ibv_post_recv(q, &wr, &bad);
}

/* Poll until n completions or quiet for quiet_ms. */
static uint64_t *arr; /* arrival time of each completion polled */

static int poll_some(struct ibv_cq *cq, struct ibv_wc *wc, int n, int quiet_ms)
{
	uint64_t last = now_ns();
	int got = 0, r;

	while (got < n) {
		r = ibv_poll_cq(cq, n - got, wc + got);
		if (r < 0)
			return -1;
		if (r) {
			for (; arr && r; r--)
				arr[got++] = now_ns();
			got += r;
			last = now_ns();
		} else if (now_ns() - last > (uint64_t)quiet_ms * 1000000) {
			break;
		}
	}
	return got;
}

struct ids {
	uint32_t ud, rc;
};

/* The sender: n datagrams (payload struct msg), each completion checked;
 * then (drop case) 100 RC sends; then sleeps before leaving. */
static int sender(const char *dev, const char *mode, int n, int rfd, int wfd)
{
	struct side s;
	struct ids me, peer;
	struct ibv_ah_attr aa;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	int i, bad = 0, rc = strcmp(mode, "drop") == 0;
	char done = 1;

	if (side_open(&s, dev, 16))
		return 3;
	me.ud = s.ud->qp_num;
	me.rc = s.rc->qp_num;
	xwrite(wfd, &me, sizeof(me));
	if (xread(rfd, &peer, sizeof(peer)))
		return 3;
	if (sr_qp_to_rts(s.ud, 0, 0, NULL, QKEY, 0, 0, 0) ||
	    sr_qp_to_rts(s.rc, peer.rc, 1, NULL, 0, 1, 7, 1))
		return 3;
	memset(&aa, 0, sizeof(aa));
	aa.dlid = 1;
	aa.port_num = 1;
	ah = ibv_create_ah(s.pd, &aa);
	if (!ah || xread(rfd, &done, 1)) /* receiver's receives are posted */
		return 3;
	for (i = 0; i < n; i++) {
		struct msg *m = (struct msg *)s.mem;
		struct ibv_sge g = { (uintptr_t)m, sizeof(*m), s.mr->lkey };
		struct ibv_send_wr wr, *b;

		m->seq = i;
		m->sent_ns = now_ns();
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = i;
		wr.sg_list = &g;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = peer.ud;
		wr.wr.ud.remote_qkey = QKEY;
		if (ibv_post_send(s.ud, &wr, &b) ||
		    poll_some(s.cq, &wc, 1, 5000) != 1 ||
		    wc.status != IBV_WC_SUCCESS || wc.wr_id != (uint64_t)i)
			bad++;
	}
	for (i = 0; rc && i < 100; i++) {
		struct msg *m = (struct msg *)s.mem;

		m->seq = 1000000 + i;
		if (sr_post_send(s.rc, IBV_WR_SEND, m, sizeof(*m), s.mr->lkey,
				 0, 0, i, 0) ||
		    poll_some(s.cq, &wc, 1, 5000) != 1 ||
		    wc.status != IBV_WC_SUCCESS)
			bad++;
	}
	xwrite(wfd, &bad, sizeof(bad));
	/* No verbs call from here on: delayed datagrams must reach the
	 * receiver through its own polls. */
	if (xread(rfd, &done, 1))
		return 3;
	ibv_destroy_ah(ah);
	ibv_destroy_qp(s.ud);
	ibv_destroy_qp(s.rc);
	ibv_dereg_mr(s.mr);
	ibv_destroy_cq(s.cq);
	ibv_dealloc_pd(s.pd);
	ibv_close_device(s.ctx);
	free(s.mem);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "drop";
	int n = argc > 2 ? atoi(argv[2]) : 2000;
	const char *dev = argc > 3 ? argv[3] : "softrdma0";
	int p2c[2], c2p[2], i, got, st, bad = -1, is_drop, status;
	struct ids me, peer;
	struct ibv_wc *wc;
	uint32_t *seq;
	struct side s;
	char go = 1;
	pid_t pid;

	is_drop = !strcmp(mode, "drop");
	if (n < 1 || (!is_drop && strcmp(mode, "delay") &&
		      strcmp(mode, "reorder"))) {
		fprintf(stderr, "usage: %s drop|delay|reorder [N [DEV]]\n",
			argv[0]);
		return 2;
	}
	if (pipe(p2c) || pipe(c2p))
		return 2;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		close(p2c[1]);
		close(c2p[0]);
		_exit(sender(dev, mode, n, p2c[0], c2p[1]));
	}
	close(p2c[0]);
	close(c2p[1]);
	printf("1..%d\n", is_drop ? 7 : 5);
	wc = calloc(n + 200, sizeof(*wc));
	seq = calloc(n, sizeof(*seq));
	if (!wc || !seq || side_open(&s, dev, n + 100))
		return 2;
	me.ud = s.ud->qp_num;
	me.rc = s.rc->qp_num;
	xwrite(p2c[1], &me, sizeof(me));
	if (xread(c2p[0], &peer, sizeof(peer)))
		return 2;
	st = sr_qp_to_rts(s.ud, 0, 0, NULL, QKEY, 0, 0, 0) ||
	     sr_qp_to_rts(s.rc, peer.rc, 1, NULL, 0, 1, 7, 1);
	for (i = 0; !st && i < n; i++)
		st = post_recv(&s, s.ud, i, i);
	for (i = 0; !st && is_drop && i < 100; i++)
		st = post_recv(&s, s.rc, n + i, 1000000 + i);
	ok(!st, "both processes: UD and RC QPs ready, receives posted");
	xwrite(p2c[1], &go, 1);
	if (xread(c2p[0], &bad, sizeof(bad)))
		bad = -1;
	ok(bad == 0, "sender: every send completed with success");
	/* Everything sent; the sender no longer calls verbs. */
	arr = calloc(n + 200, sizeof(*arr));
	got = poll_some(s.cq, wc, n + 100, is_drop ? 300 : 1500);
	{
		int ud = 0, rcn = 0, inorder = 1, wrid_ok = 1, once = 1;
		int late = 0, swaps = 0, far = 0, errs = 0;
		uint64_t digest = 1469598103934665603ull;
		uint64_t delay = 0, lmin = UINT64_MAX, lmax = 0;
		const char *d = getenv("SOFTRDMA_UD_DELAY_US");
		char *seen = calloc(n, 1);

		if (d)
			delay = strtoull(d, NULL, 10) * 1000ull;
		for (i = 0; i < got; i++) {
			struct msg *m;

			if (wc[i].status != IBV_WC_SUCCESS) {
				errs++;
				continue;
			}
			if (wc[i].qp_num == s.rc->qp_num) {
				rcn++;
				continue;
			}
			m = (struct msg *)(s.mem + wc[i].wr_id * SLOT + GRH);
			if (wc[i].wr_id != (uint64_t)ud)
				wrid_ok = 0; /* receives consumed in order */
			if (m->seq >= (uint32_t)n || seen[m->seq])
				once = 0;
			else
				seen[m->seq] = 1;
			if (ud && m->seq < seq[ud - 1])
				inorder = 0, swaps++;
			if ((int)m->seq - ud > 1 || ud - (int)m->seq > 1)
				far++;
			seq[ud] = m->seq;
			digest = (digest ^ m->seq) * 1099511628211ull;
			ud++;
		}
		if (is_drop) {
			double mean = n * 0.9, sd = sqrt(n * 0.9 * 0.1);

			printf("# %d of %d datagrams arrived (expected %.0f +- %.0f)\n",
			       ud, n, mean, 6 * sd);
			printf("# digest %016llx\n", (unsigned long long)digest);
			ok(!errs && ud > mean - 6 * sd && ud < mean + 6 * sd,
			   "10 % drop: arrivals within 6 sigma of 90 %");
			ok(inorder && once && wrid_ok,
			   "drop: in order, no duplicate, a lost datagram consumed no receive");
			ok(rcn == 100, "RC beside it: all 100 sends arrived");
			{
				/* The receives left: exactly n - arrived. */
				struct ibv_wc w;
				int left = 0;

				struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };

				ibv_modify_qp(s.ud, &qa, IBV_QP_STATE); /* flushes them */
				while (poll_some(s.cq, &w, 1, 100) == 1)
					left += w.status == IBV_WC_WR_FLUSH_ERR;
				printf("# %d receives flushed\n", left);
				ok(left == n - ud,
				   "receives left unconsumed: as many as were lost");
			}
		} else if (!strcmp(mode, "delay")) {
			for (i = 0; i < got; i++) {
				struct msg *m = (struct msg *)(s.mem + wc[i].wr_id * SLOT + GRH);
				uint64_t l = arr[i] - m->sent_ns;

				if (wc[i].status != IBV_WC_SUCCESS)
					continue;
				lmin = l < lmin ? l : lmin;
				lmax = l > lmax ? l : lmax;
				late += l < delay;
			}
			printf("# %d of %d delayed datagrams arrived, after %.3f .. %.3f ms (delay %.3f ms)\n",
			       ud, n, lmin / 1e6, lmax / 1e6, delay / 1e6);
			ok(!errs && ud == n && once && inorder,
			   "delay: every datagram arrived once, in order");
			ok(delay && !late && lmax < delay + 1000000000ull,
			   "delay: none sooner than the delay, none a second later");
		} else {
			printf("# %d of %d arrived, %d swapped pairs\n", ud, n, swaps);
			ok(!errs && ud == n && once,
			   "reorder: every datagram arrived exactly once");
			ok(swaps > 0 && !far,
			   "reorder: some swapped with their successor, none further");
		}
		free(seen);
	}
	xwrite(p2c[1], &go, 1);
	waitpid(pid, &status, 0);
	if (s.ud)
		ibv_destroy_qp(s.ud);
	ibv_destroy_qp(s.rc);
	ibv_dereg_mr(s.mr);
	ibv_destroy_cq(s.cq);
	ibv_dealloc_pd(s.pd);
	ibv_close_device(s.ctx);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "sender exited cleanly");
	return fails ? 1 : 0;
}
