#!/usr/bin/env bash
# bench/hfpack_bench.sh - pack every shared DEM (and the sierra mosaic) with hfpack, verify it,
# and write the same pyramid as ZSTD+predictor tiled GeoTIFFs for a size comparison.
#
#   bench/hfpack_bench.sh HFPACK_BINARY WORKDIR [DEM...]
#
# The GeoTIFF pyramid: level L = every 2^L-th sample (gdal_translate -r nearest with a source
# window shifted by -2^(L-1), which makes nearest pick exactly samples i * 2^L), padded to the
# archive's padded grid (tilesX * 128 + 1) with zeros, TILED 128 x 128, COMPRESS=ZSTD,
# PREDICTOR=2, ZSTD_LEVEL=${ZSTD_LEVEL:-19}. Output: one Markdown table row per DEM on stdout.
set -euo pipefail
export GDAL_PAM_ENABLED=NO
HFPACK="$1"; WORK="$2"; shift 2
DEM_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../shared/data/dem" && pwd)"
LEVEL="${ZSTD_LEVEL:-19}"
mkdir -p "$WORK"
if (($# == 0)); then
  set -- $(cd "$DEM_DIR" && ls *.hgt *.tif *.png *.jpg *.nc *.dem 2>/dev/null) srtm3-sierra/sierra.vrt
fi
echo "| DEM | samples | levels / tiles | hfpac bytes | ratio | raw archive bytes | ZSTD-$LEVEL GeoTIFF pyramid bytes | hfpac / ZSTD | pack s | M source pts/s | peak RSS MiB | verify |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for dem in "$@"; do
  src="$DEM_DIR/$dem"
  name="$(basename "$dem")"
  out="$WORK/$name.hfa"
  /usr/bin/time -f '%e %M' -o "$WORK/$name.time" "$HFPACK" "$src" -o "$out" -q > "$WORK/$name.pack.txt"
  read -r secs rss < "$WORK/$name.time"
  "$HFPACK" "$src" -o "$WORK/$name.raw.hfa" --codec raw -q > /dev/null
  if "$HFPACK" verify "$out" --source "$src" -q > "$WORK/$name.verify.txt" 2>&1; then
    v="$(tail -n 1 "$WORK/$name.verify.txt" | sed 's/|/\\|/g')"
  else
    v="FAILED: $(tail -n 1 "$WORK/$name.verify.txt")"
  fi
  "$HFPACK" info "$out" > "$WORK/$name.info.txt"
  size=$(stat -c %s "$out"); rawsize=$(stat -c %s "$WORK/$name.raw.hfa")
  dims=$(gdalinfo "$src" 2>/dev/null | sed -n 's/^Size is \([0-9]*\), \([0-9]*\)/\1 \2/p')
  read -r w h <<< "$dims"
  zbytes=0; levels=0
  while read -r lvl tx ty; do
    step=$((1 << lvl)); half=$((step / 2))
    pw=$((tx * 128 + 1)); ph=$((ty * 128 + 1))
    gdal_translate -q -of GTiff -r nearest -srcwin "-$half" "-$half" $((pw * step)) $((ph * step)) \
      -outsize "$pw" "$ph" -co TILED=YES -co BLOCKXSIZE=128 -co BLOCKYSIZE=128 -co COMPRESS=ZSTD \
      -co PREDICTOR=2 -co ZSTD_LEVEL="$LEVEL" "$src" "$WORK/$name.L$lvl.tif" 2>/dev/null
    zbytes=$((zbytes + $(stat -c %s "$WORK/$name.L$lvl.tif")))
    levels=$((levels + 1))
    rm -f "$WORK/$name.L$lvl.tif"
  done < <(awk '/^ +[0-9]+ +[0-9]+ x [0-9]+/ {print $1, $2, $4}' "$WORK/$name.info.txt")
  tiles=$(awk '/^  total [0-9]+ tiles/ {print $2}' "$WORK/$name.info.txt")
  ratio=$(awk '/^  total [0-9]+ tiles/ {print $NF}' "$WORK/$name.info.txt")
  pts=$(awk -v w="$w" -v h="$h" -v s="$secs" 'BEGIN {printf "%.2f", w * h / s / 1e6}')
  rel=$(awk -v a="$size" -v b="$zbytes" 'BEGIN {printf "%.3f", a / b}')
  echo "| $dem | $w x $h | $levels / $tiles | $size | $ratio | $rawsize | $zbytes | $rel | $secs | $pts | $((rss / 1024)) | $v |"
done
