/*
 * Our own declarations of the private provider interface of libibverbs as
 * shipped by Debian 12 (rdma-core 44.0, symbol version IBVERBS_PRIVATE_34).
 * No header of that interface is installed by any Debian package, so the
 * layouts below are written from the facts recorded in ../provider-abi.tsv;
 * abi_gen.h (generated from that table by build.sh) holds the slot enum of
 * the context operation table and static assertions of every size/offset.
 */
#ifndef SOFTRDMA_ABI_H
#define SOFTRDMA_ABI_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#include "abi_gen.h"

/* One entry of a provider's device match table (terminated by kind 0). */
struct sr_match_ent {
	void *driver_data;
	union {
		const char *modalias; /* fnmatch pattern, kind 2 */
		uint64_t driver_id;   /* kind 3 */
	} u;
	uint16_t vendor;
	uint16_t device;
	uint8_t kind;
};

/* The library's description of a sysfs device; opaque to us. */
struct sr_sysfs_dev;

struct sr_verbs_device;
struct sr_verbs_context_hdr;

/* The table a provider registers with verbs_register_driver_34(). */
struct sr_device_ops {
	const char *name;
	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const struct sr_match_ent *match_table;
	const struct sr_device_ops **static_providers;
	bool (*match_device)(struct sr_sysfs_dev *sysfs_dev);
	struct verbs_context *(*alloc_context)(struct ibv_device *device,
					       int cmd_fd, void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device,
						int cmd_fd);
	struct sr_verbs_device *(*alloc_device)(struct sr_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct sr_verbs_device *device);
};

/* Doubly linked list node as the library embeds it. */
struct sr_list_node {
	struct sr_list_node *next, *prev;
};

/* What alloc_device returns: the public ibv_device, then fields the
 * library fills in (ops, refcount, list entry, sysfs pointer). */
struct sr_verbs_device {
	struct ibv_device device;
	const struct sr_device_ops *ops;
	int refcount; /* atomic_int in the library */
	struct sr_list_node entry;
	struct sr_sysfs_dev *sysfs;
	uint64_t core_support;
};

/* The library's memory region wrapper: ibv_dereg_mr reads the two fields
 * after the public ibv_mr, so every region we return must have them. */
struct sr_verbs_mr {
	struct ibv_mr ibv_mr;
	int mr_type; /* 0: an ordinary region */
	int access;
};

/* The context operation table: SR_OPS_COUNT function pointers, indexed by
 * the SR_OP_* slots of abi_gen.h. Unset slots stay NULL and the library
 * keeps its own "not supported" defaults for them. */
struct sr_context_ops {
	void *slot[SR_OPS_COUNT];
};

/* Exported by libibverbs under IBVERBS_PRIVATE_34. */
void verbs_register_driver_34(const struct sr_device_ops *ops);
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size,
				    struct verbs_context *context_offset,
				    uint32_t driver_id);
void verbs_uninit_context(struct verbs_context *context);
void verbs_set_ops(struct verbs_context *vctx,
		   const struct sr_context_ops *ops);

#define SR_STATIC_ASSERTS                                                      \
	_Static_assert(sizeof(struct sr_context_ops) == SR_SIZE_verbs_context_ops, \
		       "verbs_context_ops size");                              \
	_Static_assert(sizeof(struct sr_device_ops) == SR_SIZE_verbs_device_ops, \
		       "verbs_device_ops size");                               \
	_Static_assert(offsetof(struct sr_device_ops, name) == SR_OFF_verbs_device_ops_name, ""); \
	_Static_assert(offsetof(struct sr_device_ops, match_min_abi_version) == SR_OFF_verbs_device_ops_match_min_abi_version, ""); \
	_Static_assert(offsetof(struct sr_device_ops, match_max_abi_version) == SR_OFF_verbs_device_ops_match_max_abi_version, ""); \
	_Static_assert(offsetof(struct sr_device_ops, match_table) == SR_OFF_verbs_device_ops_match_table, ""); \
	_Static_assert(offsetof(struct sr_device_ops, static_providers) == SR_OFF_verbs_device_ops_static_providers, ""); \
	_Static_assert(offsetof(struct sr_device_ops, match_device) == SR_OFF_verbs_device_ops_match_device, ""); \
	_Static_assert(offsetof(struct sr_device_ops, alloc_context) == SR_OFF_verbs_device_ops_alloc_context, ""); \
	_Static_assert(offsetof(struct sr_device_ops, import_context) == SR_OFF_verbs_device_ops_import_context, ""); \
	_Static_assert(offsetof(struct sr_device_ops, alloc_device) == SR_OFF_verbs_device_ops_alloc_device, ""); \
	_Static_assert(offsetof(struct sr_device_ops, uninit_device) == SR_OFF_verbs_device_ops_uninit_device, ""); \
	_Static_assert(sizeof(struct sr_match_ent) == SR_SIZE_verbs_match_ent, ""); \
	_Static_assert(offsetof(struct sr_match_ent, driver_data) == SR_OFF_verbs_match_ent_driver_data, ""); \
	_Static_assert(offsetof(struct sr_match_ent, u.modalias) == SR_OFF_verbs_match_ent_modalias, ""); \
	_Static_assert(offsetof(struct sr_match_ent, vendor) == SR_OFF_verbs_match_ent_vendor, ""); \
	_Static_assert(offsetof(struct sr_match_ent, device) == SR_OFF_verbs_match_ent_device, ""); \
	_Static_assert(offsetof(struct sr_match_ent, kind) == SR_OFF_verbs_match_ent_kind, ""); \
	_Static_assert(sizeof(struct ibv_device) == SR_SIZE_ibv_device, ""); \
	_Static_assert(sizeof(struct sr_verbs_device) == SR_SIZE_verbs_device, ""); \
	_Static_assert(offsetof(struct sr_verbs_device, ops) == SR_OFF_verbs_device_ops, ""); \
	_Static_assert(offsetof(struct sr_verbs_device, refcount) == SR_OFF_verbs_device_refcount, ""); \
	_Static_assert(offsetof(struct sr_verbs_device, entry) == SR_OFF_verbs_device_entry, ""); \
	_Static_assert(offsetof(struct sr_verbs_device, sysfs) == SR_OFF_verbs_device_sysfs, ""); \
	_Static_assert(offsetof(struct sr_verbs_device, core_support) == SR_OFF_verbs_device_core_support, ""); \
	_Static_assert(sizeof(struct sr_verbs_mr) == SR_SIZE_verbs_mr, ""); \
	_Static_assert(offsetof(struct sr_verbs_mr, mr_type) == SR_OFF_verbs_mr_mr_type, ""); \
	_Static_assert(offsetof(struct sr_verbs_mr, access) == SR_OFF_verbs_mr_access, ""); \
	_Static_assert(IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL == SR_CONST_CMD_CREATE_COMP_CHANNEL, ""); \
	_Static_assert(IB_USER_VERBS_ABI_VERSION == SR_CONST_UVERBS_ABI_VERSION, "")

#endif
