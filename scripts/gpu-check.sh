#!/usr/bin/env bash
# One device run of the trunk's restructuring (docs/gpu-measurement.md has the carried libraries): the test binary,
# then tests/checksums.sh with the binary before the restructuring (.gl/bin/glrecon-old) and after it, compared.
#   scripts/gpu-check.sh [tests|checksums|all]
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
  (cd /tmp && timeout 400 "$root/.gl/bin/glrecon-tests" > "$out/tests.txt" 2>&1; echo "exit $?" >> "$out/tests.txt")
  grep -E "^\[  FAILED|^\[  PASSED|^\[  SKIPPED|tests from .* ran|Failure|^exit" "$out/tests.txt" | tail -30
fi
if [ "$step" = all ] || [ "$step" = checksums ]; then
  tests/checksums.sh .gl/bin/glrecon-old /tmp/cs-old > "$out/sums-old.txt" 2> "$out/sums-old.log"
  tests/checksums.sh --check "$out/sums-old.txt" .gl/bin/glrecon /tmp/cs-new 2>&1 | tail -40 | tee "$out/sums-check.txt"
  grep -c cuda "$out/sums-old.txt"
fi
