#!/usr/bin/env bash
# Builds one libFuzzer target with clang (-fsanitize=fuzzer,address,undefined) and runs it for SECONDS.
#   scripts/fuzz.sh metaimage|rtk_geometry|tiff|options SECONDS [extra libFuzzer options]
# Seeds: tests/fuzz/corpus/TARGET (in git). New inputs: build-fuzz/corpus/TARGET. A crash is written to
# build-fuzz/artifacts/TARGET/; copy it into tests/fuzz/regressions/TARGET/ with the fix (test_fuzz_regressions).
set -euo pipefail
cd "$(dirname "$0")/.."
target="${1:?usage: scripts/fuzz.sh metaimage|rtk_geometry|tiff|options SECONDS}"
seconds="${2:?usage: scripts/fuzz.sh TARGET SECONDS}"
shift 2
case "$target" in
  metaimage) sources=(src/core/error.cpp src/core/limits.cpp src/core/parallel.cpp src/io/metaimage.cpp src/io/atomic_file.cpp) ;;
  rtk_geometry) sources=(src/core/error.cpp src/core/limits.cpp src/core/parallel.cpp src/core/geometry.cpp src/io/rtk_geometry.cpp
                         src/io/atomic_file.cpp) ;;
  # readImage in tiff.cpp names the MetaImage reader, whose file joins the link (it is not fuzzed through here).
  tiff) sources=(src/core/error.cpp src/core/limits.cpp src/core/parallel.cpp src/io/tiff.cpp src/io/metaimage.cpp
                 src/io/atomic_file.cpp) ;;
  options) sources=(src/core/error.cpp src/core/limits.cpp src/core/geometry.cpp src/core/parse.cpp src/core/roi.cpp
                    src/core/parallel.cpp src/io/metaimage.cpp src/io/atomic_file.cpp src/io/png_slice.cpp) ;;
  *) echo "fuzz.sh: unknown target '$target' (expected metaimage, rtk_geometry, tiff or options)" >&2; exit 2 ;;
esac
CXX="${CXX_FUZZ:-clang++}"
out=build-fuzz
mkdir -p "$out/corpus/$target" "$out/artifacts/$target"
# -O1 -g: libFuzzer's recommendation (fast enough, readable stacks); -fno-sanitize-recover: UBSan reports stop the run.
"$CXX" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Iinclude \
  "tests/fuzz/fuzz_$target.cpp" "${sources[@]}" -o "$out/fuzz_$target" -ltinyxml2 -lz -lpng -ltiff
echo "fuzz.sh: running $out/fuzz_$target for $seconds s"
# 2 GiB resident and 1 GiB per allocation: an input that makes the readers allocate more is a finding. A unit
# taking 120 s is a hang (20 s gave false alarms on a loaded 2-core machine: the unit ran in 0.3 s alone).
exec "$out/fuzz_$target" -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=120 \
  -print_final_stats=1 -artifact_prefix="$out/artifacts/$target/" "$@" "$out/corpus/$target" "tests/fuzz/corpus/$target"
