#!/usr/bin/env bash
# The load-test benchmarks in BENCHMARKS.md: chaja serving a seeded MySQL,
# driven by `chaja loadtest` on the same machine, uncached and cached.
#
#   DATABASE_URL=mysql://root@127.0.0.1:3306/chaja_bench1m \
#   CHAJA_INDEX_DIR=/path/to/index bash benches/loadtest.sh [run-time-seconds]
#
# The database must be seeded (`chaja seed`) and the index built
# (`chaja reindex`). Reports go to loadtest-report/<run>/.
set -euo pipefail
cd "$(dirname "$0")/.."
run_time=${1:-30}
bin=target/release/chaja
cargo build --release --quiet
: "${DATABASE_URL:?set DATABASE_URL}" "${CHAJA_INDEX_DIR:?set CHAJA_INDEX_DIR}"
# Pruning a fresh 1M-row outbox would compete with the test; keep it all.
export CHAJA_OUTBOX_KEEP=100000000 RUST_LOG=warn CHAJA_BIND=127.0.0.1:8080

serve() { # extra env assignments...
  env "$@" "$bin" serve &
  server=$!
  for _ in $(seq 1 100); do curl -fs http://127.0.0.1:8080/healthz >/dev/null && return; sleep 0.2; done
  echo "server did not start" >&2; exit 1
}
stop() { kill -TERM "$server"; wait "$server" || true; }
run() { # name scenario users
  echo "== $1: $2, $3 users, ${run_time}s"
  "$bin" loadtest --scenario "$2" --users "$3" --hatch-rate "$3" --run-time "$run_time" \
    --report-dir "loadtest-report/$1" | sed -n '1,/^reports/p'
}

serve CHAJA_CACHE_L1_MB=0
run search-10-nocache search 10
run search-100-nocache search 100
stop
serve CHAJA_CACHE_L1_MB=64
run search-100-l1 search 100
stop
export CHAJA_CACHE_PREFIX="chaja-bench-$(date +%s)"  # a fresh L2
serve CHAJA_CACHE_L1_MB=64 REDIS_URL=redis://127.0.0.1:6379
run search-100-l1l2 search 100
run flow-100 flow 100
run mixed-100 mixed 100
stop
# The same writes with no stale answers allowed: the lag of the index alone.
serve CHAJA_CACHE_L1_MB=64 CHAJA_CACHE_MAX_STALE_MS=0
run mixed-100-fresh mixed 100
stop
