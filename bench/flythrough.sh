#!/usr/bin/env bash
# bench/flythrough.sh - the scripted flythrough benchmark (issue 6, docs/benchmarks.md): the
# shared real DEMs (Puget Sound 1k, SRTM coast tiles with flat sea, the Sierra Nevada mosaic)
# and a built-in synthetic terrain of 16385 x 16385 samples (the thesis's scale), each flown
# with every streaming strategy by one `hfbench flythrough` process.
#
# usage: bench/flythrough.sh [ARCHIVE_DIR] [OUT_DIR]
#   ARCHIVE_DIR  where the archives are (made when missing; default build/flythrough):
#                NAME.hfa (hfpack), NAME_raw.hfa and NAME_rbuc.hfa (hfpack transcode of NAME.hfa)
#   OUT_DIR      results (default bench/results/flythrough): NAME.md, NAME-frametime.png,
#                NAME-<run>.csv per DEM, and summary.md (every DEM's tables)
# Environment:
#   HF_BIN             folder holding hfbench, hfpack, hfterrain (default: the build/release tree)
#   HF_SHARED_DEM_DIR  the shared DEMs (default ../shared/data/dem); only needed to pack them
#   FLY_DEMS           names to run (default: ps_height_1k N36W122 N37W123 N57E011 sierra big16k;
#                      puget_sound = the built-in default with imagery; sierra gets the world
#                      imagery when ../shared/data/imagery has it)
#   FLY_BIG_SIZE       samples per side of the synthetic terrain (default 16385)
#   FLY_BC1            the BC1 encoder of the NAME_bc1.hfa twins: quality (default: cluster fit,
#                      about 8 M texels/s on 16 cores) or fast (for big archives made on the spot)
#   FLY_BIG_IMAGERY    1 (default): the synthetic terrain gets imagery made from it (its shaded
#                      relief, hfterrain --imagery); 0: heights only
#   FLY_ARGS           extra `hfbench flythrough` options (e.g. "--frames 600 --streams 1,2,4")
#   FLY_NOTE           a note for the reports (e.g. the commit and the machine)
#   FLY_DEVICE         hfpack --device for the big terrain (default cuda when hfpack has it)
# A DEM whose source is missing is skipped with a note; any failing run makes the exit status 1.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
ARCH="${1:-build/flythrough}"
OUT="${2:-bench/results/flythrough}"
DEM_DIR="${HF_SHARED_DEM_DIR:-$ROOT/../shared/data/dem}"
DEMS="${FLY_DEMS:-ps_height_1k N36W122 N37W123 N57E011 sierra big16k}"
BIG="${FLY_BIG_SIZE:-16385}"
log() { printf '[flythrough] %s\n' "$*" >&2; }
tool() {
  if [[ -n "${HF_BIN:-}" ]]; then echo "$HF_BIN/$1"; else echo "build/release/tools/$1/$1"; fi
}
HFBENCH="$(tool hfbench)" HFPACK="$(tool hfpack)" HFTERRAIN="$(tool hfterrain)"
[[ -x "$HFBENCH" && -x "$HFPACK" ]] || { echo "Error: no $HFBENCH or $HFPACK (build first, or set HF_BIN)" >&2; exit 1; }
mkdir -p "$ARCH" "$OUT"

# The source of each DEM name (packed with hfpack's defaults: 129 x 129 tiles, auto segment/b).
source_of() {
  case "$1" in
    ps_height_1k) echo "$DEM_DIR/ps_height_1k.png" ;;
    puget_sound) echo "$ROOT/assets/puget_sound/ps_height_1k.png" ;;
    sierra) echo "$DEM_DIR/srtm3-sierra/sierra.vrt" ;;
    big16k) echo "terrain" ;;
    *) echo "$DEM_DIR/$1.hgt" ;;
  esac
}

