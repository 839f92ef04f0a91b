/*
 * Checks of single verbs against IB semantics, for any device (run it with
 * run.sh on the soft device): two RC QPs of one process connected to each
 * other, one UD pair, a completion channel. Prints "ok N - what" lines (TAP)
 * and exits non-zero on any failure.
 *   tests/softrdma/run.sh tests/softrdma/build/verbs-test [device]
 */
#include <errno.h>
#include <poll.h>
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>
#include "test-util.h"

static int n_test, n_fail;

static void ok(int cond, const char *what)
{
	n_test++;
	if (!cond)
		n_fail++;
	printf("%sok %d - %s\n", cond ? "" : "not ", n_test, what);
}

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_comp_channel *chan;
static uint16_t lid;

static int wait_wc(struct ibv_wc *wc)
{
	int i, n;

	for (i = 0; i < 1000000; i++) {
		n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return n;
	}
	return 0;
}

static struct ibv_qp *make_qp(enum ibv_qp_type type)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq, .recv_cq = cq, .qp_type = type,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 2, .max_recv_sge = 2,
			 .max_inline_data = 64 },
	};
	return ibv_create_qp(pd, &a);
}

static int to_rts(struct ibv_qp *qp, uint32_t dqpn)
{
	return sr_qp_to_rts(qp, dqpn, lid, NULL, 0x1234, 1, 7, 1);
}

