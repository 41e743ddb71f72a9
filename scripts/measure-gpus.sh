#!/usr/bin/env bash
# One device run on a machine of several GPUs (docs/gpu-measurement.md carries the libraries): one GPU against two,
# in memory (glrecon bench: one block against slabs, with each device's timeline) and file to file (glrecon fdk),
# for docs/benchmarks.md's table "Several GPUs". Everything it prints is also under $OUT.
#   scripts/measure-gpus.sh [STEP...]     steps: hostmemory warm tests bench2048 trace2048 bench2048cpu slabs2048 beside2048 bench1024 trace1024
#                                         file1024 file2048 shm2048 mpi2048 iterative iterative1024 (default: all but hostmemory, tests,
#                                         trace1024, trace2048 and iterative1024);
#                                         mpi2048 needs Open MPI in .gl/mpi
# warm: the GPU hosts' memory grows as it is first used (about 3 s for each 8 GiB, KINDS.md), which the first 2048^3 run
# would pay; it is claimed once first. TEST_BINARIES, TEST_FILTER, TEST_SECONDS choose the tests; BACKENDS the benches'; PAIRS the iterative step's projector pairs. shm2048: file to file through /dev/shm (memory), so that the pipeline is measured
# and not the local disk (which writes 32 GiB in 17-34 s there).
set -uo pipefail
for f in .gl/*.deb; do dpkg -x $f /; done; mkdir -p /opt/deps; for f in .gl/libs/*.deb; do dpkg -x $f /opt/deps; done
# Open MPI (the binary links it; its components are found at Debian's paths, so unpacked at /): measure-cluster.sh.
for f in .gl/mpi/*.deb; do dpkg -x $f /; done; ldconfig
export LD_LIBRARY_PATH=/opt/deps/usr/lib/x86_64-linux-gnu FONTCONFIG_FILE=/opt/deps/etc/fonts/fonts.conf
out=${OUT:-/tmp/out}; mkdir -p "$out"
bin=$PWD/.gl/bin/glrecon
steps=${*:-warm bench2048 bench2048cpu slabs2048 beside2048 bench1024 file1024 file2048 shm2048 mpi2048 iterative}
has() { [[ " $steps " == *" $1 "* ]]; }
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader | tee "$out/gpus.txt"
echo "CPU threads: $(nproc)" | tee -a "$out/gpus.txt"
b="$bin bench --projections 720 --detector 1024 --window 32 -q"
# hostmemory: what a CUDA device's setup is made of on this host (scripts/cuda-host-memory.cu, built beforehand into
# .gl/cuda-host-memory: docs/gpu-measurement.md).
if has hostmemory; then
  if [ -x .gl/cuda-host-memory ]; then .gl/cuda-host-memory 2>&1 | tee "$out/cuda-host-memory.txt"; else echo "hostmemory: .gl/cuda-host-memory not built"; fi
fi
has warm && python3 -c "import numpy as n; a=n.ones(110*2**28, n.float32); print('warmed', a.nbytes >> 30, 'GiB')"
# mpirun (the MPI tests and mpi2048): Debian's PMIx crashes in its default process registry on the host's Ubuntu.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PMIX_MCA_preg=native
if has tests; then
  # The test binary finds the CLI and its scratch folder at the build machine's paths (gpu-session.sh).
  mkdir -p /work/main/build/tests/scratch && cp "$bin" /work/main/build/glrecon
  for t in ${TEST_BINARIES:-glrecon-tests-cuda glrecon-tests-gl glrecon-tests}; do
    (cd /tmp && timeout ${TEST_SECONDS:-150} "$OLDPWD/.gl/bin/$t" ${TEST_FILTER:+--gtest_filter=$TEST_FILTER} > "$out/$t.txt" 2>&1; echo "exit $?" >> "$out/$t.txt")
    grep -E "^\[  FAILED|^\[  PASSED|tests ran|^exit" "$out/$t.txt" | tail -8
  done
fi
# 2048^3 (32 GiB) from 720 x 1024^2: one block on GPU 0 against two GPUs (the volume fits either way: one slab each).
has bench2048 && $b --size 2048 --backends ${BACKENDS:-cuda,compute} --gpu 0,1 --repeat ${REPEAT:-3} 2>&1 | tee "$out/bench2048.txt"
has bench2048cpu && $b --size 2048 --backends cuda --gpu 0,1 --repeat 1 --filter-on cpu 2>&1 | tee "$out/bench2048_cpu.txt"
# Where the devices' setup goes at 2048^3 in memory (each device's operator and filter twin, GLRECON_TRACE), with the
# timelines.
has trace2048 && GLRECON_TRACE=1 $b --size 2048 --backends cuda --gpu 0,1 --repeat 1 2>&1 | grep -vE "^\s*$" | tee "$out/trace2048.txt"
# Slabs on one GPU against its one block.
has slabs2048 && $b --size 2048 --backends cuda --gpu 0 --gpu-memory 8G --repeat 1 2>&1 | tee "$out/slabs2048.txt"
# One GPU with room for two buffers of 4/5 of the volume: a large slab, then a small one beside whose backprojection
# the large one is read back (SlabPlan::drainBeside), against its one block.
has beside2048 && $b --size 2048 --backends cuda --gpu 0 --gpu-memory 60G --repeat 3 2>&1 | tee "$out/beside2048.txt"
has bench1024 && $b --size 1024 --backends ${BACKENDS:-cuda,compute} --gpu 0,1 --repeat 3 2>&1 | tee "$out/bench1024.txt"
# File to file: the scan written once, the volume written to the local disk, one GPU against two.
scan=/tmp/scan1k
if has file1024 || has trace1024 || has file2048 || has mpi2048 || has shm2048; then
  [ -f $scan/projections.mha ] || "$bin" phantom -o $scan --projections 720 --detector 1024 --detector-spacing 0.5 --overwrite -q
fi
vol=/tmp/v.mha
# CRC, not md5: md5sum reads about 0.6 GB/s, about 55 s for a 2048^3 volume (docs/cluster.md, session 46).
volumeCrc() { echo "crc $(cksum < "$1" | cut -d' ' -f1)"; }
fdkrun() {  # size, spacing, label, options...
  local size=$1 spacing=$2 label=$3; shift 3
  rm -f $vol; sync
  /usr/bin/time -f "$size^3 $label: wall %e s" "$bin" fdk -g $scan/geometry.xml -p $scan/projections.mha -o $vol --size $size \
    --spacing $spacing --window 32 --timeline "$@" 2>&1 | grep -E "file to file|slabs|device|wall|rror|^   "
  volumeCrc $vol
}
if has trace1024; then
  # Where a 1024^3 file-to-file run's time goes outside the devices' timeline (its "other"), stage by stage.
  for gpus in 0 0,1; do
    rm -f $vol; GLRECON_TRACE=1 "$bin" fdk -g $scan/geometry.xml -p $scan/projections.mha -o $vol --size 1024 --spacing 0.25 \
      --window 32 --backend cuda --gpu $gpus -q 2>&1 | grep trace
  done 2>&1 | tee "$out/trace1024.txt"
fi
if has file1024; then
  for r in 1 2; do
    fdkrun 1024 0.25 "cuda one GPU" --backend cuda --gpu 0
    fdkrun 1024 0.25 "cuda two GPUs" --backend cuda --gpu 0,1
  done 2>&1 | tee "$out/file1024.txt"
fi
if has file2048; then
  {
    fdkrun 2048 0.125 "cuda one GPU" --backend cuda --gpu 0
    fdkrun 2048 0.125 "cuda one GPU, 8G slabs" --backend cuda --gpu 0 --gpu-memory 8G
    fdkrun 2048 0.125 "cuda two GPUs" --backend cuda --gpu 0,1
  } 2>&1 | tee "$out/file2048.txt"
fi
if has shm2048; then
  vol=/dev/shm/v.mha
  {
    fdkrun 2048 0.125 "cuda one GPU, to /dev/shm" --backend cuda --gpu 0
    fdkrun 2048 0.125 "cuda two GPUs, to /dev/shm" --backend cuda --gpu 0,1
    if [[ ${BACKENDS:-cuda,compute} == *compute* ]]; then
      fdkrun 2048 0.125 "compute one GPU, to /dev/shm" --backend compute --gpu 0
      fdkrun 2048 0.125 "compute two GPUs, to /dev/shm" --backend compute --gpu 0,1
    fi
  } 2>&1 | tee "$out/shm2048.txt"
fi
if has mpi2048; then
  # One rank per GPU (--gpu all: each takes the device of its place on the host), slabs dealt on demand, into the one
  # file, in /dev/shm (the disk bounds a 2048^3 file).
  vol=/dev/shm/v.mha
  {
    rm -f $vol; sync
    /usr/bin/time -f "2048^3 cuda mpirun -np 2: wall %e s" mpirun -np 2 "$bin" fdk -g $scan/geometry.xml -p $scan/projections.mha -o $vol \
      --size 2048 --spacing 0.125 --window 32 --backend cuda --gpu all --filter-on cpu --timeline 2>&1 | grep -E "file to file|rank|wall|rror|^     "
    volumeCrc $vol
    fdkrun 2048 0.125 "cuda one GPU, --filter-on cpu" --backend cuda --gpu 0 --filter-on cpu
  } 2>&1 | tee "$out/mpi2048.txt"
fi
if has iterative || has iterative1024; then
  # The iterative methods on cuda: one GPU whole, one GPU in 2 slabs, two GPUs a slab each (the split operator's
  # threads), and the two GPUs again with the slabs' sums on the host (GLRECON_SPLIT_SUMS=host, the path before the
  # devices summed); each command prints its last iteration's time and the md5 of its volume.
  # iterative: 512^3 from 360 x 512^2, 10 iterations; iterative1024: 1024^3 from 720 x 1024^2, 3 iterations.
  # PAIRS: the projector pairs (default interpolating); METHODS: the methods (default sirt, cgls, sart --subsets 10).
  it512=/tmp/scan512; has iterative && { [ -f $it512/projections.mha ] || "$bin" phantom -o $it512 --projections 360 --detector 512 --detector-spacing 1 --overwrite -q; }
  has iterative1024 && { [ -f $scan/projections.mha ] || "$bin" phantom -o $scan --projections 720 --detector 1024 --detector-spacing 0.5 --overwrite -q; }
  IFS=';' read -ra methods <<< "${METHODS:-sirt;cgls;sart --subsets 10}"
  for size in 512 1024; do
    has iterative$([ $size = 1024 ] && echo 1024) || continue
    if [ $size = 512 ]; then it=$it512 spacing=0.5 n=10; else it=$scan spacing=0.25 n=3; fi
    for pair in ${PAIRS:-interpolating}; do
      for m in "${methods[@]}"; do
        for run in "--gpu 0" "--gpu 0 --slabs 2" "--gpu 0,1 --slabs 2" "host --gpu 0,1 --slabs 2"; do
          sums=device; [[ $run == host* ]] && { sums=host; run=${run#host }; }
          GLRECON_SPLIT_SUMS=$sums /usr/bin/time -f "$m ${size}^3 $pair $run, $sums sums: wall %e s" "$bin" $m -g $it/geometry.xml -p $it/projections.mha \
            -o /tmp/it.mha --overwrite --size $size --spacing $spacing --backend cuda --iterations $n --projector $pair $run 2>&1 |
            grep -E "iteration $n/|iterations,|wall|rror"
          echo "md5 $(md5sum /tmp/it.mha | cut -c1-16)"
        done
      done
    done
  done 2>&1 | tee "$out/iterative.txt"
fi
rm -f /tmp/v.mha /dev/shm/v.mha /tmp/it.mha
