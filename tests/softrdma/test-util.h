/* Helpers shared by the device's own test programs (verbs-test.c,
 * xproc-test.c): bring a QP to RTS, post one send work request. */
#ifndef SOFTRDMA_TEST_UTIL_H
#define SOFTRDMA_TEST_UTIL_H

#include <arpa/inet.h>
#include <stdint.h>
#include <string.h>
#include <infiniband/verbs.h>

/* RESET -> INIT -> RTR -> RTS on port 1. UD QPs get `qkey`; RC QPs connect
 * to `dqpn` at LID `dlid` (and, when `dgid` is given, globally routed to
 * that GID from GID index 0, as a RoCE port needs) with remote
 * write/read/atomic access, `rd_atomic` outstanding reads/atomics each way
 * and the given RNR retry count and minimum RNR timer. 0 on success. */
static inline int sr_qp_to_rts(struct ibv_qp *q, uint32_t dqpn, uint16_t dlid,
			       const uint8_t *dgid, uint32_t qkey,
			       int rd_atomic, int rnr_retry, int min_rnr_timer)
{
	struct ibv_qp_attr a;
	int ud = q->qp_type == IBV_QPT_UD;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	if (ud) {
		a.qkey = qkey;
		if (ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					     IBV_QP_PORT | IBV_QP_QKEY))
			return -1;
	} else {
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ |
				    IBV_ACCESS_REMOTE_ATOMIC;
		if (ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
			return -1;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (ud) {
		if (ibv_modify_qp(q, &a, IBV_QP_STATE))
			return -1;
	} else {
		a.path_mtu = IBV_MTU_4096;
		a.dest_qp_num = dqpn;
		a.ah_attr.dlid = dlid;
		a.ah_attr.port_num = 1;
		if (dgid) {
			a.ah_attr.is_global = 1;
			memcpy(a.ah_attr.grh.dgid.raw, dgid, 16);
			a.ah_attr.grh.hop_limit = 64;
		}
		a.max_dest_rd_atomic = rd_atomic;
		a.min_rnr_timer = min_rnr_timer;
		if (ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_AV |
					     IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					     IBV_QP_RQ_PSN |
					     IBV_QP_MAX_DEST_RD_ATOMIC |
					     IBV_QP_MIN_RNR_TIMER))
			return -1;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	if (ud)
		return ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = rnr_retry;
	a.max_rd_atomic = rd_atomic;
	return ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
					    IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					    IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* One signalled work request of `len` bytes at `buf` (none when len is 0),
 * RDMA fields and immediate data set whatever the opcode. */
static inline int sr_post_send(struct ibv_qp *q, enum ibv_wr_opcode op,
			       void *buf, uint32_t len, uint32_t lkey,
			       uint64_t raddr, uint32_t rkey, uint64_t wr_id,
			       uint32_t imm)
{
	struct ibv_sge s = { (uintptr_t)buf, len, lkey };
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &s;
	wr.num_sge = len ? 1 : 0;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = htonl(imm);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(q, &wr, &bad);
}

#endif
