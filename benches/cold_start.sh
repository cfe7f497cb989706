#!/usr/bin/env bash
# A restart on a cold page cache: drops the kernel's page cache (root
# only), starts `chaja serve`, times how long until /readyz says ready
# (the server reads the index into the page cache first, see
# crates/index/src/warm.rs), then sends never-seen queries from one user and
# prints the slowest. docs/benchmarks/012-long-tail-1m.md.
#
#   DATABASE_URL=mysql://root@127.0.0.1:3306/chaja_bench1m \
#   CHAJA_INDEX_DIR=/path/to/index bash benches/cold_start.sh [run-time-seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
run_time=${1:-30}
bin=${CHAJA_BIN:-target/release/chaja}
: "${DATABASE_URL:?set DATABASE_URL}" "${CHAJA_INDEX_DIR:?set CHAJA_INDEX_DIR}"
export CHAJA_OUTBOX_KEEP=100000000 RUST_LOG=info CHAJA_BIND=127.0.0.1:8080 CHAJA_CACHE_L1_MB=0

sync
echo 3 >/proc/sys/vm/drop_caches
echo "page cache dropped: $(free -m | awk '/Mem:/ {print $6}') MB cached"
source benches/serve.sh
started=$(date +%s.%N)
serve
until curl -fs http://127.0.0.1:8080/readyz >/dev/null; do sleep 0.05; done
ready=$(date +%s.%N)
echo "ready after $(echo "$ready - $started" | bc) s; $(free -m | awk '/Mem:/ {print $6}') MB cached"
"$bin" loadtest --scenario longtail --users 1 --hatch-rate 1 --run-time "$run_time" \
  --report-dir loadtest-report/cold-start | sed -n '1,/^reports/p'
stop
