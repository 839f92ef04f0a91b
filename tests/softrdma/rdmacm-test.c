/*
 * Checks of the soft RDMA CM (rdmacm/, loaded as librdmacm.so.1 under
 * SOFTRDMA_CM=1 tests/softrdma/run.sh) with the librdmacm API, TAP output.
 *
 *   rdmacm-test server PORTFILE [ADDR]   serves the cases below until killed
 *       (port 0: the one the kernel gives, written to PORTFILE)
 *   rdmacm-test client ADDR PORT CASE... one connection per case:
 *       accept      private data both ways (56 and 196 bytes, byte for
 *                   byte), CONNECT_RESPONSE then rdma_establish without a QP,
 *                   rdma_init_qp_attr on both sides against what the peer
 *                   says of its port (LID / GID / QPN), client disconnects
 *       srvdisc     the same, the server disconnects
 *       reject      rdma_reject with 148 bytes of private data: REJECTED,
 *                   status 28, the bytes
 *       ucxerr      reject, destroy the id, then acknowledge its request
 *                   (libuct_rdmacm's error path): no hang, REJECTED
 *       qp          QPs on the ids (rdma_create_qp): ESTABLISHED on both
 *                   sides, then an RC SEND over them
 *       die         the server SIGKILLs itself on the request: REJECTED
 *       killsrv     the server SIGKILLs itself once established:
 *                   DISCONNECTED
 *       killcli     this process SIGKILLs itself once established (the
 *                   server's verdict: case "result:killcli")
 *       killreq     this process SIGKILLs itself right after rdma_connect
 *       result:NAME the server's verdict on its side of case NAME
 *   rdmacm-test local        one process: EAGAIN on a non-blocking channel,
 *       oversized private data (EINVAL), no listener (REJECTED 8), a silent
 *       port (UNREACHABLE, -ETIMEDOUT), ephemeral and busy ports, destroy
 *       waiting for an acknowledgement, migrate
 *   rdmacm-test unreach ADDR rdma_resolve_addr to an address with no route
 *   rdmacm-test nodev ADDR   an address no port owns: ADDR_ERROR -ENODEV
 * Exit status: failed checks.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

static int n_test, n_fail;

static void ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ok(int cond, const char *fmt, ...)
{
	va_list ap;

	n_test++;
	if (!cond)
		n_fail++;
	printf("%s %d - ", cond ? "ok" : "not ok", n_test);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* The next event within `ms`, or NULL (channel fd non-blocking). */
static struct rdma_cm_event *get_event(struct rdma_event_channel *ch, int ms)
{
	struct rdma_cm_event *ev;
	double end = now_s() + ms / 1000.0;

	for (;;) {
		struct pollfd p = { .fd = ch->fd, .events = POLLIN };
		int left = (int)((end - now_s()) * 1000);

		if (!rdma_get_cm_event(ch, &ev))
			return ev;
		if (errno != EAGAIN || left <= 0)
			return NULL;
		poll(&p, 1, left);
	}
}

static struct rdma_event_channel *channel(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();

	if (!ch) {
		perror("rdma_create_event_channel");
		exit(100);
	}
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	return ch;
}

/* What each side says of itself in its private data. */
struct hello {
	char name[16];
	uint32_t qpn;
	uint16_t lid;
	uint8_t link_layer, port;
	uint8_t gid[16];
};

static void pattern(uint8_t *b, int len, int seed)
{
	for (int i = 0; i < len; i++)
		b[i] = (uint8_t)(seed + i * 7);
}

static int check_pattern(const uint8_t *b, int from, int len, int seed)
{
	for (int i = from; i < len; i++)
		if (b[i] != (uint8_t)(seed + i * 7))
			return 0;
	return 1;
}

static void describe(struct rdma_cm_id *id, struct hello *h, const char *name, uint32_t qpn)
{
	struct ibv_port_attr pa;
	union ibv_gid g;

	memset(h, 0, sizeof(*h));
	snprintf(h->name, sizeof(h->name), "%s", name);
	h->qpn = qpn;
	h->port = id->port_num;
	if (id->verbs && !ibv_query_port(id->verbs, id->port_num, &pa)) {
		h->lid = pa.lid;
		h->link_layer = pa.link_layer;
	}
	/* our GID: the path's source GID (the CM's choice), else index 0 */
	if (id->route.path_rec)
		memcpy(h->gid, id->route.path_rec[0].sgid.raw, 16);
	else if (id->verbs && !ibv_query_gid(id->verbs, id->port_num, 0, &g))
		memcpy(h->gid, g.raw, 16);
}

