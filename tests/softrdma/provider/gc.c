/* softrdma-gc PROVIDER.so: reaps registry users that died without leaving
 * (SIGKILL) and removes the registry segment when no live user is left.
 * run.sh runs it when its command ends. Exit status 0. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	int (*gc)(void);
	void *h;

	if (argc != 2) {
		fprintf(stderr, "usage: %s PROVIDER.so\n", argv[0]);
		return 2;
	}
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "softrdma-gc: %s\n", dlerror());
		return 1;
	}
	gc = (int (*)(void))dlsym(h, "softrdma_gc");
	if (gc)
		gc();
	return 0;
}
