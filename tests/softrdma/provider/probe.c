/*
 * ABI probe: checks our slot numbering of the context operation table (from
 * provider-abi.tsv) against the installed libibverbs. verbs_set_ops() copies
 * every non-NULL slot into the library's private copy of the table and many
 * of them also into public fields of struct verbs_context / ibv_context_ops
 * (declared in the installed verbs.h). We fill each slot with a distinct
 * marker and check that (1) the public fields hold the marker of the slot
 * of the same name, and (2) the private copy holds all markers contiguously
 * and in our order, i.e. the library has exactly SR_OPS_COUNT slots.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "abi.h"

SR_STATIC_ASSERTS;

#define MARK(i) ((void *)(uintptr_t)(0x5a000000u + 16u * (i)))

static int fails;

static void check(const char *what, void *got, int slot)
{
	if (got != MARK(slot)) {
		fprintf(stderr, "abi-probe: %s: got %p, want slot %d\n", what, got, slot);
		fails++;
	}
}

int main(void)
{
	struct sr_context_ops ops;
	struct verbs_context *v;
	char *priv;
	size_t privsz = 16384, off;
	int i, base = -1;

	for (i = 0; i < SR_OPS_COUNT; i++)
		ops.slot[i] = MARK(i);
	v = calloc(1, sizeof(*v) + 64);
	priv = calloc(1, privsz);
	v->priv = (void *)priv;
	verbs_set_ops(v, &ops);

#define PUB(field, name) check(#name, (void *)v->context.ops.field, SR_OP_##name)
#define VX(field, name) check(#name, (void *)v->field, SR_OP_##name)
	PUB(_compat_alloc_pd, alloc_pd);
	PUB(_compat_dealloc_pd, dealloc_pd);
	PUB(_compat_reg_mr, reg_mr);
	PUB(_compat_rereg_mr, rereg_mr);
	PUB(_compat_dereg_mr, dereg_mr);
	PUB(alloc_mw, alloc_mw);
	PUB(bind_mw, bind_mw);
	PUB(dealloc_mw, dealloc_mw);
	PUB(_compat_create_cq, create_cq);
	PUB(poll_cq, poll_cq);
	PUB(req_notify_cq, req_notify_cq);
	PUB(_compat_cq_event, cq_event);
	PUB(_compat_resize_cq, resize_cq);
	PUB(_compat_destroy_cq, destroy_cq);
	PUB(_compat_create_srq, create_srq);
	PUB(_compat_modify_srq, modify_srq);
	PUB(_compat_query_srq, query_srq);
	PUB(_compat_destroy_srq, destroy_srq);
	PUB(post_srq_recv, post_srq_recv);
	PUB(_compat_create_qp, create_qp);
	PUB(_compat_query_qp, query_qp);
	PUB(_compat_modify_qp, modify_qp);
	PUB(_compat_destroy_qp, destroy_qp);
	PUB(post_send, post_send);
	PUB(post_recv, post_recv);
	PUB(_compat_create_ah, create_ah);
	PUB(_compat_destroy_ah, destroy_ah);
	PUB(_compat_attach_mcast, attach_mcast);
	PUB(_compat_detach_mcast, detach_mcast);
	PUB(_compat_async_event, async_event);
	VX(advise_mr, advise_mr);
	VX(alloc_null_mr, alloc_null_mr);
	VX(read_counters, read_counters);
	VX(attach_counters_point_flow, attach_counters_point_flow);
	VX(create_counters, create_counters);
	VX(destroy_counters, destroy_counters);
	VX(reg_dm_mr, reg_dm_mr);
	VX(alloc_dm, alloc_dm);
	VX(free_dm, free_dm);
	VX(modify_flow_action_esp, modify_flow_action_esp);
	VX(destroy_flow_action, destroy_flow_action);
	VX(create_flow_action_esp, create_flow_action_esp);
	VX(modify_qp_rate_limit, modify_qp_rate_limit);
	VX(alloc_parent_domain, alloc_parent_domain);
	VX(dealloc_td, dealloc_td);
	VX(alloc_td, alloc_td);
	VX(modify_cq, modify_cq);
	VX(post_srq_ops, post_srq_ops);
	VX(destroy_rwq_ind_table, destroy_rwq_ind_table);
	VX(create_rwq_ind_table, create_rwq_ind_table);
	VX(destroy_wq, destroy_wq);
	VX(modify_wq, modify_wq);
	VX(create_wq, create_wq);
	VX(query_rt_values, query_rt_values);
	VX(query_device_ex, query_device_ex);
	VX(ibv_destroy_flow, destroy_flow);
	VX(ibv_create_flow, create_flow);
	VX(open_qp, open_qp);
	VX(create_qp_ex, create_qp_ex);
	VX(get_srq_num, get_srq_num);
	VX(create_srq_ex, create_srq_ex);
	VX(open_xrcd, open_xrcd);
	VX(close_xrcd, close_xrcd);

	/* private copy: find marker 0, then all slots must follow in order */
	for (off = 0; off + sizeof(void *) <= privsz; off += sizeof(void *))
		if (*(void **)(priv + off) == MARK(0)) {
			base = off;
			break;
		}
	if (base < 0) {
		fprintf(stderr, "abi-probe: private op table not found\n");
		fails++;
	} else {
		for (i = 0; i < SR_OPS_COUNT; i++)
			check("private copy", *(void **)(priv + base + 8 * i), i);
		if (*(void **)(priv + base + 8 * SR_OPS_COUNT) != NULL) {
			fprintf(stderr, "abi-probe: data after the last slot\n");
			fails++;
		}
	}
	if (fails) {
		fprintf(stderr, "abi-probe: %d mismatches: provider-abi.tsv does not describe this libibverbs\n", fails);
		return 1;
	}
	printf("abi-probe: %d context op slots match the installed libibverbs\n", SR_OPS_COUNT);
	return 0;
}
