/*
 * Micro-benchmark of the self transport's send path, seen from C exactly as
 * an application sees it: the inline uct_ep_* helpers of the system headers
 * calling through the interface's vtable. Prints nanoseconds per operation
 * (best of ROUNDS) for am_short (8-byte header, no payload), put_short (8 B)
 * and atomic64 add post.
 *
 * Usage: self_ops [OPS_PER_ROUND] [ROUNDS]
 */
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>

/* The self transport's one device: "memory0" up to UCX 1.13, "memory" from
 * 1.14 on (UCX names a single self device without a number). */
#if UCT_VERNO_MINOR >= 14
#define SELF_DEV "memory"
#else
#define SELF_DEV "memory0"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile uint64_t g_seen;

static ucs_status_t on_am(void *arg, void *data, size_t len, unsigned flags)
{
    g_seen = *(const uint64_t*)data;
    return UCS_OK;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

#define CHECK(_expr) do { if ((_expr) != UCS_OK) { \
    fprintf(stderr, "failed: %s\n", #_expr); exit(1); } } while (0)

int main(int argc, char **argv)
{
    long n      = (argc > 1) ? atol(argv[1]) : 10000000;
    int rounds  = (argc > 2) ? atoi(argv[2]) : 5;
    uint64_t payload[2] = {0}, target = 0, iface_addr;
    const char *names[] = {"am_short", "put_short", "atomic64_add"};
    uct_component_h *components;
    unsigned num_components, op;
    ucs_async_context_t *async;
    uct_worker_h worker;
    uct_md_config_t *md_config;
    uct_iface_config_t *iface_config;
    uct_iface_params_t params;
    uct_ep_params_t ep_params;
    uct_md_h md;
    uct_iface_h iface;
    uct_ep_h ep;
    double best, t;
    long k;
    int r;

    CHECK(uct_query_components(&components, &num_components));
    CHECK(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async));
    CHECK(uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker));
    /* Debian and uct-rs both list "self" first. */
    CHECK(uct_md_config_read(components[0], NULL, NULL, &md_config));
    CHECK(uct_md_open(components[0], "self", md_config, &md));
    CHECK(uct_md_iface_config_read(md, "self", NULL, NULL, &iface_config));

    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "self";
    params.mode.device.dev_name = SELF_DEV;
    CHECK(uct_iface_open(md, worker, &params, iface_config, &iface));
    CHECK(uct_iface_get_address(iface, (uct_iface_addr_t*)&iface_addr));

    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                           UCT_EP_PARAM_FIELD_DEV_ADDR |
                           UCT_EP_PARAM_FIELD_IFACE_ADDR;
    ep_params.iface      = iface;
    ep_params.iface_addr = (const uct_iface_addr_t*)&iface_addr;
    CHECK(uct_ep_create(&ep_params, &ep));
    CHECK(uct_iface_set_am_handler(iface, 5, on_am, NULL, 0));

    for (op = 0; op < 3; ++op) {
        best = 1e30;
        for (r = 0; r < rounds; ++r) {
            t = now_ns();
            switch (op) {
            case 0:
                for (k = 0; k < n; ++k) {
                    uct_ep_am_short(ep, 5, k, payload, 0);
                }
                break;
            case 1:
                for (k = 0; k < n; ++k) {
                    uct_ep_put_short(ep, payload, 8, (uintptr_t)&target, 0);
                }
                break;
            default:
                for (k = 0; k < n; ++k) {
                    uct_ep_atomic64_post(ep, UCT_ATOMIC_OP_ADD, 1,
                                         (uintptr_t)&target, 0);
                }
                break;
            }
            t = (now_ns() - t) / n;
            best = (t < best) ? t : best;
        }
        printf("%s %.3f\n", names[op], best);
    }

    uct_ep_destroy(ep);
    uct_iface_close(iface);
    uct_config_release(iface_config);
    uct_md_close(md);
    uct_config_release(md_config);
    uct_worker_destroy(worker);
    ucs_async_context_destroy(async);
    uct_release_component_list(components);
    return 0;
}
