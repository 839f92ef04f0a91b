/*
 * The part of librdmacm's interface the soft CM does not emulate (rsockets,
 * multicast, rdma_getaddrinfo, ECE, the rdma_create_ep family): present so
 * that programs linked with the real library load, failing with ENOSYS when
 * called. No header is included: each returns -1 in a register wide enough
 * for the int, ssize_t or off_t its real prototype returns, or NULL / nothing.
 */
#include <errno.h>
#include <stddef.h>

#define EXPORT __attribute__((visibility("default")))

#define STUB(name)              \
	EXPORT long name(void); \
	EXPORT long name(void)  \
	{                       \
		errno = ENOSYS; \
		return -1;      \
	}
#define STUB_VOID(name)         \
	EXPORT void name(void); \
	EXPORT void name(void)  \
	{                       \
	}

STUB(rdma_create_ep)
STUB(rdma_create_qp_ex)
STUB(rdma_create_srq)
STUB(rdma_create_srq_ex)
STUB(rdma_destroy_srq)
STUB_VOID(rdma_destroy_ep)
STUB(rdma_get_request)
STUB(rdma_join_multicast)
STUB(rdma_join_multicast_ex)
STUB(rdma_leave_multicast)
STUB(rdma_getaddrinfo)
STUB_VOID(rdma_freeaddrinfo)
STUB(rdma_get_remote_ece)
STUB(rdma_set_local_ece)
STUB(rdma_reject_ece)
STUB(rsocket)
STUB(rbind)
STUB(rlisten)
STUB(raccept)
STUB(rconnect)
STUB(rshutdown)
STUB(rclose)
STUB(rrecv)
STUB(rrecvfrom)
STUB(rrecvmsg)
STUB(rsend)
STUB(rsendto)
STUB(rsendmsg)
STUB(rread)
STUB(rreadv)
STUB(rwrite)
STUB(rwritev)
STUB(rpoll)
STUB(rselect)
STUB(rgetpeername)
STUB(rgetsockname)
STUB(rsetsockopt)
STUB(rgetsockopt)
STUB(rfcntl)
STUB(riomap)
STUB(riounmap)
STUB(riowrite)
