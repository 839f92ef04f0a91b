/*
 * ib_rcache.c -- registrations of the "ib" memory domain, through the UCT
 * API, on an RDMA device (tests/ib-rcache.sh runs it on the soft device).
 *
 *   ib_rcache [--no-bad-handles] [DEVICE]      (default softrdma0)
 *
 * --no-bad-handles leaves out the made-up and over-released handles, and
 * the close with a registration held (for the C original, whose cached
 * deregistration does not check handles and whose close asserts then).
 *
 * The md's registration cost tells how it registers: a cost under 1 us
 * means through the registration cache, otherwise one ibv_reg_mr per
 * registration. This program defines ibv_reg_mr and ibv_dereg_mr itself
 * (and ibv_reg_mr_iova2, which the inline ibv_reg_mr of rdma-core's header
 * calls) (built with -rdynamic, so the library's calls land here) to count the
 * device registrations behind each step, and passes them on to libibverbs.
 *
 * With the cache:
 *   - the same buffer registered twice: the same handle and remote key,
 *     one device registration;
 *   - deregistered and registered again: still cached (no new one);
 *   - a handle deregistered more times than registered, or a made-up
 *     handle: UCS_ERR_INVALID_PARAM, nothing else happens;
 *   - the memory unmapped and mapped again at the same address: the next
 *     registration is a new one (new key), the old one is gone;
 *   - closing the md with a registration still held deregisters all.
 * Direct: each registration is its own, and each deregistration undoes it.
 *
 * Output: "PASS name" / "FAIL name: why" lines, then "N passed, M failed".
 */
#define _GNU_SOURCE
#include <uct/api/uct.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int n_pass, n_fail;
static int n_reg, n_dereg;
static __thread int in_reg; /* inside our ibv_reg_mr (it may call iova2) */

#define CHECK(cond, name, ...)                                   \
    do {                                                         \
        if (cond) {                                              \
            n_pass++;                                            \
            printf("PASS  %s\n", name);                          \
        } else {                                                 \
            n_fail++;                                            \
            printf("FAIL  %s: ", name);                          \
            printf(__VA_ARGS__);                                 \
            printf("\n");                                        \
        }                                                        \
    } while (0)

/* Our own declarations of the two libibverbs calls (the pointers are
 * passed through untouched). */
void *ibv_reg_mr(void *pd, void *addr, size_t length, int access);
int ibv_dereg_mr(void *mr);
void *ibv_reg_mr_iova2(void *pd, void *addr, size_t length, uint64_t iova, unsigned access);
static void *verbs_sym(const char *name, const char *version);

/* What rdma-core's inline ibv_reg_mr() calls for non-constant access
 * flags (the C original's case). */
void *ibv_reg_mr_iova2(void *pd, void *addr, size_t length, uint64_t iova, unsigned access)
{
    static void *(*real)(void *, void *, size_t, uint64_t, unsigned);
    if (real == NULL) {
        real = (void *(*)(void *, void *, size_t, uint64_t, unsigned))verbs_sym("ibv_reg_mr_iova2",
                                                                                "IBVERBS_1.8");
    }
    n_reg += !in_reg;
    return real(pd, addr, length, iova, access);
}

/* The libibverbs definition: next in the global scope, or, when only a
 * dlopen()ed module (the C original's libuct_ib) loaded libibverbs, from
 * the library itself. */
static void *verbs_sym(const char *name, const char *version)
{
    void *f = dlvsym(RTLD_NEXT, name, version), *lib;
    if (f == NULL && (lib = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD)) != NULL) {
        f = dlvsym(lib, name, version);
    }
    if (f == NULL) {
        fprintf(stderr, "ib_rcache: %s@%s not found\n", name, version);
        abort();
    }
    return f;
}

void *ibv_reg_mr(void *pd, void *addr, size_t length, int access)
{
    static void *(*real)(void *, void *, size_t, int);
    if (real == NULL) {
        real = (void *(*)(void *, void *, size_t, int))verbs_sym("ibv_reg_mr", "IBVERBS_1.1");
    }
    void *mr;
    n_reg++;
    in_reg = 1;
    mr = real(pd, addr, length, access);
    in_reg = 0;
    return mr;
}

int ibv_dereg_mr(void *mr)
{
    static int (*real)(void *);
    if (real == NULL) {
        real = (int (*)(void *))verbs_sym("ibv_dereg_mr", "IBVERBS_1.1");
    }
    n_dereg++;
    return real(mr);
}

static uint64_t rkey_of(uct_md_h md, uct_mem_h memh)
{
    uint64_t k = 0;
    if (uct_md_mkey_pack(md, memh, &k) != UCS_OK) {
        return UINT64_MAX;
    }
    return k;
}

static uct_component_h find_ib(void)
{
    uct_component_h *comps, found = NULL;
    unsigned n, i;
    if (uct_query_components(&comps, &n) != UCS_OK) {
        return NULL;
    }
    for (i = 0; i < n; i++) {
        uct_component_attr_t a = {.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME};
        if (uct_component_query(comps[i], &a) == UCS_OK && !strcmp(a.name, "ib")) {
            found = comps[i];
        }
    }
    uct_release_component_list(comps);
    return found;
}