/* rdma_init_qp_attr against what the peer says (peer) and our own port. */
static void check_qp_attr(const char *who, struct rdma_cm_id *id, const struct hello *peer)
{
	struct ibv_qp_attr a;
	struct ibv_port_attr pa;
	int mask = 0, rc;
	int roce;

	if (ibv_query_port(id->verbs, id->port_num, &pa)) {
		ok(0, "%s: ibv_query_port", who);
		return;
	}
	roce = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
	a.qp_state = IBV_QPS_INIT;
	rc = rdma_init_qp_attr(id, &a, &mask);
	ok(!rc && a.qp_state == IBV_QPS_INIT && a.port_num == id->port_num &&
	   (mask & (IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS)) ==
		   (IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS),
	   "%s: init_qp_attr INIT (port %d, mask 0x%x)", who, a.port_num, mask);
	a.qp_state = IBV_QPS_RTR;
	rc = rdma_init_qp_attr(id, &a, &mask);
	ok(!rc && a.dest_qp_num == peer->qpn && a.path_mtu >= IBV_MTU_256 &&
	   a.ah_attr.port_num == id->port_num && (mask & IBV_QP_AV) && (mask & IBV_QP_DEST_QPN),
	   "%s: init_qp_attr RTR: dest_qp_num 0x%x (peer's 0x%x), path_mtu %d", who,
	   a.dest_qp_num, peer->qpn, a.path_mtu);
	if (roce) {
		struct ibv_gid_entry e;
		int gr = ibv_query_gid_ex(id->verbs, id->port_num, a.ah_attr.grh.sgid_index, &e, 0);

		ok(a.ah_attr.is_global && !memcmp(a.ah_attr.grh.dgid.raw, peer->gid, 16) &&
		   a.ah_attr.grh.hop_limit > 1 && !gr && e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
		   !memcmp(e.gid.raw, id->route.path_rec[0].sgid.raw, 16) && peer->lid == 0,
		   "%s: RoCE ah: global, dgid = the peer's GID, sgid_index %d a RoCE v2 entry of our address",
		   who, a.ah_attr.grh.sgid_index);
	} else {
		ok(!a.ah_attr.is_global && a.ah_attr.dlid == peer->lid && peer->lid != 0,
		   "%s: IB ah: dlid %d = the peer's LID %d, not global", who, a.ah_attr.dlid,
		   peer->lid);
	}
	a.qp_state = IBV_QPS_RTS;
	rc = rdma_init_qp_attr(id, &a, &mask);
	ok(!rc && (mask & IBV_QP_SQ_PSN) && (mask & IBV_QP_TIMEOUT) && a.timeout > 0,
	   "%s: init_qp_attr RTS (timeout %d)", who, a.timeout);
}

/* ------------------------------------------------------------ server */

#define MAX_RESULTS 32
static struct {
	char name[16];
	char verdict[64];
} results[MAX_RESULTS];

static void verdict(const char *name, const char *v)
{
	int i, free_slot = -1;

	for (i = 0; i < MAX_RESULTS; i++) {
		if (!strcmp(results[i].name, name)) {
			free_slot = i;
			break;
		}
		if (free_slot < 0 && !results[i].name[0])
			free_slot = i;
	}
	if (free_slot < 0)
		return;
	snprintf(results[free_slot].name, sizeof(results[0].name), "%s", name);
	snprintf(results[free_slot].verdict, sizeof(results[0].verdict), "%s", v);
	fprintf(stderr, "server: %s: %s\n", name, v);
}

static const char *verdict_of(const char *name)
{
	for (int i = 0; i < MAX_RESULTS; i++)
		if (!strcmp(results[i].name, name))
			return results[i].verdict;
	return "pending";
}

struct conn {
	char name[16];
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	char buf[64];
	int bad;
};

