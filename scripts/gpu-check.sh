#!/usr/bin/env bash
# One device run of the trunk's restructuring (docs/gpu-measurement.md has the carried libraries): the test binaries,
# then tests/checksums.sh with the binary before the restructuring (.gl/bin/glrecon-old) and after it, compared.
#   scripts/gpu-check.sh [tests|checksums|timing|all]
set -uo pipefail
for f in .gl/*.deb; do dpkg -x $f /; done; mkdir -p /opt/deps; for f in .gl/libs/*.deb; do dpkg -x $f /opt/deps; done; ldconfig
export LD_LIBRARY_PATH=/opt/deps/usr/lib/x86_64-linux-gnu
export FONTCONFIG_FILE=/opt/deps/etc/fonts/fonts.conf
out=${OUT:-/tmp/out}; mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
root=$PWD
# The test binary finds the CLI and its scratch folder at the build machine's paths.
mkdir -p /work/main/build/tests/scratch && cp .gl/bin/glrecon /work/main/build/glrecon
step=${1:-all}
if [ "$step" = all ] || [ "$step" = tests ]; then
  # Every test executable there is (glrecon-tests, -gl, -cuda, -slow; before the tests' split, one).
  for t in "$root"/.gl/bin/glrecon-tests*; do
    case $t in *-old) continue ;; esac
    (cd /tmp && echo "== $(basename $t)" && timeout 400 "$t"; echo "exit $?") >> "$out/tests.txt" 2>&1
  done
  grep -E "^== |^\[  FAILED|^\[  PASSED|^\[  SKIPPED|tests from .* ran|Failure|^exit" "$out/tests.txt" | tail -40
fi
if [ "$step" = all ] || [ "$step" = checksums ]; then
  tests/checksums.sh .gl/bin/glrecon-old /tmp/cs-old > "$out/sums-old.txt" 2> "$out/sums-old.log"
  tests/checksums.sh --check "$out/sums-old.txt" .gl/bin/glrecon /tmp/cs-new 2>&1 | tail -40 | tee "$out/sums-check.txt"
  grep -c cuda "$out/sums-old.txt"
fi
if [ "$step" = all ] || [ "$step" = timing ] || [ "$step" = timing+trace ]; then
  # fdk file to file at 512^3 from 360 x 512^2, before and after, alternating so that neither gets a warmer cache.
  d=/tmp/ft; mkdir -p $d
  .gl/bin/glrecon phantom -o $d/scan --projections 360 --detector 512 --detector-spacing 1 -q --overwrite
  for b in cuda compute auto; do for i in 1 2 3; do for bin in glrecon-old glrecon; do
    rm -f $d/$bin-$b.mha  # a new output each time, as a first run writes it (replacing one frees its pages first)
    s=$(date +%s.%N)
    line=$(.gl/bin/$bin fdk -g $d/scan/geometry.xml -p $d/scan/projections.mha --size 512 --spacing 0.5 -o $d/$bin-$b.mha \
           --backend $b 2>&1 | grep -E "^file to file|^auto|error")
    e=$(date +%s.%N)
    echo "$bin $b run $i: process $(awk "BEGIN{printf \"%.3f\", $e - $s}") s; $line"
  done; done; done 2>&1 | tee "$out/timing.txt"
  for b in cuda compute; do cmp $d/glrecon-old-$b.mha $d/glrecon-$b.mha && echo "$b: old and new outputs identical"; done | tee -a "$out/timing.txt"
fi
if [ "$step" = all ] || [ "$step" = bench ]; then
  # The whole FDK at 512^3 from 360 x 512^2 per backend (window 32), and the iterative pair at 256^3, before and after.
  for bin in glrecon-old glrecon; do
    echo "== $bin bench 512"
    .gl/bin/$bin bench --size 512 --projections 360 --detector 512 --backends cuda,compute,graphics --window 32 --repeat 3 -q 2>&1 | tail -12
    echo "== $bin bench-iterative 256"
    .gl/bin/$bin bench-iterative --size 256 --projections 360 --detector 256 --backends cuda,compute 2>&1 | tail -12
  done 2>&1 | tee "$out/bench.txt"
fi
if [ "$step" = trace ] || [ "$step" = timing+trace ]; then
  # Where the file-to-file time goes (GLRECON_TRACE), and CUDA's start alone (.gl/probe/cuprobe, if carried).
  nvidia-smi -q | grep -i -E "persistence|driver version" | head -3
  [ -x .gl/probe/cuprobe ] && for i in 1 2; do .gl/probe/cuprobe; done
  d=/tmp/ft; mkdir -p $d
  .gl/bin/glrecon phantom -o $d/scan --projections 360 --detector 512 --detector-spacing 1 -q --overwrite
  for b in cuda compute auto; do for i in 1 2 3; do
    echo "== $b run $i"
    rm -f $d/v.mha
    GLRECON_TRACE=1 .gl/bin/glrecon fdk -g $d/scan/geometry.xml -p $d/scan/projections.mha --size 512 --spacing 0.5 -o $d/v.mha \
      --overwrite --backend $b 2>&1 | grep -E "trace|^file to file|^auto"
  done; done 2>&1 | tee "$out/trace.txt"
fi
