/*
 * A user-space stand-in for librdmacm.so.1 over the soft RDMA device, for
 * tests only (run.sh mounts it over the system library when SOFTRDMA_CM=1).
 * The kernel's RDMA CM is not there, so this library plays both its parts:
 * the user-space API (same structures, from the system's rdma_cma.h, same
 * symbol versions) and the connection manager protocol.
 *
 * The CM exchange mimics the InfiniBand CM's messages (REQ, MRA, REP, RTU,
 * REJ, DREQ, DREP) as UDP datagrams on the port number of the rdma_cm_id
 * (the RDMA_PS_TCP port space is kept apart from TCP, as in the kernel).
 * An active id owns a UDP socket bound to its source address and connected
 * to the destination; a listener owns one bound to its address; the ids a
 * listener spawns answer through the listener's socket (kept open while
 * one of them lives), with the source address the active side aimed at.
 * Routing, ephemeral ports and address conflicts are the kernel's (UDP).
 *
 * Which port of which soft device an address belongs to: a RoCE port
 * whose GID table holds the address (IPv4-mapped), else the first
 * InfiniBand port. The peer's LID, GID, GID index, QP number and starting
 * PSN travel in the REQ/REP, so rdma_init_qp_attr can answer as the kernel
 * would. One background thread per process does the datagram I/O, the
 * retransmissions and a 100 ms check that peers are still alive (a process
 * killed outright cannot say goodbye; its kernel would have: we play that
 * part for it). Everything is under one lock. See ../README.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define EXPORT __attribute__((visibility("default")))

/* private data sizes of the IB CM messages as RDMA CM users see them */
#define REQ_PDATA 56  /* 92 less the RDMA CM header */
#define REP_PDATA 196
#define REJ_PDATA 148
#define MAX_PDATA 196

/* IB CM reject reasons */
#define REJ_TIMEOUT 1
#define REJ_INVALID_SID 8
#define REJ_CONSUMER 28

#define CM_MAGIC 0x4d435253u /* "SRCM" */

enum msg_type { M_REQ = 1, M_MRA, M_REP, M_RTU, M_REJ, M_DREQ, M_DREP };

/* One datagram. Host byte order: all peers run on this host. */
struct cm_msg {
	uint32_t magic;
	uint8_t type, reason, pdata_len, link_layer;
	uint32_t src_comm, dst_comm;
	int32_t pid;
	uint32_t qpn, psn;
	uint8_t resp_res, init_depth, retry, rnr_retry;
	uint8_t flow_control, srq, gid_index, mtu;
	uint16_t lid, pkey;
	uint8_t port_num, pad[3];
	uint64_t guid;
	uint8_t gid[16];
	struct sockaddr_storage src, dst; /* REQ: the active side's view */
	uint8_t pdata[MAX_PDATA];
};

enum state {
	S_IDLE, S_BOUND, S_LISTEN, S_ADDR_RESOLVED, S_ROUTE_RESOLVED,
	S_REQ_SENT, S_MRA_RCVD, S_REP_RCVD,    /* active */
	S_REQ_RCVD, S_REP_SENT,                /* passive */
	S_ESTABLISHED, S_DREQ_SENT, S_DISCONNECTED,
	S_REJECTED, S_FAILED,
	S_TIMEWAIT,                            /* destroyed, answering stragglers */
};

/* A UDP socket: one per active id, one per listening address. */
struct cm_port {
	struct cm_port *next;
	int fd, refs, dead, active;
	int conn_refs; /* of refs: ids a listener spawned */
	struct sockaddr_storage addr; /* as bound */
	struct cm_id *listener;
};

/* Which port of which device, and what it has. */
struct cm_loc {
	int dev;
	uint8_t port, link_layer, gid_index;
	uint16_t lid;
	union ibv_gid gid;
	enum ibv_mtu mtu;
};

struct cm_dev {
	struct ibv_device *dev;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	uint64_t guid;
	uint8_t max_rd, max_init;
};

struct cm_chan;

struct cm_id {
	struct rdma_cm_id id; /* first: what the user holds */
	struct cm_id *next;
	struct cm_chan *chan;
	enum state state;
	int destroying, zombie, ever_connected, passive;
	struct cm_port *port;
	struct cm_loc loc;
	int has_loc;
	uint32_t comm, rcomm;
	pid_t rpid;
	/* what the peer told us */
	uint16_t rlid;
	union ibv_gid rgid;
	uint8_t rgid_index, rll, rmtu;
	uint64_t rguid;
	uint32_t rqpn, rpsn;
	/* our side */
	uint32_t qpn, psn;
	uint8_t resp_res, init_depth, retry, rnr_retry, tos;
	int reuseaddr, afonly;
	/* the passive side answers here, from loc_sa */
	struct sockaddr_storage peer_sa;
	/* retransmission / deadlines */
	struct cm_msg out;
	int out_valid, tries;
	uint64_t deadline;
	/* events handed out with this id as owner, and acknowledged */
	unsigned reported, acked;
	struct ibv_sa_path_rec path;
};

struct cm_event {
	struct rdma_cm_event ev; /* first */
	struct cm_event *next;
	struct cm_id *owner, *subject;
	uint8_t pdata[MAX_PDATA];
};

struct cm_chan {
	struct rdma_event_channel ch; /* first */
	int wfd, prfd; /* pipe write end, our own non-blocking read end */
	struct cm_event *head, *tail;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_acked = PTHREAD_COND_INITIALIZER;
static struct cm_id *g_ids;
static struct cm_port *g_ports, *g_grave;
static int g_epfd = -1, g_wake[2] = { -1, -1 };
static pthread_t g_thread;
static int g_thread_up;
static uint32_t g_next_comm;
static uint64_t g_rand;
static struct cm_dev *g_devs;
static int g_ndev = -1;
static int g_retry_ms = 1000, g_req_tries = 5, g_rep_tries = 30, g_dreq_tries = 5;
static int g_mra_wait_ms = 60000, g_timewait_ms = 2000;

/* ------------------------------------------------------------ helpers */

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static uint32_t rnd32(void)
{
	if (!g_rand)
		g_rand = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL) ^ (uintptr_t)&g_rand;
	g_rand ^= g_rand << 13;
	g_rand ^= g_rand >> 7;
	g_rand ^= g_rand << 17;
	return (uint32_t)(g_rand >> 11);
}

static int env_int(const char *name, int dflt)
{
	const char *v = getenv(name);

	return v && *v ? atoi(v) : dflt;
}

static socklen_t sa_len(const struct sockaddr *sa)
{
	if (!sa)
		return 0;
	if (sa->sa_family == AF_INET)
		return sizeof(struct sockaddr_in);
	if (sa->sa_family == AF_INET6)
		return sizeof(struct sockaddr_in6);
	return 0;
}

static int sa_any(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
	return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

static int sa_equal(const struct sockaddr *a, const struct sockaddr *b)
{
	socklen_t l = sa_len(a);

	if (!l || a->sa_family != b->sa_family)
		return 0;
	if (a->sa_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
	return x->sin6_port == y->sin6_port &&
	       !memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr));
}

