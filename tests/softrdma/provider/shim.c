/*
 * Process shim of the soft RDMA device, loaded with LD_PRELOAD by run.sh.
 *
 * 1. socket(AF_NETLINK, *, NETLINK_RDMA) fails with EPROTONOSUPPORT, so
 *    libibverbs always enumerates devices from the (generated) sysfs tree,
 *    also on kernels that have RDMA support.
 * 2. A few core verbs bypass the provider and write a kernel command to the
 *    device fd (here /dev/null). The provider registers its command fds with
 *    softrdma_shim_register_cmd_fd(); writes on them are answered here. The
 *    one that matters is "create completion channel": it gets the read end
 *    of a pipe, whose write end the provider uses to post completion events
 *    (softrdma_shim_channel_peer()).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <rdma/ib_user_verbs.h>

#define SHIM_MAX_FD 65536

static unsigned char cmd_fds[SHIM_MAX_FD];
static int channel_peer[SHIM_MAX_FD]; /* write end + 1 for a channel fd */
static pthread_mutex_t shim_lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((visibility("default"))) int softrdma_shim_register_cmd_fd(int fd)
{
	if (fd < 0 || fd >= SHIM_MAX_FD)
		return -1;
	__atomic_store_n(&cmd_fds[fd], 1, __ATOMIC_RELEASE);
	return 0;
}

__attribute__((visibility("default"))) int softrdma_shim_channel_peer(int fd)
{
	if (fd < 0 || fd >= SHIM_MAX_FD)
		return -1;
	return __atomic_load_n(&channel_peer[fd], __ATOMIC_ACQUIRE) - 1;
}

int socket(int domain, int type, int protocol)
{
	if (domain == AF_NETLINK && protocol == NETLINK_RDMA) {
		errno = EPROTONOSUPPORT;
		return -1;
	}
	return syscall(SYS_socket, domain, type, protocol);
}

static ssize_t answer_command(int fd, const void *buf, size_t count)
{
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_create_comp_channel req;
	struct ib_uverbs_create_comp_channel_resp resp;
	int p[2];

	if (count < sizeof(hdr)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(&hdr, buf, sizeof(hdr));
	if (hdr.command != IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL ||
	    count < sizeof(hdr) + sizeof(req) || !hdr.out_words) {
		errno = ENOSYS;
		return -1;
	}
	memcpy(&req, (const char *)buf + sizeof(hdr), sizeof(req));
	if (pipe2(p, O_CLOEXEC))
		return -1;
	if (p[0] >= SHIM_MAX_FD || p[1] >= SHIM_MAX_FD) {
		syscall(SYS_close, p[0]);
		syscall(SYS_close, p[1]);
		errno = EMFILE;
		return -1;
	}
	fcntl(p[1], F_SETFL, O_NONBLOCK);
	pthread_mutex_lock(&shim_lock);
	__atomic_store_n(&channel_peer[p[0]], p[1] + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&shim_lock);
	memset(&resp, 0, sizeof(resp));
	resp.fd = p[0];
	memcpy((void *)(uintptr_t)req.response, &resp, sizeof(resp));
	return count;
}

ssize_t write(int fd, const void *buf, size_t count)
{
	if (fd >= 0 && fd < SHIM_MAX_FD &&
	    __atomic_load_n(&cmd_fds[fd], __ATOMIC_ACQUIRE))
		return answer_command(fd, buf, count);
	return syscall(SYS_write, fd, buf, count);
}

int close(int fd)
{
	if (fd >= 0 && fd < SHIM_MAX_FD) {
		int peer;

		__atomic_store_n(&cmd_fds[fd], 0, __ATOMIC_RELEASE);
		pthread_mutex_lock(&shim_lock);
		peer = channel_peer[fd] - 1;
		channel_peer[fd] = 0;
		pthread_mutex_unlock(&shim_lock);
		if (peer >= 0)
			syscall(SYS_close, peer);
	}
	return syscall(SYS_close, fd);
}
