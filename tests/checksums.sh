#!/usr/bin/env bash
# Output checksums of a fixed set of glrecon runs, to show that a restructuring keeps behaviour.
#
#   tests/checksums.sh GLRECON [WORKDIR] > sums.txt          record (one "name sha256" line per output)
#   tests/checksums.sh GLRECON [WORKDIR] | diff sums.txt -    compare
#   tests/checksums.sh --check sums.txt GLRECON [WORKDIR]     compare, exit 1 on any difference
#
# The set: phantom (a full and a short scan, the ground truth); fdk on every backend at fixed windows (auto
# windows are measured, so they may differ from run to run), with the filter on the CPU and on the device, in one
# block, in slabs (forced with --gpu-memory, and two workers on one device), --stream, --roi (fov, a sphere, the
# graphics sub-stack stencil), the density kill, a short scan, PNG slices and TIFF output; sart/sirt/cgls/osem and
# the TV methods (asd-pocs, pdhg-tv) on cpu, graphics and compute; project on those; view --headless snapshots;
# scan-sim; demo. The cuda backend joins
# where `glrecon devices`-style probing finds a CUDA device (GLRECON_CHECKSUM_CUDA=0/1 forces it off/on).
# Small sizes: the whole set runs in a few minutes on Mesa's llvmpipe.
set -uo pipefail

check=""
if [ "${1:-}" = "--check" ]; then
  check="$(readlink -f "$2")"
  shift 2
fi
cli="$(readlink -f "${1:?usage: tests/checksums.sh [--check SUMS] GLRECON [WORKDIR]}")"
work="${2:-$(mktemp -d)}"
rm -rf "$work"
mkdir -p "$work"
cd "$work" || exit 1

backends="cpu graphics graphics-mp compute"
cuda="${GLRECON_CHECKSUM_CUDA:-auto}"
if [ "$cuda" = auto ]; then
  cuda=0
  if command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1; then cuda=1; fi
fi
[ "$cuda" = 1 ] && backends="$backends cuda"

failures=0
# run NAME ARGS...: runs glrecon quietly; a failure is reported as a checksum line "NAME FAILED".
run() {
  local name="$1"
  shift
  if ! "$cli" "$@" > "log_$name.txt" 2>&1; then
    echo "$name FAILED"
    sed 's/^/    /' "log_$name.txt" >&2
    failures=$((failures + 1))
    return 1
  fi
  return 0
}
# sums NAME FILES...: one line per file, named NAME:basename.
sums() {
  local name="$1"
  shift
  for f in "$@"; do
    if [ -f "$f" ]; then
      echo "$name:$(basename "$f") $(sha256sum "$f" | cut -d' ' -f1)"
    else
      echo "$name:$(basename "$f") MISSING"
    fi
  done
}

