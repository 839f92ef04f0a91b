#!/usr/bin/env python3
"""Print the reference layout table of a UCX release, measured on its headers.

  scripts/gen-layout-tsv.py --abi 1.18 -I <prefix>/include -I <v2 dir> [-o OUT]

Each -I is an include directory; together they must provide the release's
<uct/api/uct.h>, <uct/api/tl.h>, <ucs/...> and <uct/api/v2/uct_v2.h> (UCX
installs do not ship the last one: give a directory holding
uct/api/v2/uct_v2.h taken from the release's source tag). The script
compiles a small C program against them with -g, reads every listed type
back from the debug information with gdb's Python API, runs the program for
the constant values, and writes the table (stdout, or OUT):

  header  type  field  c_type  offset  size

* one "(whole)" row per struct, then one row per member; members that are
  structs or unions are followed by rows of their own members (dotted path;
  an anonymous member is named "(anon)"), except the ones in NO_RECURSE;
* one "(scalar)" row per enum or scalar typedef (size only);
* "(const)" rows: NAME[/NAME...] with the values in the size column.

This is how tests/data/ucx-1.13.1-layouts.tsv and ucx-1.18.1-layouts.tsv are
made: `--abi 1.13` against Debian 12's /usr/include plus v1.13.1's uct_v2.h
reproduces the first byte for byte.

Which types and constants a release's table has is listed below (TYPES,
SCALARS, CONSTS): an entry's `since` is the first release whose table has
the row, `until` (optional for types) the first whose table no longer has
it. The lists cover every public uct struct, enum value and constant that
differs between two releases of 1.13..1.22, and the libucs structs this
library fills in or embeds. When the lists grow, the tables already made
are regenerated and must keep every row they had, byte for byte: new rows
may only be added (some entries older than their item carry `since` > 13
for that reason; the ones added later carry the release that has the item
first).

Release tables and their inputs (the wheels of scripts/setup-ucx-wheel.sh,
uct_v2.h from the source tag vX.Y.Z):
  1.13.1  Debian 12 /usr/include         1.18.1  libucx-cu12 1.18.1
  1.14.1  libucx-cu12 1.14.1.post2       1.19.0  libucx-cu12 1.19.0
  1.15.0  libucx-cu12 1.15.0.post2       1.20.1  libucx-cu12 1.20.1
  1.16.0  libucx-cu12 1.16.0.post1       1.21.0  libucx-cu12 1.21.0
  1.17.0  libucx-cu12 1.17.0             1.22.0  libucx-cu12 1.22.0
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

# (header, type, since-minor[, until-minor]) -- struct rows, in table order.
TYPES = [
    ("uct.h", "uct_md_resource_desc_t", 13),
    ("uct.h", "uct_component_attr_t", 13),
    ("uct.h", "uct_tl_resource_desc_t", 13),
    ("uct.h", "uct_ppn_bandwidth_t", 13),
    ("uct.h", "uct_iface_attr_t", 13),
    ("uct.h", "uct_iface_params_t", 13),
    ("uct.h", "uct_ep_params_t", 13),
    ("uct.h", "uct_ep_connect_params_t", 13),
    ("uct.h", "uct_cm_attr_t", 13),
    ("uct.h", "uct_listener_attr_t", 13),
    ("uct.h", "uct_listener_params_t", 13),
    ("uct.h", "uct_md_attr_t", 13),
    ("uct.h", "uct_md_mem_attr_t", 13),
    ("uct.h", "uct_allocated_memory_t", 13),
    ("uct.h", "uct_rkey_bundle_t", 13),
    ("uct.h", "uct_completion_t", 13),
    ("uct.h", "uct_pending_req_t", 13),
    ("uct.h", "uct_tag_context_t", 13),
    ("uct.h", "uct_mem_alloc_params_t", 13),
    ("uct_def.h", "uct_iov_t", 13),
    ("uct_def.h", "uct_cm_ep_priv_data_pack_args_t", 13),
    ("uct_def.h", "uct_cm_ep_resolve_args_t", 13),
    ("uct_def.h", "uct_cm_remote_data_t", 13),
    ("uct_def.h", "uct_cm_listener_conn_request_args_t", 13),
    ("uct_def.h", "uct_cm_ep_client_connect_args_t", 13),
    ("uct_def.h", "uct_cm_ep_server_conn_notify_args_t", 13),
    ("tl.h", "uct_iface_ops_t", 13),
    ("tl.h", "uct_worker_t", 13),
    ("tl.h", "uct_iface_t", 13),
    ("tl.h", "uct_ep_t", 13),
    ("tl.h", "uct_listener_t", 13),
    ("tl.h", "uct_recv_desc_t", 13),
    ("v2/uct_v2.h", "uct_perf_attr_t", 13),
    ("v2/uct_v2.h", "uct_ep_attr_t", 13),
    ("v2/uct_v2.h", "uct_md_mem_reg_params_t", 14),
    ("v2/uct_v2.h", "uct_md_mem_dereg_params_t", 13),
    ("v2/uct_v2.h", "uct_md_mkey_pack_params_t", 13),
    ("v2/uct_v2.h", "uct_md_mem_attach_params_t", 14),
    ("v2/uct_v2.h", "uct_iface_is_reachable_params_t", 13),
    ("v2/uct_v2.h", "uct_ep_is_connected_params_t", 16),
    ("v2/uct_v2.h", "uct_ep_connect_to_ep_params_t", 14),
    ("v2/uct_v2.h", "uct_rkey_compare_params_t", 16),
    ("v2/uct_v2.h", "uct_md_attr_v2_t", 14),
    ("v2/uct_v2.h", "uct_rkey_unpack_params_t", 19),
    # Two unrelated layouts under one name: 1.20 only, then from 1.22.
    ("v2/uct_v2.h", "uct_iface_attr_v2_t", 20, 21),
    ("v2/uct_v2.h", "uct_iface_attr_v2_t", 22),
    ("v2/uct_v2.h", "uct_ep_invalidate_params_t", 21),
    ("v2/uct_v2.h", "uct_md_mem_attr_v2_t", 22),
    # Declared in uct_def.h, defined in uct/api/device/uct_device_types.h
    # (1.20+; included when present).
    ("device/uct_device_types.h", "uct_device_ep_t", 20),
    ("device/uct_device_types.h", "uct_device_mem_element_t", 21, 22),
    ("device/uct_device_types.h", "uct_device_local_mem_list_elem_t", 21, 22),
    ("device/uct_device_types.h", "uct_device_remote_mem_list_elem_t", 21, 22),
    ("device/uct_device_types.h", "uct_device_mem_elem_t", 22),
    ("device/uct_device_types.h", "uct_device_local_mem_elem_t", 22),
    ("device/uct_device_types.h", "uct_device_remote_tl_elem_t", 22),
    ("device/uct_device_types.h", "uct_device_remote_mem_elem_t", 22),
    ("ucs(dep)", "ucs_callbackq_t", 13),
    ("ucs(dep)", "ucs_callbackq_elem_t", 13),
    ("ucs(dep)", "ucs_linear_func_t", 13),
    ("ucs(dep)", "ucs_sock_addr_t", 13),
    ("ucs(dep)", "ucs_cpu_set_t", 13),
    # libucs types this library fills in, embeds or reads (ucs/config,
    # ucs/datastruct/list.h, ucs/memory/rcache.h).
    ("ucs(dep)", "ucs_list_link_t", 13),
    ("ucs(dep)", "ucs_config_names_array_t", 13),
    ("ucs(dep)", "ucs_config_allow_list_t", 13),
    ("ucs(dep)", "ucs_range_spec_t", 13),
    ("ucs(dep)", "ucs_config_bw_spec_t", 13),
    ("ucs(dep)", "ucs_log_component_config_t", 13),
    ("ucs(dep)", "ucs_config_parser_t", 13),
    ("ucs(dep)", "ucs_config_array_t", 13),
    ("ucs(dep)", "ucs_config_field_t", 13),
    ("ucs(dep)", "ucs_config_global_list_entry_t", 13),
    ("ucs(dep)", "ucs_pgt_region_t", 13),
    ("ucs(dep)", "ucs_rcache_region_t", 13),
    ("ucs(dep)", "ucs_rcache_ops_t", 13),
    ("ucs(dep)", "ucs_rcache_params_t", 13),
    ("ucs(dep)", "ucs_rcache_config_t", 16),
]

# (header, type, since-minor[, until-minor]) -- scalar rows, in table order.
SCALARS = [
    ("ucs(dep)", "ucs_status_t", 13),
    ("ucs(dep)", "ucs_status_ptr_t", 13),
    ("ucs(dep)", "ucs_memory_type_t", 13),
    ("ucs(dep)", "ucs_sys_device_t", 13),
    ("ucs(dep)", "ucs_time_t", 13),
    ("ucs(dep)", "ucs_thread_mode_t", 13),
    ("ucs(dep)", "ucs_callback_t", 13),
    ("uct_def.h", "uct_rkey_t", 13),
    ("uct_def.h", "uct_mem_h", 13),
    ("uct_def.h", "uct_tag_t", 13),
    ("uct_def.h", "uct_worker_cb_id_t", 13),
    ("uct_def.h", "uct_conn_request_h", 13),
    ("uct_def.h", "uct_am_trace_type_t", 13),
    ("uct_def.h", "uct_rkey_ctx_h", 13),
    ("uct.h", "uct_device_type_t", 13),
    ("uct.h", "uct_atomic_op_t", 13),
    ("uct.h", "uct_alloc_method_t", 13),
    ("uct.h", "uct_mem_advice_t", 13),
    ("uct.h", "uct_sockaddr_accessibility_t", 13),
    ("uct.h", "uct_md_mem_attr_field_t", 13),
    ("uct.h", "uct_mem_alloc_params_field_t", 13),
    ("v2/uct_v2.h", "uct_ep_operation_t", 13),
    ("v2/uct_v2.h", "uct_perf_attr_flags_t", 17),
    ("v2/uct_v2.h", "uct_md_mem_reg_field_mask_t", 14),
    ("v2/uct_v2.h", "uct_md_mem_attach_field_mask_t", 14),
    ("v2/uct_v2.h", "uct_md_mem_attach_flags_t", 14),
    ("v2/uct_v2.h", "uct_ep_connect_to_ep_param_field_t", 14),
    ("v2/uct_v2.h", "uct_ep_is_connected_field_mask_t", 16),
    ("v2/uct_v2.h", "uct_iface_reachability_scope_t", 15),
    ("v2/uct_v2.h", "uct_md_attr_field_t", 14),
    ("v2/uct_v2.h", "uct_md_flags_v2_t", 15),
    ("v2/uct_v2.h", "uct_rkey_unpack_field_mask_t", 19),
    ("uct_def.h", "uct_device_ep_h", 20),
    ("v2/uct_v2.h", "uct_md_mem_attr_v2_field_t", 22),
    ("ucs(dep)", "ucs_log_level_t", 13),
    ("ucs(dep)", "ucs_async_mode_t", 13),
    ("ucs(dep)", "ucs_ternary_auto_value_t", 13),
    ("ucs(dep)", "ucs_on_off_auto_value_t", 13),
    ("ucs(dep)", "ucs_config_print_flags_t", 13),
    ("ucs(dep)", "ucs_config_allow_list_mode_t", 13),
    ("ucs(dep)", "ucs_mem_flags_t", 22),
]

# (names, c_type, value format "d"|"x", since-minor, until-minor or None).
# The value printed is the C value of each name.
CONSTS = [
    (["UCT_AM_ID_MAX"], "int", "d", 13, None),
    (["UCT_PENDING_REQ_PRIV_LEN"], "int", "d", 13, None),
    (["UCT_COMPONENT_NAME_MAX", "UCT_TL_NAME_MAX", "UCT_MD_NAME_MAX",
      "UCT_DEVICE_NAME_MAX"], "int", "d", 13, None),
    (["UCS_CALLBACKQ_FAST_COUNT"], "int", "d", 13, None),
    (["UCT_API"], "long", "x", 13, None),
    # Added or changed after 1.13 (ucs).
    (["UCS_MEMORY_TYPE_RDMA"], "enum", "d", 16, None),
    (["UCS_MEMORY_TYPE_ZE_HOST", "UCS_MEMORY_TYPE_ZE_DEVICE",
      "UCS_MEMORY_TYPE_ZE_MANAGED"], "enum", "d", 17, None),
    (["UCS_MEMORY_TYPE_LAST", "UCS_MEMORY_TYPE_UNKNOWN"], "enum", "d", 14, None),
    (["UCS_MEMORY_TYPES_CPU_ACCESSIBLE"], "int", "x", 14, None),
    # uct_def.h, uct.h
    (["UCT_MD_GLOBAL_ID_MAX"], "int", "d", 14, None),
    (["UCT_DMABUF_FD_INVALID"], "int", "d", 14, None),
    (["UCT_COMPONENT_FLAG_RKEY_PTR"], "enum", "x", 14, None),
    (["UCT_IFACE_FLAG_INTER_NODE"], "unsigned long", "x", 18, None),
    (["UCT_FLUSH_FLAG_REMOTE"], "enum", "x", 14, None),
    (["UCT_MD_FLAG_EXPORTED_MKEY", "UCT_MD_FLAG_REG_DMABUF"], "enum", "x", 14, None),
    (["UCT_MD_FLAG_LAST"], "enum", "x", 15, None),
    (["UCT_MD_MEM_SYMMETRIC_RKEY"], "enum", "x", 16, None),
    (["UCT_MD_MEM_GVA"], "enum", "x", 18, None),
    (["UCT_EP_PARAM_FIELD_DEV_ADDR_LENGTH", "UCT_EP_PARAM_FIELD_IFACE_ADDR_LENGTH"],
     "enum", "x", 18, None),
    (["UCT_IFACE_FEATURE_FLUSH_REMOTE", "UCT_IFACE_FEATURE_LAST"], "enum", "x", 14, None),
    (["UCT_MD_MEM_ATTR_FIELD_DMABUF_FD", "UCT_MD_MEM_ATTR_FIELD_DMABUF_OFFSET"],
     "enum", "x", 14, None),
    # v2/uct_v2.h
    (["UCT_PERF_ATTR_FIELD_FLAGS", "UCT_PERF_ATTR_FLAGS_TX_RX_SHARED"], "enum", "x", 17, None),
    (["UCT_MD_MEM_REG_FIELD_FLAGS", "UCT_MD_MEM_REG_FIELD_DMABUF_FD",
      "UCT_MD_MEM_REG_FIELD_DMABUF_OFFSET"], "enum", "x", 14, None),
    (["UCT_MD_MEM_ATTACH_FIELD_FLAGS", "UCT_MD_MEM_ATTACH_FLAG_HIDE_ERRORS"],
     "enum", "x", 14, None),
    (["UCT_IFACE_IS_REACHABLE_FIELD_SCOPE"], "enum", "x", 15, None),
    (["UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR_LENGTH",
      "UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR_LENGTH"], "enum", "x", 18, None),
    (["UCT_MD_MKEY_PACK_FLAG_INVALIDATE_RMA", "UCT_MD_MKEY_PACK_FLAG_INVALIDATE_AMO"],
     "enum", "x", 15, None),
    (["UCT_MD_MKEY_PACK_FLAG_EXPORT"], "enum", "x", 14, None),
    (["UCT_EP_CONNECT_TO_EP_PARAM_FIELD_DEVICE_ADDR_LENGTH",
      "UCT_EP_CONNECT_TO_EP_PARAM_FIELD_EP_ADDR_LENGTH"], "enum", "x", 14, None),
    (["UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR", "UCT_EP_IS_CONNECTED_FIELD_IFACE_ADDR",
      "UCT_EP_IS_CONNECTED_FIELD_EP_ADDR"], "enum", "x", 16, None),
    (["UCT_IFACE_REACHABILITY_SCOPE_DEVICE", "UCT_IFACE_REACHABILITY_SCOPE_NETWORK"],
     "enum", "d", 15, None),
    (["UCT_MD_ATTR_FIELD_MAX_ALLOC", "UCT_MD_ATTR_FIELD_MAX_REG", "UCT_MD_ATTR_FIELD_FLAGS",
      "UCT_MD_ATTR_FIELD_REG_MEM_TYPES", "UCT_MD_ATTR_FIELD_CACHE_MEM_TYPES",
      "UCT_MD_ATTR_FIELD_DETECT_MEM_TYPES", "UCT_MD_ATTR_FIELD_ALLOC_MEM_TYPES",
      "UCT_MD_ATTR_FIELD_ACCESS_MEM_TYPES", "UCT_MD_ATTR_FIELD_DMABUF_MEM_TYPES",
      "UCT_MD_ATTR_FIELD_REG_COST", "UCT_MD_ATTR_FIELD_COMPONENT_NAME",
      "UCT_MD_ATTR_FIELD_RKEY_PACKED_SIZE", "UCT_MD_ATTR_FIELD_LOCAL_CPUS",
      "UCT_MD_ATTR_FIELD_EXPORTED_MKEY_PACKED_SIZE", "UCT_MD_ATTR_FIELD_GLOBAL_ID"],
     "enum", "x", 14, None),
    (["UCT_MD_ATTR_FIELD_REG_NONBLOCK_MEM_TYPES"], "enum", "x", 15, None),
    (["UCT_MD_ATTR_FIELD_REG_ALIGNMENT"], "enum", "x", 16, None),
    (["UCT_MD_ATTR_FIELD_GVA_MEM_TYPES"], "enum", "x", 18, None),
    (["UCT_MD_FLAG_V2_FIRST", "UCT_MD_FLAG_INVALIDATE_RMA", "UCT_MD_FLAG_INVALIDATE_AMO"],
     "enum", "x", 15, None),
    # Rows added to cover every value that differs between two releases of
    # 1.13..1.22 (the ones older than their release carry since 13).
    # uct.h
    (["UCT_IFACE_FEATURE_LAST"], "enum", "x", 13, None),
    (["UCT_MEM_ALLOC_PARAM_FIELD_SYS_DEVICE"], "enum", "x", 19, None),
    (["UCT_IFACE_FLAG_DEVICE_EP"], "unsigned long", "x", 20, None),
    (["UCT_EVENT_SPEED_CHANGE"], "enum", "x", 21, None),
    (["UCT_IFACE_FLAG_PUT_AM_ORDER", "UCT_IFACE_FLAG_DEVICE_LKEY"], "unsigned long", "x",
     22, None),
    (["UCT_IFACE_OPEN_MODE_STUB"], "enum", "x", 22, None),
    # v2/uct_v2.h
    (["UCT_MD_MKEY_PACK_FLAG_INVALIDATE"], "enum", "x", 14, 15),
    (["UCT_PERF_ATTR_FIELD_OPERATION", "UCT_PERF_ATTR_FIELD_LOCAL_MEMORY_TYPE",
      "UCT_PERF_ATTR_FIELD_REMOTE_MEMORY_TYPE", "UCT_PERF_ATTR_FIELD_LOCAL_SYS_DEVICE",
      "UCT_PERF_ATTR_FIELD_REMOTE_SYS_DEVICE", "UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD",
      "UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD", "UCT_PERF_ATTR_FIELD_RECV_OVERHEAD",
      "UCT_PERF_ATTR_FIELD_BANDWIDTH", "UCT_PERF_ATTR_FIELD_LATENCY",
      "UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS"], "enum", "x", 13, None),
    (["UCT_PERF_ATTR_FIELD_PATH_BANDWIDTH"], "enum", "x", 19, None),
    (["UCT_MD_FLAG_MEMTYPE_COPY"], "enum", "x", 19, None),
    (["UCT_MD_MEM_ATTACH_FIELD_MKEY_SIZE"], "enum", "x", 19, None),
    (["UCT_RKEY_UNPACK_FIELD_SYS_DEVICE"], "enum", "x", 19, None),
    (["UCT_IFACE_ATTR_FIELD_DEVICE_MEM_ELEMENT_SIZE"], "enum", "x", 20, 21),
    (["UCT_IFACE_ATTR_FIELD_MAX_PUT_SGL_ZCOPY_COUNT", "UCT_IFACE_ATTR_FIELD_CAP_FLAGS",
      "UCT_IFACE_ATTR_FIELD_TX_TOKEN_LENGTH", "UCT_IFACE_ATTR_FIELD_RX_TOKEN_LENGTH",
      "UCT_IFACE_ATTR_FIELD_TX_TOKEN", "UCT_IFACE_ATTR_FIELD_RX_TOKEN"], "enum", "x", 22, None),
    (["UCT_IFACE_FLAG_V2_PUT_SGL_ZCOPY", "UCT_IFACE_FLAG_V2_QUERY_TOKEN"], "enum", "x", 22, None),
    (["UCT_EP_ATTR_FIELD_TX_TOKEN", "UCT_EP_ATTR_FIELD_RX_TOKEN"], "enum", "x", 22, None),
    (["UCT_MD_ATTR_FIELD_REQUIRED_MEM_FLAGS"], "enum", "x", 22, None),
    (["UCT_MD_MEM_REG_FIELD_MEM_TYPE"], "enum", "x", 22, None),
    (["UCT_MD_MEM_ATTR_V2_FIELD_MEM_TYPE", "UCT_MD_MEM_ATTR_V2_FIELD_SYS_DEV",
      "UCT_MD_MEM_ATTR_V2_FIELD_BASE_ADDRESS", "UCT_MD_MEM_ATTR_V2_FIELD_ALLOC_LENGTH",
      "UCT_MD_MEM_ATTR_V2_FIELD_DMABUF_FD", "UCT_MD_MEM_ATTR_V2_FIELD_DMABUF_OFFSET",
      "UCT_MD_MEM_ATTR_V2_FIELD_MEM_FLAGS"], "enum", "x", 22, None),
    # libucs (config parser, callback queue, rcache, memory types)
    # uct/api/device/uct_device_types.h
    (["UCT_DEVICE_TL_LAST"], "enum", "d", 20, None),
    (["UCT_DEVICE_TL_D2P"], "enum", "d", 22, None),
    (["UCS_CONFIG_BW_AUTO"], "double", "d", 13, 14),
    (["UCS_CONFIG_DBL_AUTO"], "double", "d", 14, None),
    (["UCS_CONFIG_TABLE_FLAG_LOADED"], "enum", "x", 15, None),
    (["UCS_CALLBACKQ_FLAG_FAST", "UCS_CALLBACKQ_FLAG_ONESHOT"], "enum", "x", 13, 16),
    (["UCS_RCACHE_FLAG_NO_PFN_CHECK", "UCS_RCACHE_FLAG_PURGE_ON_FORK"], "enum", "x", 13, None),
    (["UCS_RCACHE_FLAG_SYNC_EVENTS"], "enum", "x", 17, None),
    (["UCS_RCACHE_FLAG_NEED_LRU_LOCK"], "enum", "x", 20, None),
    (["UCS_MEMORY_TYPE_GAUDI"], "enum", "d", 21, None),
    (["UCS_MEM_FLAG_REGISTRABLE"], "enum", "x", 22, None),
]

# Member types whose own members get no rows (their size is enough).
NO_RECURSE = {"ucs_cpu_set_t", "struct sockaddr_storage"}

PROGRAM_HEAD = """\
#include <uct/api/uct.h>
#include <uct/api/tl.h>
#include <uct/api/v2/uct_v2.h>
#include <ucs/datastruct/callbackq.h>
#include <ucs/sys/topo/base/topo.h>
#include <ucs/config/parser.h>
#include <ucs/memory/rcache.h>
#if __has_include(<uct/api/device/uct_device_types.h>)
#include <uct/api/device/uct_device_types.h>
#endif
#include <stdio.h>

