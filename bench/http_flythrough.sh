#!/usr/bin/env bash
# bench/http_flythrough.sh - flythrough from an nginx URL at several bandwidths (issue 18).
#
#   bench/http_flythrough.sh RAW.hfa HFPAC.hfa OUTDIR [MBPS...] [-- hfbench flythrough options]
#
# Serves both archives from Debian's nginx on a loopback port (a temporary prefix, killed on
# exit) and runs `hfbench flythrough URL_RAW URL_HFPAC --io cold` once per bandwidth (default
# 50 200 1000 MB/s, 10^6 bytes/s), each with an empty on-disk cache (HF_HTTP_CACHE_DIR in the
# run's folder). nginx's limit_rate throttles each response, and the client keeps up to
# HF_HTTP_CONNECTIONS (default 4) transfers in flight, so limit_rate is set to MBPS / that
# number: the link never carries more than MBPS in total. Writes OUTDIR/<MBPS>/ (the report, CSVs,
# JSON) and OUTDIR/summary.json + OUTDIR/README.md (bench/http_report.py).
# Environment: HFBENCH (default build/release/tools/hfbench/hfbench), HF_NGINX (/usr/sbin/nginx).
set -euo pipefail

die() { printf 'Error: %s\n' "$*" >&2; exit 1; }
(($# >= 3)) || die "usage: $0 RAW.hfa HFPAC.hfa OUTDIR [MBPS...] [-- hfbench flythrough options]"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RAW="$(realpath "$1")"; HFPAC="$(realpath "$2")"; OUT="$3"; shift 3
RATES=()
while (($#)) && [[ "$1" != "--" ]]; do RATES+=("$1"); shift; done
(($#)) && shift
((${#RATES[@]})) || RATES=(50 200 1000)
HFBENCH="${HFBENCH:-$ROOT/build/release/tools/hfbench/hfbench}"
NGINX="${HF_NGINX:-/usr/sbin/nginx}"  # not $NGINX: nginx reads that variable (inherited sockets)
CONNECTIONS="${HF_HTTP_CONNECTIONS:-4}"
[[ -x "$HFBENCH" ]] || die "no hfbench at $HFBENCH (set HFBENCH)"
[[ -x "$NGINX" ]] || die "no nginx at $NGINX (scripts/hf deps installs nginx-light)"
[[ -f "$RAW" && -f "$HFPAC" ]] || die "archives not found: $RAW $HFPAC"
mkdir -p "$OUT"
OUT="$(realpath "$OUT")"

PREFIX="$(mktemp -d /tmp/hf_http_bench_XXXXXX)"
NGINX_PID=""
cleanup() {
  [[ -n "$NGINX_PID" ]] && kill "$NGINX_PID" 2>/dev/null && wait "$NGINX_PID" 2>/dev/null || true
  rm -rf "$PREFIX"
}
trap cleanup EXIT
mkdir -p "$PREFIX/www" "$PREFIX/tmp"
ln -s "$RAW" "$PREFIX/www/raw.hfa"
ln -s "$HFPAC" "$PREFIX/www/hfpac.hfa"
# A free loopback port (nothing answers on it), without python or curl (the GPU machine has neither).
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
PORT=""
for _ in $(seq 50); do
  p=$((20000 + RANDOM % 30000))
  listening "$p" || { PORT=$p; break; }
done
[[ -n "$PORT" ]] || die "no free loopback port"

start_nginx() {  # limit_rate in bytes/s per response
  cat > "$PREFIX/nginx.conf" <<CONF
worker_processes 1;
daemon off;
master_process off;
error_log $PREFIX/error.log warn;
pid $PREFIX/nginx.pid;
events { worker_connections 256; }
http {
  access_log $PREFIX/access.log;
  client_body_temp_path $PREFIX/tmp; proxy_temp_path $PREFIX/tmp; fastcgi_temp_path $PREFIX/tmp;
  uwsgi_temp_path $PREFIX/tmp; scgi_temp_path $PREFIX/tmp;
  default_type application/octet-stream;
  keepalive_requests 100000;
  server {
    listen 127.0.0.1:$PORT;
    root $PREFIX/www;
    limit_rate $1;
  }
}
CONF
  "$NGINX" -p "$PREFIX" -e "$PREFIX/error.log" -c "$PREFIX/nginx.conf" &
  NGINX_PID=$!
  for _ in $(seq 100); do
    listening "$PORT" && return 0
    sleep 0.05
  done
  die "nginx did not start: $(cat "$PREFIX/error.log")"
}

for MBPS in "${RATES[@]}"; do
  PER=$((MBPS * 1000000 / CONNECTIONS))
  start_nginx "$PER"
  mkdir -p "$OUT/$MBPS"
  rm -rf "$OUT/$MBPS/cache"
  echo "[http_flythrough] $MBPS MB/s (limit_rate $PER bytes/s x $CONNECTIONS connections)" >&2
  HF_HTTP_CACHE_DIR="$OUT/$MBPS/cache" HF_HTTP_CONNECTIONS="$CONNECTIONS" \
    "$HFBENCH" flythrough "http://127.0.0.1:$PORT/raw.hfa" "http://127.0.0.1:$PORT/hfpac.hfa" --io cold \
    --out "$OUT/$MBPS" --name http --json "$OUT/$MBPS/http.json" \
    --note "nginx limit_rate $PER B/s per response, $CONNECTIONS connections: $MBPS MB/s" "$@"
  rm -rf "$OUT/$MBPS/cache"
  kill "$NGINX_PID"; wait "$NGINX_PID" 2>/dev/null || true; NGINX_PID=""
done
if command -v python3 >/dev/null; then
  python3 "$(dirname "${BASH_SOURCE[0]}")/http_report.py" "$OUT" "${RATES[@]}"
else
  echo "[http_flythrough] no python3: run bench/http_report.py $OUT ${RATES[*]} where there is one" >&2
fi
