# A Python program over a pip-installed UCX (the libucx-cu12 wheel), the way
# RAPIDS packages use it: libucx.load_library() maps the wheel's libraries,
# then libucp is used through them. Prints what the process ended up with:
#   release 1.M.P      ucp_get_version
#   libuct PATH        each libuct.so file mapped (/proc/self/maps)
#   libucs PATH        each libucs.so file mapped
#   worker OK          ucp_init_version and ucp_worker_create succeeded
#                      (every transport of the libuct in use is queried and
#                      opened), then the worker and context are released
# Exits 1 when libucp fails.  Used by tests/launcher.sh.
import ctypes
import os
import sys

import libucx

libucx.load_library()
ucp = ctypes.CDLL("libucp.so.0")

major, minor, patch = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint()
ucp.ucp_get_version(ctypes.byref(major), ctypes.byref(minor), ctypes.byref(patch))
print(f"release {major.value}.{minor.value}.{patch.value}")

mapped = set()
with open("/proc/self/maps") as maps:
    for line in maps:
        fields = line.split()
        if len(fields) >= 6 and fields[5].startswith("/"):
            mapped.add(fields[5])
for name in ("libuct", "libucs"):
    for path in sorted(mapped):
        if os.path.basename(path).startswith(name + ".so"):
            print(name, path)

# ucp_params_t and ucp_worker_params_t start with a 64-bit field mask; the
# context asks for the tag feature (mask bit 0: features; feature bit 0:
# tag), the worker takes every default (mask 0).
params = (ctypes.c_uint64 * 64)()
params[0], params[1] = 1, 1
worker_params = (ctypes.c_uint64 * 64)()
context, worker = ctypes.c_void_p(), ctypes.c_void_p()
ucp.ucp_init_version.restype = ctypes.c_int8
ucp.ucp_worker_create.restype = ctypes.c_int8
status = ucp.ucp_init_version(major, minor, params, None, ctypes.byref(context))
if status != 0:
    print(f"ucp_init_version: status {status}")
    sys.exit(1)
status = ucp.ucp_worker_create(context, worker_params, ctypes.byref(worker))
if status != 0:
    print(f"ucp_worker_create: status {status}")
    sys.exit(1)
ucp.ucp_worker_destroy(worker)
ucp.ucp_cleanup(context)
print("worker OK")
