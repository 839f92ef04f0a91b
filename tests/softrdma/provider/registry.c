/*
 * Life cycle of the fabric registry segment (see registry.h).
 *
 * Creation and removal are serialised with flock() on the segment file, so
 * a process dying at any point leaves no lock behind: the first process
 * creates the file and initialises it under the file lock; every process
 * claims a user slot; the last one leaving (or the first to find all other
 * users dead, see softrdma_gc()) unlinks the file, still under the lock. A
 * process that opened the file just before it was unlinked sees a link
 * count of 0 once it holds the lock and starts over.
 *
 * Users that died without leaving (SIGKILL) are found by reading their
 * token: every attach, detach and softrdma_gc() call reaps them, and so
 * does a requester whose responder turns out to be gone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "registry.h"

struct sr_shm *g_shm;
int g_slot = -1;
pid_t g_pid;
static volatile uint64_t g_token; /* read by other processes */
static ino_t g_ino;
static dev_t g_dev;

#define SEG_SIZE (sizeof(struct sr_shm) + SR_HEAP_SIZE)
#define BLK_HDR 64

struct sr_blk {
	uint64_t size; /* whole block, header included */
	uint64_t next; /* free list: next free block or SR_NIL */
};

static void seg_path(char *buf, size_t size)
{
	const char *d = getenv("SOFTRDMA_SHM_DIR");

	/* The layout version is part of the name: builds with another
	 * layout (other branches, older trees) make fabrics of their own
	 * instead of failing to attach. */
	snprintf(buf, size, "%s/softrdma.%u.v%u", d && *d ? d : "/dev/shm",
		 (unsigned)getuid(), (unsigned)SR_SHM_VERSION);
}

/* The device lock is a robust process-shared mutex: an owner that dies
 * holding it hands it to the next locker with EOWNERDEAD. What robustness
 * does not cover is a waiter killed after an unlock woke it: the kernel
 * sends the one wake-up to the dying process, and when a third process
 * takes the lock in between (so the word is neither 0 nor the dead
 * waiter's at its exit) nobody wakes the remaining waiters, whose
 * FUTEX_WAITERS bit the unlock cleared; they would sleep on a free lock
 * for ever (seen with a SIGKILLed UD receiver: its witness peer stuck).
 * So a contended lock sleeps at most LOCK_NAP_NS at a time and looks
 * again. */
#define LOCK_NAP_NS 2000000L

static int lock_result(int r)
{
	if (r == EOWNERDEAD) {
		pthread_mutex_consistent(&g_shm->lock);
		return 0;
	}
	return r;
}

void reg_lock(void)
{
	struct timespec ts;

	if (lock_result(pthread_mutex_trylock(&g_shm->lock)) != EBUSY)
		return;
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += LOCK_NAP_NS;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (lock_result(pthread_mutex_clocklock(&g_shm->lock,
							CLOCK_MONOTONIC,
							&ts)) != ETIMEDOUT)
			return;
	}
}

void reg_unlock(void)
{
	pthread_mutex_unlock(&g_shm->lock);
}

/* ------------------------------------------------------------------ heap */

static struct sr_blk *blk(uint64_t off)
{
	return (struct sr_blk *)(g_shm->heap + off);
}

uint64_t heap_alloc(uint64_t size)
{
	uint64_t *pp = &g_shm->free_head, need;

	need = (size + BLK_HDR + 63) & ~63ull;
	while (*pp != SR_NIL) {
		struct sr_blk *b = blk(*pp);

		if (b->size >= need) {
			uint64_t off = *pp;

			if (b->size - need >= 4096) {
				struct sr_blk *rest = blk(off + need);

				rest->size = b->size - need;
				rest->next = b->next;
				*pp = off + need;
				b->size = need;
			} else {
				*pp = b->next;
			}
			b->next = SR_NIL;
			memset(g_shm->heap + off + BLK_HDR, 0, size);
			return off + BLK_HDR;
		}
		pp = &b->next;
	}
	return SR_NIL;
}

/* Give whole pages inside a free block back to the system. */
static void heap_release(uint64_t off, uint64_t size)
{
	uintptr_t a = (uintptr_t)(g_shm->heap + off + BLK_HDR);
	uintptr_t e = (uintptr_t)(g_shm->heap + off + size);

	a = (a + 4095) & ~(uintptr_t)4095;
	e &= ~(uintptr_t)4095;
	if (e > a && e - a >= (256u << 10))
		madvise((void *)a, e - a, MADV_REMOVE);
}