static void server_checks(struct conn *c, struct rdma_cm_event *ev, const struct hello *peer)
{
	/* everything printed goes to stderr; failures make the verdict */
	const uint8_t *pd = ev->param.conn.private_data;
	struct ibv_qp_attr a;
	int mask, bad = 0;

	if (ev->param.conn.private_data_len != 56 || !check_pattern(pd, sizeof(*peer), 56, 3))
		bad |= 1;
	if (!ev->listen_id || ev->id == ev->listen_id || !ev->id->verbs || !ev->id->pd)
		bad |= 2;
	a.qp_state = IBV_QPS_RTR;
	if (rdma_init_qp_attr(ev->id, &a, &mask) || a.dest_qp_num != peer->qpn)
		bad |= 4;
	else if (a.ah_attr.is_global ? memcmp(a.ah_attr.grh.dgid.raw, peer->gid, 16)
				     : a.ah_attr.dlid != peer->lid)
		bad |= 8;
	if (ev->param.conn.qp_num != peer->qpn)
		bad |= 16;
	c->bad = bad;
}

static int server(const char *portfile, const char *addr)
{
	struct rdma_event_channel *ch = channel();
	struct rdma_cm_id *lid;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	char tmp[4096];
	FILE *f;

	if (addr && inet_pton(AF_INET, addr, &sin.sin_addr) != 1)
		return 100;
	if (rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP) || rdma_bind_addr(lid, (void *)&sin) ||
	    rdma_listen(lid, 16)) {
		perror("server: listen");
		return 100;
	}
	/* written whole, then renamed: a reader never sees half of it */
	snprintf(tmp, sizeof(tmp), "%s.tmp", portfile);
	f = fopen(tmp, "w");
	if (!f)
		return 100;
	fprintf(f, "%d\n", ntohs(rdma_get_src_port(lid)));
	fclose(f);
	rename(tmp, portfile);
	fprintf(stderr, "server: listening on port %d\n", ntohs(rdma_get_src_port(lid)));
	for (;;) {
		struct rdma_cm_event *ev = get_event(ch, 3600 * 1000);
		struct conn *c;
		char v[64];

		if (!ev)
			continue;
		c = ev->id->context;
		switch (ev->event) {
		case RDMA_CM_EVENT_CONNECT_REQUEST: {
			struct hello peer, me;
			uint8_t pd[196];
			struct rdma_conn_param p;
			struct rdma_cm_id *id = ev->id;

			memcpy(&peer, ev->param.conn.private_data, sizeof(peer));
			peer.name[15] = 0;
			fprintf(stderr, "server: request %s\n", peer.name);
			if (!strncmp(peer.name, "result:", 7)) {
				char r[148];

				memset(r, 0, sizeof(r));
				snprintf(r, sizeof(r), "%s", verdict_of(peer.name + 7));
				rdma_reject(id, r, sizeof(r));
				rdma_ack_cm_event(ev);
				rdma_destroy_id(id);
				break;
			}
			if (!strcmp(peer.name, "die"))
				raise(SIGKILL);
			if (!strcmp(peer.name, "ucxerr")) {
				/* libuct_rdmacm's error path: reject, destroy the new
				 * id, then acknowledge its request (counted against the
				 * listener: no wait) */
				uint8_t hdr[2] = { 0, 0xf3 };

				rdma_reject(id, hdr, sizeof(hdr));
				rdma_destroy_id(id);
				rdma_ack_cm_event(ev);
				verdict("ucxerr", "ok");
				break;
			}
			c = calloc(1, sizeof(*c));
			snprintf(c->name, sizeof(c->name), "%s", peer.name);
			c->id = id;
			server_checks(c, ev, &peer);
			if (c->bad) {
				snprintf(v, sizeof(v), "request checks failed (0x%x)", c->bad);
				verdict(c->name, v);
			}
			rdma_ack_cm_event(ev);
			id->context = c;
			if (!strcmp(peer.name, "reject")) {
				pattern(pd, 148, 11);
				rdma_reject(id, pd, 148);
				verdict(c->name, c->bad ? v : "ok");
				break;
			}
			if (!strcmp(peer.name, "killreq"))
				usleep(300000); /* the client is dead by now */
			memset(&p, 0, sizeof(p));
			if (!strcmp(peer.name, "qp")) {
				struct ibv_qp_init_attr qa = { 0 };
				struct ibv_recv_wr wr = { 0 }, *bad;
				struct ibv_sge sge;

				c->cq = ibv_create_cq(id->verbs, 16, NULL, NULL, 0);
				c->mr = ibv_reg_mr(id->pd, c->buf, sizeof(c->buf), IBV_ACCESS_LOCAL_WRITE);
				qa.send_cq = qa.recv_cq = c->cq;
				qa.qp_type = IBV_QPT_RC;
				qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
				qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
				if (!c->cq || !c->mr || rdma_create_qp(id, NULL, &qa)) {
					verdict(c->name, "rdma_create_qp failed");
					break;
				}
				sge.addr = (uintptr_t)c->buf;
				sge.length = sizeof(c->buf);
				sge.lkey = c->mr->lkey;
				wr.sg_list = &sge;
				wr.num_sge = 1;
				ibv_post_recv(id->qp, &wr, &bad);
			}
			describe(id, &me, "server", id->qp ? id->qp->qp_num : 0x5a5a5);
			pattern(pd, sizeof(pd), 5);
			memcpy(pd, &me, sizeof(me));
			p.private_data = pd;
			p.private_data_len = sizeof(pd);
			p.qp_num = me.qpn;
			p.responder_resources = p.initiator_depth = 1;
			p.rnr_retry_count = 7;
			if (rdma_accept(id, &p)) {
				snprintf(v, sizeof(v), "rdma_accept: %s", strerror(errno));
				verdict(c->name, !strcmp(c->name, "killreq") ? "ok" : v);
			}
			break;
		}
		case RDMA_CM_EVENT_ESTABLISHED:
			rdma_ack_cm_event(ev);
			fprintf(stderr, "server: %s established\n", c->name);
			if (!strcmp(c->name, "killsrv"))
				raise(SIGKILL);
			if (!strcmp(c->name, "killreq"))
				verdict(c->name, "established with a dead client");
			if (!strcmp(c->name, "srvdisc") && rdma_disconnect(c->id))
				verdict(c->name, "rdma_disconnect failed");
			if (!strcmp(c->name, "qp")) {
				struct ibv_wc wc;
				double end = now_s() + 5;
				int n = 0;

				while (now_s() < end && (n = ibv_poll_cq(c->cq, 1, &wc)) == 0)
					usleep(1000);
				verdict(c->name, n == 1 && wc.status == IBV_WC_SUCCESS &&
							 !strcmp(c->buf, "hello over rdmacm") && !c->bad ?
						 "ok" : "no SEND received over the QP");
			}
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			rdma_ack_cm_event(ev);
			fprintf(stderr, "server: %s disconnected\n", c->name);
			if (!strcmp(c->name, "accept") || !strcmp(c->name, "srvdisc") ||
			    !strcmp(c->name, "killcli"))
				verdict(c->name, c->bad ? "request checks failed" : "ok");
			rdma_disconnect(c->id);
			goto drop;
		case RDMA_CM_EVENT_REJECTED:
		case RDMA_CM_EVENT_UNREACHABLE:
		case RDMA_CM_EVENT_CONNECT_ERROR:
		{
			/* the event is gone once acknowledged: keep its type */
			enum rdma_cm_event_type kind = ev->event;

			snprintf(v, sizeof(v), "%s status %d", rdma_event_str(ev->event), ev->status);
			fprintf(stderr, "server: %s: %s\n", c ? c->name : "?", v);
			rdma_ack_cm_event(ev);
			if (c && !strcmp(c->name, "killreq"))
				verdict(c->name, (kind == RDMA_CM_EVENT_REJECTED ||
						  kind == RDMA_CM_EVENT_UNREACHABLE) ? "ok" : v);
			else if (c)
				verdict(c->name, v);
			goto drop;
		}
		default:
			fprintf(stderr, "server: unexpected %s\n", rdma_event_str(ev->event));
			rdma_ack_cm_event(ev);
			break;
		drop:
			if (c) {
				if (c->id->qp)
					rdma_destroy_qp(c->id);
				rdma_destroy_id(c->id);
				if (c->mr)
					ibv_dereg_mr(c->mr);
				if (c->cq)
					ibv_destroy_cq(c->cq);
				free(c);
			}
			break;
		}
	}
}