int main(int argc, char **argv)
{
    int bad_handles = !(argc > 1 && !strcmp(argv[1], "--no-bad-handles"));
    const char *dev = argc > 2 - bad_handles ? argv[argc - 1] : "softrdma0";
    size_t page = (size_t)sysconf(_SC_PAGESIZE), len = 4 * page;
    uct_md_config_t *cfg;
    uct_component_h ib;
    uct_md_attr_t attr;
    uct_mem_h m1, m2, m3, m4, m5;
    uint64_t k1, k2, k4;
    ucs_status_t st;
    uct_md_h md;
    char *buf, *again;
    int cached, regs, deregs;
    uint64_t junk[16] = {0};

    ib = find_ib();
    if (ib == NULL) {
        printf("FAIL  no ib component\n0 passed, 1 failed\n");
        return 1;
    }
    if (uct_md_config_read(ib, NULL, NULL, &cfg) != UCS_OK ||
        uct_md_open(ib, dev, cfg, &md) != UCS_OK) {
        printf("FAIL  open md %s\n0 passed, 1 failed\n", dev);
        return 1;
    }
    uct_config_release(cfg);
    CHECK(uct_md_query(md, &attr) == UCS_OK, "md query", "failed");
    cached = attr.reg_cost.c < 1e-6;
    printf("# %s: registration cost %.0f ns + %.3f ns/B: %s\n", dev, attr.reg_cost.c * 1e9,
           attr.reg_cost.m * 1e9, cached ? "registration cache" : "direct registration");

    buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        printf("FAIL  mmap\n");
        return 1;
    }
    memset(buf, 1, len);

    st = uct_md_mem_reg(md, buf + 40, 100, UCT_MD_MEM_ACCESS_ALL, &m1);
    CHECK(st == UCS_OK, "register", "%s", ucs_status_string(st));
    st = uct_md_mem_reg(md, buf + 40, 100, UCT_MD_MEM_ACCESS_ALL, &m2);
    CHECK(st == UCS_OK, "register the same buffer again", "%s", ucs_status_string(st));
    k1 = rkey_of(md, m1);
    k2 = rkey_of(md, m2);
    CHECK(k1 != UINT64_MAX && k2 != UINT64_MAX, "pack both keys", "failed");
    if (cached) {
        CHECK(m1 == m2 && k1 == k2, "same handle and remote key",
              "handles %p %p, keys 0x%llx 0x%llx", m1, m2, (unsigned long long)k1, (unsigned long long)k2);
        CHECK(n_reg == 1, "one device registration for both", "%d", n_reg);
    } else {
        CHECK(m1 != m2 && k1 != k2, "two handles, two keys", "keys 0x%llx 0x%llx", (unsigned long long)k1,
              (unsigned long long)k2);
        CHECK(n_reg == 2, "two device registrations", "%d", n_reg);
    }

    CHECK(uct_md_mem_dereg(md, m1) == UCS_OK, "deregister", "failed");
    CHECK(uct_md_mem_dereg(md, m2) == UCS_OK, "deregister the second", "failed");
    CHECK(n_dereg == (cached ? 0 : 2), cached ? "the registration stays cached" : "both undone", "%d deregs",
          n_dereg);
    if (bad_handles) {
        st = uct_md_mem_dereg(md, m1);
        CHECK(st == UCS_ERR_INVALID_PARAM, "deregister once too often: invalid param", "%s",
              ucs_status_string(st));
        st = uct_md_mem_dereg(md, (uct_mem_h)junk);
        CHECK(st == UCS_ERR_INVALID_PARAM, "made-up handle: invalid param", "%s", ucs_status_string(st));
        CHECK(uct_md_mkey_pack(md, (uct_mem_h)junk, &k4) == UCS_ERR_INVALID_PARAM, "pack a made-up handle",
              "not refused");
    }

    regs = n_reg;
    st = uct_md_mem_reg(md, buf + 64, 32, UCT_MD_MEM_ACCESS_ALL, &m3);
    CHECK(st == UCS_OK, "register a part again", "%s", ucs_status_string(st));
    if (cached) {
        CHECK(m3 == m1 && rkey_of(md, m3) == k1 && n_reg == regs, "served from the cache",
              "handle %p, %d new registrations", m3, n_reg - regs);
    }
    CHECK(uct_md_mem_dereg(md, m3) == UCS_OK, "deregister it", "failed");

    /* Unmap, map again at the same place: the old registration must not be
     * handed out again. */
    regs = n_reg;
    deregs = n_dereg;
    munmap(buf, len);
    again = mmap(buf, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    CHECK(again == buf, "map again at the same address", "got %p", again);
    st = uct_md_mem_reg(md, buf + 40, 100, UCT_MD_MEM_ACCESS_ALL, &m4);
    CHECK(st == UCS_OK, "register the new mapping", "%s", ucs_status_string(st));
    k4 = rkey_of(md, m4);
    CHECK(n_reg == regs + 1 && k4 != k1 && k4 != UINT64_MAX, "a fresh registration with a new key",
          "%d new registrations, key 0x%llx (old 0x%llx)", n_reg - regs, (unsigned long long)k4,
          (unsigned long long)k1);
    if (cached) {
        CHECK(n_dereg == deregs + 1, "the stale one was deregistered", "%d deregs", n_dereg - deregs);
    }

    /* A second buffer, registered and released: cached at close. */
    st = uct_md_mem_reg(md, buf + 2 * page, page, UCT_MD_MEM_ACCESS_ALL, &m5);
    CHECK(st == UCS_OK, "register another range", "%s", ucs_status_string(st));
    CHECK(uct_md_mem_dereg(md, m5) == UCS_OK, "release it", "failed");

    /* Close with m4 still held: a warning, and nothing left registered
     * (the C original asserts on such a close: not done there). */
    if (!bad_handles) {
        CHECK(uct_md_mem_dereg(md, m4) == UCS_OK, "release the last one", "failed");
    }
    uct_md_close(md);
    CHECK(n_dereg == n_reg, "close deregisters everything", "%d registrations, %d deregistrations", n_reg,
          n_dereg);
    munmap(buf, len);
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail != 0;
}
