/*
 * Cross-process checks of a verbs device against IB semantics (TAP output,
 * exit status non-zero on any failure). Two processes, a client (prints
 * the TAP lines) and a server; the server reports its own checks to the
 * client. They meet through two FIFOs in a directory:
 *   xproc-test [DEVICE]                    forks the server itself
 *   xproc-test --server DIR [DEVICE]       two commands, e.g. in two
 *   xproc-test --client DIR [DEVICE]       network namespaces
 * (run each under tests/softrdma/run.sh). The client creates the FIFOs in
 * DIR when they do not exist; in --server mode the server waits for them.
 *
 * Checks: RC SEND with and without immediate, SRQ, RDMA WRITE/READ, WRITE
 * with immediate, fetch-add and compare-swap racing from both processes on
 * one counter (exact result), RNR wait then delivery, rnr_retry exceeded,
 * completion channel woken by the other process (poll() on its fd), UD
 * SEND with GRH, bad rkey -> remote access error (responder QP in error,
 * its async event), SRQ QP to error -> last WQE reached, and the server
 * SIGKILLed: the client's waiting SEND completes with retry exceeded and
 * nothing hangs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <infiniband/verbs.h>
#include "test-util.h"

#define MEM_SIZE (2u << 20)
#define NRACE 3000
#define NQP 5 /* A: main, B: on the SRQ, C: errors, D: rnr_retry 1, E: kill */

static int n_test, n_fail, is_server, rfd = -1, wfd = -1;
static char shmdir[64];

/* Whatever happened, leave nothing in /dev/shm (client of a fork run). */
static void shmdir_cleanup(void)
{
	struct dirent *e;
	char p[384];
	DIR *d;

	if (!shmdir[0] || is_server || !(d = opendir(shmdir)))
		return;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(p, sizeof(p), "%s/%s", shmdir, e->d_name);
			unlink(p);
		}
	closedir(d);
	rmdir(shmdir);
}

static void ok(int cond, const char *what)
{
	n_test++;
	if (!cond)
		n_fail++;
	printf("%sok %d - %s\n", cond ? "" : "not ", n_test, what);
	fflush(stdout);
}

static void put(const void *p, size_t n)
{
	if (write(wfd, p, n) != (ssize_t)n) {
		perror("xproc-test: write");
		exit(3);
	}
}

static void get(void *p, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(rfd, (char *)p + got, n - got);

		if (r <= 0) {
			fprintf(stderr, "xproc-test: peer went away\n");
			exit(3);
		}
		got += r;
	}
}

static void sync_peer(void)
{
	char c = 's';

	put(&c, 1);
	get(&c, 1);
}

/* The server's own checks travel to the client, which prints them. */
static void check(int cond, const char *what)
{
	if (is_server) {
		int v = !!cond;

		put(&v, sizeof(v));
	} else {
		ok(cond, what);
	}
}

static void server_check(const char *what)
{
	int v = 0;

	get(&v, sizeof(v));
	ok(v, what);
}

struct info {
	uint32_t qpn[NQP], ud_qpn;
	uint16_t lid;
	uint8_t gid[16];
	uint64_t addr;
	uint32_t rkey;
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_comp_channel *chan;
static struct ibv_srq *srq;
static struct ibv_mr *mr;
static struct ibv_qp *qp[NQP], *ud, *l1, *l2;
static char *mem;
static struct info me, peer;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ull + ts.tv_nsec / 1000000;
}

/* Poll cq for one completion, up to ms milliseconds. */
static int wait_wc(struct ibv_cq *c, struct ibv_wc *wc, int ms)
{
	uint64_t end = now_ms() + ms;

	do {
		int n = ibv_poll_cq(c, 1, wc);

		if (n)
			return n;
	} while (now_ms() < end);
	return 0;
}

static struct ibv_qp *make_qp(enum ibv_qp_type type, struct ibv_srq *s)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq, .recv_cq = cq, .srq = s, .qp_type = type,
		.cap = { .max_send_wr = 64, .max_recv_wr = s ? 0 : 64,
			 .max_send_sge = 2, .max_recv_sge = 2,
			 .max_inline_data = 64 },
	};
	return ibv_create_qp(pd, &a);
}

