#!/usr/bin/env bash
# The load-test benchmarks (docs/benchmarks/003-load-tests-1m.md and
# 004-load-tests-100k.md): chaja serving a seeded MySQL,
# driven by `chaja loadtest` on the same machine, uncached and cached.
#
#   DATABASE_URL=mysql://root@127.0.0.1:3306/chaja_bench1m \
#   CHAJA_INDEX_DIR=/path/to/index [MANIFEST=seed-manifest.json] [HOT_KEYWORD=있습니다] \
#   bash benches/loadtest.sh [run-time-seconds]
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

source benches/serve.sh
run() { # name scenario users [loadtest options...]
  local name=$1 scenario=$2 users=$3
  shift 3
  echo "== $name: $scenario, $users users, ${run_time}s $*"
  "$bin" loadtest --scenario "$scenario" --users "$users" --hatch-rate "$users" --run-time "$run_time" \
    --report-dir "loadtest-report/$name" "$@" | sed -n '1,/^reports/p'
}
# Keywords from the seed's manifest when given (MANIFEST=seed-manifest.json),
# else calibrated against the server.
mix=()
if [ -n "${MANIFEST:-}" ]; then mix=(--manifest "$MANIFEST"); fi
hot=${HOT_KEYWORD:-있습니다}

serve CHAJA_CACHE_L1_MB=0
run search-10-nocache search 10 ${mix[@]+"${mix[@]}"}
run search-100-nocache search 100 ${mix[@]+"${mix[@]}"}
run hot-100-nocache search 100 --keyword "$hot"
stop
serve CHAJA_CACHE_L1_MB=64
run search-100-l1 search 100 ${mix[@]+"${mix[@]}"}
run hot-100-l1 search 100 --keyword "$hot"
stop
export CHAJA_CACHE_PREFIX="chaja-bench-$(date +%s)"  # a fresh L2
serve CHAJA_CACHE_L1_MB=64 REDIS_URL=redis://127.0.0.1:6379
run search-100-l1l2 search 100 ${mix[@]+"${mix[@]}"}
run hot-100-l1l2 search 100 --keyword "$hot"
run flow-100 flow 100 ${mix[@]+"${mix[@]}"}
# 90% searches, 10% writes polled (on page 2, never cached) until found.
run mixed-100 mixed 100 ${mix[@]+"${mix[@]}"}
stop
