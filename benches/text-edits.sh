#!/usr/bin/env bash
# The apply rate of text edits on the board `benches/counters.sh` built
# (database chaja_board, index target/counters/index), for one binary:
# starts `BIN serve`, waits until it is idle, edits the body of the EDITS
# newest rows in one UPDATE and times until /readyz reports them applied.
# Prints rows/s, the server's CPU a row, and the CPU of each of its
# threads that outlived the run (tantivy's indexing threads end at each
# commit and are not among them). Run two binaries alternately, on the
# same board, to compare them:
#
#   for b in old new old new; do bash benches/text-edits.sh ./chaja-$b; done
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/chaja}
edits=${EDITS:-10000}
port=${PORT:-8091}
work=${WORK:-target/counters}
db=${BOARD_DB:-chaja_board}
export DATABASE_URL=mysql://root@127.0.0.1:3306/$db CHAJA_CONFIG=$work/board.toml
export CHAJA_INDEX_DIR=$work/index CHAJA_KO_DIC=${CHAJA_KO_DIC:-data/ko-dic}
export CHAJA_BIND=127.0.0.1:$port
"$bin" serve > "$work/text-edits.log" 2>&1 &
server=$!
trap 'kill -TERM $server 2>/dev/null || true; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.2; done
. benches/common.sh
threads() {
  for t in /proc/$server/task/*; do
    echo "$(tr ' ' _ < "$t/comm") $(awk '{print $14 + $15}' "$t/stat")"
  done | awk '{a[$1] += $2} END {for (k in a) print k, a[k]}' | sort
}
# The database's CPU time: the UPDATE leaves old row versions that it
# purges while the burst is applied, on the same two cores.
db_pid=$(pidof mariadbd || pidof mysqld || true)
db_cpu() { if [ -n "$db_pid" ]; then awk '{print $14 + $15}' "/proc/$db_pid/stat"; else echo 0; fi; }
settle
threads > "$work/threads-before"
before=$(cpu)
mysql -uroot "$db" -e "UPDATE question SET body = CONCAT(body, ' 고침') ORDER BY id DESC LIMIT $edits"
committed=$(date +%s.%N)
db_before=$(db_cpu)
target=$(mysql -uroot -N "$db" -e "SELECT MAX(seq) FROM search_outbox")
while [ "$(applied)" -lt "$target" ]; do sleep 0.1; done
end=$(date +%s.%N)
after=$(cpu)
db_after=$(db_cpu)
threads > "$work/threads-after"
echo "$bin: $edits edits applied in $(echo "$end - $committed" | bc) s:" \
  "$(echo "scale=0; $edits / ($end - $committed)" | bc) rows/s," \
  "$(echo "scale=2; ($after - $before) * 1000 / $ticks / $edits" | bc) ms of server CPU a row"
echo "  the database beside it (purging the old versions, serving the reads): $(echo "scale=1; ($db_after - $db_before) / $ticks" | bc) s of CPU"
join -a1 "$work/threads-after" "$work/threads-before" \
  | awk -v t="$ticks" '{d = $2 - ($3 + 0); if (d > t / 2) printf "  thread %s: %.1f s of CPU\n", $1, d / t}'