/* The GID an IP address has in a RoCE GID table. */
static void addr_gid(const struct sockaddr *sa, union ibv_gid *g)
{
	memset(g, 0, sizeof(*g));
	if (sa->sa_family == AF_INET) {
		g->raw[10] = g->raw[11] = 0xff;
		memcpy(&g->raw[12], &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else {
		memcpy(g->raw, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	}
}

static int err(int e)
{
	errno = e;
	return -1;
}

static struct cm_id *cm_of(struct rdma_cm_id *id)
{
	return (struct cm_id *)id;
}

/* ------------------------------------------------------------ devices */

static void devs_init(void)
{
	struct ibv_device **l;
	int n, i;

	if (g_ndev >= 0)
		return;
	l = ibv_get_device_list(&n);
	if (!l || n <= 0) {
		g_ndev = 0;
		return;
	}
	g_devs = calloc(n, sizeof(*g_devs));
	if (!g_devs) {
		g_ndev = 0;
		return;
	}
	for (i = 0; i < n; i++) {
		g_devs[i].dev = l[i];
		g_devs[i].guid = be64toh(ibv_get_device_guid(l[i]));
	}
	g_ndev = n;
	/* the list stays: devices and their contexts live as long as we do */
}

static struct cm_dev *dev_open(int i)
{
	struct cm_dev *d = &g_devs[i];
	struct ibv_device_attr a;

	if (d->ctx)
		return d;
	d->ctx = ibv_open_device(d->dev);
	if (!d->ctx)
		return NULL;
	d->pd = ibv_alloc_pd(d->ctx);
	if (!d->pd) {
		ibv_close_device(d->ctx);
		d->ctx = NULL;
		return NULL;
	}
	d->max_rd = d->max_init = 16;
	if (!ibv_query_device(d->ctx, &a)) {
		d->max_rd = a.max_qp_rd_atom > 255 ? 255 : a.max_qp_rd_atom;
		d->max_init = a.max_qp_init_rd_atom > 255 ? 255 : a.max_qp_init_rd_atom;
	}
	return d;
}

/* The port that owns local address `sa`: a RoCE port whose GID table holds
 * it (the RoCE v2 entry preferred, as the kernel's default RoCE mode), else
 * the first active InfiniBand port. 0, or -ENODEV. */
static int pick_port(const struct sockaddr *sa, struct cm_loc *out)
{
	union ibv_gid want;
	int i, have_ib = 0;
	struct cm_loc ib;

	devs_init();
	addr_gid(sa, &want);
	for (i = 0; i < g_ndev; i++) {
		struct cm_dev *d = dev_open(i);
		struct ibv_device_attr da;
		int p;

		if (!d || ibv_query_device(d->ctx, &da))
			continue;
		for (p = 1; p <= da.phys_port_cnt; p++) {
			struct ibv_port_attr pa;
			int g, best = -1, best_v2 = 0;

			if (ibv_query_port(d->ctx, p, &pa) || pa.state != IBV_PORT_ACTIVE)
				continue;
			if (pa.link_layer != IBV_LINK_LAYER_ETHERNET) {
				if (!have_ib) {
					memset(&ib, 0, sizeof(ib));
					ib.dev = i;
					ib.port = p;
					ib.link_layer = IBV_LINK_LAYER_INFINIBAND;
					ib.lid = pa.lid;
					ib.gid_index = 0;
					ib.mtu = pa.active_mtu;
					if (!ibv_query_gid(d->ctx, p, 0, &ib.gid))
						have_ib = 1;
				}
				continue;
			}
			for (g = 0; g < pa.gid_tbl_len && g < 256; g++) {
				struct ibv_gid_entry e;

				if (ibv_query_gid_ex(d->ctx, p, g, &e, 0))
					continue;
				if (memcmp(e.gid.raw, want.raw, 16))
					continue;
				if (best < 0 || (!best_v2 && e.gid_type == IBV_GID_TYPE_ROCE_V2)) {
					best = g;
					best_v2 = e.gid_type == IBV_GID_TYPE_ROCE_V2;
				}
			}
			if (best >= 0) {
				memset(out, 0, sizeof(*out));
				out->dev = i;
				out->port = p;
				out->link_layer = IBV_LINK_LAYER_ETHERNET;
				out->lid = 0;
				out->gid_index = best;
				out->gid = want;
				out->mtu = pa.active_mtu;
				return 0;
			}
		}
	}
	if (!have_ib)
		return -ENODEV;
	*out = ib;
	return 0;
}

static void set_loc(struct cm_id *c, const struct cm_loc *l)
{
	struct cm_dev *d = &g_devs[l->dev];

	c->loc = *l;
	c->has_loc = 1;
	c->id.verbs = d->ctx;
	c->id.pd = d->pd;
	c->id.port_num = l->port;
}

/* The path record as the kernel would give it, from what is known of the
 * peer (before the REP the active side assumes an InfiniBand peer on its
 * own port, as every process of a host sees the same devices; a RoCE peer
 * has the GID of its IP address). */
static void fill_route(struct cm_id *c)
{
	struct ibv_sa_path_rec *p = &c->path;
	int roce = c->loc.link_layer == IBV_LINK_LAYER_ETHERNET;
	uint8_t mtu = c->loc.mtu;

	if (c->rmtu && c->rmtu < mtu)
		mtu = c->rmtu;
	memset(p, 0, sizeof(*p));
	p->sgid = c->loc.gid;
	p->dgid = c->rgid;
	p->slid = htobe16(c->loc.lid);
	p->dlid = htobe16(roce ? 0 : c->rlid);
	p->hop_limit = roce ? 64 : 0;
	p->traffic_class = c->tos;
	p->reversible = 1;
	p->numb_path = 1;
	p->pkey = htobe16(0xffff);
	p->sl = 0;
	p->mtu_selector = 2;
	p->mtu = mtu;
	p->rate_selector = 2;
	p->rate = 16; /* 100 Gb/s */
	p->packet_life_time_selector = 2;
	p->packet_life_time = roce ? 16 : 18;
	c->id.route.path_rec = p;
	c->id.route.num_paths = 1;
	c->id.route.addr.addr.ibaddr.sgid = c->loc.gid;
	c->id.route.addr.addr.ibaddr.dgid = c->rgid;
	c->id.route.addr.addr.ibaddr.pkey = htobe16(0xffff);
}

/* ------------------------------------------------------------ channels and events */

static void chan_push(struct cm_chan *ch, struct cm_event *e)
{
	int was_empty = !ch->head;

	e->next = NULL;
	if (ch->tail)
		ch->tail->next = e;
	else
		ch->head = e;
	ch->tail = e;
	/* empty -> non-empty: the fd becomes readable (one byte) */
	if (was_empty && write(ch->wfd, "e", 1) < 0)
		(void)0;
}

static void chan_drain_if_empty(struct cm_chan *ch)
{
	char buf[64];

	if (ch->head)
		return;
	while (read(ch->prfd, buf, sizeof(buf)) > 0)
		;
}

/* Unlink events matching (subject or owner == c) from ch; returns them. */
static struct cm_event *chan_take(struct cm_chan *ch, struct cm_id *c, int by_owner)
{
	struct cm_event **pp = &ch->head, *e, *got = NULL, **gt = &got;

	ch->tail = NULL;
	while ((e = *pp)) {
		if (e->subject == c || (by_owner && e->owner == c)) {
			*pp = e->next;
			e->next = NULL;
			*gt = e;
			gt = &e->next;
			continue;
		}
		ch->tail = e;
		pp = &e->next;
	}
	chan_drain_if_empty(ch);
	return got;
}

static struct cm_event *new_event(struct cm_id *subject, enum rdma_cm_event_type t, int status)
{
	struct cm_event *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->subject = e->owner = subject;
	e->ev.id = &subject->id;
	e->ev.event = t;
	e->ev.status = status;
	return e;
}

/* Private data of an event: the message's bytes, the rest zero up to the
 * size the IB CM message carries (`len`, what the kernel reports). */
static void event_pdata(struct cm_event *e, const struct cm_msg *m, int len)
{
	if (m)
		memcpy(e->pdata, m->pdata, m->pdata_len < len ? m->pdata_len : len);
	e->ev.param.conn.private_data = e->pdata;
	e->ev.param.conn.private_data_len = len;
}

static void post(struct cm_event *e)
{
	struct cm_id *c;

	if (!e)
		return;
	c = e->owner;
	if (c->destroying || c->zombie || !c->chan) {
		free(e);
		return;
	}
	chan_push(c->chan, e);
}

static void post_simple(struct cm_id *c, enum rdma_cm_event_type t, int status)
{
	struct cm_event *e = new_event(c, t, status);

	if (e)
		post(e);
}

static void post_rej(struct cm_id *c, int reason, const struct cm_msg *m)
{
	struct cm_event *e = new_event(c, RDMA_CM_EVENT_REJECTED, reason);

	if (!e)
		return;
	event_pdata(e, m, REJ_PDATA);
	post(e);
}

/* ------------------------------------------------------------ sockets and the thread */

static void *cm_thread(void *arg);

static int thread_start(void)
{
	struct epoll_event ev = { .events = EPOLLIN };
	pthread_attr_t a;
	sigset_t all, old;
	int rc;

	if (g_thread_up)
		return 0;
	g_retry_ms = env_int("SOFTRDMA_CM_RETRY_MS", g_retry_ms);
	g_req_tries = env_int("SOFTRDMA_CM_REQ_TRIES", g_req_tries);
	g_epfd = epoll_create1(EPOLL_CLOEXEC);
	if (g_epfd < 0)
		return -1;
	if (pipe2(g_wake, O_CLOEXEC | O_NONBLOCK)) {
		close(g_epfd);
		return -1;
	}
	ev.data.ptr = NULL;
	epoll_ctl(g_epfd, EPOLL_CTL_ADD, g_wake[0], &ev);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	/* signals belong to the application's threads */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&g_thread, &a, cm_thread, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
	if (rc) {
		errno = rc;
		return -1;
	}
	g_thread_up = 1;
	return 0;
}

static void wake_thread(void)
{
	if (g_wake[1] >= 0 && write(g_wake[1], "w", 1) < 0)
		(void)0;
}

/* A UDP socket bound to `sa` (port 0: an ephemeral one). Within this
 * process, a listening address whose socket is still held by the ids a
 * former listener spawned is taken over. */
static struct cm_port *port_get(const struct sockaddr *sa, int for_listen, int *e)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct cm_port *p;
	socklen_t l = sizeof(p->addr);
	int one = 1;

	if (for_listen && ((const struct sockaddr_in *)sa)->sin_port) {
		for (p = g_ports; p; p = p->next)
			if (!p->active && p->refs == p->conn_refs &&
			    sa_equal((const void *)&p->addr, sa)) {
				p->refs++;
				return p;
			}
	}
	if (thread_start()) {
		*e = errno;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		*e = ENOMEM;
		return NULL;
	}
	p->fd = socket(sa->sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (p->fd < 0) {
		*e = errno;
		free(p);
		return NULL;
	}
	if (sa->sa_family == AF_INET6)
		setsockopt(p->fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(p->fd, sa, sa_len(sa)) || getsockname(p->fd, (struct sockaddr *)&p->addr, &l)) {
		*e = errno;
		close(p->fd);
		free(p);
		return NULL;
	}
	ev.data.ptr = p;
	if (epoll_ctl(g_epfd, EPOLL_CTL_ADD, p->fd, &ev)) {
		*e = errno;
		close(p->fd);
		free(p);
		return NULL;
	}
	p->refs = 1;
	p->next = g_ports;
	g_ports = p;
	return p;
}

static void port_put(struct cm_port *p)
{
	struct cm_port **pp;

	if (!p || --p->refs > 0)
		return;
	for (pp = &g_ports; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	epoll_ctl(g_epfd, EPOLL_CTL_DEL, p->fd, NULL);
	close(p->fd);
	p->dead = 1;
	/* the thread may hold an epoll event for it: it frees the grave */
	p->next = g_grave;
	g_grave = p;
	wake_thread();
}

/* Sends a message of c's: an active id through its connected socket, a
 * passive one through the listening socket to the active side's address,
 * from the address the active side aimed at. */
static void send_msg(struct cm_id *c, struct cm_msg *m)
{
	struct msghdr h;
	struct iovec v = { m, sizeof(*m) };
	union {
		char b[CMSG_SPACE(sizeof(struct in6_pktinfo))];
		struct cmsghdr align;
	} cb;
	struct cmsghdr *cm;
	const struct sockaddr *loc = &c->id.route.addr.src_addr;

	if (!c->port || c->port->dead)
		return;
	m->magic = CM_MAGIC;
	m->src_comm = c->comm;
	m->dst_comm = c->rcomm;
	m->pid = getpid();
	if (c->port->active) {
		if (send(c->port->fd, m, sizeof(*m), 0) < 0)
			(void)0;
		return;
	}
	memset(&h, 0, sizeof(h));
	memset(&cb, 0, sizeof(cb));
	h.msg_name = &c->peer_sa;
	h.msg_namelen = sa_len((struct sockaddr *)&c->peer_sa);
	h.msg_iov = &v;
	h.msg_iovlen = 1;
	if (loc->sa_family == c->port->addr.ss_family && !sa_any(loc)) {
		h.msg_control = cb.b;
		cm = (struct cmsghdr *)cb.b;
		if (loc->sa_family == AF_INET) {
			struct in_pktinfo pi;

			memset(&pi, 0, sizeof(pi));
			pi.ipi_spec_dst = ((const struct sockaddr_in *)loc)->sin_addr;
			h.msg_controllen = CMSG_SPACE(sizeof(pi));
			cm->cmsg_level = IPPROTO_IP;
			cm->cmsg_type = IP_PKTINFO;
			cm->cmsg_len = CMSG_LEN(sizeof(pi));
			memcpy(CMSG_DATA(cm), &pi, sizeof(pi));
		} else {
			struct in6_pktinfo pi;

			memset(&pi, 0, sizeof(pi));
			pi.ipi6_addr = ((const struct sockaddr_in6 *)loc)->sin6_addr;
			h.msg_controllen = CMSG_SPACE(sizeof(pi));
			cm->cmsg_level = IPPROTO_IPV6;
			cm->cmsg_type = IPV6_PKTINFO;
			cm->cmsg_len = CMSG_LEN(sizeof(pi));
			memcpy(CMSG_DATA(cm), &pi, sizeof(pi));
		}
	}
	if (sendmsg(c->port->fd, &h, 0) < 0)
		(void)0;
}

/* Fills the parts of a message that describe our end. */
static void msg_init(struct cm_id *c, struct cm_msg *m, int type)
{
	memset(m, 0, sizeof(*m));
	m->type = type;
	if (c->has_loc) {
		m->link_layer = c->loc.link_layer;
		m->lid = c->loc.lid;
		m->gid_index = c->loc.gid_index;
		memcpy(m->gid, c->loc.gid.raw, 16);
		m->mtu = c->loc.mtu;
		m->port_num = c->loc.port;
		m->guid = g_devs[c->loc.dev].guid;
	}
	m->pkey = 0xffff;
}

/* Sends `type` and keeps it for retransmission (tries > 0). */
static void send_kept(struct cm_id *c, int type, int tries, const struct cm_msg *proto)
{
	if (proto)
		c->out = *proto;
	else
		msg_init(c, &c->out, type);
	c->out.type = type;
	c->out_valid = 1;
	c->tries = tries;
	c->deadline = now_ms() + g_retry_ms;
	send_msg(c, &c->out);
	wake_thread();
}

static void send_once(struct cm_id *c, int type, int reason)
{
	struct cm_msg m;

	msg_init(c, &m, type);
	m.reason = reason;
	send_msg(c, &m);
}

static struct cm_id *find_comm(uint32_t comm)
{
	struct cm_id *c;

	for (c = g_ids; c; c = c->next)
		if (c->comm == comm)
			return c;
	return NULL;
}

static void id_unlink(struct cm_id *c)
{
	struct cm_id **pp;

	for (pp = &g_ids; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			return;
		}
}

static void id_free(struct cm_id *c)
{
	id_unlink(c);
	if (c->port && c->passive)
		c->port->conn_refs--;
	port_put(c->port);
	free(c);
}

static void zombie_free(struct cm_id *c)
{
	id_free(c);
}

static void to_timewait(struct cm_id *c)
{
	c->state = S_TIMEWAIT;
	c->deadline = now_ms() + g_timewait_ms;
	c->tries = 0;
	wake_thread();
}

/* Peer info from a REQ or REP. */
static void take_peer(struct cm_id *c, const struct cm_msg *m)
{
	c->rcomm = m->src_comm;
	c->rpid = m->pid;
	c->rlid = m->lid;
	memcpy(c->rgid.raw, m->gid, 16);
	c->rgid_index = m->gid_index;
	c->rll = m->link_layer;
	c->rguid = m->guid;
	c->rmtu = m->mtu;
	c->rqpn = m->qpn & 0xffffff;
	c->rpsn = m->psn & 0xffffff;
}

static void conn_param_from(struct cm_event *e, const struct cm_msg *m)
{
	/* the peer's initiator depth is our responder resources */
	e->ev.param.conn.responder_resources = m->init_depth;
	e->ev.param.conn.initiator_depth = m->resp_res;
	e->ev.param.conn.flow_control = m->flow_control;
	e->ev.param.conn.retry_count = m->retry;
	e->ev.param.conn.rnr_retry_count = m->rnr_retry;
	e->ev.param.conn.srq = m->srq;
	e->ev.param.conn.qp_num = m->qpn & 0xffffff;
}

static int init_qp_attr(struct cm_id *c, struct ibv_qp_attr *a, int *mask);

/* Moves the id's own QP (rdma_create_qp) to RTR and RTS. */
static int qp_rtr_rts(struct cm_id *c)
{
	struct ibv_qp_attr a;
	int mask;

	a.qp_state = IBV_QPS_RTR;
	if (init_qp_attr(c, &a, &mask) || ibv_modify_qp(c->id.qp, &a, mask))
		return -errno;
	a.qp_state = IBV_QPS_RTS;
	if (init_qp_attr(c, &a, &mask) || ibv_modify_qp(c->id.qp, &a, mask))
		return -errno;
	return 0;
}

/* ------------------------------------------------------------ the protocol */

/* A REQ arriving at a listening socket. */
static void on_req(struct cm_port *p, const struct cm_msg *m, const struct sockaddr_storage *from)
{
	struct cm_id *c, *l = p->listener;
	struct cm_loc loc;
	struct cm_event *e;

	/* a retransmission: answer as before */
	for (c = g_ids; c; c = c->next) {
		if (c->rpid != m->pid || c->rcomm != m->src_comm || c->port != p)
			continue;
		if (c->state == S_REQ_RCVD)
			send_once(c, M_MRA, 0);
		else if ((c->state == S_REP_SENT || c->state == S_TIMEWAIT) && c->out_valid)
			send_msg(c, &c->out);
		return;
	}
	if (!l || l->destroying || pick_port((const struct sockaddr *)&m->dst, &loc) ||
	    loc.link_layer != m->link_layer) {
		/* nobody listens here (or not on a port the REQ can reach):
		 * reject, as for an unknown service ID */
		struct cm_id tmp;

		memset(&tmp, 0, sizeof(tmp));
		tmp.port = p;
		tmp.rcomm = m->src_comm;
		tmp.peer_sa = *from;
		memcpy(&tmp.id.route.addr.src_storage, &m->dst, sizeof(m->dst));
		send_once(&tmp, M_REJ, REJ_INVALID_SID);
		return;
	}
	c = calloc(1, sizeof(*c));
	e = calloc(1, sizeof(*e));
	if (!c || !e) {
		free(c);
		free(e);
		return;
	}
	c->comm = ++g_next_comm;
	c->chan = l->chan;
	c->id.channel = l->id.channel;
	c->id.context = l->id.context;
	c->id.ps = l->id.ps;
	c->id.qp_type = l->id.qp_type;
	c->port = p;
	c->passive = 1;
	p->refs++;
	p->conn_refs++;
	c->peer_sa = *from;
	memcpy(&c->id.route.addr.src_storage, &m->dst, sizeof(m->dst));
	memcpy(&c->id.route.addr.dst_storage, &m->src, sizeof(m->src));
	set_loc(c, &loc);
	take_peer(c, m);
	/* until accepted: what the REQ asked for, from our side */
	c->resp_res = m->init_depth;
	c->init_depth = m->resp_res;
	c->retry = m->retry;
	c->rnr_retry = m->rnr_retry;
	c->tos = l->tos;
	c->psn = rnd32() & 0xffffff;
	c->ever_connected = 1;
	fill_route(c);
	c->state = S_REQ_RCVD;
	c->next = g_ids;
	g_ids = c;
	send_once(c, M_MRA, 0);

	e->subject = c;
	e->owner = l;
	e->ev.id = &c->id;
	e->ev.listen_id = &l->id;
	e->ev.event = RDMA_CM_EVENT_CONNECT_REQUEST;
	event_pdata(e, m, REQ_PDATA);
	conn_param_from(e, m);
	post(e);
}

static void on_msg(struct cm_port *p, const struct cm_msg *m, const struct sockaddr_storage *from)
{
	struct cm_id *c;
	struct cm_event *e;

	if (m->magic != CM_MAGIC)
		return;
	if (m->type == M_REQ && !m->dst_comm) {
		if (!p->active)
			on_req(p, m, from);
		return;
	}
	c = find_comm(m->dst_comm);
	if (!c || c->port != p) {
		/* a straggler for an id long gone */
		return;
	}
	if (c->state == S_TIMEWAIT) {
		/* a destroyed id answers stragglers as the kernel's CM does */
		if (m->type == M_DREQ) {
			c->rcomm = m->src_comm;
			send_once(c, M_DREP, 0);
		} else if ((m->type == M_REP || m->type == M_MRA) && c->out.type == M_REJ) {
			c->rcomm = m->src_comm;
			c->rpid = m->pid;
			send_msg(c, &c->out);
		} else if (m->type == M_REJ || m->type == M_DREP) {
			zombie_free(c);
		}
		return;
	}
	/* once the peer is known, only it speaks to this id */
	if (c->rpid && (c->rpid != m->pid || c->rcomm != m->src_comm))
		return;
	switch (m->type) {
	case M_MRA:
		if (c->state == S_REQ_SENT) {
			c->rpid = m->pid;
			c->rcomm = m->src_comm;
			c->state = S_MRA_RCVD;
			c->deadline = now_ms() + g_mra_wait_ms;
		}
		break;
	case M_REP:
		if (c->state == S_ESTABLISHED) {
			send_once(c, M_RTU, 0); /* our RTU was lost */
			break;
		}
		if (c->state != S_REQ_SENT && c->state != S_MRA_RCVD)
			break;
		take_peer(c, m);
		c->resp_res = m->init_depth;
		c->init_depth = m->resp_res;
		c->rnr_retry = m->rnr_retry;
		fill_route(c);
		c->out_valid = 0;
		if (c->zombie || c->destroying) {
			send_once(c, M_REJ, REJ_CONSUMER);
			break;
		}
		c->state = S_REP_RCVD;
		if (c->id.qp) {
			int rc = qp_rtr_rts(c);

			e = new_event(c, rc ? RDMA_CM_EVENT_CONNECT_ERROR : RDMA_CM_EVENT_ESTABLISHED, rc);
			if (rc) {
				c->state = S_FAILED;
				send_once(c, M_REJ, REJ_CONSUMER);
			} else {
				c->state = S_ESTABLISHED;
				send_once(c, M_RTU, 0);
			}
		} else {
			e = new_event(c, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
		}
		if (e) {
			event_pdata(e, m, REP_PDATA);
			conn_param_from(e, m);
			post(e);
		}
		break;
	case M_RTU:
		if (c->state == S_REP_SENT) {
			c->out_valid = 0;
			c->state = S_ESTABLISHED;
			post_simple(c, RDMA_CM_EVENT_ESTABLISHED, 0);
		}
		break;
	case M_REJ:
		if (c->state == S_TIMEWAIT) {
			zombie_free(c);
			break;
		}
		if (c->state != S_REQ_SENT && c->state != S_MRA_RCVD && c->state != S_REP_RCVD &&
		    c->state != S_REQ_RCVD && c->state != S_REP_SENT)
			break;
		c->out_valid = 0;
		c->state = S_REJECTED;
		if (c->id.qp) {
			struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
			ibv_modify_qp(c->id.qp, &a, IBV_QP_STATE);
		}
		post_rej(c, m->reason, m);
		break;
	case M_DREQ:
		send_once(c, M_DREP, 0);
		if (c->state == S_ESTABLISHED || c->state == S_REP_SENT || c->state == S_DREQ_SENT) {
			if (c->zombie) {
				to_timewait(c);
				break;
			}
			c->out_valid = 0;
			c->state = S_DISCONNECTED;
			post_simple(c, RDMA_CM_EVENT_DISCONNECTED, 0);
		}
		break;
	case M_DREP:
		if (c->state != S_DREQ_SENT)
			break;
		c->out_valid = 0;
		if (c->zombie) {
			zombie_free(c);
			break;
		}
		c->state = S_DISCONNECTED;
		post_simple(c, RDMA_CM_EVENT_DISCONNECTED, 0);
		break;
	}
}

/* Nobody at the destination port (ICMP port unreachable on our connected
 * socket): the kernel would have answered with a REJ, invalid service ID. */
static void on_refused(struct cm_port *p)
{
	struct cm_id *c;

	for (c = g_ids; c; c = c->next) {
		if (c->port != p)
			continue;
		if (c->state == S_REQ_SENT) {
			c->out_valid = 0;
			c->state = S_REJECTED;
			if (c->zombie)
				to_timewait(c);
			else
				post_rej(c, REJ_INVALID_SID, NULL);
		} else if (c->state == S_DREQ_SENT) {
			c->out_valid = 0;
			if (c->zombie) {
				zombie_free(c);
				return;
			}
			c->state = S_DISCONNECTED;
			post_simple(c, RDMA_CM_EVENT_DISCONNECTED, 0);
		}
		return;
	}
}

static void port_input(struct cm_port *p)
{
	struct cm_msg m;
	struct sockaddr_storage from;

	for (;;) {
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(p->fd, &m, sizeof(m), 0, (struct sockaddr *)&from, &fl);

		if (n < 0) {
			if (errno == ECONNREFUSED) {
				on_refused(p);
				if (p->dead)
					return;
				continue;
			}
			if (errno == EINTR)
				continue;
			return;
		}
		if ((size_t)n == sizeof(m))
			on_msg(p, &m, &from);
		if (p->dead)
			return;
	}
}

static int pid_gone(pid_t pid)
{
	char path[64], buf[256], *s;
	FILE *f;
	int gone = 0;

	if (pid <= 0)
		return 0;
	if (kill(pid, 0) && errno == ESRCH)
		return 1;
	/* killed but not yet reaped by its parent: as good as gone */
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f) && (s = strrchr(buf, ')')) && s[1] == ' ' &&
	    (s[2] == 'Z' || s[2] == 'X'))
		gone = 1;
	fclose(f);
	return gone;
}

/* The peer process died: what its kernel would have sent when it tore
 * down its ids. */
static void on_peer_gone(struct cm_id *c)
{
	if (c->zombie) {
		zombie_free(c);
		return;
	}
	c->out_valid = 0;
	switch (c->state) {
	case S_ESTABLISHED:
	case S_DREQ_SENT:
		c->state = S_DISCONNECTED;
		post_simple(c, RDMA_CM_EVENT_DISCONNECTED, 0);
		break;
	case S_MRA_RCVD:
	case S_REP_RCVD:
	case S_REP_SENT:
		c->state = S_REJECTED;
		post_rej(c, REJ_CONSUMER, NULL);
		break;
	case S_REQ_RCVD:
		c->state = S_REJECTED;
		post_rej(c, REJ_TIMEOUT, NULL);
		break;
	default:
		break;
	}
}

static int watched(const struct cm_id *c)
{
	switch (c->state) {
	case S_MRA_RCVD: case S_REP_RCVD: case S_REQ_RCVD: case S_REP_SENT:
	case S_ESTABLISHED: case S_DREQ_SENT:
		return c->rpid > 0;
	default:
		return 0;
	}
}

/* Deadlines and retransmissions; returns ms until the next one. */
static int timers(uint64_t now, int *pidcheck)
{
	struct cm_id *c, *n;
	uint64_t next = now + 60000;

	*pidcheck = 0;
	for (c = g_ids; c; c = n) {
		n = c->next;
		if (watched(c))
			*pidcheck = 1;
		if (c->state == S_TIMEWAIT) {
			if (now >= c->deadline) {
				zombie_free(c);
				continue;
			}
		} else if (c->state == S_MRA_RCVD) {
			if (now >= c->deadline) {
				c->state = S_FAILED;
				post_simple(c, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
				if (c->zombie) {
					zombie_free(c);
					continue;
				}
			}
		} else if (c->out_valid) {
			if (now >= c->deadline) {
				if (c->tries-- > 1) {
					send_msg(c, &c->out);
					c->deadline = now + g_retry_ms;
				} else {
					c->out_valid = 0;
					if (c->zombie) {
						zombie_free(c);
						continue;
					}
					if (c->state == S_DREQ_SENT) {
						c->state = S_DISCONNECTED;
						post_simple(c, RDMA_CM_EVENT_DISCONNECTED, -ETIMEDOUT);
					} else {
						/* REQ or REP unanswered */
						c->state = S_FAILED;
						post_simple(c, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
					}
					continue;
				}
			}
		} else {
			continue;
		}
		if (c->deadline < next)
			next = c->deadline;
	}
	if (*pidcheck && next > now + 100)
		next = now + 100;
	return next > now ? (int)(next - now) : 0;
}

static void *cm_thread(void *arg)
{
	struct epoll_event evs[32];
	uint64_t last_check = 0;
	int timeout = 100;

	(void)arg;
	for (;;) {
		int n = epoll_wait(g_epfd, evs, 32, timeout), i, pidcheck;
		uint64_t now;

		pthread_mutex_lock(&g_lock);
		for (i = 0; i < n; i++) {
			struct cm_port *p = evs[i].data.ptr;
			char buf[64];

			if (!p) {
				while (read(g_wake[0], buf, sizeof(buf)) > 0)
					;
				continue;
			}
			if (!p->dead)
				port_input(p);
		}
		while (g_grave) {
			struct cm_port *p = g_grave;

			g_grave = p->next;
			free(p);
		}
		now = now_ms();
		timeout = timers(now, &pidcheck);
		if (pidcheck && now - last_check >= 100) {
			struct cm_id *c, *nx;

			/* many ids share a peer: ask once per peer and round */
			pid_t seen[16];
			int gone[16], ns = 0;

			last_check = now;
			for (c = g_ids; c; c = nx) {
				int k, g = -1;

				nx = c->next;
				if (!watched(c))
					continue;
				for (k = 0; k < ns; k++)
					if (seen[k] == c->rpid)
						g = gone[k];
				if (g < 0) {
					g = pid_gone(c->rpid);
					if (ns < 16) {
						seen[ns] = c->rpid;
						gone[ns++] = g;
					}
				}
				if (g)
					on_peer_gone(c);
			}
			timeout = timers(now, &pidcheck);
		}
		pthread_mutex_unlock(&g_lock);
	}
	return NULL;
}

/* ------------------------------------------------------------ the API */

EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct cm_chan *ch;
	int p[2];
	char path[64];

	/* the real library needs the kernel's CM device and a verbs device */
	if (access("/dev/infiniband/rdma_cm", R_OK | W_OK))
		return NULL;
	pthread_mutex_lock(&g_lock);
	devs_init();
	pthread_mutex_unlock(&g_lock);
	if (g_ndev <= 0) {
		errno = ENODEV;
		return NULL;
	}
	ch = calloc(1, sizeof(*ch));
	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	if (pipe2(p, O_CLOEXEC)) {
		free(ch);
		return NULL;
	}
	/* a second open of the read end: non-blocking whatever the caller
	 * does to ch->fd's flags */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", p[0]);
	ch->prfd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (ch->prfd < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		free(ch);
		errno = e;
		return NULL;
	}
	ch->ch.fd = p[0];
	ch->wfd = p[1];
	return &ch->ch;
}

EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct cm_chan *ch = (struct cm_chan *)channel;
	struct cm_event *e;
	struct cm_id *c;

	if (!ch)
		return;
	pthread_mutex_lock(&g_lock);
	while ((e = ch->head)) {
		ch->head = e->next;
		free(e);
	}
	/* ids still on it (a caller's mistake) lose their events from now on */
	for (c = g_ids; c; c = c->next)
		if (c->chan == ch)
			c->chan = NULL;
	pthread_mutex_unlock(&g_lock);
	close(ch->prfd);
	close(ch->wfd);
	close(ch->ch.fd);
	free(ch);
}

EXPORT int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
			  void *context, enum rdma_port_space ps)
{
	struct cm_id *c;

	if (!id)
		return err(EINVAL);
	if (ps != RDMA_PS_TCP && ps != RDMA_PS_IB)
		return err(EPROTONOSUPPORT); /* UD port spaces: not emulated */
	if (!channel) {
		/* synchronous ids are not emulated: a private channel */
		channel = rdma_create_event_channel();
		if (!channel)
			return -1;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return err(ENOMEM);
	c->id.channel = channel;
	c->chan = (struct cm_chan *)channel;
	c->id.context = context;
	c->id.ps = ps;
	c->id.qp_type = IBV_QPT_RC;
	pthread_mutex_lock(&g_lock);
	if (!g_next_comm)
		g_next_comm = rnd32() | 1;
	c->comm = ++g_next_comm;
	c->psn = rnd32() & 0xffffff;
	c->next = g_ids;
	g_ids = c;
	pthread_mutex_unlock(&g_lock);
	*id = &c->id;
	return 0;
}

static int bind_locked(struct cm_id *c, const struct sockaddr *sa)
{
	struct cm_loc loc;
	int e = 0, any;

	if (c->state != S_IDLE || c->port)
		return err(EINVAL);
	if (!sa_len(sa))
		return err(EAFNOSUPPORT);
	any = sa_any(sa);
	if (!any && pick_port(sa, &loc)) {
		/* refuse early when the address is not ours at all */
		int s = socket(sa->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		struct sockaddr_storage tmp;

		memcpy(&tmp, sa, sa_len(sa));
		((struct sockaddr_in *)&tmp)->sin_port = 0;
		if (s >= 0 && bind(s, (struct sockaddr *)&tmp, sa_len(sa))) {
			e = errno;
			close(s);
			return err(e);
		}
		if (s >= 0)
			close(s);
		return err(ENODEV);
	}
	c->port = port_get(sa, 1, &e);
	if (!c->port)
		return err(e);
	memcpy(&c->id.route.addr.src_storage, &c->port->addr, sizeof(c->port->addr));
	if (!any)
		set_loc(c, &loc);
	c->state = S_BOUND;
	return 0;
}

EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	int rc;

	if (!id || !addr)
		return err(EINVAL);
	pthread_mutex_lock(&g_lock);
	rc = bind_locked(cm_of(id), addr);
	pthread_mutex_unlock(&g_lock);
	return rc;
}

EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct cm_id *c = cm_of(id);
	int rc = 0;

	(void)backlog;
	if (!id)
		return err(EINVAL);
	pthread_mutex_lock(&g_lock);
	if (c->state == S_IDLE) {
		struct sockaddr_in any = { .sin_family = AF_INET };

		rc = bind_locked(c, (struct sockaddr *)&any);
	}
	if (!rc && c->state != S_BOUND)
		rc = err(EINVAL);
	if (!rc && (c->port->listener || c->port->active))
		rc = err(EADDRINUSE);
	if (!rc) {
		c->port->listener = c;
		c->state = S_LISTEN;
	}
	pthread_mutex_unlock(&g_lock);
	return rc;
}

EXPORT int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
			     struct sockaddr *dst_addr, int timeout_ms)
{
	struct cm_id *c = cm_of(id);
	struct cm_loc loc;
	socklen_t l = sizeof(struct sockaddr_storage);
	int rc = 0, e = 0;

	(void)timeout_ms; /* resolution is immediate here */
	if (!id || !sa_len(dst_addr))
		return err(EINVAL);
	if (src_addr && sa_len(src_addr) && src_addr->sa_family != dst_addr->sa_family)
		return err(EINVAL);
	pthread_mutex_lock(&g_lock);
	if (c->state == S_IDLE) {
		struct sockaddr_storage any;

		memset(&any, 0, sizeof(any));
		if (src_addr && sa_len(src_addr))
			memcpy(&any, src_addr, sa_len(src_addr));
		else
			any.ss_family = dst_addr->sa_family;
		c->port = port_get((struct sockaddr *)&any, 0, &e);
		if (!c->port) {
			rc = err(e);
			goto out;
		}
		c->state = S_BOUND;
	}
	if (c->state != S_BOUND || c->port->listener || c->port->refs > 1) {
		rc = err(EINVAL);
		goto out;
	}
	/* the kernel's routing decides the source address, or that there is
	 * no route at all (a synchronous error, as rdma_resolve_ip gives) */
	if (connect(c->port->fd, dst_addr, sa_len(dst_addr))) {
		rc = -1;
		goto out;
	}
	c->port->active = 1;
	getsockname(c->port->fd, &c->id.route.addr.src_addr, &l);
	memcpy(&c->id.route.addr.dst_storage, dst_addr, sa_len(dst_addr));
	if (pick_port(&c->id.route.addr.src_addr, &loc)) {
		post_simple(c, RDMA_CM_EVENT_ADDR_ERROR, -ENODEV);
		goto out;
	}
	set_loc(c, &loc);
	c->state = S_ADDR_RESOLVED;
	post_simple(c, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
out:
	pthread_mutex_unlock(&g_lock);
	return rc;
}

EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct cm_id *c = cm_of(id);
	int rc = 0;

	(void)timeout_ms;
	if (!id)
		return err(EINVAL);
	pthread_mutex_lock(&g_lock);
	if (c->state != S_ADDR_RESOLVED) {
		rc = err(EINVAL);
	} else {
		if (c->loc.link_layer == IBV_LINK_LAYER_ETHERNET) {
			addr_gid(&c->id.route.addr.dst_addr, &c->rgid);
			c->rlid = 0;
		} else {
			c->rgid = c->loc.gid;
			c->rlid = c->loc.lid;
		}
		fill_route(c);
		c->state = S_ROUTE_RESOLVED;
		post_simple(c, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	}
	pthread_mutex_unlock(&g_lock);
	return rc;
}

static uint8_t clamp7(uint8_t v)
{
	return v > 7 ? 7 : v;
}

EXPORT int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct cm_id *c = cm_of(id);
	struct rdma_conn_param none;
	struct cm_dev *d;
	struct cm_msg m;
	int rc = 0;

	if (!id)
		return err(EINVAL);
	if (!conn_param) {
		memset(&none, 0, sizeof(none));
		none.responder_resources = none.initiator_depth = RDMA_MAX_RESP_RES;
		none.retry_count = none.rnr_retry_count = 7;
		conn_param = &none;
	}
	if (conn_param->private_data_len > REQ_PDATA ||
	    (conn_param->private_data_len && !conn_param->private_data))
		return err(EINVAL);
	pthread_mutex_lock(&g_lock);
	if (c->state != S_ROUTE_RESOLVED) {
		rc = err(EINVAL);
		goto out;
	}
	d = &g_devs[c->loc.dev];
	if ((conn_param->responder_resources != RDMA_MAX_RESP_RES &&
	     conn_param->responder_resources > d->max_rd) ||
	    (conn_param->initiator_depth != RDMA_MAX_INIT_DEPTH &&
	     conn_param->initiator_depth > d->max_init)) {
		rc = err(EINVAL);
		goto out;
	}
	c->resp_res = conn_param->responder_resources == RDMA_MAX_RESP_RES ?
		d->max_rd : conn_param->responder_resources;
	c->init_depth = conn_param->initiator_depth == RDMA_MAX_INIT_DEPTH ?
		d->max_init : conn_param->initiator_depth;
	c->retry = clamp7(conn_param->retry_count);
	c->rnr_retry = clamp7(conn_param->rnr_retry_count);
	c->qpn = (c->id.qp ? c->id.qp->qp_num : conn_param->qp_num) & 0xffffff;
	msg_init(c, &m, M_REQ);
	m.qpn = c->qpn;
	m.psn = c->psn;
	m.resp_res = c->resp_res;
	m.init_depth = c->init_depth;
	m.retry = c->retry;
	m.rnr_retry = c->rnr_retry;
	m.flow_control = conn_param->flow_control;
	m.srq = c->id.srq ? 1 : conn_param->srq;
	memcpy(&m.src, &c->id.route.addr.src_storage, sizeof(m.src));
	memcpy(&m.dst, &c->id.route.addr.dst_storage, sizeof(m.dst));
	m.pdata_len = conn_param->private_data_len;
	if (m.pdata_len)
		memcpy(m.pdata, conn_param->private_data, m.pdata_len);
	c->rcomm = 0;
	c->ever_connected = 1;
	c->state = S_REQ_SENT;
	send_kept(c, M_REQ, g_req_tries, &m);
out:
	pthread_mutex_unlock(&g_lock);
	return rc;
}

EXPORT int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct cm_id *c = cm_of(id);
	struct cm_dev *d;
	struct cm_msg m;
	int rc = 0;

	if (!id)
		return err(EINVAL);
	if (conn_param && (conn_param->private_data_len > REP_PDATA ||
			   (conn_param->private_data_len && !conn_param->private_data)))
		return err(EINVAL);
	pthread_mutex_lock(&g_lock);
	if (c->state != S_REQ_RCVD) {
		rc = err(c->state == S_REJECTED ? ECONNREFUSED : EINVAL);
		goto out;
	}
	d = &g_devs[c->loc.dev];
	if (conn_param) {
		uint8_t rr = conn_param->responder_resources, id_ = conn_param->initiator_depth;

		c->resp_res = rr == RDMA_MAX_RESP_RES ?
			(c->resp_res < d->max_rd ? c->resp_res : d->max_rd) : rr;
		c->init_depth = id_ == RDMA_MAX_INIT_DEPTH ?
			(c->init_depth < d->max_init ? c->init_depth : d->max_init) : id_;
		c->rnr_retry = clamp7(conn_param->rnr_retry_count);
	}
	c->qpn = (c->id.qp ? c->id.qp->qp_num : conn_param ? conn_param->qp_num : 0) & 0xffffff;
	if (c->id.qp) {
		int e = qp_rtr_rts(c);

		if (e) {
			rc = err(-e);
			goto out;
		}
	}
	msg_init(c, &m, M_REP);
	m.qpn = c->qpn;
	m.psn = c->psn;
	m.resp_res = c->resp_res;
	m.init_depth = c->init_depth;
	m.rnr_retry = c->rnr_retry;
	if (conn_param) {
		m.flow_control = conn_param->flow_control;
		m.srq = c->id.srq ? 1 : conn_param->srq;
		m.pdata_len = conn_param->private_data_len;
		if (m.pdata_len)
			memcpy(m.pdata, conn_param->private_data, m.pdata_len);
	}
	c->state = S_REP_SENT;
	send_kept(c, M_REP, g_rep_tries, &m);
out:
	pthread_mutex_unlock(&g_lock);
	return rc;
}

EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	struct cm_id *c = cm_of(id);
	struct cm_msg m;
	int rc = 0;

	if (!id || private_data_len > REJ_PDATA || (private_data_len && !private_data))
		return err(EINVAL);
	pthread_mutex_lock(&g_lock);
	if (c->state != S_REQ_RCVD && c->state != S_REP_RCVD) {
		rc = err(EINVAL);
		goto out;
	}
	msg_init(c, &m, M_REJ);
	m.reason = REJ_CONSUMER;
	m.pdata_len = private_data_len;
	if (private_data_len)
		memcpy(m.pdata, private_data, private_data_len);
	send_msg(c, &m);
	/* kept (not retransmitted) to answer a repeated REQ */
	c->out = m;
	c->out_valid = 0;
	c->state = S_REJECTED;
out:
	pthread_mutex_unlock(&g_lock);
	return rc;
}

EXPORT int rdma_establish(struct rdma_cm_id *id)
{
	struct cm_id *c = cm_of(id);
	int rc = 0;

	if (!id)
		return err(EINVAL);
	pthread_mutex_lock(&g_lock);
	if (c->state != S_REP_RCVD) {
		rc = err(EINVAL);
		goto out;
	}
	if (c->id.qp) {
		int e = qp_rtr_rts(c);

		if (e) {
			rc = err(-e);
			goto out;
		}
	}
	send_once(c, M_RTU, 0);
	c->state = S_ESTABLISHED;
	wake_thread();
out:
	pthread_mutex_unlock(&g_lock);
	return rc;
}

EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
	struct cm_id *c = cm_of(id);
	int rc = 0;

	if (!id)
		return err(EINVAL);
	pthread_mutex_lock(&g_lock);
	if (!c->ever_connected) {
		rc = err(EINVAL);
		goto out;
	}
	if (c->id.qp) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
		ibv_modify_qp(c->id.qp, &a, IBV_QP_STATE);
	}
	/* only an established connection sends a DREQ; otherwise (the
	 * kernel's DREQ and DREP both refused) nothing happens */
	if (c->state == S_ESTABLISHED) {
		c->state = S_DREQ_SENT;
		send_kept(c, M_DREQ, g_dreq_tries, NULL);
	}
out:
	pthread_mutex_unlock(&g_lock);
	return rc;
}

EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct cm_chan *ch = (struct cm_chan *)channel;

	if (!ch || !event)
		return err(EINVAL);
	for (;;) {
		struct cm_event *e;
		struct pollfd pfd = { .fd = ch->ch.fd, .events = POLLIN };
		int fl;

		pthread_mutex_lock(&g_lock);
		e = ch->head;
		if (e) {
			ch->head = e->next;
			if (!ch->head)
				ch->tail = NULL;
			chan_drain_if_empty(ch);
			e->owner->reported++;
			e->next = NULL;
			pthread_mutex_unlock(&g_lock);
			*event = &e->ev;
			return 0;
		}
		pthread_mutex_unlock(&g_lock);
		fl = fcntl(ch->ch.fd, F_GETFL);
		if (fl < 0)
			return -1;
		if (fl & O_NONBLOCK)
			return err(EAGAIN);
		if (poll(&pfd, 1, -1) < 0 && errno == EINTR)
			return -1;
	}
}

EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct cm_event *e = (struct cm_event *)event;

	if (!e)
		return err(EINVAL);
	pthread_mutex_lock(&g_lock);
	e->owner->acked++;
	pthread_cond_broadcast(&g_acked);
	pthread_mutex_unlock(&g_lock);
	free(e);
	return 0;
}

/* As librdmacm: events handed out for the id must be acknowledged first.
 * (A caller that destroys an id while another of its threads holds an
 * event of it, unacknowledged, waits for ever there too; say so once.) */
static void wait_acks(struct cm_id *c)
{
	int said = 0;

	while (c->reported != c->acked) {
		struct timespec t;

		clock_gettime(CLOCK_REALTIME, &t);
		t.tv_sec += 5;
		if (pthread_cond_timedwait(&g_acked, &g_lock, &t) == ETIMEDOUT && !said) {
			fprintf(stderr, "softrdma rdmacm: pid %d: id %p waits for %u event(s) "
				"to be acknowledged\n", (int)getpid(), (void *)c, c->reported - c->acked);
			said = 1;
		}
	}
}

static void destroy_locked(struct cm_id *c);

EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct cm_id *c = cm_of(id);

	if (!id)
		return err(EINVAL);
	pthread_mutex_lock(&g_lock);
	destroy_locked(c);
	pthread_mutex_unlock(&g_lock);
	return 0;
}