void heap_free(uint64_t poff)
{
	uint64_t off, *pp = &g_shm->free_head, prev = SR_NIL;
	struct sr_blk *b;

	if (poff == SR_NIL || poff < BLK_HDR)
		return;
	off = poff - BLK_HDR;
	b = blk(off);
	while (*pp != SR_NIL && *pp < off) {
		prev = *pp;
		pp = &blk(*pp)->next;
	}
	b->next = *pp;
	*pp = off;
	if (b->next != SR_NIL && off + b->size == b->next) {
		b->size += blk(b->next)->size;
		b->next = blk(b->next)->next;
	}
	if (prev != SR_NIL && prev + blk(prev)->size == off) {
		blk(prev)->size += b->size;
		blk(prev)->next = b->next;
		off = prev;
		b = blk(prev);
	}
	heap_release(off, b->size);
}

/* ----------------------------------------------------------------- users */

int reg_user_alive(int slot)
{
	struct sr_user *u = &g_shm->users[slot];
	struct iovec l, r;
	uint64_t t = 0;

	if (!u->active)
		return 0;
	if (slot == g_slot)
		return 1;
	l.iov_base = &t;
	l.iov_len = sizeof(t);
	r.iov_base = (void *)(uintptr_t)u->probe;
	r.iov_len = sizeof(t);
	if (process_vm_readv(u->pid, &l, 1, &r, 1, 0) != sizeof(t))
		return errno == EPERM; /* cannot tell: keep it */
	return t == u->token;
}

void reg_reap_user(int slot)
{
	uint32_t i;

	for (i = 0; i < SR_NQP; i++) {
		struct sr_sqp *q = &g_shm->qps[i];

		if (q->used && q->owner == slot) {
			heap_free(q->rq.off);
			memset(q, 0, sizeof(*q));
		}
	}
	for (i = 0; i < SR_NCQ; i++) {
		struct sr_scq *c = &g_shm->cqs[i];

		if (c->used && c->owner == slot) {
			heap_free(c->off);
			memset(c, 0, sizeof(*c));
		}
	}
	for (i = 0; i < SR_NSRQ; i++) {
		struct sr_ssrq *s = &g_shm->srqs[i];

		if (s->used && s->owner == slot) {
			heap_free(s->rq.off);
			memset(s, 0, sizeof(*s));
		}
	}
	for (i = 0; i < SR_NMR; i++) {
		struct sr_smr *m = &g_shm->mrs[i];

		if (m->used && m->owner == slot) {
			m->used = 0;
			m->key = 0;
		}
	}
	memset(&g_shm->users[slot], 0, sizeof(g_shm->users[slot]));
}

/* Reap dead users; returns how many live users remain. Lock held. */
static int reap_dead(void)
{
	int i, live = 0;

	for (i = 0; i < SR_MAX_USERS; i++) {
		if (!g_shm->users[i].active)
			continue;
		if (reg_user_alive(i))
			live++;
		else
			reg_reap_user(i);
	}
	return live;
}

static void shm_init(struct sr_shm *s)
{
	pthread_mutexattr_t ma;
	struct sr_blk *b;

	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&s->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	s->version = SR_SHM_VERSION;
	s->size = SEG_SIZE;
	s->free_head = 0;
	s->udq_head = SR_NIL;
	s->udq_tail = SR_NIL;
	s->udq_count = 0;
	b = (struct sr_blk *)s->heap;
	b->size = SR_HEAP_SIZE;
	b->next = SR_NIL;
	__atomic_store_n(&s->magic, SR_SHM_MAGIC, __ATOMIC_RELEASE);
}

/* Open the segment file and take its flock; create it if create. */
static int seg_open_locked(int create)
{
	char path[256];
	struct stat st;
	int fd;

	seg_path(path, sizeof(path));
	for (;;) {
		fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
		if (fd < 0)
			return -1;
		if (flock(fd, LOCK_EX)) {
			close(fd);
			return -1;
		}
		if (fstat(fd, &st) == 0 && st.st_nlink > 0)
			return fd;
		close(fd); /* unlinked meanwhile: start over */
	}
}

