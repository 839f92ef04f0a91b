#!/bin/sh
# The remote-shell stand-in through which mpirun (Open MPI's plm_rsh_agent,
# MPICH hydra's -launcher-exec) starts its daemon on a "host" that is a
# network namespace of this machine:
#   netns-launch.sh [LAUNCHER OPTIONS...] HOST COMMAND...
# HOST is an address; MPI_NETNS_HOSTS="ADDR=NETNS ADDR=NETNS ..." names the
# namespace each address lives in. COMMAND (one shell command line, as a
# remote shell would get it) runs there under tests/softrdma/run.sh, so the
# daemon and its ranks see the soft RDMA device; SOFTRDMA_SHM_DIR and
# SOFTRDMA_BUILD come through the environment, so every process joins the
# same fabric. Options before HOST (ssh-style flags a launcher may add) are
# ignored.
here=$(cd "$(dirname "$0")" && pwd)
while [ $# -gt 0 ]; do
    case $1 in
        -*) shift ;;
        *) break ;;
    esac
done
host=${1:?usage: netns-launch.sh HOST COMMAND...}
shift
ns=
for pair in ${MPI_NETNS_HOSTS:-}; do
    [ "${pair%%=*}" = "$host" ] && ns=${pair#*=}
done
if [ -z "$ns" ]; then
    echo "netns-launch.sh: no network namespace for host $host (MPI_NETNS_HOSTS)" >&2
    exit 255
fi
# the device's own settings of the caller's run.sh: the new run.sh sets them
# again (a second copy of the shim in LD_PRELOAD is not wanted)
unset SYSFS_PATH RDMAV_DRIVERS
LD_PRELOAD=$(printf '%s' "${LD_PRELOAD:-}" | tr ':' '\n' | grep -v 'libsoftrdma-shim\.so$' | paste -sd: -)
[ -n "$LD_PRELOAD" ] && export LD_PRELOAD || unset LD_PRELOAD
exec ip netns exec "$ns" "$here/../softrdma/run.sh" sh -c "$*"
