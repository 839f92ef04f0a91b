# shellcheck shell=bash
# Sourced by the device's test scripts: a registry directory of our own
# under /dev/shm (unless the caller gave one in SOFTRDMA_SHM_DIR), so that
# other users of the device on this machine neither meet our QPs nor keep
# the registry segment alive, and "nothing left" can be checked exactly.
# Sets and exports SOFTRDMA_SHM_DIR; own_shm=1 when the directory is ours
# (the script removes it when it exits).
own_shm=
if [ -z "${SOFTRDMA_SHM_DIR:-}" ]; then
    SOFTRDMA_SHM_DIR=$(mktemp -d /dev/shm/softrdma-test.XXXXXX) || exit 100
    own_shm=1
fi
export SOFTRDMA_SHM_DIR