/* RC QPs are globally routed to `dgid` (RoCE ports route by GID only). */
static int to_rts(struct ibv_qp *q, uint32_t dqpn, uint16_t dlid,
		  const uint8_t *dgid, int rnr_retry, int min_rnr_timer)
{
	return sr_qp_to_rts(q, dqpn, dlid, dgid, 0x11111111, 4, rnr_retry,
			    min_rnr_timer);
}

static int post(struct ibv_qp *q, enum ibv_wr_opcode op, void *buf,
		uint32_t len, uint64_t raddr, uint32_t rkey, uint64_t wr_id,
		uint32_t imm)
{
	return sr_post_send(q, op, buf, len, mr->lkey, raddr, rkey, wr_id, imm);
}

static int atomic(struct ibv_qp *q, enum ibv_wr_opcode op, uint64_t *res,
		  uint64_t raddr, uint32_t rkey, uint64_t cmp_add, uint64_t swap)
{
	struct ibv_sge s = { (uintptr_t)res, 8, mr->lkey };
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 77;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = cmp_add;
	wr.wr.atomic.swap = swap;
	if (ibv_post_send(q, &wr, &bad) || !wait_wc(cq, &wc, 5000))
		return -1;
	return wc.status == IBV_WC_SUCCESS ? 0 : -1;
}

static int post_recv(struct ibv_qp *q, void *buf, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge s = { (uintptr_t)buf, len, mr->lkey };
	struct ibv_recv_wr r = { .wr_id = wr_id, .sg_list = &s, .num_sge = 1 },
			   *bad;

	if (!q)
		return ibv_post_srq_recv(srq, &r, &bad);
	return ibv_post_recv(q, &r, &bad);
}

/* Wait for an async event of the given type, up to ms. */
static int wait_async(enum ibv_event_type type, int ms)
{
	uint64_t end = now_ms() + ms;
	struct ibv_async_event ev;
	struct pollfd p = { ctx->async_fd, POLLIN, 0 };

	while (now_ms() < end) {
		if (poll(&p, 1, 100) != 1)
			continue;
		if (ibv_get_async_event(ctx, &ev))
			return 0;
		ibv_ack_async_event(&ev);
		if (ev.event_type == type)
			return 1;
	}
	return 0;
}

static void setup(const char *devname)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_port_attr pa;
	union ibv_gid gid;
	int i;

	for (i = 0; list && list[i]; i++)
		if (!devname || !strcmp(ibv_get_device_name(list[i]), devname))
			break;
	ctx = list && list[i] ? ibv_open_device(list[i]) : NULL;
	if (list)
		ibv_free_device_list(list);
	if (!ctx) {
		fprintf(stderr, "xproc-test: no device\n");
		exit(2);
	}
	fcntl(ctx->async_fd, F_SETFL, O_NONBLOCK);
	pd = ibv_alloc_pd(ctx);
	chan = ibv_create_comp_channel(ctx);
	cq = ibv_create_cq(ctx, 1024, NULL, chan, 0);
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 64, .max_sge = 1 } };
	srq = ibv_create_srq(pd, &sa);
	mem = aligned_alloc(4096, MEM_SIZE);
	memset(mem, 0, MEM_SIZE);
	mr = ibv_reg_mr(pd, mem, MEM_SIZE,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	for (i = 0; i < NQP; i++)
		qp[i] = make_qp(IBV_QPT_RC, i == 1 ? srq : NULL);
	ud = make_qp(IBV_QPT_UD, NULL);
	if (!pd || !chan || !cq || !srq || !mr || !ud || !qp[NQP - 1]) {
		fprintf(stderr, "xproc-test: setup failed: %m\n");
		exit(2);
	}
	ibv_query_port(ctx, 1, &pa);
	ibv_query_gid(ctx, 1, 0, &gid);
	for (i = 0; i < NQP; i++)
		me.qpn[i] = qp[i]->qp_num;
	me.ud_qpn = ud->qp_num;
	me.lid = pa.lid;
	memcpy(me.gid, gid.raw, 16);
	me.addr = (uintptr_t)mem;
	me.rkey = mr->rkey;
}