static struct sr_shm *seg_map(int fd, int init)
{
	struct stat st;
	void *p;

	if (fstat(fd, &st))
		return NULL;
	if (st.st_size == 0) {
		if (!init || ftruncate(fd, SEG_SIZE))
			return NULL;
	} else if ((uint64_t)st.st_size != SEG_SIZE) {
		return NULL;
	}
	p = mmap(NULL, SEG_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (st.st_size == 0)
		shm_init(p);
	if (((struct sr_shm *)p)->magic != SR_SHM_MAGIC ||
	    ((struct sr_shm *)p)->version != SR_SHM_VERSION) {
		munmap(p, SEG_SIZE);
		return NULL;
	}
	g_ino = st.st_ino;
	g_dev = st.st_dev;
	return p;
}

int reg_attach(void)
{
	uint64_t tok;
	int fd, i;

	if (g_shm && g_pid == getpid())
		return 0;
	g_shm = NULL;
	g_slot = -1;
	g_pid = getpid();
	fd = seg_open_locked(1);
	if (fd < 0)
		return errno ? errno : EIO;
	g_shm = seg_map(fd, 1);
	if (!g_shm) {
		fprintf(stderr, "softrdma: cannot map the registry segment "
				"(another build's layout?)\n");
		close(fd);
		return EIO;
	}
	{
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		tok = ((uint64_t)g_pid << 32) ^ (uint64_t)(uintptr_t)&tok ^
		      ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^
		      0x5a5a5a5a;
	}
	g_token = tok;
	reg_lock();
	reap_dead();
	for (i = 0; i < SR_MAX_USERS && g_shm->users[i].active; i++)
		;
	if (i < SR_MAX_USERS) {
		g_shm->users[i].pid = g_pid;
		g_shm->users[i].probe = (uintptr_t)&g_token;
		g_shm->users[i].token = tok;
		g_shm->users[i].active = 1;
		g_slot = i;
	}
	reg_unlock();
	flock(fd, LOCK_UN);
	close(fd);
	if (g_slot < 0) {
		munmap(g_shm, SEG_SIZE);
		g_shm = NULL;
		return EMFILE;
	}
	return 0;
}

void reg_detach(void)
{
	char path[256];
	struct stat st;
	int fd, live;

	if (!g_shm || g_pid != getpid())
		return;
	fd = seg_open_locked(0);
	reg_lock();
	if (g_slot >= 0)
		reg_reap_user(g_slot);
	g_slot = -1;
	live = reap_dead();
	reg_unlock();
	if (fd >= 0) {
		if (live == 0 && fstat(fd, &st) == 0 && st.st_ino == g_ino &&
		    st.st_dev == g_dev) {
			seg_path(path, sizeof(path));
			unlink(path);
		}
		flock(fd, LOCK_UN);
		close(fd);
	}
	munmap(g_shm, SEG_SIZE);
	g_shm = NULL;
}

/* Reap users that died without leaving and remove the segment if nobody
 * is left. Returns the number of live users, -1 if there is no segment.
 * Used by softrdma-gc (run.sh calls it when its command ends). */
__attribute__((visibility("default"))) int softrdma_gc(void)
{
	struct sr_shm *saved = g_shm;
	pid_t saved_pid = g_pid;
	int saved_slot = g_slot;
	char path[256];
	int fd, live;

	fd = seg_open_locked(0);
	if (fd < 0)
		return -1;
	g_pid = getpid();
	g_slot = -1;
	g_shm = seg_map(fd, 0);
	if (!g_shm) {
		struct stat st;

		/* Empty (its creator died before sizing it): remove; another
		 * layout: leave it. */
		if (fstat(fd, &st) == 0 && st.st_size == 0) {
			seg_path(path, sizeof(path));
			unlink(path);
		}
		flock(fd, LOCK_UN);
		close(fd);
		g_shm = saved;
		g_pid = saved_pid;
		g_slot = saved_slot;
		return -1;
	}
	reg_lock();
	live = reap_dead();
	reg_unlock();
	if (live == 0) {
		seg_path(path, sizeof(path));
		unlink(path);
	}
	munmap(g_shm, SEG_SIZE);
	flock(fd, LOCK_UN);
	close(fd);
	g_shm = saved;
	g_pid = saved_pid;
	g_slot = saved_slot;
	return live;
}
