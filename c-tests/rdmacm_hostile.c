/*
 * rdmacm_hostile - a client that speaks RDMA CM to a UCX server but sends
 * private data no UCX client sends, to check that the server refuses it
 * cleanly and keeps serving.
 *
 *   rdmacm_hostile ADDR PORT CASE
 *
 * CASE (the private data of rdma_connect; UCX's starts with a 2-byte
 * header: the length of what follows, then a status):
 *   empty      no private data at all
 *   short      one byte (shorter than the header)
 *   overlong   a header claiming 200 bytes, 10 sent
 *   badstatus  a header with status 5 (no UCX status is positive)
 *   errstatus  a request carrying an error status (-25)
 *   garbage    54 bytes of 0xa5
 *
 * The client resolves the address and route, connects (with the number of
 * a dummy UD QP, as UCX does), and reports the first connection event that
 * comes within 10 s: "REJECTED", "CONNECT_RESPONSE" (then it disconnects),
 * or what else came. Exit 0 when an event came, 1 on a local failure or
 * no event.
 */
#include <rdma/rdma_cma.h>
#include <infiniband/verbs.h>
#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIE(...) do { printf("hostile: FAIL "); printf(__VA_ARGS__); printf("\n"); exit(1); } while (0)

static struct rdma_cm_event *next_event(struct rdma_event_channel *ch, int ms)
{
    struct pollfd p = { .fd = ch->fd, .events = POLLIN };
    struct rdma_cm_event *e;
    if (poll(&p, 1, ms) <= 0) return NULL;
    if (rdma_get_cm_event(ch, &e)) return NULL;
    return e;
}

static struct rdma_cm_event *expect(struct rdma_event_channel *ch, enum rdma_cm_event_type want, const char *what)
{
    struct rdma_cm_event *e = next_event(ch, 10000);
    if (e == NULL) DIE("no event while waiting for %s", what);
    if (e->event != want) DIE("%s while waiting for %s (status %d)", rdma_event_str(e->event), what, e->status);
    return e;
}

int main(int argc, char **argv)
{
    struct rdma_event_channel *ch;
    struct rdma_cm_id *id;
    struct rdma_cm_event *e;
    struct sockaddr_in dst;
    struct rdma_conn_param cp;
    unsigned char data[56];
    size_t len;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    struct ibv_qp_init_attr qa;
    const char *c;

    if (argc != 4) {
        fprintf(stderr, "usage: %s ADDR PORT CASE\n", argv[0]);
        return 2;
    }
    setvbuf(stdout, NULL, _IONBF, 0);
    c = argv[3];
    memset(data, 0, sizeof(data));
    if (!strcmp(c, "empty")) {
        len = 0;
    } else if (!strcmp(c, "short")) {
        len = 1;
        data[0] = 30;
    } else if (!strcmp(c, "overlong")) {
        len = 12;
        data[0] = 200;
    } else if (!strcmp(c, "badstatus")) {
        len = 6;
        data[0] = 4;
        data[1] = 5;
    } else if (!strcmp(c, "errstatus")) {
        len = 2;
        data[1] = (unsigned char)-25;
    } else if (!strcmp(c, "garbage")) {
        len = 54;
        memset(data, 0xa5, len);
    } else {
        DIE("unknown case %s", c);
    }

    memset(&dst, 0, sizeof(dst));
    dst.sin_family = AF_INET;
    dst.sin_port   = htons((unsigned short)atoi(argv[2]));
    if (inet_pton(AF_INET, argv[1], &dst.sin_addr) != 1) DIE("bad address %s", argv[1]);
    ch = rdma_create_event_channel();
    if (ch == NULL) DIE("rdma_create_event_channel: %m");
    if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) DIE("rdma_create_id: %m");
    if (rdma_resolve_addr(id, NULL, (struct sockaddr*)&dst, 5000)) DIE("rdma_resolve_addr: %m");
    rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, "the address"));
    if (rdma_resolve_route(id, 5000)) DIE("rdma_resolve_route: %m");
    rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, "the route"));

    cq = ibv_create_cq(id->verbs, 1, NULL, NULL, 0);
    if (cq == NULL) DIE("ibv_create_cq: %m");
    memset(&qa, 0, sizeof(qa));
    qa.send_cq = qa.recv_cq = cq;
    qa.qp_type = IBV_QPT_UD;
    qa.cap.max_send_wr = qa.cap.max_recv_wr = 2;
    qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
    qp = ibv_create_qp(id->pd, &qa);
    if (qp == NULL) DIE("ibv_create_qp: %m");

    memset(&cp, 0, sizeof(cp));
    cp.private_data     = len ? data : NULL;
    cp.private_data_len = (unsigned char)len;
    cp.qp_num           = qp->qp_num;
    if (rdma_connect(id, &cp)) DIE("rdma_connect: %m");
    e = next_event(ch, 10000);
    if (e == NULL) DIE("no answer to the request");
    printf("hostile: %s: %s (status %d)\n", c, rdma_event_str(e->event), e->status);
    if (e->event == RDMA_CM_EVENT_CONNECT_RESPONSE) {
        rdma_ack_cm_event(e);
        rdma_disconnect(id);
        e = next_event(ch, 2000);
    }
    if (e != NULL) rdma_ack_cm_event(e);
    ibv_destroy_qp(qp);
    ibv_destroy_cq(cq);
    rdma_destroy_id(id);
    rdma_destroy_event_channel(ch);
    return 0;
}
