#!/usr/bin/env bash
# The scale-out run (docs/benchmarks/013-scale-out-on-one-machine.md): `chaja loadtest --scenario mixed`
# against HAProxy in front of 3 chaja replicas (deploy/local-cluster.sh: a
# MariaDB primary and GTID replica, a 3-master Redis Cluster with replicas),
# all on this machine. First a run with nothing failing, then never-seen
# queries only (`longtail`), then the mixed run
# while one chaja replica is SIGKILLed, the MariaDB replica is SIGKILLed
# and restarted, and one Redis master is SIGKILLed. The LIKE baseline is timed
# on the same primary, with the same keywords.
#
#   bash benches/scale.sh [rows] [users] [run-time-seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${1:-10000}
users=${2:-50}
run_time=${3:-60}
bin=target/release/chaja
cargo build --release --quiet
cluster=deploy/local-cluster.sh
out=loadtest-report/scale
mkdir -p "$out"
trap '$cluster down >/dev/null 2>&1 || true' EXIT
$cluster down >/dev/null 2>&1 || true
$cluster up "$rows"
manifest=/tmp/chaja-cluster/seed-manifest.json
# The copied index starts below the seed's outbox rows (a rebuild under
# 100,000 rows behind replays them): wait until every replica has applied
# them, so the runs measure serving, not catching up.
for port in 8081 8082 8083; do
  until curl -s "http://127.0.0.1:$port/readyz" | grep -q '"outbox_backlog":0'; do sleep 1; done
done

run() { # name
  "$bin" loadtest --host http://127.0.0.1:8000 --scenario mixed --users "$users" \
    --hatch-rate "$users" --run-time "$run_time" --manifest "$manifest" \
    --report-dir "$out/$1" | sed -n '1,/^reports/p'
}

echo "== LIKE on the primary, same keywords (COUNT(*) over title and content)"
python3 - "$manifest" <<'EOF' | while read -r keyword; do
import json, sys
manifest = json.load(open(sys.argv[1]))
classes = manifest.get("classes", manifest)
picked = []
for name, entries in (classes.items() if isinstance(classes, dict) else []):
    for entry in entries[:1]:
        picked.append(entry["keyword"] if isinstance(entry, dict) else entry)
print("\n".join(picked[:6]))
EOF
  start=$(date +%s%N)
  count=$(mariadb --no-defaults -S /tmp/chaja-cluster/primary.sock -uroot chaja -N -e \
    "SELECT (SELECT COUNT(*) FROM questions WHERE title LIKE CONCAT('%', '$keyword', '%') OR content LIKE CONCAT('%', '$keyword', '%')) + (SELECT COUNT(*) FROM reviews WHERE content LIKE CONCAT('%', '$keyword', '%'))")
  echo "LIKE '$keyword': $count rows in $(( ($(date +%s%N) - start) / 1000000 )) ms"
done

echo "== steady: nothing fails"
run steady

echo "== long tail: every request a query never sent before, cut from the rows (through the balancer)"
"$bin" loadtest --host http://127.0.0.1:8000 --scenario longtail --users "$users" \
  --hatch-rate "$users" --run-time "$run_time" --report-dir "$out/longtail" | sed -n '/^scenario/,/^reports/p'

echo "== faults: chaja2 killed at ${run_time}/4, the database replica killed at ${run_time}/2 and back 10 s later, a redis master killed at 3/4"
(
  sleep $((run_time / 4)); echo "[fault] kill chaja2 at $(date +%T)"; $cluster kill chaja2
  sleep $((run_time / 4)); echo "[fault] kill db-replica at $(date +%T)"; $cluster kill db-replica
  sleep 10; echo "[fault] start db-replica at $(date +%T)"; $cluster start db-replica
  sleep $((run_time / 4 - 10)); echo "[fault] kill a redis master at $(date +%T)"; $cluster kill redis-master
) &
faults=$!
run faults
wait $faults
$cluster status
# Which 503s chaja answered itself (the heavy lane turning page-2 polls
# away), as against ones the balancer made.
for n in 1 2 3; do
  cp /tmp/chaja-cluster/chaja$n.log "$out/chaja$n.log"
  echo "chaja$n answered 503: $(grep -c 'Status code: 503' "$out/chaja$n.log" || true)"
done