#define CNT_OFF (1u << 20) /* the racing counter, in the server's memory */

static void run(void)
{
	int i, r;

	put(&me, sizeof(me));
	get(&peer, sizeof(peer));
	r = 0;
	for (i = 0; i < NQP; i++)
		r |= to_rts(qp[i], peer.qpn[i], peer.lid, peer.gid, i == 3 ? 1 : 7,
			    i == 3 ? 1 : 12);
	r |= to_rts(ud, 0, 0, NULL, 0, 0);
	sync_peer();
	if (is_server) {
		check(!r, "");
		return;
	}
	ok(!r, "client QPs to RTS (RC and UD)");
	server_check("server QPs to RTS, connected to the client's");
}

static void client(void)
{
	struct ibv_wc wc;
	uint64_t t0;
	int i, got;

	/* 1. SEND without immediate: the receive is posted first. */
	sync_peer(); /* server posted */
	strcpy(mem, "hello across processes");
	ok(!post(qp[0], IBV_WR_SEND, mem, 23, 0, 0, 1, 0) &&
		   wait_wc(cq, &wc, 5000) && wc.status == IBV_WC_SUCCESS &&
		   wc.opcode == IBV_WC_SEND && wc.wr_id == 1,
	   "rc send: send completion");
	server_check("rc send: receive completion, data, byte_len, src_qp, no imm flag");

	/* 2. SEND with immediate. */
	sync_peer();
	ok(!post(qp[0], IBV_WR_SEND_WITH_IMM, mem, 5, 0, 0, 2, 0xabcd1234) &&
		   wait_wc(cq, &wc, 5000) && wc.status == IBV_WC_SUCCESS,
	   "rc send with immediate: send completion");
	server_check("rc send with immediate: imm_data and IBV_WC_WITH_IMM");

	/* 3. SEND to the SRQ-attached QP. */
	sync_peer();
	ok(!post(qp[1], IBV_WR_SEND, mem, 100, 0, 0, 3, 0) &&
		   wait_wc(cq, &wc, 5000) && wc.status == IBV_WC_SUCCESS,
	   "srq: send completion");
	server_check("srq: receive taken from the SRQ, data arrived");

	/* 4. RDMA WRITE 64 KiB. */
	for (i = 0; i < 65536; i++)
		mem[8192 + i] = (char)(i * 7 + 3);
	ok(!post(qp[0], IBV_WR_RDMA_WRITE, mem + 8192, 65536, peer.addr + 65536,
		 peer.rkey, 4, 0) &&
		   wait_wc(cq, &wc, 5000) && wc.status == IBV_WC_SUCCESS &&
		   wc.opcode == IBV_WC_RDMA_WRITE,
	   "rdma write 64 KiB: completion");
	sync_peer();
	server_check("rdma write 64 KiB: data in the server's memory");

	/* 5. RDMA READ 64 KiB (the server wrote a pattern). */
	sync_peer();
	memset(mem + 262144, 0, 65536);
	got = !post(qp[0], IBV_WR_RDMA_READ, mem + 262144, 65536,
		    peer.addr + 131072, peer.rkey, 5, 0) &&
	      wait_wc(cq, &wc, 5000) && wc.status == IBV_WC_SUCCESS &&
	      wc.opcode == IBV_WC_RDMA_READ && wc.byte_len == 65536;
	for (i = 0; got && i < 65536; i++)
		got = mem[262144 + i] == (char)(i * 13 + 1);
	ok(got, "rdma read 64 KiB: data from the server's memory");

	/* 6. RDMA WRITE with immediate. */
	sync_peer();
	strcpy(mem + 400000, "write-imm");
	ok(!post(qp[0], IBV_WR_RDMA_WRITE_WITH_IMM, mem + 400000, 10,
		 peer.addr + 500000, peer.rkey, 6, 0x55) &&
		   wait_wc(cq, &wc, 5000) && wc.status == IBV_WC_SUCCESS,
	   "rdma write with immediate: completion");
	server_check("rdma write with immediate: RECV_RDMA_WITH_IMM, imm, data");

	/* 7. Atomics racing from both processes on one counter. */
	sync_peer();
	{
		uint64_t *res = (uint64_t *)(mem + 600000), cur = 0;
		int bad = 0, n;

		for (i = 0; i < NRACE && !bad; i++)
			bad = atomic(qp[0], IBV_WR_ATOMIC_FETCH_AND_ADD, res,
				     peer.addr + CNT_OFF, peer.rkey, 1, 0);
		for (n = 0; n < NRACE && !bad;) {
			bad = atomic(qp[0], IBV_WR_ATOMIC_CMP_AND_SWP, res,
				     peer.addr + CNT_OFF, peer.rkey, cur, cur + 1);
			if (*res == cur)
				n++;
			cur = *res == cur ? cur + 1 : *res;
		}
		ok(!bad, "fetch-add and compare-swap from the client");
	}
	sync_peer();
	server_check("atomics racing from two processes: counter exact (4 x N)");

	/* 8. RNR: SEND before the receive exists waits (rnr_retry 7). */
	ok(!post(qp[0], IBV_WR_SEND, mem, 8, 0, 0, 8, 0) &&
		   !wait_wc(cq, &wc, 200),
	   "rnr (retry 7): no completion while the server has no receive");
	sync_peer(); /* server posts now */
	ok(wait_wc(cq, &wc, 5000) && wc.status == IBV_WC_SUCCESS && wc.wr_id == 8,
	   "rnr (retry 7): delivered once the receive is posted");
	server_check("rnr: the waiting send arrived");

	/* 9. rnr_retry 1 (timer 10 us): gives up. */
	t0 = now_ms();
	ok(!post(qp[3], IBV_WR_SEND, mem, 8, 0, 0, 9, 0) &&
		   wait_wc(cq, &wc, 5000) &&
		   wc.status == IBV_WC_RNR_RETRY_EXC_ERR && now_ms() - t0 < 2000,
	   "rnr_retry 1: IBV_WC_RNR_RETRY_EXC_ERR");

	/* 10. Completion channel of the server woken from here. */
	sync_peer(); /* server armed its CQ and posted a receive */
	ok(!post(qp[0], IBV_WR_SEND, mem, 8, 0, 0, 10, 0) &&
		   wait_wc(cq, &wc, 5000) && wc.status == IBV_WC_SUCCESS,
	   "send to an armed CQ");
	server_check("completion channel: poll() wakes, ibv_get_cq_event gives the CQ");

	/* 11. UD with GRH. */
	sync_peer(); /* server posted a UD receive */
	{
		struct ibv_ah_attr aa = { .dlid = peer.lid, .port_num = 1,
					  .is_global = 1 };
		struct ibv_sge s = { (uintptr_t)mem, 32, mr->lkey };
		struct ibv_send_wr wr, *bad;
		struct ibv_ah *ah;

		memcpy(aa.grh.dgid.raw, peer.gid, 16);
		aa.grh.hop_limit = 64;
		ah = ibv_create_ah(pd, &aa);
		strcpy(mem, "ud datagram with grh");
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 11;
		wr.sg_list = &s;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = peer.ud_qpn;
		wr.wr.ud.remote_qkey = 0x11111111;
		ok(ah && !ibv_post_send(ud, &wr, &bad) && wait_wc(cq, &wc, 5000) &&
			   wc.status == IBV_WC_SUCCESS,
		   "ud send with GRH: completion");
		server_check("ud receive: 40-byte GRH first, IBV_WC_GRH, src_qp, data");
		if (ah)
			ibv_destroy_ah(ah);
	}

	/* 12. Bad rkey: remote access error; the server's QP goes to error. */
	ok(!post(qp[2], IBV_WR_RDMA_WRITE, mem, 8, peer.addr, peer.rkey ^ 0x80,
		 12, 0) &&
		   wait_wc(cq, &wc, 5000) && wc.status == IBV_WC_REM_ACCESS_ERR,
	   "bad rkey: IBV_WC_REM_ACCESS_ERR");
	ok(!post(qp[2], IBV_WR_RDMA_WRITE, mem, 8, peer.addr + MEM_SIZE - 4,
		 peer.rkey, 13, 0) &&
		   wait_wc(cq, &wc, 5000) && wc.status == IBV_WC_WR_FLUSH_ERR,
	   "after the error: next WR flushed");
	sync_peer();
	server_check("responder QP in error after the access violation, QP_ACCESS_ERR event");
	server_check("srq QP moved to error: IBV_EVENT_QP_LAST_WQE_REACHED");

	/* 13. The server is SIGKILLed while a SEND of ours waits (RNR). */
	ok(!post(qp[4], IBV_WR_SEND, mem, 8, 0, 0, 14, 0) &&
		   !wait_wc(cq, &wc, 100),
	   "send waiting for a receive of the server");
	ok(!post(qp[4], IBV_WR_RDMA_WRITE, mem, 8, peer.addr, peer.rkey, 15, 0),
	   "rdma write queued behind it");
	{
		char c = 'k';

		put(&c, 1); /* server kills itself: its end of the FIFO closes */
		while (read(rfd, &c, 1) > 0)
			;
	}
}