static void destroy_locked(struct cm_id *c)
{
	struct cm_event *e, *n;
	int keep = 0;

	c->destroying = 1;
	/* what the kernel's CM sends for an id torn down in each state */
	switch (c->state) {
	case S_ESTABLISHED:
		c->state = S_DREQ_SENT;
		send_kept(c, M_DREQ, g_dreq_tries, NULL);
		keep = 1;
		break;
	case S_DREQ_SENT:
		keep = 1;
		break;
	case S_REQ_SENT:
	case S_MRA_RCVD:
		c->out_valid = 0;
		msg_init(c, &c->out, M_REJ);
		c->out.reason = REJ_TIMEOUT;
		/* nobody to tell before the MRA: the REQ just stops */
		if (c->rcomm)
			send_msg(c, &c->out);
		to_timewait(c);
		keep = 1;
		break;
	case S_REP_RCVD:
	case S_REQ_RCVD:
	case S_REP_SENT:
		msg_init(c, &c->out, M_REJ);
		c->out.reason = REJ_CONSUMER;
		send_msg(c, &c->out);
		to_timewait(c);
		keep = 1;
		break;
	case S_DISCONNECTED:
	case S_REJECTED:
		if (c->rpid) {
			to_timewait(c);
			keep = 1;
		}
		break;
	default:
		break;
	}
	/* events not yet fetched go; a listener's pending requests too */
	if (c->chan) {
		e = chan_take(c->chan, c, 1);
		for (; e; e = n) {
			n = e->next;
			if (e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST && e->subject != c)
				destroy_locked(e->subject);
			free(e);
		}
	}
	if (c->state == S_LISTEN && c->port && c->port->listener == c)
		c->port->listener = NULL;
	/* events handed out must be acknowledged first (as librdmacm) */
	wait_acks(c);
	if (c->id.qp)
		c->id.qp = NULL; /* the QP is the caller's (rdma_destroy_qp) */
	if (keep) {
		c->zombie = 1;
		c->chan = NULL;
		wake_thread();
		return;
	}
	id_free(c);
}

