#!/usr/bin/env bash
# Counters on a site's own table (issue 27): a Spring/JPA-style `question`
# table built from the rows of a seeded database, attached by `[[source]]`,
# then two storms and a burst of text edits against one server:
#   1. view_count, a column chaja does not read: no outbox row;
#   2. like_count, an attribute chaja returns: applied as patches;
#   3. 20,000 body edits: the apply rate of text changes, in rows/s,
#      beside the rebuild's on the same rows.
# Each storm: RATE updates/s for SECS seconds, from plain SQL, beside a
# probe a second (`chaja loadtest --scenario counters`); the server's CPU
# time over the storm is read from /proc.
#
#   SOURCE_DB=chaja_100k bash benches/counters.sh
# needs a database made by `chaja seed` (SOURCE_DB), MariaDB as root on
# 127.0.0.1, the release binary and the Korean dictionary.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-target/release/chaja}
source_db=${SOURCE_DB:-chaja_100k}
db=${BOARD_DB:-chaja_board}
rate=${RATE:-500}
secs=${SECS:-60}
edits=${EDITS:-20000}
port=${PORT:-8091}
work=${WORK:-target/counters}
mkdir -p "$work"
url="mysql://root@127.0.0.1:3306/$db"

echo "== the board: questions and reviews of $source_db as one Spring-style table"
mysql -uroot -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db"
mysql -uroot "$db" <<SQL
CREATE TABLE question (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  member_id BIGINT NOT NULL,
  title VARCHAR(255) NOT NULL,
  body MEDIUMTEXT NOT NULL,
  view_count INT NOT NULL DEFAULT 0,
  like_count INT NOT NULL DEFAULT 0,
  is_deleted BIT(1) NOT NULL DEFAULT b'0',
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
INSERT INTO question (member_id, title, body, like_count, created_at)
  SELECT author_id, title, content, like_count, FROM_UNIXTIME(created_at / 1000)
  FROM $source_db.questions;
INSERT INTO question (member_id, title, body, created_at)
  SELECT r.author_id, CONCAT('RE: ', q.title), r.content, FROM_UNIXTIME(r.created_at / 1000)
  FROM $source_db.reviews r JOIN $source_db.questions q ON q.id = r.question_id;
SQL
cat > "$work/board.toml" <<'TOML'
[[source]]
name = "question"
table = "question"
id = "id"
created_at = "created_at"
fields = ["title", "body"]
filter = "is_deleted = 0"
attributes = ["member_id", "like_count"]
numeric = ["like_count"]
sortable = ["like_count"]
TOML
rows=$(mysql -uroot -N "$db" -e "SELECT COUNT(*) FROM question")
mb=$(mysql -uroot -N "$db" -e "SELECT ROUND(SUM(LENGTH(title) + LENGTH(body)) / 1e6, 1) FROM question")
echo "rows $rows, text $mb MB"

export DATABASE_URL=$url CHAJA_CONFIG=$work/board.toml CHAJA_INDEX_DIR=$work/index
export CHAJA_KO_DIC=${CHAJA_KO_DIC:-data/ko-dic} CHAJA_BIND=127.0.0.1:$port
rm -rf "$work/index"
"$bin" install
echo "== reindex"
/usr/bin/time -f "reindex: %e s wall, %U s user, %M KB peak" "$bin" reindex 2>&1 | tail -n 12

"$bin" serve > "$work/serve.log" 2>&1 &
server=$!
trap 'kill -TERM $server 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.2; done
. benches/common.sh

storm() { # column
  settle
  local before after
  before=$(cpu)
  "$bin" loadtest --scenario counters --host "http://127.0.0.1:$port" \
    --database-url "$url" --table question --column "$1" --rate "$rate" --run-time "$secs" \
    | tee "$work/storm-$1.txt"
  after=$(cpu)
  echo "server CPU during the storm: $(echo "scale=1; ($after - $before) * 100 / $ticks / $secs" | bc)% of a core"
  echo "rows patched: $(curl -s "http://127.0.0.1:$port/metrics" | awk '/^index_patched_rows/ {print $2}')"
}
echo "== storm on view_count (not read by chaja)"
storm view_count
echo "== storm on like_count (an attribute)"
storm like_count

echo "== $edits body edits: the apply rate of text changes"
settle
before=$(cpu)
start=$(date +%s.%N)
mysql -uroot "$db" -e "UPDATE question SET body = CONCAT(body, ' 고침') ORDER BY id DESC LIMIT $edits"
committed=$(date +%s.%N)
target=$(mysql -uroot -N "$db" -e "SELECT MAX(seq) FROM search_outbox")
while [ "$(applied)" -lt "$target" ]; do sleep 0.1; done
end=$(date +%s.%N)
after=$(cpu)
echo "the UPDATE of $edits rows took $(echo "$committed - $start" | bc) s; applied $(echo "$end - $committed" | bc) s after its commit: $(echo "scale=0; $edits / ($end - $committed)" | bc) rows/s, $(echo "scale=2; ($after - $before) * 1000 / $ticks / $edits" | bc) ms of server CPU a row"
