/*
 * A process with one tcp interface open on a device (default lo), for
 * measurements from outside: prints "port N pid P" once listening, then
 * keeps calling progress (sleeping 1 ms between rounds) until stdin closes
 * or reads a line. Used by tests/tcp-idle-rss.sh.
 *
 *   tcp_idle_server [DEV]
 */
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <unistd.h>

#define CHECK(what, st) do { if ((st) != UCS_OK) { \
    fprintf(stderr, "%s failed: %s\n", what, ucs_status_string(st)); exit(1); } } while (0)

int main(int argc, char **argv)
{
    const char *dev = (argc > 1) ? argv[1] : "lo";
    uct_component_h *comps, tcp = NULL;
    unsigned ncomps, i;
    ucs_async_context_t *async;
    uct_worker_h worker;
    uct_md_config_t *mdc;
    uct_iface_config_t *ic;
    uct_md_h md;
    uct_iface_h iface;
    uct_iface_params_t p;
    unsigned char addr[64];
    struct pollfd pfd = { .fd = 0, .events = POLLIN };

    CHECK("uct_query_components", uct_query_components(&comps, &ncomps));
    for (i = 0; i < ncomps; i++) {
        uct_component_attr_t a = { .field_mask = UCT_COMPONENT_ATTR_FIELD_NAME };
        uct_component_query(comps[i], &a);
        if (!strcmp(a.name, "tcp")) {
            tcp = comps[i];
        }
    }
    if (tcp == NULL) {
        fprintf(stderr, "no tcp component\n");
        return 1;
    }
    CHECK("ucs_async_context_create", ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async));
    CHECK("uct_worker_create", uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker));
    CHECK("uct_md_config_read", uct_md_config_read(tcp, NULL, NULL, &mdc));
    CHECK("uct_md_open", uct_md_open(tcp, "tcp", mdc, &md));
    CHECK("uct_md_iface_config_read", uct_md_iface_config_read(md, "tcp", NULL, NULL, &ic));
    memset(&p, 0, sizeof(p));
    p.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE;
    p.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    p.mode.device.tl_name  = "tcp";
    p.mode.device.dev_name = dev;
    CHECK("uct_iface_open", uct_iface_open(md, worker, &p, ic, &iface));
    uct_iface_progress_enable(iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    CHECK("uct_iface_get_address", uct_iface_get_address(iface, (uct_iface_addr_t*)addr));
    printf("port %u pid %d\n", (addr[0] << 8) | addr[1], (int)getpid());
    fflush(stdout);
    for (;;) {
        for (i = 0; i < 100; i++) {
            uct_worker_progress(worker);
        }
        if (poll(&pfd, 1, 1) > 0) {
            break;
        }
    }
    uct_iface_close(iface);
    uct_config_release(ic);
    uct_md_close(md);
    uct_config_release(mdc);
    uct_worker_destroy(worker);
    ucs_async_context_destroy(async);
    uct_release_component_list(comps);
    return 0;
}
