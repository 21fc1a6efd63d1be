#!/usr/bin/env bash
# hfpack-sharded.sh - pack a DEM on a Slurm cluster: N parts as a job array, the merge as a job
# that depends on it (docs/sharded-packing.md). The archive is byte-identical to
# `hfpack INPUT... -o OUT.hfa PACK_OPTIONS...` on one machine.
#
# usage: tools/slurm/hfpack-sharded.sh -n N -o OUT.hfa [-w WORKDIR] [--hfpack PATH]
#            [--sbatch "SBATCH OPTIONS"] [--merge-sbatch "SBATCH OPTIONS"] [--keep-parts] [--wait]
#            INPUT... [-- PACK_OPTIONS...]
#   -n N            parts (1..65536): array tasks 1..N run `hfpack INPUT... -o WORKDIR/part-I-of-N.part
#                   --shard I/N PACK_OPTIONS...` (shards count from 1, as --array=1-N numbers them)
#   -o OUT.hfa      the archive; the merge job runs `hfpack merge WORKDIR/part-*-of-N.part -o OUT.hfa`
#                   (written atomically: nothing at OUT.hfa unless every part packed and merged)
#   -w WORKDIR      parts, job scripts and logs (default OUT.hfa.parts); must be on a file system
#                   every node sees, like the inputs and OUT.hfa
#   --hfpack PATH   the hfpack binary the nodes run (default: $HFPACK, else `hfpack` in PATH)
#   --sbatch "..."  extra sbatch options for the parts (e.g. "-p batch -t 2:00:00 -c 16"; the
#                   array's own throttle works too: "--array=1-N%4" is made with --throttle 4)
#   --throttle K    at most K parts at once (sbatch --array=1-N%K)
#   --merge-sbatch "..."  extra sbatch options for the merge job
#   --keep-parts    keep the parts after a successful merge (default: removed)
#   --wait          wait for the merge job to end (sbatch --wait); exit status 0 only if it completed
#                   (1 when it failed, or was cancelled because a part failed)
#   PACK_OPTIONS    any hfpack pack option (--codec, --bits, --segment, --patch, --nodata, ...)
#                   except -o, --shard and --imagery (imagery is not packed sharded)
# Prints "parts: JOBID (array 1-N)" and "merge: JOBID" and exits 0 once both are submitted (with
# --wait: once the merge ended, with its exit status). Logs: WORKDIR/part-I.log, WORKDIR/merge.log.
#
# Example: tools/slurm/hfpack-sharded.sh -n 16 -o /shared/usa.hfa --sbatch "-p cpu -c 32" \
#            /shared/dem/usa.vrt -- --codec auto
set -euo pipefail

die() { echo "Error: $*" >&2; exit 1; }

n="" out="" work="" hfpack="${HFPACK:-}" sb_parts="" sb_merge="" keep=0 wait=0 throttle=""
inputs=() pack=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    -n) n="${2:-}"; shift 2 ;;
    -o) out="${2:-}"; shift 2 ;;
    -w) work="${2:-}"; shift 2 ;;
    --hfpack) hfpack="${2:-}"; shift 2 ;;
    --sbatch) sb_parts="${2:-}"; shift 2 ;;
    --merge-sbatch) sb_merge="${2:-}"; shift 2 ;;
    --throttle) throttle="${2:-}"; shift 2 ;;
    --keep-parts) keep=1; shift ;;
    --wait) wait=1; shift ;;
    -h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; pack=("$@"); break ;;
    -*) die "unknown option $1 (options of hfpack go after --)" ;;
    *) inputs+=("$1"); shift ;;
  esac