/* ------------------------------------------------------------ client */

static int resolve(struct rdma_event_channel *ch, struct rdma_cm_id *id, struct sockaddr *dst,
		   const char *what)
{
	struct rdma_cm_event *ev;
	int good;

	if (rdma_resolve_addr(id, NULL, dst, 2000)) {
		ok(0, "%s: rdma_resolve_addr: %s", what, strerror(errno));
		return -1;
	}
	ev = get_event(ch, 5000);
	good = ev && ev->event == RDMA_CM_EVENT_ADDR_RESOLVED && ev->id == id && id->verbs &&
	       id->pd && id->port_num == 1;
	if (!good) {
		ok(0, "%s: ADDR_RESOLVED (got %s %d)", what, ev ? rdma_event_str(ev->event) : "none",
		   ev ? ev->status : 0);
		if (ev)
			rdma_ack_cm_event(ev);
		return -1;
	}
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(id, 2000)) {
		ok(0, "%s: rdma_resolve_route: %s", what, strerror(errno));
		return -1;
	}
	ev = get_event(ch, 5000);
	good = ev && ev->event == RDMA_CM_EVENT_ROUTE_RESOLVED && id->route.num_paths == 1 &&
	       id->route.path_rec && id->route.path_rec[0].mtu >= IBV_MTU_256;
	if (ev)
		rdma_ack_cm_event(ev);
	if (!good) {
		ok(0, "%s: ROUTE_RESOLVED", what);
		return -1;
	}
	return 0;
}