# NAME.hfa, then its raw and 2DRBUC twins (same pyramid, transcoded).
prepare() {
  local name="$1" src
  src="$(source_of "$name")"
  # Split copies (carried in parts under a size limit) are joined first.
  if [[ ! -f "$ARCH/$name.hfa" ]] && ls "$ARCH/$name.hfa.part-"* >/dev/null 2>&1; then
    cat "$ARCH/$name.hfa.part-"* >"$ARCH/$name.hfa" && rm -f "$ARCH/$name.hfa.part-"*
  fi
  if [[ ! -f "$ARCH/$name.hfa" ]]; then
    if [[ "$src" == terrain ]]; then
      [[ -x "$HFTERRAIN" ]] || { log "$name: no hfterrain; skipped"; return 1; }
      local dev="${FLY_DEVICE:-}"
      if [[ -z "$dev" ]]; then "$HFPACK" --help 2>&1 | grep -q 'cuda' && dev=cuda || dev=cpu; fi
      # The terrain's own imagery: its shaded relief, one pixel per sample, draped by hfpack
      # (FLY_BIG_IMAGERY=0: heights only).
      local relief=()
      [[ "${FLY_BIG_IMAGERY:-1}" != 0 ]] && relief=(--imagery "$ARCH/$name.ppm")
      log "$name: hfterrain --size $BIG ${relief[*]}, then hfpack --device $dev"
      "$HFTERRAIN" "$ARCH/$name.hfr" --size "$BIG" "${relief[@]}" -q || return 1
      "$HFPACK" "$ARCH/$name.hfr" "${relief[@]}" -o "$ARCH/$name.hfa" --device "$dev" -q || return 1
      rm -f "$ARCH/$name.hfr" "$ARCH/$name.ppm"
    else
      [[ -f "$src" ]] || { log "$name: no source $src; skipped"; return 1; }
      local extra=()
      if [[ "$name" == puget_sound ]]; then
        # The built-in default: true shape and imagery (assets/puget_sound/SOURCES.md).
        extra=(--spacing 160 --vertical-scale 0.1 --imagery "$ROOT/assets/puget_sound/ps_texture_1k.png")
      elif [[ "$name" == sierra && -f "$DEM_DIR/../imagery/world_topo.vrt" ]]; then
        extra=(--imagery "$DEM_DIR/../imagery/world_topo.vrt")  # the world imagery, warped
      fi
      if [[ "$name" == ps_height_1k ]]; then
        # The PNG has no georeferencing: 160 m spacing and 0.1 m height units (SOURCES.md),
        # given through a VRT (UTM 10N; the corner is nominal).
        gdal_translate -q -of VRT -a_srs EPSG:32610 -a_ullr 500000 5300000 664000 5136000 \
          -a_scale 0.1 "$src" "$ARCH/$name.vrt" || return 1
        src="$ARCH/$name.vrt"
      fi
      log "$name: hfpack $src ${extra[*]}"
      GDAL_PAM_ENABLED=NO "$HFPACK" "$src" "${extra[@]}" -o "$ARCH/$name.hfa" -q || return 1
    fi
  fi
  if [[ ! -f "$ARCH/${name}_raw.hfa" ]]; then
    "$HFPACK" transcode "$ARCH/$name.hfa" "$ARCH/${name}_raw.hfa" --codec raw -q || return 1
  fi
  # Archives with imagery: a twin with the imagery stored as BC1 (the "cpu, imagery bc1" run;
  # hfbench flythrough finds NAME_bc1.hfa beside NAME.hfa). Only the imagery is re-coded.
  if [[ ! -f "$ARCH/${name}_bc1.hfa" ]] && "$HFPACK" info "$ARCH/$name.hfa" 2>/dev/null | grep -qi '^ *imagery'; then
    "$HFPACK" transcode "$ARCH/$name.hfa" "$ARCH/${name}_bc1.hfa" --imagery-codec bc1 \
      --imagery-bc1 "${FLY_BC1:-quality}" --threads 16 -q || return 1
  fi
  if [[ ! -f "$ARCH/${name}_rbuc.hfa" ]]; then
    "$HFPACK" transcode "$ARCH/$name.hfa" "$ARCH/${name}_rbuc.hfa" --codec hfpac+rbuc -q || return 1
  fi
}

failed=0
done_names=()
for name in $DEMS; do
  if ! prepare "$name"; then
    log "$name: archives not available"
    [[ -f "$(source_of "$name")" || "$(source_of "$name")" == terrain ]] && failed=1
    continue
  fi
  log "$name: hfbench flythrough"
  # shellcheck disable=SC2086
  if "$HFBENCH" flythrough "$ARCH/${name}_raw.hfa" "$ARCH/$name.hfa" --rbuc "$ARCH/${name}_rbuc.hfa" \
    --out "$OUT" --name "$name" ${FLY_NOTE:+--note "$FLY_NOTE"} ${FLY_ARGS:-}; then
    done_names+=("$name")
  else
    failed=1
  fi
done

# summary.md: every DEM's result and target tables, one after the other.
{
  echo "# Flythrough benchmark: summary"
  echo
  echo "Made by \`bench/flythrough.sh\`${FLY_NOTE:+ ($FLY_NOTE)}; one \`hfbench flythrough\` process per DEM."
  echo "Each DEM's report (method, breakdown, plot) is NAME.md beside this file."
  for name in "${done_names[@]}"; do
    echo
    echo "## $name ([report]($name.md))"
    echo
    sed -n '/^- DEM:/p;/^- view:/p' "$OUT/$name.md"
    echo
    sed -n '/^| run | initial fill/,/^$/p' "$OUT/$name.md"
    sed -n '/^Best cuda run/,/^$/p;/^| target/,/^$/p' "$OUT/$name.md"
  done
} >"$OUT/summary.md"
log "wrote $OUT/summary.md ($([[ $failed == 0 ]] && echo OK || echo 'with failures'))"
exit $failed
