#!/usr/bin/env bash
# One device run (docs/gpu-measurement.md carries the libraries; .gl/mpi/*.deb carries Open MPI): FDK over MPI ranks on
# one machine against one process with the same GPU, file to file, and the files compared (docs/cluster.md).
#   scripts/measure-cluster.sh SIZE [RANKS...]      e.g. scripts/measure-cluster.sh 1024 1 2 4
# GPUS: --gpu for every run (default 0; "all" on a machine of several GPUs: one per rank, and one process on all of
# them); SLABS: --slabs-per-rank values to run each rank count with (default 4; "none" runs without the option, which
# for one rank is one process's plan: docs/cluster.md); REPEATS: the rounds (default "1 2");
# DIR: where the scan and the volume are written (default /tmp/cluster, the local disk; /dev/shm/cluster keeps both in
# memory, so that the pipeline is measured and not the disk); HWLOC_COMPONENTS: what mpirun's topology discovery leaves
# out (default -opencl, as docs/cluster.md advises for hosts with an OpenCL driver; set it empty for hwloc's default);
# PER_DEVICE: --ranks-per-device values to run each rank count with (default "auto": one rank drives each GPU, the
# others stand aside; "all" keeps every rank working, as before session 49);
# MPS=1: every run under NVIDIA's Multi-Process Service (its daemon started first and stopped at the end), which lets
# the ranks sharing a GPU run their kernels at once (docs/cluster.md, session 48: it hardly changed their cost).
set -uo pipefail
for f in .gl/mpi/*.deb; do dpkg -x $f /; done; ldconfig
export LD_LIBRARY_PATH=/opt/deps/usr/lib/x86_64-linux-gnu
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# Debian 12's PMIx (carried) on the GPU host's Ubuntu 24.04 crashes in its "compress" process-registry component
# (a segfault in pmix_preg_base_generate_ppn at mpirun's start); its "native" one works.
export PMIX_MCA_preg=native
# hwloc's OpenCL plugin starts every OpenCL platform (the GPU host has pocl) when mpirun discovers the topology: 0.30 s of
# the launch there (docs/cluster.md, session 47).
export HWLOC_COMPONENTS=${HWLOC_COMPONENTS--opencl}
size=$1; shift
if [ "${MPS:-0}" = 1 ]; then
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
  mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
  nvidia-cuda-mps-control -d || { echo "MPS=1: nvidia-cuda-mps-control -d failed" >&2; exit 1; }
  trap 'echo quit | nvidia-cuda-mps-control' EXIT
fi
out=${OUT:-/tmp/out}; mkdir -p "$out"
d=${DIR:-/tmp/cluster}; mkdir -p $d
# 720 projections of 1024^2 (3 GiB), the volume over the phantom (256 mm).
[ -f $d/scan/projections.mha ] || .gl/bin/glrecon phantom -o $d/scan --projections 720 --detector 1024 --detector-spacing 0.5 -q
spacing=$(awk "BEGIN{print 256 / $size}")
common="fdk -g $d/scan/geometry.xml -p $d/scan/projections.mha --size $size --spacing $spacing --backend cuda --filter-on cpu -q --gpu ${GPUS:-0}"
# The launch's fixed cost: mpirun starting a program that is not an MPI one (/bin/true), a rank that does nothing
# (mpirun's start and end, MPI_Init and MPI_Finalize) against one process, and MPI_Init's and MPI_Finalize's parts
# (GLRECON_TRACE marks both).
for r in 1 2 3; do
  for launch in "" "mpirun -np 1"; do
    s=$(date +%s.%N); $launch .gl/bin/glrecon --version > /dev/null; e=$(date +%s.%N)
    printf '%s glrecon --version: %.3f s\n' "${launch:-alone:}" "$(awk "BEGIN{print $e - $s}")"
  done
  for components in "$HWLOC_COMPONENTS" ""; do
    s=$(date +%s.%N); HWLOC_COMPONENTS=$components mpirun -np 1 /bin/true; e=$(date +%s.%N)
    printf 'HWLOC_COMPONENTS=%s mpirun -np 1 /bin/true: %.3f s\n' "$components" "$(awk "BEGIN{print $e - $s}")"
  done
done 2>&1 | tee -a "$out/cluster.txt"
GLRECON_TRACE=1 mpirun -np 1 .gl/bin/glrecon --version 2>&1 | grep -E "MPI started|ending MPI|ended" | tee -a "$out/cluster.txt"
sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null
slabsOption() { [ "$1" = none ] || echo "--slabs-per-rank $1"; }  # SLABS's value as the option ("none": without it)
perDeviceOption() { [ "$1" = auto ] || echo "--ranks-per-device $1"; }  # PER_DEVICE's value ("auto": without it)
# The files are compared by CRC (cksum), not md5: md5sum reads about 0.6 GB/s, so a 2048^3 volume (32 GiB) took about
# 55 s to check, longer than its run, and twice ran a device session's time out (docs/cluster.md, session 46).
run() {  # label, command...: wall seconds of the whole command (mpirun's start included) and the file's CRC
  local label=$1; shift
  rm -f $d/v.mha; sync
  local s=$(date +%s.%N)
  "$@" > $d/log 2>&1; local code=$?
  local e=$(date +%s.%N)
  printf '%s %s: exit %d, %.2f s wall, crc %s\n' "$size^3" "$label" $code "$(awk "BEGIN{print $e - $s}")" "$(cksum < $d/v.mha | cut -d' ' -f1)"
  [ $code -ne 0 ] && tail -5 $d/log
}
for repeat in ${REPEATS:-1 2}; do
  run "one process" .gl/bin/glrecon $common -o $d/v.mha
  for n in "$@"; do
    for k in ${SLABS:-4}; do
      for p in ${PER_DEVICE:-auto}; do
        [ $n = 1 ] && [ $p != auto ] && continue  # a lone rank has nothing to stand aside
        run "mpirun -np $n $(slabsOption $k) $(perDeviceOption $p)" mpirun -np $n .gl/bin/glrecon $common $(slabsOption $k) $(perDeviceOption $p) -o $d/v.mha
      done
    done
  done
done 2>&1 | tee -a "$out/cluster.txt"
# Where the time went, once each, with the reports and each rank's timeline.
rm -f $d/v.mha
.gl/bin/glrecon ${common/ -q/} -o $d/v.mha 2>&1 | grep -E "file to file|backend" | tee -a "$out/cluster.txt"
for k in ${SLABS:-4}; do
  rm -f $d/v.mha
  mpirun -np ${@: -1} .gl/bin/glrecon ${common/ -q/} $(slabsOption $k) --timeline -o $d/v.mha 2>&1 |
    grep -E "^slabs|rank|file to file|backend|^     " | tee -a "$out/cluster.txt"
done
rm -f $d/v.mha
