# shellcheck shell=bash
# Helpers for the suites that run Open MPI, its OpenSHMEM and MPICH over
# libucp (tests/mpi-shmem.sh, tests/mpi-verbs.sh), sourced after
# ab-common.sh and make_workdir (ab_begin).
#
#   mpi_need_tools          abort unless the compilers and launchers of the
#                           three (Debian's packages) are installed
#   mpi_env                 the launchers' environment: Open MPI allowed to
#                           run as root, its session files in the work
#                           directory, no MALLOC_PERTURB_ (below)
#   mpi_build_all MPI_SRC SHMEM_SRC
#                           $T_WORK/mpi_check (Open MPI) and
#                           $T_WORK/mpi_check_mpich from MPI_SRC,
#                           $T_WORK/shmem_check from SHMEM_SRC: a pass per
#                           program, or an abort
#   mpi_judge RC WORD       R_OK / R_WHY of a run that exited with RC and
#                           wrote $T_WORK/run.out: it passes when RC is 0 and
#                           a line "WORD: OK" was printed

mpi_need_tools() {
    local tool
    for tool in mpicc.openmpi mpirun.openmpi oshcc oshrun mpicc.mpich mpirun.mpich; do
        command -v "$tool" >/dev/null || abort "$tool" "not installed (apt-get install openmpi-bin libopenmpi-dev mpich libmpich-dev)"
    done
}

mpi_env() {
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    # Open MPI 4.1.4's spml ucx destroys a UCP rkey from freed memory in
    # shmem_finalize: with glibc's MALLOC_PERTURB_ (meson sets it for tests)
    # the original segfaults there too, after the checks passed. Not ours to
    # test: the ranks run without it.
    unset MALLOC_PERTURB_
    # one shared memory segment name space per run: Open MPI's own session
    # files go to the work directory
    export OMPI_MCA_orte_tmpdir_base=$T_WORK
}

# _mpi_build LABEL COMPILER OUT SRC
_mpi_build() {
    if "$2" -O2 -o "$3" "$4" 2>"$T_WORK/cc.log"; then
        pass "build $1"
    else
        abort "build $1" "$(head -n 3 "$T_WORK/cc.log")"
    fi
}

mpi_build_all() {
    _mpi_build mpi_check mpicc.openmpi "$T_WORK/mpi_check" "$1"
    _mpi_build "mpi_check for MPICH" mpicc.mpich "$T_WORK/mpi_check_mpich" "$1"
    _mpi_build shmem_check oshcc "$T_WORK/shmem_check" "$2"
}

mpi_judge() {
    local rc=$1 word=$2
    if [ "$rc" -ne 0 ]; then
        R_WHY="exit status $rc: $(grep -m 1 -i 'error\|fail' "$T_WORK/run.out")"
    elif ! grep -q "^$word: OK" "$T_WORK/run.out"; then
        R_WHY="no \"$word: OK\": $(tail -n 1 "$T_WORK/run.out")"
    else
        R_OK=1
    fi
}