static int client_case(struct sockaddr_in *dst, const char *name)
{
	struct rdma_event_channel *ch = channel();
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
	struct rdma_conn_param p;
	struct hello me, peer;
	uint8_t pd[56];
	struct ibv_cq *cq = NULL;
	struct ibv_mr *mr = NULL;
	char buf[64] = "hello over rdmacm";
	int is_qp = !strcmp(name, "qp");
	double t0;

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) {
		ok(0, "%s: rdma_create_id", name);
		return -1;
	}
	if (resolve(ch, id, (struct sockaddr *)dst, name))
		return -1;
	if (is_qp) {
		struct ibv_qp_init_attr qa = { 0 };

		cq = ibv_create_cq(id->verbs, 16, NULL, NULL, 0);
		mr = ibv_reg_mr(id->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
		qa.send_cq = qa.recv_cq = cq;
		qa.qp_type = IBV_QPT_RC;
		qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
		qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
		if (!cq || !mr || rdma_create_qp(id, NULL, &qa)) {
			ok(0, "qp: rdma_create_qp: %s", strerror(errno));
			return -1;
		}
	}
	describe(id, &me, name, id->qp ? id->qp->qp_num : 0x1234);
	pattern(pd, sizeof(pd), 3);
	memcpy(pd, &me, sizeof(me));
	memset(&p, 0, sizeof(p));
	p.private_data = pd;
	p.private_data_len = sizeof(pd);
	p.qp_num = me.qpn;
	p.responder_resources = p.initiator_depth = 1;
	p.retry_count = p.rnr_retry_count = 7;
	if (rdma_connect(id, &p)) {
		ok(0, "%s: rdma_connect: %s", name, strerror(errno));
		return -1;
	}
	if (!strcmp(name, "killreq"))
		raise(SIGKILL);
	t0 = now_s();
	ev = get_event(ch, 10000);
	if (!ev) {
		ok(0, "%s: an answer to the request", name);
		return -1;
	}
	if (!strncmp(name, "result:", 7)) {
		char v[149];
		int good = ev->event == RDMA_CM_EVENT_REJECTED;

		memcpy(v, ev->param.conn.private_data, 148);
		v[148] = 0;
		rdma_ack_cm_event(ev);
		rdma_destroy_id(id);
		rdma_destroy_event_channel(ch);
		if (!good)
			return -1;
		if (!strcmp(v, "pending"))
			return 1;
		ok(!strcmp(v, "ok"), "server side of %s: %s", name + 7, v);
		return 0;
	}
	if (!strcmp(name, "ucxerr")) {
		const uint8_t *rp = ev->param.conn.private_data;

		ok(ev->event == RDMA_CM_EVENT_REJECTED && ev->status == 28 &&
		   ev->param.conn.private_data_len == 148 && rp[0] == 0 && rp[1] == 0xf3,
		   "ucxerr: reject + destroy before ack: REJECTED status %d, header as sent",
		   ev->status);
		rdma_ack_cm_event(ev);
		rdma_destroy_id(id);
		rdma_destroy_event_channel(ch);
		return 0;
	}
	if (!strcmp(name, "reject") || !strcmp(name, "die")) {
		const uint8_t *rp = ev->param.conn.private_data;
		int good = ev->event == RDMA_CM_EVENT_REJECTED && ev->status == 28 &&
			   ev->param.conn.private_data_len == 148;

		if (!strcmp(name, "reject"))
			ok(good && check_pattern(rp, 0, 148, 11),
			   "reject: REJECTED status %d, %d bytes of private data, as sent (%s)",
			   ev->status, ev->param.conn.private_data_len, rdma_event_str(ev->event));
		else
			ok(good && now_s() - t0 < 5,
			   "die: server killed on the request: %s status %d after %.2f s",
			   rdma_event_str(ev->event), ev->status, now_s() - t0);
		rdma_ack_cm_event(ev);
		rdma_destroy_id(id);
		rdma_destroy_event_channel(ch);
		return 0;
	}
	if (is_qp) {
		struct ibv_send_wr wr = { 0 }, *bad;
		struct ibv_sge sge = { (uintptr_t)buf, sizeof(buf), mr->lkey };
		struct ibv_wc wc;
		double end = now_s() + 5;
		int n = 0;

		ok(ev->event == RDMA_CM_EVENT_ESTABLISHED && ev->status == 0,
		   "qp: ESTABLISHED at the active side with a QP (%s)", rdma_event_str(ev->event));
		memcpy(&peer, ev->param.conn.private_data, sizeof(peer));
		rdma_ack_cm_event(ev);
		check_qp_attr("qp client", id, &peer);
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		ibv_post_send(id->qp, &wr, &bad);
		while (now_s() < end && (n = ibv_poll_cq(cq, 1, &wc)) == 0)
			usleep(1000);
		ok(n == 1 && wc.status == IBV_WC_SUCCESS, "qp: RC SEND over the CM's QPs completes (%s)",
		   n == 1 ? ibv_wc_status_str(wc.status) : "nothing");
	} else {
		const uint8_t *rp = ev->param.conn.private_data;

		ok(ev->event == RDMA_CM_EVENT_CONNECT_RESPONSE && ev->status == 0 &&
		   ev->param.conn.private_data_len == 196 && check_pattern(rp, sizeof(peer), 196, 5),
		   "%s: CONNECT_RESPONSE without a QP, 196 bytes of private data as sent (%s, %d)",
		   name, rdma_event_str(ev->event), ev->param.conn.private_data_len);
		if (ev->event != RDMA_CM_EVENT_CONNECT_RESPONSE) {
			rdma_ack_cm_event(ev);
			return -1;
		}
		memcpy(&peer, rp, sizeof(peer));
		ok(ev->param.conn.qp_num == peer.qpn, "%s: event qp_num 0x%x = the server's",
		   name, ev->param.conn.qp_num);
		rdma_ack_cm_event(ev);
		check_qp_attr(name, id, &peer);
		ok(!rdma_establish(id), "%s: rdma_establish", name);
	}
	if (!strcmp(name, "killcli"))
		raise(SIGKILL);
	if (!strcmp(name, "srvdisc") || !strcmp(name, "killsrv")) {
		t0 = now_s();
		ev = get_event(ch, 8000);
		ok(ev && ev->event == RDMA_CM_EVENT_DISCONNECTED && now_s() - t0 < 5,
		   "%s: DISCONNECTED after %.2f s", name, now_s() - t0);
		if (ev)
			rdma_ack_cm_event(ev);
		ok(!rdma_disconnect(id), "%s: rdma_disconnect after DISCONNECTED", name);
	} else {
		ok(!rdma_disconnect(id), "%s: rdma_disconnect", name);
		ev = get_event(ch, 5000);
		ok(ev && ev->event == RDMA_CM_EVENT_DISCONNECTED,
		   "%s: DISCONNECTED on the side that disconnected (%s)", name,
		   ev ? rdma_event_str(ev->event) : "none");
		if (ev)
			rdma_ack_cm_event(ev);
	}
	if (id->qp)
		rdma_destroy_qp(id);
	ok(!rdma_destroy_id(id), "%s: rdma_destroy_id", name);
	if (mr)
		ibv_dereg_mr(mr);
	if (cq)
		ibv_destroy_cq(cq);
	rdma_destroy_event_channel(ch);
	return 0;
}

