#!/usr/bin/env bash
# The `abuse` benchmark (docs/benchmarks/008-abusive-clients.md): 50 normal search users alone, then
# beside 50 abusers (random from/to, deep pages of 100, random order, each
# under an address of its own), against one server. The server trusts the
# load generator on loopback as a proxy, so each abuser is a client of its
# own, as it would be behind a real balancer.
#
#   DATABASE_URL=mysql://root@127.0.0.1:3306/chaja_bench100k \
#   CHAJA_INDEX_DIR=/path/to/index MANIFEST=manifest.json \
#   bash benches/abuse.sh [run-time-seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
run_time=${1:-30}
bin=target/release/chaja
cargo build --release --quiet
: "${DATABASE_URL:?set DATABASE_URL}" "${CHAJA_INDEX_DIR:?set CHAJA_INDEX_DIR}" "${MANIFEST:?set MANIFEST}"
# Normal users send no X-Forwarded-For: through the trusted proxy they are
# one client (under the per-client cap of 64 in flight, so 50 users pass).
export CHAJA_OUTBOX_KEEP=100000000 RUST_LOG=warn CHAJA_BIND=127.0.0.1:8080 CHAJA_TRUSTED_PROXIES=127.0.0.1

source benches/serve.sh
run() { # name scenario users
  echo "== $1: $2, $3 users, ${run_time}s"
  "$bin" loadtest --scenario "$2" --users "$3" --hatch-rate "$3" --run-time "$run_time" \
    --manifest "$MANIFEST" --report-dir "loadtest-report/$1" | sed -n '/^scenario/,/^reports/p'
}

for cache in 0 64; do
  for lane in default 1000; do
    extra=(CHAJA_CACHE_L1_MB=$cache)
    if [ "$lane" != default ]; then extra+=(CHAJA_HEAVY_SEARCHES=$lane); fi
    serve "${extra[@]}"
    run "quiet-l1-$cache-lane-$lane" search 50
    run "abuse-l1-$cache-lane-$lane" abuse 100
    stop
  done
done