int main(void)
{
"""

GDB_SCRIPT = r"""
import gdb

NO_RECURSE = set(NO_RECURSE_LIST)


def kind_name(t):
    return "union" if t.code == gdb.TYPE_CODE_UNION else "struct"


def whole_ctype(t):
    s = t.strip_typedefs()
    if s.tag:
        return kind_name(s) + " " + s.tag
    return "anonymous " + kind_name(s)


def walk(header, name, t, prefix, base, out):
    s = t.strip_typedefs()
    for f in s.fields():
        ft = f.type
        off = base + f.bitpos // 8
        path = prefix + (f.name if f.name else "(anon)")
        out.append((header, name, path, str(ft), off, ft.sizeof))
        fs = ft.strip_typedefs()
        if (fs.code in (gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_UNION)
                and str(ft) not in NO_RECURSE):
            walk(header, name, ft, path + ".", off, out)


rows = []
for header, name in STRUCTS:
    t = gdb.lookup_type(name)
    if not t.strip_typedefs().fields():
        raise gdb.GdbError(name + ": incomplete type (its definition is not included)")
    rows.append((header, name, "(whole)", whole_ctype(t), 0, t.sizeof))
    walk(header, name, t, "", 0, rows)
for header, name in SCALARS_LIST:
    t = gdb.lookup_type(name)
    rows.append((header, name, "(scalar)", "typedef/enum", 0, t.sizeof))
with open(OUT_PATH, "w") as f:
    for r in rows:
        f.write("\t".join(str(x) for x in r) + "\n")
"""


def present(since, until, minor):
    return since <= minor and (until is None or minor < until)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--abi", required=True, help="release minor, e.g. 1.13 or 1.22")
    ap.add_argument("-I", dest="includes", action="append", default=[],
                    help="include directory (repeatable)")
    ap.add_argument("-o", dest="out", help="output file (default: stdout)")
    args = ap.parse_args()
    try:
        major, minor = (int(x) for x in args.abi.split("."))
    except ValueError:
        sys.exit(f"gen-layout-tsv: bad --abi {args.abi!r}")
    if major != 1:
        sys.exit("gen-layout-tsv: only UCX 1.x is known")
    for tool in ("gcc", "gdb"):
        if not shutil.which(tool):
            sys.exit(f"gen-layout-tsv: {tool} not found")

    structs = [(e[0], e[1]) for e in TYPES if present(e[2], e[3] if len(e) > 3 else None, minor)]
    scalars = [(e[0], e[1]) for e in SCALARS if present(e[2], e[3] if len(e) > 3 else None, minor)]
    consts = [c for c in CONSTS if present(c[3], c[4], minor)]

    with tempfile.TemporaryDirectory() as work:
        src = os.path.join(work, "tsvprobe.c")
        exe = os.path.join(work, "tsvprobe")
        rows_path = os.path.join(work, "rows.tsv")
        body = []
        for names, _, fmt, _, _ in consts:
            for n in names:
                body.append(f'    printf("%s %lld\\n", "{n}", (long long)({n}));')
        with open(src, "w", encoding="utf-8") as f:
            f.write(PROGRAM_HEAD + "\n".join(body) + "\n    return 0;\n}\n")
        cmd = ["gcc", "-std=gnu11", "-O0", "-g", "-fno-eliminate-unused-debug-types",
               "-w"]
        for inc in args.includes:
            cmd += ["-I", inc]
        subprocess.run(cmd + [src, "-o", exe], check=True)
        values = {}
        run = subprocess.run([exe], check=True, capture_output=True, text=True)
        for line in run.stdout.splitlines():
            k, v = line.split(" ", 1)
            values[k] = int(v)

        script = os.path.join(work, "walk.py")
        with open(script, "w", encoding="utf-8") as f:
            f.write(f"STRUCTS = {structs!r}\nSCALARS_LIST = {scalars!r}\n"
                    f"NO_RECURSE_LIST = {sorted(NO_RECURSE)!r}\nOUT_PATH = {rows_path!r}\n")
            f.write(GDB_SCRIPT)
        subprocess.run(["gdb", "-nx", "-batch", "-x", script, exe], check=True,
                       stdout=subprocess.DEVNULL)
        with open(rows_path, encoding="utf-8") as f:
            rows = f.read()

    lines = ["header\ttype\tfield\tc_type\toffset\tsize"]
    lines += rows.rstrip("\n").split("\n")
    for names, ctype, fmt, _, _ in consts:
        vals = []
        for n in names:
            v = values[n]
            vals.append(f"{v:#x}" if fmt == "x" and v >= 0 else str(v))
        lines.append("\t".join(["constants", "/".join(names), "(const)", ctype, "0",
                                "/".join(vals)]))
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