produce() {
grid=(--size 40,36,32 --spacing 6)
run phantom phantom -o scan --projections 48 --detector 64 --detector-spacing 8 --ground-truth "${grid[@]}" -q &&
  sums phantom scan/geometry.xml scan/projections.mha scan/phantom.mha
run phantom-short phantom -o short --short-scan --projections 40 --detector 64,48 --detector-spacing 8 --detector-offset 12,-6 -q &&
  sums phantom-short short/geometry.xml short/projections.mha
scan=(-g scan/geometry.xml -p scan/projections.mha)

for b in $backends; do
  windows="-"
  [ "$b" != cpu ] && windows="8 3"
  for w in $windows; do
    wopt=()
    [ "$w" != - ] && wopt=(--window "$w")
    for f in cpu gpu; do
      [ "$b" = cpu ] && [ "$f" = gpu ] && continue
      n="fdk-$b-w$w-$f"
      run "$n" fdk "${scan[@]}" -o "$n.mha" "${grid[@]}" --backend "$b" "${wopt[@]}" --filter-on "$f" -q && sums "$n" "$n.mha"
    done
  done
  wopt=()
  [ "$b" != cpu ] && wopt=(--window 8)
  # Budgets that hold 16 of the 36 rows (and the window): three slabs.
  budget=800K
  [ "$b" = cpu ] && budget=96K
  n="slabs-$b"
  run "$n" fdk "${scan[@]}" -o "$n.mha" "${grid[@]}" --backend "$b" "${wopt[@]}" --gpu-memory "$budget" --filter-on cpu -q && sums "$n" "$n.mha"
  n="slabs2-$b"
  run "$n" fdk "${scan[@]}" -o "$n.mha" "${grid[@]}" --backend "$b" "${wopt[@]}" --gpu 0,0 -q && sums "$n" "$n.mha"
  n="stream-$b"
  run "$n" fdk "${scan[@]}" -o "$n.mha" "${grid[@]}" --backend "$b" "${wopt[@]}" --stream --filter-on cpu -q && sums "$n" "$n.mha"
  n="roi-fov-$b"
  run "$n" fdk "${scan[@]}" -o "$n.mha" "${grid[@]}" --backend "$b" "${wopt[@]}" --roi fov --filter-on cpu -q && sums "$n" "$n.mha" "$n.mha.txt"
  n="roi-sphere-$b"
  run "$n" fdk "${scan[@]}" -o "$n.mha" "${grid[@]}" --backend "$b" "${wopt[@]}" --roi sphere:10,-20,0,60 --filter-on cpu -q &&
    sums "$n" "$n.mha"
  n="short-$b"
  run "$n" fdk -g short/geometry.xml -p short/projections.mha -o "$n.mha" "${grid[@]}" --backend "$b" "${wopt[@]}" --filter-on cpu -q &&
    sums "$n" "$n.mha"
done
run roi-substack fdk "${scan[@]}" -o roi-substack.mha "${grid[@]}" --backend graphics --window 8 --roi sphere:10,-20,0,60 --roi-stencil substack \
  --filter-on cpu -q && sums roi-substack roi-substack.mha
for b in cpu graphics; do
  wopt=()
  [ "$b" != cpu ] && wopt=(--window 8)
  n="density-$b"
  run "$n" fdk "${scan[@]}" -o "$n.mha" "${grid[@]}" --backend "$b" "${wopt[@]}" --density-range 0.9:1.1:0.3 --filter-on cpu -q &&
    sums "$n" "$n.mha" "$n.mha.txt"
done
run slices fdk "${scan[@]}" -o sliced.tif "${grid[@]}" --backend cpu --slices png --slice y:10 --slice x -q &&
  sums slices sliced.tif png/sliced_y10.png png/sliced_x20.png
run slices-central fdk "${scan[@]}" -o central.mha "${grid[@]}" --backend cpu --slices png --slice-range 0.9:1.1 -q &&
  sums slices-central png/central_axial.png png/central_coronal.png png/central_sagittal.png

for b in cpu graphics compute $([ "$cuda" = 1 ] && echo cuda); do
  n="project-$b"
  run "$n" project -i scan/phantom.mha -g scan/geometry.xml -o "$n.mha" --detector 64 --detector-spacing 8 --backend "$b" -q &&
    sums "$n" "$n.mha"
  for m in sart sirt cgls osem; do
    n="$m-$b"
    run "$n" "$m" "${scan[@]}" -o "$n.mha" "${grid[@]}" --iterations 3 --backend "$b" -q && sums "$n" "$n.mha"
  done
  n="sart-roi-$b"
  run "$n" sart "${scan[@]}" -o "$n.mha" "${grid[@]}" --iterations 2 --subsets 4 --positivity --roi fov --backend "$b" -q &&
    sums "$n" "$n.mha"
  # The TV methods (their vectors on the host, or on the device with cuda): the interpolating pair, whose B adds in a
  # fixed order (the matched pair's GL transpose adds atomically, in no fixed order); the matched pair on cpu.
  for m in asd-pocs pdhg-tv; do
    n="$m-$b"
    run "$n" "$m" "${scan[@]}" -o "$n.mha" "${grid[@]}" --iterations 3 --projector interpolating --backend "$b" -q && sums "$n" "$n.mha"
    n="$m-roi-$b"
    run "$n" "$m" "${scan[@]}" -o "$n.mha" "${grid[@]}" --iterations 2 --projector interpolating --roi fov --backend "$b" -q &&
      sums "$n" "$n.mha"
  done
done
run pdhg-tv-matched-cpu pdhg-tv "${scan[@]}" -o pdhg-tv-matched-cpu.mha "${grid[@]}" --iterations 3 --backend cpu -q &&
  sums pdhg-tv-matched-cpu pdhg-tv-matched-cpu.mha

run view view "${scan[@]}" --headless --snapshots snaps --every 16 --backend cpu "${grid[@]}" -o view.mha -q &&
  sums view view.mha snaps/snapshot_00016_axial.png snaps/snapshot_00048_sagittal.png
run scan-sim scan-sim --rate 0 --projections 32 --detector 48 --size 24 --spacing 10 --backend cpu -o sim.mha -q && sums scan-sim sim.mha
run demo demo -o demo --size 32 --projections 48 --detector 64 -q && sums demo demo/volume.mha demo/phantom.mha demo/volume_axial.png

}

if [ -z "$check" ]; then
  produce
  exit $((failures > 0))
fi
produce > sums.txt
if diff "$check" sums.txt; then
  echo "checksums: all $(wc -l < sums.txt) outputs identical to $check"
  exit 0
fi
echo "checksums: outputs differ from $check (lines above: < recorded, > now)"
exit 1
