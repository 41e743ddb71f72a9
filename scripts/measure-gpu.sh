#!/usr/bin/env bash
# Measures the GPU backends on this machine's GPU: 256^3 and 512^3 volumes from 360 projections of 512^2,
# windows 1 2 4 8 16 max auto, AG-GPU and MP-GPU through `glrecon fdk` (backprojection alone and whole FDK,
# the CPU backend for reference), then `glrecon bench` over every backend at the largest size.
# Writes OUT/results.md (a table), OUT/runs.log, OUT/bench/bench.json and OUT/bench/bench.png; the scan
# itself goes to a temporary folder (it is large).
#   scripts/measure-gpu.sh GLRECON_BINARY OUT [SIZES] [DETECTOR]      (defaults: "256 512", 512)
set -euo pipefail
bin=$(realpath "$1")
out=$2
sizes=${3:-"256 512"}
detector=${4:-512}
mkdir -p "$out"
scan=$(mktemp -d)
trap 'rm -rf "$scan"' EXIT
log="$out/runs.log"
: > "$log"
"$bin" devices | tee -a "$log"
"$bin" phantom -o "$scan/scan" --projections 360 --detector "$detector" --detector-spacing "$(awk "BEGIN{print 512/$detector}")" \
  --overwrite -q
{
  echo "| volume | backend | window | backprojection G voxel-updates/s | backprojection projections/s | whole FDK projections/s |"
  echo "| --- | --- | --- | --- | --- | --- |"
} > "$out/results.md"
for n in $sizes; do
  spacing=$(awk "BEGIN{print 256/$n}")
  runs=("cpu -")
  for b in graphics graphics-mp; do for w in 1 2 4 8 16 max auto; do runs+=("$b $w"); done; done
  for run in "${runs[@]}"; do
    set -- $run
    args=(--backend "$1")
    [ "$2" != "-" ] && args+=(--window "$2")
    line=$("$bin" fdk -g "$scan/scan/geometry.xml" -p "$scan/scan/projections.mha" -o "$scan/v.mha" --overwrite \
             --size "$n" --spacing "$spacing" "${args[@]}" 2>&1 | grep '^backend' || true)
    echo "$n^3 $run: $line" | tee -a "$log"
    # "backend NAME on RENDERER, window W: filter .. s, backprojection T s (G G voxel-updates/s, P projections/s), total .. (F projections/s)"
    g=$(sed -nE 's/.*\(([0-9.]+) G voxel-updates\/s, ([0-9.]+) projections\/s\).*/\1/p' <<<"$line")
    p=$(sed -nE 's/.*\(([0-9.]+) G voxel-updates\/s, ([0-9.]+) projections\/s\).*/\2/p' <<<"$line")
    f=$(sed -nE 's/.*total [0-9.]+ s \(([0-9.]+) projections\/s\).*/\1/p' <<<"$line")
    w=$(sed -nE 's/.*window ([0-9]+).*/\1/p' <<<"$line")
    echo "| $n^3 | $1 | ${w:--}$([ "$2" = auto ] && echo ' (auto)') | ${g:-failed} | ${p:-} | ${f:-} |" >> "$out/results.md"
  done
done
cat "$out/results.md"
largest=${sizes##* }
"$bin" bench --size "$largest" --projections 360 --detector "$detector" --backends cpu,graphics,graphics-mp,compute,cuda \
  --window 1,2,4,8,16,max,auto -o "$out/bench" -q | tee -a "$log"
