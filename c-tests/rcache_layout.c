/*
 * rcache_layout.c -- print the layout of libucs's registration cache types
 * (ucs/memory/rcache.h of the UCX release whose headers are on the include
 * path), one "<item> <value>" line each, for tests/rcache-layout.sh.
 *
 * Build: cc -DUCX_MINOR=N -I<ucx include dir> rcache_layout.c
 * UCX_MINOR selects the members that release has (13 or 18).
 */
#include <ucs/memory/rcache.h>
#include <ucm/api/ucm.h>
#include <stddef.h>
#include <stdio.h>

#ifndef UCX_MINOR
#  define UCX_MINOR 13
#endif

#define SIZE(T)     printf("sizeof(%s) %zu\n", #T, sizeof(T))
#define ALIGN(T)    printf("alignof(%s) %zu\n", #T, (size_t)_Alignof(T))
#define OFF(T, m)   printf("offsetof(%s,%s) %zu\n", #T, #m, offsetof(T, m))

int main(void)
{
    SIZE(ucs_rcache_region_t);
    ALIGN(ucs_rcache_region_t);
    OFF(ucs_rcache_region_t, super);
    OFF(ucs_rcache_region_t, lru_list);
    OFF(ucs_rcache_region_t, tmp_list);
    OFF(ucs_rcache_region_t, comp_list);
#if UCX_MINOR >= 17
    OFF(ucs_rcache_region_t, alignment);
#endif
    OFF(ucs_rcache_region_t, refcount);
    OFF(ucs_rcache_region_t, status);
    OFF(ucs_rcache_region_t, prot);
    OFF(ucs_rcache_region_t, flags);
    OFF(ucs_rcache_region_t, lru_flags);
    OFF(ucs_rcache_region_t, priv);

    SIZE(ucs_rcache_params_t);
    OFF(ucs_rcache_params_t, region_struct_size);
#if UCX_MINOR < 17
    OFF(ucs_rcache_params_t, alignment);
    OFF(ucs_rcache_params_t, max_alignment);
#endif
    OFF(ucs_rcache_params_t, ucm_events);
    OFF(ucs_rcache_params_t, ucm_event_priority);
    OFF(ucs_rcache_params_t, ops);
    OFF(ucs_rcache_params_t, context);
    OFF(ucs_rcache_params_t, flags);
    OFF(ucs_rcache_params_t, max_regions);
    OFF(ucs_rcache_params_t, max_size);
    OFF(ucs_rcache_params_t, max_unreleased);

    SIZE(ucs_rcache_ops_t);
    OFF(ucs_rcache_ops_t, mem_reg);
    OFF(ucs_rcache_ops_t, mem_dereg);
#if UCX_MINOR >= 18
    OFF(ucs_rcache_ops_t, merge);
#endif
    OFF(ucs_rcache_ops_t, dump_region);

    printf("UCS_RCACHE_REGION_FLAG_REGISTERED %d\n", (int)UCS_RCACHE_REGION_FLAG_REGISTERED);
    printf("UCS_RCACHE_REGION_FLAG_PGTABLE %d\n", (int)UCS_RCACHE_REGION_FLAG_PGTABLE);
    printf("UCS_RCACHE_MEM_REG_HIDE_ERRORS %d\n", (int)UCS_RCACHE_MEM_REG_HIDE_ERRORS);
    printf("UCS_RCACHE_FLAG_NO_PFN_CHECK %d\n", (int)UCS_RCACHE_FLAG_NO_PFN_CHECK);
    printf("UCS_RCACHE_FLAG_PURGE_ON_FORK %d\n", (int)UCS_RCACHE_FLAG_PURGE_ON_FORK);
    printf("UCS_RCACHE_MIN_ALIGNMENT %lu\n", (unsigned long)UCS_RCACHE_MIN_ALIGNMENT);
    printf("UCM_EVENT_VM_UNMAPPED %d\n", (int)UCM_EVENT_VM_UNMAPPED);
    return 0;
}
