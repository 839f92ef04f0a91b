/* Prints a TCP port that is free on 127.0.0.1 (the kernel picks it), for
 * test scripts that need a port and must not use fixed ones. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void)
{
	struct sockaddr_in a;
	socklen_t l = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_ANY);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(fd, (struct sockaddr *)&a, &l)) {
		perror("freeport");
		return 1;
	}
	printf("%u\n", ntohs(a.sin_port));
	close(fd);
	return 0;
}
