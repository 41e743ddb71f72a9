#!/usr/bin/env bash
# One device run (see docs/gpu-measurement.md): unpack the carried libraries, run the test suite, then the
# benchmarks issue 9 asks for. Everything it prints is also under $OUT.
set -uo pipefail
for f in .gl/*.deb; do dpkg -x $f /; done; mkdir -p /opt/deps; for f in .gl/libs/*.deb; do dpkg -x $f /opt/deps; done; ldconfig
export LD_LIBRARY_PATH=/opt/deps/usr/lib/x86_64-linux-gnu
export FONTCONFIG_FILE=/opt/deps/etc/fonts/fonts.conf
out=${OUT:-/tmp/out}; mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee "$out/gpu.txt"
bin=$PWD/.gl/bin/glrecon
# The test binary finds the CLI and its scratch folder at the build machine's paths.
mkdir -p /work/main/build/tests/scratch && cp "$bin" /work/main/build/glrecon
step=${1:-all}
if [ "$step" = all ] || [ "$step" = tests ] || [ "$step" = session17 ]; then
  (cd /tmp && timeout 330 "$OLDPWD/.gl/bin/glrecon-tests" > "$out/tests_full.txt" 2>&1; echo "exit $?" >> "$out/tests_full.txt")
  grep -E "^\[  FAILED|^\[  PASSED|^\[  SKIPPED|tests from .* ran|Failure|^exit" "$out/tests_full.txt" | tail -40
fi
if [ "$step" = all ] || [ "$step" = bench ]; then
  "$bin" bench --size 512 --projections 360 --detector 512 --backends cpu,cuda,compute --window 16,32,64,auto --repeat 5 -o "$out/bench512" -q 2>&1 | tee "$out/bench512.txt"
  "$bin" bench --size 256 --projections 360 --detector 512 --backends cuda,compute,graphics --window 16,32,64,auto --repeat 5 -q 2>&1 | tee "$out/bench256.txt"
fi
if [ "$step" = all ] || [ "$step" = fdk ]; then
  scan=/tmp/scan; "$bin" phantom -o $scan --projections 360 --detector 512 --detector-spacing 1 --overwrite -q
  for b in cuda compute compute graphics graphics; do
    /usr/bin/time -f "$b wall %e s" "$bin" fdk -g $scan/geometry.xml -p $scan/projections.mha -o /tmp/v.mha --overwrite --size 512 --spacing 0.5 --backend $b 2>&1 | grep -E "file to file|backend|wall"
  done | tee "$out/fdk512.txt"
fi
if [ "$step" = all ] || [ "$step" = graphics ]; then
  "$bin" bench --size 512 --projections 360 --detector 512 --backends graphics --window 16,auto --repeat 2 -q 2>&1 | tee "$out/bench512_graphics.txt"
fi
if [ "$step" = all ] || [ "$step" = iterative ]; then
  timeout 110 "$bin" bench-iterative --size 128 --projections 90 --detector 128 --backends cpu,graphics,compute,cuda 2>&1 | tail -14 | tee "$out/iterative128.txt"
  timeout 100 "$bin" bench-iterative --size 256 --projections 360 --detector 256 --backends graphics,compute,cuda 2>&1 | tail -14 | tee "$out/iterative256.txt"
fi
# Issue 9: the filter on the GPU (--filter-on) against the CPU's FFTW pool, in bench's whole FDK and file to file.
if [ "$step" = filter ] || [ "$step" = fdk512 ]; then
  [ "$step" = fdk512 ] || (cd /tmp && timeout 200 "$OLDPWD/.gl/bin/glrecon-tests" --gtest_filter='*DeviceFilter*:Cuda*:*FdkBackends*' 2>&1 | grep -E "OK \]|FAILED|Failure|SKIPPED \]|largest" -A2 | tee "$out/tests_filter.txt")
  [ "$step" = fdk512 ] || for place in auto cpu; do
    "$bin" bench --size 512 --projections 360 --detector 512 --backends cpu,cuda,compute --window 32,64 --repeat 3 --filter-on $place -q 2>&1 | tee "$out/bench512_filter_$place.txt"
  done
  [ "$step" = fdk512 ] || "$bin" bench --size 256 --projections 360 --detector 512 --backends cuda,compute,graphics --window 32 --repeat 3 -q 2>&1 | tee "$out/bench256_filter.txt"
  scan=/tmp/scan; "$bin" phantom -o $scan --projections 360 --detector 512 --detector-spacing 1 --overwrite -q
  for run in "cuda auto" "cuda auto" "cuda auto" "cuda cpu" "compute auto" "compute auto" "compute cpu"; do
    set -- $run
    /usr/bin/time -f "$1 --filter-on $2 wall %e s" "$bin" fdk -g $scan/geometry.xml -p $scan/projections.mha -o /tmp/v.mha --overwrite --size 512 --spacing 0.5 --backend $1 --window 32 --filter-on $2 2>&1 | grep -E "file to file|backend|wall"
  done | tee "$out/fdk512_filter.txt"
fi
# 1024^3 from 720 x 1024^2 file to file: the filter on the GPU against the CPU's pool.
if [ "$step" = fdk1024 ]; then
  scan=/tmp/scan1k; "$bin" phantom -o $scan --projections 720 --detector 1024 --detector-spacing 0.5 --overwrite -q
  for place in auto cpu; do
    /usr/bin/time -f "1024 cuda --filter-on $place wall %e s" "$bin" fdk -g $scan/geometry.xml -p $scan/projections.mha -o /tmp/v.mha --overwrite --size 1024 --spacing 0.25 --backend cuda --window 32 --filter-on $place 2>&1 | grep -E "file to file|backend|wall"
  done | tee "$out/fdk1024_filter.txt"
  rm -f /tmp/v.mha
fi
# 2048^3 file to file: one block against 5 slabs, the filter where auto puts it (the GPU), compared by md5 (two
# 32 GiB files do not fit the disk together).
if [ "$step" = big2048 ]; then
  scan=/tmp/scan1k; [ -f $scan/projections.mha ] || "$bin" phantom -o $scan --projections 720 --detector 1024 --detector-spacing 0.5 --overwrite -q
  f="fdk -g $scan/geometry.xml -p $scan/projections.mha --size 2048 --spacing 0.125 --backend cuda --window 32 --overwrite"
  {
    /usr/bin/time -f "2048 one block: wall %e s" "$bin" $f -o /tmp/a.mha 2>&1 | grep -E "file to file|backend|wall"
    md5sum /tmp/a.mha; rm -f /tmp/a.mha
    /usr/bin/time -f "2048 --gpu-memory 8G: wall %e s" "$bin" $f -o /tmp/a.mha --gpu-memory 8G 2>&1 | grep -E "file to file|slabs|device|wall"
    md5sum /tmp/a.mha; rm -f /tmp/a.mha
  } | tee "$out/big2048.txt"
fi
# Issue 12: slabs forced by --gpu-memory against one block, and two GPUs (on nvidia-h200-x2).
if [ "$step" = slabs1024 ]; then
  "$bin" bench --size 1024 --projections 720 --detector 1024 --backends cuda,compute --window 32 --gpu-memory 2G --repeat 2 -q 2>&1 | tee "$out/slabs1024.txt"
fi
if [ "$step" = slabs2048 ]; then
  "$bin" bench --size 2048 --projections 720 --detector 1024 --backends cuda --window 32 --gpu-memory 8G --repeat 1 -q 2>&1 | tee "$out/slabs2048.txt"
  "$bin" bench --size 2048 --projections 720 --detector 1024 --backends cuda --window 32 --gpu ${SLAB_GPUS:-0,1} --gpu-memory 8G --repeat 1 -q 2>&1 | tee "$out/slabs2048_gpus.txt"
fi
# Issue 9 goal 4: file to file with the output's pages prepared beside the reconstruction (new output, then replacing one).
if [ "$step" = fdkwrite ] || [ "$step" = session17 ]; then
  scan=/tmp/scan; [ -f $scan/projections.mha ] || "$bin" phantom -o $scan --projections 360 --detector 512 --detector-spacing 1 --overwrite -q
  for run in "cuda new" "cuda new" "cuda new" "cuda new" "cuda overwrite" "compute new" "compute new" "compute new" "compute new" "compute new" "compute overwrite" "compute overwrite"; do
    set -- $run; [ $2 = new ] && rm -f /tmp/v.mha
    /usr/bin/time -f "$1 $2 output: wall %e s" "$bin" fdk -g $scan/geometry.xml -p $scan/projections.mha -o /tmp/v.mha --overwrite --size 512 --spacing 0.5 --backend $1 --window 32 2>&1 | grep -E "file to file|wall"
  done | tee "$out/fdkwrite.txt"
fi
# Issue 9 goal 7: the viewer's frames drawn offscreen while reconstructing 512^3, against fdk --stream and fdk: 360 and
# 1440 projections of 512^2 from files (as fast as they come), and a simulated scanner at 300 projections/s.
if [ "$step" = viewer ] || [ "$step" = session17 ]; then
  scan=/tmp/scan; [ -f $scan/projections.mha ] || "$bin" phantom -o $scan --projections 360 --detector 512 --detector-spacing 1 --overwrite -q
  long=/tmp/scan1440; [ -f $long/projections.mha ] || "$bin" phantom -o $long --projections 1440 --detector 512 --detector-spacing 1 --overwrite -q
  for s in $scan $long; do
    f="-g $s/geometry.xml -p $s/projections.mha --size 512 --spacing 0.5"
    for run in "compute 32" "compute 16" "graphics 8"; do
      set -- $run
      echo "== $s $1 W=$2"
      "$bin" view $f --backend $1 --window $2 --offscreen --slice-range 0.9:1.1 2>&1 | grep "frames/s"
      "$bin" fdk $f --backend $1 --window $2 --stream -o /tmp/s.mha --overwrite 2>&1 | grep -E "end to end"
      "$bin" fdk $f --backend $1 --window $2 -o /tmp/s.mha --overwrite 2>&1 | grep -E "^backend"
    done
  done 2>&1 | tee "$out/viewer.txt"
  for b in compute graphics; do
    "$bin" view --simulate 300 --size 512 --spacing 0.25 --backend $b --window 8 --offscreen --slice-range 0.9:1.1 2>&1 | grep "frames/s"
  done 2>&1 | tee -a "$out/viewer.txt"
  "$bin" view -g $scan/geometry.xml -p $scan/projections.mha --size 512 --spacing 0.5 --backend compute --window 32 --offscreen --slice-range 0.9:1.1 --screenshot "$out/view512_compute.png" --overwrite 2>&1 | grep "frames/s"
fi
# Issue 9 goal 7 against fdk from the same file: view (offscreen) and fdk file to file, 1440 x 512^2 -> 512^3, compute W=32.
if [ "$step" = viewerfdk ]; then
  long=/tmp/scan1440; [ -f $long/projections.mha ] || "$bin" phantom -o $long --projections 1440 --detector 512 --detector-spacing 1 --overwrite -q
  f="-g $long/geometry.xml -p $long/projections.mha --size 512 --spacing 0.5 --backend compute --window 32"
  for i in 1 2 3; do
    "$bin" view $f --offscreen --slice-range 0.9:1.1 2>&1 | grep "frames/s"
    rm -f /tmp/v.mha; "$bin" fdk $f -o /tmp/v.mha 2>&1 | grep "file to file"
  done 2>&1 | tee "$out/viewerfdk.txt"
fi