static void server(void)
{
	struct ibv_wc wc;
	int i, got;

	/* 1 */
	post_recv(qp[0], mem + 1024, 256, 101);
	sync_peer();
	check(wait_wc(cq, &wc, 5000) && wc.status == IBV_WC_SUCCESS &&
		      wc.opcode == IBV_WC_RECV && wc.wr_id == 101 &&
		      wc.byte_len == 23 && wc.src_qp == peer.qpn[0] &&
		      !(wc.wc_flags & IBV_WC_WITH_IMM) &&
		      !strcmp(mem + 1024, "hello across processes"),
	      "");
	/* 2 */
	post_recv(qp[0], mem + 1024, 256, 102);
	sync_peer();
	check(wait_wc(cq, &wc, 5000) && wc.status == IBV_WC_SUCCESS &&
		      wc.wr_id == 102 && (wc.wc_flags & IBV_WC_WITH_IMM) &&
		      ntohl(wc.imm_data) == 0xabcd1234 && wc.byte_len == 5,
	      "");
	/* 3 */
	post_recv(NULL, mem + 2048, 256, 103);
	sync_peer();
	check(wait_wc(cq, &wc, 5000) && wc.status == IBV_WC_SUCCESS &&
		      wc.wr_id == 103 && wc.qp_num == qp[1]->qp_num &&
		      wc.byte_len == 100 && !memcmp(mem + 2048, "hello", 5),
	      "");
	/* 4 */
	sync_peer();
	for (got = 1, i = 0; i < 65536 && got; i++)
		got = mem[65536 + i] == (char)(i * 7 + 3);
	check(got, "");
	/* 5 */
	for (i = 0; i < 65536; i++)
		mem[131072 + i] = (char)(i * 13 + 1);
	sync_peer();
	/* 6 */
	post_recv(qp[0], mem + 1024, 256, 106);
	sync_peer();
	check(wait_wc(cq, &wc, 5000) && wc.status == IBV_WC_SUCCESS &&
		      wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
		      wc.wr_id == 106 && ntohl(wc.imm_data) == 0x55 &&
		      !strcmp(mem + 500000, "write-imm"),
	      "");
	/* 7: race through a loopback pair of our own */
	{
		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr qi;
		uint64_t *res = (uint64_t *)(mem + 600000), cur = 0;
		int bad, n;

		l1 = make_qp(IBV_QPT_RC, NULL);
		l2 = make_qp(IBV_QPT_RC, NULL);
		bad = !l1 || !l2 || to_rts(l1, l2->qp_num, me.lid, me.gid, 7, 12) ||
		      to_rts(l2, l1->qp_num, me.lid, me.gid, 7, 12);
		sync_peer();
		for (i = 0; i < NRACE && !bad; i++)
			bad = atomic(l1, IBV_WR_ATOMIC_FETCH_AND_ADD, res,
				     me.addr + CNT_OFF, mr->rkey, 1, 0);
		for (n = 0; n < NRACE && !bad;) {
			bad = atomic(l1, IBV_WR_ATOMIC_CMP_AND_SWP, res,
				     me.addr + CNT_OFF, mr->rkey, cur, cur + 1);
			if (*res == cur)
				n++;
			cur = *res == cur ? cur + 1 : *res;
		}
		sync_peer();
		check(!bad && *(uint64_t *)(mem + CNT_OFF) == 4 * NRACE, "");
		(void)ibv_query_qp(l1, &qa, IBV_QP_STATE, &qi);
	}
	/* 8 */
	sync_peer();
	post_recv(qp[0], mem + 1024, 256, 108);
	check(wait_wc(cq, &wc, 5000) && wc.status == IBV_WC_SUCCESS &&
		      wc.wr_id == 108,
	      "");
	/* 10 */
	{
		struct pollfd p = { chan->fd, POLLIN, 0 };
		struct ibv_cq *ecq = NULL;
		void *ectx;
		int fl = fcntl(chan->fd, F_GETFL);

		fcntl(chan->fd, F_SETFL, fl | O_NONBLOCK);
		post_recv(qp[0], mem + 1024, 256, 110);
		got = !ibv_req_notify_cq(cq, 0) && poll(&p, 1, 0) == 0;
		sync_peer();
		got = got && poll(&p, 1, 5000) == 1 &&
		      !ibv_get_cq_event(chan, &ecq, &ectx) && ecq == cq;
		if (ecq)
			ibv_ack_cq_events(cq, 1);
		got = got && wait_wc(cq, &wc, 5000) && wc.wr_id == 110;
		check(got, "");
	}
	/* 11 */
	post_recv(ud, mem + 4096, 40 + 256, 111);
	sync_peer();
	got = wait_wc(cq, &wc, 5000) && wc.status == IBV_WC_SUCCESS &&
	      wc.wr_id == 111 && wc.byte_len == 40 + 32 &&
	      (wc.wc_flags & IBV_WC_GRH) && wc.src_qp == peer.ud_qpn &&
	      (unsigned char)mem[4096] >> 4 == 6 &&
	      !memcmp(mem + 4096 + 24, me.gid, 16) &&
	      !strcmp(mem + 4096 + 40, "ud datagram with grh");
	check(got, "");
	/* 12 */
	sync_peer();
	{
		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr qi;

		got = !ibv_query_qp(qp[2], &qa, IBV_QP_STATE, &qi) &&
		      qa.qp_state == IBV_QPS_ERR &&
		      wait_async(IBV_EVENT_QP_ACCESS_ERR, 2000);
		check(got, "");
		qa.qp_state = IBV_QPS_ERR;
		got = !ibv_modify_qp(qp[1], &qa, IBV_QP_STATE) &&
		      wait_async(IBV_EVENT_QP_LAST_WQE_REACHED, 2000);
		check(got, "");
	}
	/* 13 */
	{
		char c;

		get(&c, 1);
		raise(SIGKILL);
	}
}

