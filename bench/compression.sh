#!/usr/bin/env bash
# bench/compression.sh - does compression pay (issue 13)? Every DEM's flythrough under several
# I/O conditions, one `hfbench flythrough --json` per condition, merged into one results file
# and a report by bench/compression_report.py.
#
# usage: bench/compression.sh [ARCHIVE_DIR] [OUT_DIR]
#   ARCHIVE_DIR  NAME.hfa + NAME_raw.hfa (+ NAME_rbuc.hfa) per DEM, as bench/flythrough.sh makes
#                them (default build/flythrough; run that first to pack what is missing)
#   OUT_DIR      results (default bench/results/compression): NAME-<io>/ (the flythrough reports),
#                NAME-<io>.json, and results.json + README-table.md + NAME-fill-vs-bandwidth.svg
#                from the merge
# Environment:
#   HF_BIN       folder holding hfbench (default build/release/tools/hfbench)
#   COMP_DEMS    names (default: every NAME with NAME.hfa and NAME_raw.hfa in ARCHIVE_DIR)
#   COMP_IO      I/O conditions (default "warm cold 2000 500 100"): warm = page cache warm,
#                cold = pages dropped before every run, a number = cold and limited to MB/s
#   COMP_ARGS    extra hfbench flythrough options (e.g. "--frames 600 --streams 2")
#   COMP_NOTE    a note for the reports and results.json (e.g. the commit and the machine)
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
ARCH="${1:-build/flythrough}"
OUT="${2:-bench/results/compression}"
HFBENCH="${HF_BIN:-build/release/tools/hfbench}/hfbench"
IO="${COMP_IO:-warm cold 2000 500 100}"
log() { printf '[compression] %s\n' "$*" >&2; }
[[ -x "$HFBENCH" ]] || { echo "Error: no $HFBENCH (build first, or set HF_BIN)" >&2; exit 1; }
[[ -d "$ARCH" ]] || { echo "Error: no archive folder $ARCH (bench/flythrough.sh makes it)" >&2; exit 1; }
mkdir -p "$OUT"
dems="${COMP_DEMS:-}"
if [[ -z "$dems" ]]; then
  for raw in "$ARCH"/*_raw.hfa; do
    [[ -f "$raw" ]] || continue
    n="$(basename "$raw" _raw.hfa)"
    [[ -f "$ARCH/$n.hfa" ]] && dems+="$n "
  done
fi
[[ -n "$dems" ]] || { echo "Error: no NAME.hfa + NAME_raw.hfa pairs in $ARCH" >&2; exit 1; }

failed=0
jsons=()
for name in $dems; do
  for io in $IO; do
    case "$io" in
      warm) opts=(--io warm) ;;
      cold) opts=(--io cold) ;;
      *[!0-9.]* | '') echo "Error: COMP_IO: '$io' is not warm, cold or MB/s" >&2; exit 1 ;;
      *) opts=(--io cold --io-limit "$io") ;;
    esac
    rbuc=()
    [[ -f "$ARCH/${name}_rbuc.hfa" ]] && rbuc=(--rbuc "$ARCH/${name}_rbuc.hfa")
    log "$name, io $io"
    # shellcheck disable=SC2086
    if "$HFBENCH" flythrough "$ARCH/${name}_raw.hfa" "$ARCH/$name.hfa" "${rbuc[@]}" "${opts[@]}" \
      --out "$OUT/$name-$io" --name "$name" --json "$OUT/$name-$io.json" \
      ${COMP_NOTE:+--note "$COMP_NOTE"} ${COMP_ARGS:-} -q; then
      jsons+=("$OUT/$name-$io.json")
    else
      failed=1
    fi
  done
done
((${#jsons[@]})) || exit 1
commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
python3 bench/compression_report.py --note "${COMP_NOTE:-}" --commit "$commit" --command "bench/compression.sh $*" \
  -o "$OUT/results.json" --table "$OUT/README-table.md" --plot "$OUT" "${jsons[@]}" || failed=1
log "wrote $OUT/results.json and $OUT/README-table.md ($([[ $failed == 0 ]] && echo OK || echo 'with failures'))"
exit $failed
