#!/usr/bin/env bash
# Load test of augmentd (issue 9): starts a real server on loopback (CPU device), writes a small b2nd
# dataset (unless --dataset is given), runs bench/load_test (N concurrent sessions, patch + dataset mode,
# bounded by --duration and --max_batches), then SIGTERMs the server and checks it drained (exit 0).
# Prints load_test's table: batches, errors, mix-ups, latency p50/p95/p99, per-session throughput and the
# server's RSS over time (drift after warm-up). Exit non-zero on any error, mix-up, RSS drift over the limit
# or an unclean server exit.
#
#   scripts/load-test.sh                                  # 16 sessions, 20 s, mixed
#   scripts/load-test.sh --duration 600                   # the 10-minute run
#   scripts/load-test.sh --dataset /data/.../Dataset001_X --mode dataset --sessions 8
# Options: --duration S, --sessions N, --mode patch|dataset|mixed, --max_batches N, --dataset DIR (must lie
# under --dataset_root, default its parent), --build DIR (default ${AUGMENTD_BUILD_DIR:-build-perf}),
# --bin PATH / --client PATH (override the binaries), any other --name=value goes to load_test.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${AUGMENTD_BUILD_DIR:-build-perf}"
duration=20; sessions=16; mode=mixed; max_batches=0; dataset=""; bin=""; client=""; extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration="$2"; shift 2 ;;
    --sessions) sessions="$2"; shift 2 ;;
    --mode) mode="$2"; shift 2 ;;
    --max_batches) max_batches="$2"; shift 2 ;;
    --dataset) dataset="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    --client) client="$2"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    --*=*) extra+=("$1"); shift ;;
    *) echo "load-test: unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$build" in /*) ;; *) build="$root/$build" ;; esac
bin="${bin:-$build/server/augmentd}"
client="${client:-$build/bench/load_test}"
for f in "$bin" "$client"; do
  [ -x "$f" ] || { echo "load-test: $f not built (cmake --build $build --target augmentd load_test)" >&2; exit 1; }
done

tmp="$(mktemp -d "${TMPDIR:-/tmp}/augmentd-load.XXXXXX")"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then kill -KILL "$server_pid" 2>/dev/null; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
if [ -z "$dataset" ]; then
  dataset="$("$client" --make_dataset="$tmp/data")" || { echo "load-test: dataset generation failed" >&2; exit 1; }
  dataset_root="$tmp/data"
else
  dataset_root="$(dirname "$dataset")"
fi

log="$tmp/augmentd.log"
max_sessions=$(( sessions > 64 ? sessions : 64 ))
"$bin" --listen=127.0.0.1:0 --device=cpu --dataset_root="$dataset_root" --max_sessions="$max_sessions" >"$log" 2>&1 &
server_pid=$!
address=""
for _ in $(seq 1 600); do
  address="$(sed -n 's/.*serving on \([^ ,]*\).*/\1/p' "$log" | head -1)"
  [ -n "$address" ] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$address" ]; then
  echo "load-test: augmentd did not start:" >&2; cat "$log" >&2; exit 1
fi
echo "[load-test] augmentd pid $server_pid on $address; dataset $dataset"
"$client" --target="$address" --server_pid="$server_pid" --sessions="$sessions" --duration="$duration" \
  --mode="$mode" --max_batches="$max_batches" --dataset="$dataset" "${extra[@]}"
client_rc=$?
kill -TERM "$server_pid"
server_rc=0
wait "$server_pid" || server_rc=$?
server_pid=""
echo "[load-test] load_test exit $client_rc, augmentd exit $server_rc after SIGTERM"
if [ "$server_rc" != 0 ] || [ "$client_rc" != 0 ]; then
  echo "[load-test] server log tail:"; tail -20 "$log"
  exit 1
fi