static void after_kill(void)
{
	struct ibv_wc wc;
	uint64_t t0 = now_ms();
	int a, b;

	a = wait_wc(cq, &wc, 10000) && wc.wr_id == 14 &&
	    wc.status == IBV_WC_RETRY_EXC_ERR;
	ok(a && now_ms() - t0 < 10000,
	   "server SIGKILLed: waiting send -> IBV_WC_RETRY_EXC_ERR, no hang");
	b = wait_wc(cq, &wc, 2000) && wc.wr_id == 15 &&
	    wc.status == IBV_WC_WR_FLUSH_ERR;
	ok(b, "the write behind it: flushed, in order");
	ok(!post(qp[0], IBV_WR_RDMA_WRITE, mem, 8, peer.addr, peer.rkey, 16, 0) &&
		   wait_wc(cq, &wc, 2000) && wc.status == IBV_WC_RETRY_EXC_ERR,
	   "new write to the dead server's QP: IBV_WC_RETRY_EXC_ERR");
}

static void teardown(void)
{
	int i, r = 0;

	for (i = 0; i < NQP; i++)
		r |= ibv_destroy_qp(qp[i]);
	r |= ibv_destroy_qp(ud);
	r |= ibv_destroy_srq(srq);
	r |= ibv_dereg_mr(mr);
	r |= ibv_destroy_cq(cq);
	r |= ibv_destroy_comp_channel(chan);
	r |= ibv_dealloc_pd(pd);
	r |= ibv_close_device(ctx);
	ok(!r, "teardown");
}

