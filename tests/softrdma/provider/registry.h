/*
 * The fabric registry of the soft RDMA device: one shared memory segment per
 * user id, /dev/shm/softrdma.<uid>, mapped by every process that opens a
 * softrdma device. It holds everything another process needs to reach a
 * queue pair: the QP table (number -> owner, state, receive ring), CQ rings,
 * SRQ rings, memory keys (key -> owner pid, address, length, access, PD),
 * the users (live processes) and a heap for the rings. One process-shared
 * robust mutex guards all of it: every verb that touches shared state takes
 * it (the device lock). Payloads never go through the segment: requesters
 * move them with process_vm_readv/writev into the owner's memory.
 */
#ifndef SOFTRDMA_REGISTRY_H
#define SOFTRDMA_REGISTRY_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <infiniband/verbs.h>

#define SR_MAX_SGE 16
#define SR_QP_GIDS 16 /* GIDs of a QP's port the registry keeps */
#define SR_SHM_MAGIC 0x31414d4452534f53ull /* "SOSRDMA1" */
#define SR_SHM_VERSION 6
#define SR_MAX_USERS 256
#define SR_NQP 16384 /* QP table: index in the low 14 bits of a QP number */
#define SR_QPN_IDX_BITS 14
#define SR_NCQ 4096
#define SR_NSRQ 4096
#define SR_NMR 65536
#define SR_HEAP_SIZE (1ull << 30) /* sparse: pages exist once touched */
#define SR_NIL UINT64_MAX

/* A process that has the segment mapped. token is a random value stored
 * at probe in that process: reading it back with process_vm_readv tells
 * a live owner from a dead one (or from a new process with a reused pid). */
struct sr_user {
	int32_t pid;
	int32_t active;
	uint64_t probe;
	uint64_t token;
};

/* A ring of receive work requests (of a QP or an SRQ), in the heap. Each
 * entry: struct sr_srwr followed by max_sge scatter entries. */
struct sr_sring {
	uint64_t off;
	uint32_t cap, head, count, max_sge, esize;
};

struct sr_ssge {
	uint64_t addr; /* in the owner's address space, resolved at post time */
	uint32_t length;
	uint32_t lkey;
};

struct sr_srwr {
	uint64_t wr_id;
	uint32_t num_sge;
	int32_t bad; /* a local key did not check at post time */
	struct sr_ssge sge[];
};

struct sr_sqp {
	uint32_t used;
	uint32_t qpn;
	int32_t owner; /* user slot */
	int32_t pid;
	uint32_t type, state;
	uint32_t pd;
	uint32_t access, qkey, dest_qpn, min_rnr_timer;
	uint16_t lid; /* of the port the QP lives on */
	uint16_t dlid;
	int32_t srq; /* SRQ index or -1 */
	int32_t rcq; /* receive CQ index */
	int32_t async_wfd; /* owner's async event pipe */
	uint64_t uptr; /* owner's struct ibv_qp * */
	uint32_t ev_posted; /* async events written for this QP */
	uint32_t eth; /* its port's link layer is Ethernet (RoCE) */
	uint8_t dgid[16]; /* RC on Ethernet: the GID its packets go to */
	uint32_t ngids;	  /* Ethernet: its port's GID table (packets reach */
	uint8_t gids[SR_QP_GIDS][16]; /* it only when sent to one of these) */
	struct sr_sring rq;
};

struct sr_scq {
	uint32_t used;
	int32_t owner;
	int32_t pid;
	uint32_t cap, head, count;
	uint32_t armed, solicited_only, overrun;
	int32_t chan_wfd; /* owner's completion channel pipe, or -1 */
	int32_t async_wfd;
	uint64_t uptr; /* owner's struct ibv_cq * */
	uint64_t off;  /* ring of struct ibv_wc in the heap */
};

struct sr_ssrq {
	uint32_t used;
	int32_t owner;
	int32_t pid;
	uint32_t pd, limit;
	int32_t async_wfd;
	uint64_t uptr;
	struct sr_sring rq;
};

struct sr_smr {
	uint32_t used;
	uint32_t key;
	int32_t owner;
	int32_t pid;
	uint32_t pd;
	int32_t access;
	uint64_t iova, addr, len;
};

/* A UD datagram held back by the network (delay or reordering): where it
 * goes, what the receive completion says, and GRH + payload (len bytes). */
struct sr_udq {
	uint64_t next;
	uint64_t due_ns; /* CLOCK_MONOTONIC */
	uint32_t dqpn, qkey;
	uint32_t src_qpn;
	uint16_t slid, dlid; /* dlid 0: any; not a LID when eth */
	uint32_t wc_flags, imm_data;
	uint32_t solicited;
	uint32_t held; /* reordered: waits for the next datagram to dqpn */
	uint32_t len;
	uint32_t eth; /* sent from an Ethernet (RoCE) port */
	uint8_t dgid[16]; /* its GRH's destination GID (eth) */
	char data[];
};

struct sr_shm {
	uint64_t magic; /* written last by the creator */
	uint32_t version;
	uint32_t pad;
	uint64_t size;
	pthread_mutex_t lock; /* robust, process-shared */
	uint32_t pd_seq, key_gen, qp_gen;
	uint32_t pad2;
	uint64_t free_head; /* heap free list (offsets into heap) */
	/* UD datagrams in flight (SOFTRDMA_UD_DELAY_US / _REORDER): a FIFO
	 * of struct sr_udq in the heap, delivered by whichever process polls
	 * a CQ once they are due. */
	uint64_t udq_head, udq_tail;
	uint32_t udq_count;
	uint32_t pad3;
	struct sr_user users[SR_MAX_USERS];
	struct sr_sqp qps[SR_NQP];
	struct sr_scq cqs[SR_NCQ];
	struct sr_ssrq srqs[SR_NSRQ];
	struct sr_smr mrs[SR_NMR];
	char heap[] __attribute__((aligned(4096)));
};

extern struct sr_shm *g_shm;
extern int g_slot; /* our user slot */
extern pid_t g_pid;

int reg_attach(void);  /* map (create) the segment and claim a user slot */
void reg_detach(void); /* release the slot; last user unlinks */
void reg_lock(void);
void reg_unlock(void);
/* 1 if the user in slot is alive (always for ourselves). Lock held. */
int reg_user_alive(int slot);
/* Free every object of a user slot and release it. Lock held. */
void reg_reap_user(int slot);
uint64_t heap_alloc(uint64_t size);
void heap_free(uint64_t off);
static inline void *heap_ptr(uint64_t off)
{
	return g_shm->heap + off;
}

#endif