done
[[ "$n" =~ ^[0-9]+$ ]] && (( n >= 1 && n <= 65536 )) || die "-n N: the number of parts, 1..65536 (got '${n}')"
[[ -n "$out" ]] || die "no output archive (-o OUT.hfa)"
[[ ${#inputs[@]} -gt 0 ]] || die "no input raster"
[[ -z "$throttle" || "$throttle" =~ ^[1-9][0-9]*$ ]] || die "--throttle K: a positive integer"
for a in "${pack[@]+"${pack[@]}"}"; do
  case "$a" in
    -o|--shard|--shard=*) die "$a is set by this script (use -o and -n)" ;;
    --imagery|--imagery=*) die "--imagery cannot be packed sharded: pack an archive with imagery on one machine" ;;
  esac
done
if [[ -z "$hfpack" ]]; then hfpack="$(command -v hfpack || true)"; fi
[[ -n "$hfpack" && -x "$hfpack" ]] || die "no hfpack binary (--hfpack PATH or \$HFPACK)"
command -v sbatch > /dev/null || die "sbatch not found (is this a Slurm login node?)"

# Absolute paths: the jobs may start elsewhere.
abs() { realpath -m -- "$1"; }
hfpack="$(abs "$hfpack")"
out="$(abs "$out")"
work="$(abs "${work:-$out.parts}")"
for i in "${!inputs[@]}"; do
  # GDAL paths such as /vsicurl/... stay as they are.
  [[ "${inputs[$i]}" == /vsi* || ! -e "${inputs[$i]}" ]] || inputs[$i]="$(abs "${inputs[$i]}")"
done
mkdir -p "$work"

q() { printf '%q ' "$@"; }
parts=()
for i in $(seq 1 "$n"); do parts+=("$work/part-$i-of-$n.part"); done

cat > "$work/part.sh" <<EOF
#!/usr/bin/env bash
# One part of a sharded hfpack (written by $(basename "$0")); run as a Slurm array task 1..$n.
set -euo pipefail
i="\${SLURM_ARRAY_TASK_ID:?not run as a Slurm array task}"
exec $(q "$hfpack" "${inputs[@]}") -o "$work/part-\$i-of-$n.part" --shard "\$i/$n" $(q "${pack[@]+"${pack[@]}"}")
EOF
cat > "$work/merge.sh" <<EOF
#!/usr/bin/env bash
# The merge of a sharded hfpack (written by $(basename "$0")); runs after every part succeeded.
set -euo pipefail
$(q "$hfpack") merge $(q "${parts[@]}") -o $(q "$out")
if [[ $keep -eq 0 ]]; then rm -f $(q "${parts[@]}"); fi
EOF
chmod +x "$work/part.sh" "$work/merge.sh"

read -r -a extra_parts <<< "$sb_parts"
read -r -a extra_merge <<< "$sb_merge"
array="1-$n${throttle:+%$throttle}"
jid=$(sbatch --parsable --job-name=hfpack-part --array="$array" --output="$work/part-%a.log" \
  "${extra_parts[@]+"${extra_parts[@]}"}" "$work/part.sh") || die "sbatch of the parts failed"
jid="${jid%%;*}"
echo "parts: $jid (array $array)"
wait_opt=()
[[ $wait -eq 1 ]] && wait_opt=(--wait)
set +e
mid=$(sbatch --parsable --job-name=hfpack-merge --dependency="afterok:$jid" --kill-on-invalid-dep=yes \
  --output="$work/merge.log" "${wait_opt[@]+"${wait_opt[@]}"}" "${extra_merge[@]+"${extra_merge[@]}"}" "$work/merge.sh")
rc=$?
set -e
mid="${mid%%;*}"
[[ -n "$mid" ]] || die "sbatch of the merge failed"
echo "merge: $mid"
if [[ $wait -eq 1 ]]; then
  # sbatch --wait returns 0 for a merge cancelled because a part failed: ask for its state.
  state="$(scontrol show job -o "$mid" 2> /dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')"
  if [[ -n "$state" && "$state" != COMPLETED ]]; then
    echo "Error: the merge job $mid ended $state (a part failed? see $work/part-*.log, $work/merge.log)" >&2
    exit 1
  fi
  [[ -n "$state" || $rc -ne 0 || -f "$out" ]] || die "the merge job $mid wrote no $out (see $work/merge.log)"
  [[ $rc -eq 0 ]] || echo "Error: the merge job $mid failed (see $work/merge.log)" >&2
fi
exit $rc