/* Our private registry directory is empty again: the last user (we,
 * after reaping the killed server) removed the segment. */
static void shm_gone(const char *dir)
{
	struct dirent *e;
	int left = 0;
	DIR *d = opendir(dir);

	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.')
			left++;
	if (d)
		closedir(d);
	ok(d && !left && !rmdir(dir),
	   "registry segment removed by its last user");
}

int main(int argc, char **argv)
{
	const char *dir = NULL, *devname = NULL;
	char tdir[512], a[512], b[512];
	const char *tmpd = getenv("TMPDIR");
	int role = 0; /* 0: fork, 1: server, 2: client */
	pid_t child = -1;

	if (argc > 2 && !strcmp(argv[1], "--server")) {
		role = 1;
		dir = argv[2];
		devname = argc > 3 ? argv[3] : NULL;
	} else if (argc > 2 && !strcmp(argv[1], "--client")) {
		role = 2;
		dir = argv[2];
		devname = argc > 3 ? argv[3] : NULL;
	} else {
		devname = argc > 1 ? argv[1] : NULL;
		snprintf(tdir, sizeof(tdir), "%s/xproc-test.XXXXXX",
			 tmpd && *tmpd ? tmpd : "/tmp");
		dir = mkdtemp(tdir);
		if (!dir) {
			perror("mkdtemp");
			return 2;
		}
	}
	snprintf(a, sizeof(a), "%s/c2s", dir);
	snprintf(b, sizeof(b), "%s/s2c", dir);
	if (role != 1) {
		if ((mkfifo(a, 0600) && errno != EEXIST) ||
		    (mkfifo(b, 0600) && errno != EEXIST)) {
			perror("mkfifo");
			return 2;
		}
	} else {
		int i;

		for (i = 0; i < 300 && access(b, F_OK); i++)
			usleep(100000);
	}
	if (role == 0 && !getenv("SOFTRDMA_SHM_DIR")) {
		/* A fabric of our own, so other users of the device on this
		 * machine neither meet our QPs nor keep the segment alive. */
		snprintf(shmdir, sizeof(shmdir), "/dev/shm/xproc-test.XXXXXX");
		if (!mkdtemp(shmdir)) {
			perror("mkdtemp");
			return 2;
		}
		setenv("SOFTRDMA_SHM_DIR", shmdir, 1);
		atexit(shmdir_cleanup);
	}
	if (role == 0) {
		fflush(stdout);
		child = fork();
		if (child < 0)
			return 2;
		role = child == 0 ? 1 : 2;
	}
	is_server = role == 1;
	if (is_server) {
		rfd = open(a, O_RDONLY);
		wfd = open(b, O_WRONLY);
	} else {
		wfd = open(a, O_WRONLY);
		rfd = open(b, O_RDONLY);
	}
	if (rfd < 0 || wfd < 0) {
		perror("xproc-test: fifo");
		return 2;
	}
	if (!is_server) {
		unlink(a);
		unlink(b);
		if (child >= 0)
			rmdir(dir);
	}
	setup(devname);
	run();
	if (is_server) {
		server();
		return 0; /* not reached: killed */
	}
	client();
	if (child > 0)
		waitpid(child, NULL, 0);
	after_kill();
	teardown();
	if (child > 0 && shmdir[0])
		shm_gone(shmdir);
	printf("1..%d\n", n_test);
	return n_fail ? 1 : 0;
}