EXPORT int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct cm_id *c = cm_of(id);
	struct cm_chan *to = (struct cm_chan *)channel;
	struct cm_event *e, *n;

	if (!id || !to)
		return err(EINVAL);
	pthread_mutex_lock(&g_lock);
	wait_acks(c);
	if (c->chan && c->chan != to) {
		for (e = chan_take(c->chan, c, 0); e; e = n) {
			n = e->next;
			chan_push(to, e);
		}
	}
	c->chan = to;
	c->id.channel = channel;
	pthread_mutex_unlock(&g_lock);
	return 0;
}

static int init_qp_attr(struct cm_id *c, struct ibv_qp_attr *a, int *mask)
{
	enum ibv_qp_state want = a->qp_state;
	int known = c->state == S_REQ_RCVD || c->state == S_REP_SENT || c->state == S_REP_RCVD ||
		    c->state == S_ESTABLISHED;
	int roce = c->loc.link_layer == IBV_LINK_LAYER_ETHERNET;

	if (!c->has_loc)
		return err(EINVAL);
	memset(a, 0, sizeof(*a));
	a->qp_state = want;
	switch (want) {
	case IBV_QPS_INIT:
		*mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		a->port_num = c->loc.port;
		a->pkey_index = 0;
		/* with a connection under way the CM grants remote access */
		if (c->ever_connected) {
			a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
			if (c->resp_res)
				a->qp_access_flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
		}
		return 0;
	case IBV_QPS_RTR:
		if (!known)
			return err(EINVAL);
		*mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		a->path_mtu = c->path.mtu;
		a->dest_qp_num = c->rqpn;
		a->rq_psn = c->rpsn;
		a->max_dest_rd_atomic = c->resp_res;
		a->min_rnr_timer = 0;
		a->ah_attr.dlid = roce ? 0 : c->rlid;
		a->ah_attr.sl = 0;
		a->ah_attr.port_num = c->loc.port;
		if (roce || memcmp(c->rgid.raw, c->loc.gid.raw, 8)) {
			/* RoCE, or another subnet: globally routed */
			a->ah_attr.is_global = 1;
			a->ah_attr.grh.dgid = c->rgid;
			a->ah_attr.grh.sgid_index = c->loc.gid_index;
			a->ah_attr.grh.hop_limit = roce ? 64 : 255;
			a->ah_attr.grh.traffic_class = c->tos;
		}
		return 0;
	case IBV_QPS_RTS:
		if (!known)
			return err(EINVAL);
		*mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
		a->sq_psn = c->psn;
		a->timeout = c->path.packet_life_time + 1;
		a->retry_cnt = c->retry;
		a->rnr_retry = c->rnr_retry;
		a->max_rd_atomic = c->init_depth;
		return 0;
	default:
		return err(EINVAL);
	}
}

EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr, int *qp_attr_mask)
{
	int rc;

	if (!id || !qp_attr || !qp_attr_mask)
		return err(EINVAL);
	pthread_mutex_lock(&g_lock);
	rc = init_qp_attr(cm_of(id), qp_attr, qp_attr_mask);
	pthread_mutex_unlock(&g_lock);
	return rc;
}

EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
			   size_t optlen)
{
	struct cm_id *c = cm_of(id);

	if (!id || !optval)
		return err(EINVAL);
	if (level == RDMA_OPTION_ID) {
		switch (optname) {
		case RDMA_OPTION_ID_TOS:
			if (optlen != sizeof(uint8_t))
				return err(EINVAL);
			c->tos = *(uint8_t *)optval;
			return 0;
		case RDMA_OPTION_ID_REUSEADDR:
			if (optlen != sizeof(int))
				return err(EINVAL);
			c->reuseaddr = !!*(int *)optval;
			return 0;
		case RDMA_OPTION_ID_AFONLY:
			if (optlen != sizeof(int))
				return err(EINVAL);
			c->afonly = !!*(int *)optval;
			return 0;
		case RDMA_OPTION_ID_ACK_TIMEOUT:
			if (optlen != sizeof(uint8_t))
				return err(EINVAL);
			return 0;
		}
	}
	return err(ENOSYS);
}

EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const names[] = {
		"RDMA_CM_EVENT_ADDR_RESOLVED", "RDMA_CM_EVENT_ADDR_ERROR",
		"RDMA_CM_EVENT_ROUTE_RESOLVED", "RDMA_CM_EVENT_ROUTE_ERROR",
		"RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
		"RDMA_CM_EVENT_CONNECT_ERROR", "RDMA_CM_EVENT_UNREACHABLE",
		"RDMA_CM_EVENT_REJECTED", "RDMA_CM_EVENT_ESTABLISHED",
		"RDMA_CM_EVENT_DISCONNECTED", "RDMA_CM_EVENT_DEVICE_REMOVAL",
		"RDMA_CM_EVENT_MULTICAST_JOIN", "RDMA_CM_EVENT_MULTICAST_ERROR",
		"RDMA_CM_EVENT_ADDR_CHANGE", "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};

	if ((unsigned)event < sizeof(names) / sizeof(names[0]))
		return names[event];
	return "UNKNOWN EVENT";
}

EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	const struct sockaddr *sa = &id->route.addr.src_addr;

	return sa->sa_family == AF_INET6 ? id->route.addr.src_sin6.sin6_port :
	       sa->sa_family == AF_INET ? id->route.addr.src_sin.sin_port : 0;
}

EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	const struct sockaddr *sa = &id->route.addr.dst_addr;

	return sa->sa_family == AF_INET6 ? id->route.addr.dst_sin6.sin6_port :
	       sa->sa_family == AF_INET ? id->route.addr.dst_sin.sin_port : 0;
}

EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **l;
	int i, n = 0;

	pthread_mutex_lock(&g_lock);
	devs_init();
	l = calloc(g_ndev + 1, sizeof(*l));
	if (l)
		for (i = 0; i < g_ndev; i++)
			if (dev_open(i))
				l[n++] = g_devs[i].ctx;
	pthread_mutex_unlock(&g_lock);
	if (num_devices)
		*num_devices = l ? n : 0;
	if (!l)
		errno = ENOMEM;
	return l;
}

EXPORT void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}

EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct cm_id *c = cm_of(id);
	struct ibv_qp_attr a;
	struct ibv_qp *qp;
	int mask;

	if (!id || !qp_init_attr || !c->has_loc)
		return err(EINVAL);
	if (!pd)
		pd = id->pd;
	if (pd->context != id->verbs)
		return err(EINVAL);
	qp = ibv_create_qp(pd, qp_init_attr);
	if (!qp)
		return -1;
	pthread_mutex_lock(&g_lock);
	a.qp_state = IBV_QPS_INIT;
	if (init_qp_attr(c, &a, &mask) || ibv_modify_qp(qp, &a, mask)) {
		int e = errno;

		pthread_mutex_unlock(&g_lock);
		ibv_destroy_qp(qp);
		return err(e);
	}
	id->qp = qp;
	id->send_cq = qp_init_attr->send_cq;
	id->recv_cq = qp_init_attr->recv_cq;
	id->srq = qp_init_attr->srq;
	pthread_mutex_unlock(&g_lock);
	return 0;
}

EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
	struct ibv_qp *qp;

	pthread_mutex_lock(&g_lock);
	qp = id->qp;
	id->qp = NULL;
	pthread_mutex_unlock(&g_lock);
	if (qp)
		ibv_destroy_qp(qp);
}

EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	(void)id;
	(void)event;
	return 0;
}
