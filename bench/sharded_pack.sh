#!/usr/bin/env bash
# bench/sharded_pack.sh - sharded packing (issue 18): a DEM packed on one machine, then in N
# parts + `hfpack merge` for each N, every merged archive compared with the single pack (cmp).
# The parts run one after another here (one machine): "parts sum" is the CPU work a cluster
# spreads over N nodes, "slowest part" the wall time N nodes would need before the merge.
#
# usage: bench/sharded_pack.sh [DEM] [OUT_DIR]
#   DEM      default ../shared/data/dem/srtm3-sierra/sierra.vrt (10801 x 4801)
#   OUT_DIR  scratch folder for the archives and parts (default /tmp/sharded-pack)
# Environment:
#   HFPACK       the hfpack binary (default build/release/tools/hfpack/hfpack)
#   SHARD_COUNTS the N to run (default "1 2 4 7")
#   PACK_ARGS    extra pack options, the same for the single pack and the parts
# Prints a Markdown table row per N (times in s, cmp outcome) on stdout.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEM="${1:-$ROOT/../shared/data/dem/srtm3-sierra/sierra.vrt}"
OUT="${2:-/tmp/sharded-pack}"
HFPACK="${HFPACK:-$ROOT/build/release/tools/hfpack/hfpack}"
COUNTS="${SHARD_COUNTS:-1 2 4 7}"
read -r -a ARGS <<< "${PACK_ARGS:-}"
[[ -x "$HFPACK" ]] || { echo "Error: no $HFPACK (build first, or set HFPACK)" >&2; exit 1; }
mkdir -p "$OUT"
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

t0=$(now)
"$HFPACK" -q "$DEM" -o "$OUT/single.hfa" "${ARGS[@]}" > "$OUT/single.log" || { echo "Error: single pack failed" >&2; exit 1; }
single=$(secs "$t0" "$(now)")
size=$(stat -c %s "$OUT/single.hfa")
echo "| N | parts: sum (s) | slowest part (s) | merge (s) | merged bytes | cmp with the single pack |"
echo "|---|---|---|---|---|---|"
echo "| single pack | $single | | | $size | (reference) |"
status=0
for n in $COUNTS; do
  parts=() sum=0 slowest=0
  for i in $(seq 1 "$n"); do
    p="$OUT/part-$i-of-$n.part"
    t=$(now)
    "$HFPACK" -q "$DEM" -o "$p" --shard "$i/$n" "${ARGS[@]}" > "$OUT/part-$i-of-$n.log" || { echo "Error: part $i/$n failed" >&2; exit 1; }
    d=$(secs "$t" "$(now)")
    sum=$(awk -v a="$sum" -v b="$d" 'BEGIN { printf "%.2f", a + b }')
    slowest=$(awk -v a="$slowest" -v b="$d" 'BEGIN { printf "%.2f", (b > a ? b : a) }')
    parts+=("$p")
  done
  t=$(now)
  "$HFPACK" merge -q "${parts[@]}" -o "$OUT/merged-$n.hfa" > "$OUT/merge-$n.log" || { echo "Error: merge $n failed" >&2; exit 1; }
  merge=$(secs "$t" "$(now)")
  if cmp "$OUT/single.hfa" "$OUT/merged-$n.hfa" > "$OUT/cmp-$n.log" 2>&1; then verdict="identical"; else verdict="DIFFERS: $(cat "$OUT/cmp-$n.log")"; status=1; fi
  echo "| $n | $sum | $slowest | $merge | $(stat -c %s "$OUT/merged-$n.hfa") | $verdict |"
  rm -f "${parts[@]}" "$OUT/merged-$n.hfa"
done
exit $status