static int client(const char *addr, const char *port, char **cases, int n)
{
	struct sockaddr_in dst = { .sin_family = AF_INET };

	if (inet_pton(AF_INET, addr, &dst.sin_addr) != 1)
		return 100;
	dst.sin_port = htons(atoi(port));
	for (int i = 0; i < n; i++) {
		if (!strncmp(cases[i], "result:", 7)) {
			/* the server may need a moment to notice */
			double end = now_s() + 6;
			int r;

			while ((r = client_case(&dst, cases[i])) == 1 && now_s() < end)
				usleep(200000);
			if (r)
				ok(0, "%s: no verdict from the server (%d)", cases[i], r);
			continue;
		}
		client_case(&dst, cases[i]);
	}
	printf("1..%d\n", n_test);
	return n_fail;
}

/* ------------------------------------------------------------ one process */

static int udp_port(int keep, int *fd)
{
	struct sockaddr_in s = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(s);
	int f = socket(AF_INET, SOCK_DGRAM, 0);

	bind(f, (void *)&s, sizeof(s));
	getsockname(f, (void *)&s, &l);
	if (keep)
		*fd = f;
	else
		close(f);
	return ntohs(s.sin_port);
}

static void *late_ack(void *ev)
{
	usleep(300000);
	rdma_ack_cm_event(ev);
	return NULL;
}