static int post1(struct ibv_qp *qp, enum ibv_wr_opcode op, void *buf,
		 uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey,
		 uint64_t wr_id)
{
	return sr_post_send(qp, op, buf, len, lkey, raddr, rkey, wr_id, 0xabcd);
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	struct ibv_qp *a, *b, *ua, *ub;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	char *mem;
	int i, num;

	list = ibv_get_device_list(&num);
	for (i = 0; list && i < num; i++)
		if (argc < 2 || !strcmp(argv[1], ibv_get_device_name(list[i])))
			break;
	if (!list || i == num) {
		printf("Bail out! no device\n");
		return 1;
	}
	ctx = ibv_open_device(list[i]);
	ok(ctx != NULL, "open device");
	if (!ctx)
		return 1;
	ok(!ibv_query_device(ctx, &da) && da.phys_port_cnt >= 1, "query device");
	ok(!ibv_query_port(ctx, 1, &pa) && pa.state == IBV_PORT_ACTIVE,
	   "port 1 active");
	lid = pa.lid;
	ok(!ibv_query_gid(ctx, 1, 0, &gid) && gid.raw[0] == 0xfe &&
		   gid.raw[1] == 0x80 &&
		   !memcmp(gid.raw + 8, &da.node_guid, 8),
	   "gid 0 = fe80::node_guid");
	pd = ibv_alloc_pd(ctx);
	chan = ibv_create_comp_channel(ctx);
	ok(chan && chan->fd > 2, "completion channel has its own fd");
	cq = ibv_create_cq(ctx, 64, NULL, chan, 0);
	ok(pd && cq, "pd, cq");
	mem = aligned_alloc(4096, 65536);
	memset(mem, 0, 65536);
	mr = ibv_reg_mr(pd, mem, 65536,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	ok(mr && mr->lkey, "reg_mr");
	a = make_qp(IBV_QPT_RC);
	b = make_qp(IBV_QPT_RC);
	ok(a && b && !to_rts(a, b->qp_num) && !to_rts(b, a->qp_num),
	   "two RC QPs to RTS");

	/* SEND with immediate; receive posted after the send (RNR wait) */
	strcpy(mem, "hello softrdma");
	ok(!post1(a, IBV_WR_SEND_WITH_IMM, mem, 15, mr->lkey, 0, 0, 1),
	   "post send before a receive exists");
	ok(ibv_poll_cq(cq, 1, &wc) == 0, "no completion while receiver not ready");
	{
		struct ibv_sge s = { (uintptr_t)(mem + 1024), 64, mr->lkey };
		struct ibv_recv_wr r = { .wr_id = 2, .sg_list = &s, .num_sge = 1 }, *bad;

		ok(!ibv_req_notify_cq(cq, 0), "arm cq");
		ok(!ibv_post_recv(b, &r, &bad), "post recv");
	}
	{
		struct pollfd p = { chan->fd, POLLIN, 0 };
		struct ibv_cq *ecq;
		void *ectx;

		ok(poll(&p, 1, 1000) == 1 && !ibv_get_cq_event(chan, &ecq, &ectx) &&
			   ecq == cq,
		   "completion event on the channel");
		ibv_ack_cq_events(cq, 1);
	}
	{
		int got_send = 0, got_recv = 0;

		for (i = 0; i < 2 && wait_wc(&wc); i++) {
			if (wc.wr_id == 1 && wc.status == IBV_WC_SUCCESS &&
			    wc.opcode == IBV_WC_SEND)
				got_send = 1;
			if (wc.wr_id == 2 && wc.status == IBV_WC_SUCCESS &&
			    wc.opcode == IBV_WC_RECV && wc.byte_len == 15 &&
			    (wc.wc_flags & IBV_WC_WITH_IMM) &&
			    ntohl(wc.imm_data) == 0xabcd && wc.src_qp == a->qp_num)
				got_recv = 1;
		}
		ok(got_send && got_recv && !strcmp(mem + 1024, "hello softrdma"),
		   "send/recv completions and data");
	}

	/* RDMA WRITE, READ, atomics */
	memset(mem + 4096, 0x5a, 4096);
	ok(!post1(a, IBV_WR_RDMA_WRITE, mem + 4096, 4096, mr->lkey,
		  (uintptr_t)(mem + 8192), mr->rkey, 3) &&
		   wait_wc(&wc) && wc.status == IBV_WC_SUCCESS &&
		   wc.opcode == IBV_WC_RDMA_WRITE && (unsigned char)mem[8192 + 4095] == 0x5a,
	   "rdma write");
	ok(!post1(a, IBV_WR_RDMA_WRITE, NULL, 0, 0, 0, 0, 4) && wait_wc(&wc) &&
		   wc.status == IBV_WC_SUCCESS,
	   "zero-length rdma write with rkey 0");
	memset(mem + 12288, 0x11, 100);
	ok(!post1(a, IBV_WR_RDMA_READ, mem + 16384, 100, mr->lkey,
		  (uintptr_t)(mem + 12288), mr->rkey, 5) &&
		   wait_wc(&wc) && wc.status == IBV_WC_SUCCESS &&
		   wc.opcode == IBV_WC_RDMA_READ && mem[16384 + 99] == 0x11,
	   "rdma read");
	{
		uint64_t *t = (uint64_t *)(mem + 20480), *res = (uint64_t *)(mem + 20488);
		struct ibv_sge s = { (uintptr_t)res, 8, mr->lkey };
		struct ibv_send_wr wr, *bad;

		*t = 40;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 6;
		wr.sg_list = &s;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.atomic.remote_addr = (uintptr_t)t;
		wr.wr.atomic.rkey = mr->rkey;
		wr.wr.atomic.compare_add = 2;
		ok(!ibv_post_send(a, &wr, &bad) && wait_wc(&wc) &&
			   wc.status == IBV_WC_SUCCESS && *res == 40 && *t == 42,
		   "fetch and add");
		wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		wr.wr.atomic.compare_add = 42;
		wr.wr.atomic.swap = 7;
		ok(!ibv_post_send(a, &wr, &bad) && wait_wc(&wc) &&
			   wc.status == IBV_WC_SUCCESS && *res == 42 && *t == 7,
		   "compare and swap");
	}

	/* a bad rkey: remote access error, QP to error, later WRs flushed */
	ok(!post1(a, IBV_WR_RDMA_WRITE, mem, 8, mr->lkey, (uintptr_t)mem,
		  mr->rkey ^ 0x1000, 7) &&
		   wait_wc(&wc) && wc.status == IBV_WC_REM_ACCESS_ERR,
	   "bad rkey: remote access error");
	ok(!post1(a, IBV_WR_RDMA_WRITE, mem, 8, mr->lkey, (uintptr_t)mem,
		  mr->rkey, 8) &&
		   wait_wc(&wc) && wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 8,
	   "after the error: flushed");

	/* UD: every receive starts with a 40-byte GRH, counted in byte_len */
	ua = make_qp(IBV_QPT_UD);
	ub = make_qp(IBV_QPT_UD);
	ok(ua && ub && !to_rts(ua, 0) && !to_rts(ub, 0), "two UD QPs to RTS");
	{
		struct ibv_ah_attr aa = { .dlid = lid, .port_num = 1 };
		struct ibv_ah *ah = ibv_create_ah(pd, &aa);
		struct ibv_sge rs = { (uintptr_t)(mem + 32768), 40 + 256, mr->lkey };
		struct ibv_recv_wr r = { .wr_id = 9, .sg_list = &rs, .num_sge = 1 }, *rbad;
		struct ibv_sge ss = { (uintptr_t)mem, 100, mr->lkey };
		struct ibv_send_wr wr, *bad;
		int got = 0;

		memset(mem, 0x77, 100);
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 10;
		wr.sg_list = &ss;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = ub->qp_num;
		wr.wr.ud.remote_qkey = 0x1234;
		ok(ah && !ibv_post_recv(ub, &r, &rbad) && !ibv_post_send(ua, &wr, &bad),
		   "ud post");
		for (i = 0; i < 2 && wait_wc(&wc); i++)
			if (wc.wr_id == 9 && wc.status == IBV_WC_SUCCESS &&
			    wc.byte_len == 140 && wc.src_qp == ua->qp_num &&
			    mem[32768 + 40] == 0x77 && mem[32768 + 139] == 0x77)
				got = 1;
		ok(got, "ud receive: byte_len = 40 + payload, data after the GRH");
		ibv_destroy_ah(ah);
	}

	ok(!ibv_destroy_qp(a) && !ibv_destroy_qp(b) && !ibv_destroy_qp(ua) &&
		   !ibv_destroy_qp(ub) && !ibv_dereg_mr(mr) && !ibv_destroy_cq(cq) &&
		   !ibv_destroy_comp_channel(chan) && !ibv_dealloc_pd(pd) &&
		   !ibv_close_device(ctx),
	   "teardown");
	ibv_free_device_list(list);
	free(mem);
	printf("1..%d\n", n_test);
	return n_fail != 0;
}