static void local(void)
{
	struct rdma_event_channel *ch = channel(), *ch2 = channel();
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id, *id2;
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in any = { .sin_family = AF_INET };
	struct rdma_conn_param p;
	uint8_t big[200] = { 0 };
	int silent, rc;
	double t0;

	ok(rdma_get_cm_event(ch, &ev) == -1 && errno == EAGAIN,
	   "non-blocking channel, nothing queued: EAGAIN");
	ok(!strcmp(rdma_event_str(RDMA_CM_EVENT_CONNECT_RESPONSE), "RDMA_CM_EVENT_CONNECT_RESPONSE"),
	   "rdma_event_str");

	/* ports */
	rdma_create_id(ch, &id, NULL, RDMA_PS_TCP);
	rdma_create_id(ch, &id2, NULL, RDMA_PS_TCP);
	rc = rdma_bind_addr(id, (void *)&any);
	ok(!rc && rdma_get_src_port(id) != 0 && !rdma_listen(id, 4),
	   "bind to port 0 gets port %d; listen", ntohs(rdma_get_src_port(id)));
	any.sin_port = rdma_get_src_port(id);
	rc = rdma_bind_addr(id2, (void *)&any);
	ok(rc == -1 && errno == EADDRINUSE, "a second id on that port: EADDRINUSE");
	rdma_destroy_id(id2);
	rdma_destroy_id(id);

	/* oversized private data; a silent port: UNREACHABLE */
	dst.sin_port = htons(udp_port(1, &silent));
	rdma_create_id(ch, &id, NULL, RDMA_PS_TCP);
	if (!resolve(ch, id, (void *)&dst, "silent")) {
		memset(&p, 0, sizeof(p));
		p.private_data = big;
		p.private_data_len = 57;
		ok(rdma_connect(id, &p) == -1 && errno == EINVAL, "57 bytes of private data: EINVAL");
		p.private_data_len = 56;
		t0 = now_s();
		ok(!rdma_connect(id, &p), "56 bytes of private data: rdma_connect");
		ev = get_event(ch, 20000);
		ok(ev && ev->event == RDMA_CM_EVENT_UNREACHABLE && ev->status == -ETIMEDOUT,
		   "nobody answers: %s status %d after %.1f s", ev ? rdma_event_str(ev->event) : "none",
		   ev ? ev->status : 0, now_s() - t0);
		if (ev)
			rdma_ack_cm_event(ev);
	}
	rdma_destroy_id(id);
	close(silent);

	/* no listener: the kernel's REJ, invalid service ID */
	dst.sin_port = htons(udp_port(0, NULL));
	rdma_create_id(ch, &id, NULL, RDMA_PS_TCP);
	if (!resolve(ch, id, (void *)&dst, "no listener")) {
		memset(&p, 0, sizeof(p));
		ok(!rdma_connect(id, &p), "connect to a port nobody listens on");
		ev = get_event(ch, 5000);
		ok(ev && ev->event == RDMA_CM_EVENT_REJECTED && ev->status == 8,
		   "no listener: %s status %d", ev ? rdma_event_str(ev->event) : "none",
		   ev ? ev->status : 0);
		if (ev)
			rdma_ack_cm_event(ev);
		ok(rdma_accept(id, &p) == -1, "rdma_accept on an active id fails");
	}
	rdma_destroy_id(id);

	/* rdma_destroy_id waits for the events handed out to be acknowledged */
	rdma_create_id(ch, &id, NULL, RDMA_PS_TCP);
	rdma_resolve_addr(id, NULL, (void *)&dst, 1000);
	ev = get_event(ch, 2000);
	if (ev) {
		pthread_t th;

		t0 = now_s();
		pthread_create(&th, NULL, late_ack, ev);
		rdma_destroy_id(id);
		ok(now_s() - t0 >= 0.25, "rdma_destroy_id waited %.2f s for the ack of its event",
		   now_s() - t0);
		pthread_join(th, NULL);
	} else {
		ok(0, "ADDR_RESOLVED to test rdma_destroy_id with");
		rdma_destroy_id(id);
	}

	/* migrate an id with a queued event */
	rdma_create_id(ch, &id, NULL, RDMA_PS_TCP);
	rdma_resolve_addr(id, NULL, (void *)&dst, 1000);
	usleep(10000);
	ok(!rdma_migrate_id(id, ch2), "rdma_migrate_id");
	ev = get_event(ch2, 2000);
	ok(ev && ev->event == RDMA_CM_EVENT_ADDR_RESOLVED && ev->id == id &&
	   rdma_get_cm_event(ch, &ev) == -1 && errno == EAGAIN && id->channel == ch2,
	   "its queued ADDR_RESOLVED moved to the new channel");
	if (ev)
		rdma_ack_cm_event(ev);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch2);
	rdma_destroy_event_channel(ch);
	printf("1..%d\n", n_test);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 3 && !strcmp(argv[1], "server"))
		return server(argv[2], argc > 3 ? argv[3] : NULL);
	if (argc >= 5 && !strcmp(argv[1], "client"))
		return client(argv[2], argv[3], argv + 4, argc - 4);
	if (argc == 2 && !strcmp(argv[1], "local")) {
		/* quick retransmissions: the silent port gives up in ~1 s */
		setenv("SOFTRDMA_CM_RETRY_MS", "200", 0);
		local();
		return n_fail;
	}
	if (argc == 3 && (!strcmp(argv[1], "unreach") || !strcmp(argv[1], "nodev"))) {
		struct rdma_event_channel *ch = channel();
		struct rdma_cm_id *id;
		struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(7471) };
		struct rdma_cm_event *ev = NULL;
		int rc, e;

		inet_pton(AF_INET, argv[2], &dst.sin_addr);
		rdma_create_id(ch, &id, NULL, RDMA_PS_TCP);
		rc = rdma_resolve_addr(id, NULL, (void *)&dst, 1000);
		e = errno;
		if (!strcmp(argv[1], "unreach")) {
			/* the kernel's rdma_resolve_ip fails at once when the
			 * routing table has no route */
			ok(rc == -1 && e == ENETUNREACH,
			   "rdma_resolve_addr to %s, no route: %s", argv[2], rc ? strerror(e) : "0");
		} else {
			ev = rc ? NULL : get_event(ch, 3000);
			ok(ev && ev->event == RDMA_CM_EVENT_ADDR_ERROR && ev->status == -ENODEV,
			   "rdma_resolve_addr to %s, no port owns the source: %s status %d", argv[2],
			   ev ? rdma_event_str(ev->event) : "none", ev ? ev->status : 0);
			if (ev)
				rdma_ack_cm_event(ev);
		}
		rdma_destroy_id(id);
		rdma_destroy_event_channel(ch);
		printf("1..%d\n", n_test);
		return n_fail;
	}
	fprintf(stderr, "usage: see the comment at the top of rdmacm-test.c\n");
	return 100;
}
