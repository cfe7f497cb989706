#!/usr/bin/env bash
# chaja at scale on one machine, as plain processes: a MariaDB primary and a
# GTID read replica, a Redis Cluster of 3 masters (each with a replica),
# 3 chaja replicas reading the database replica, and HAProxy in front.
#
#   deploy/local-cluster.sh up [rows]      start everything, seed `rows` questions (default 10000)
#   deploy/local-cluster.sh kill chaja2    SIGKILL one chaja replica (chaja1..3)
#   deploy/local-cluster.sh kill db-replica
#   deploy/local-cluster.sh kill redis-master
#   deploy/local-cluster.sh start db-replica
#   deploy/local-cluster.sh status
#   deploy/local-cluster.sh down
#
# Ports: HAProxy 8000, chaja 8081-8083, MariaDB 13306 (primary) and 13307
# (replica), Redis 17001-17006. Everything lives under $CLUSTER_DIR
# (/tmp/chaja-cluster). Needs mariadb-server, redis-server, haproxy and a
# release build (cargo build --release). Runs as root, as CI does.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${CLUSTER_DIR:-/tmp/chaja-cluster}
bin=${CHAJA_BIN:-target/release/chaja}
primary=13306
replica=13307
redis_ports=(17001 17002 17003 17004 17005 17006)
chaja_ports=(8081 8082 8083)
lb=8000
db_url="mysql://chaja:chaja@127.0.0.1:$primary/chaja"
read_url="mysql://chaja:chaja@127.0.0.1:$replica/chaja"
redis_url="redis+cluster://127.0.0.1:17001,127.0.0.1:17002,127.0.0.1:17003"

sql() { # socket-name statements...
  local name=$1
  shift
  mariadb --no-defaults -S "$dir/$name.sock" -uroot "$@"
}

start_mariadb() { # name port server-id options...
  local name=$1 port=$2 id=$3
  shift 3
  if [ ! -d "$dir/$name" ]; then
    mariadb-install-db --no-defaults --user=root --auth-root-authentication-method=normal \
      --skip-test-db --datadir="$dir/$name" >/dev/null
  fi
  /usr/sbin/mariadbd --no-defaults --user=root --datadir="$dir/$name" --port="$port" \
    --socket="$dir/$name.sock" --pid-file="$dir/$name.pid" --log-error="$dir/$name.err" \
    --bind-address=127.0.0.1 --skip-name-resolve --server-id="$id" --log-basename="$name" \
    --log-bin --binlog-format=ROW --log-slave-updates --gtid-strict-mode=1 \
    --innodb-buffer-pool-size=256M --max-connections=300 "$@" </dev/null >/dev/null 2>&1 &
  for _ in $(seq 1 300); do
    sql "$name" -e 'select 1' >/dev/null 2>&1 && return
    sleep 0.1
  done
  echo "$name did not start" >&2
  exit 1
}

start_chaja() { # n (1..3)
  local n=$1 port=${chaja_ports[$(($1 - 1))]}
  DATABASE_URL=$db_url DATABASE_READ_URL=$read_url REDIS_URL=$redis_url \
    CHAJA_INDEX_DIR="$dir/index-$n" CHAJA_BIND="127.0.0.1:$port" CHAJA_REPLICA_ID="chaja$n" \
    CHAJA_CACHE_PREFIX=chaja-cluster CHAJA_DRAIN_MS=1500 CHAJA_TRUSTED_PROXIES=127.0.0.1 \
    CHAJA_OUTBOX_KEEP=100000000 RUST_LOG=warn \
    "$bin" serve >>"$dir/chaja$n.log" 2>&1 &
  echo $! >"$dir/chaja$n.pid"
  for _ in $(seq 1 600); do
    curl -fs "http://127.0.0.1:$port/readyz" >/dev/null && return
    sleep 0.1
  done
  echo "chaja$n did not become ready" >&2
  exit 1
}

redis_master() { # the first running master's port
  for port in "${redis_ports[@]}"; do
    if redis-cli -p "$port" info replication 2>/dev/null | grep -q role:master; then
      echo "$port"
      return
    fi
  done
}

up() {
  local rows=${1:-10000}
  mkdir -p "$dir"
  # Database: primary and GTID replica; chaja's user may not write on the
  # replica (READ_ONLY ADMIN is part of ALL in MariaDB 10.11).
  start_mariadb primary "$primary" 1
  start_mariadb replica "$replica" 2 --read-only=1
  sql primary -e "
    CREATE USER IF NOT EXISTS 'repl'@'127.0.0.1' IDENTIFIED BY 'repl';
    GRANT REPLICATION SLAVE ON *.* TO 'repl'@'127.0.0.1';
    CREATE USER IF NOT EXISTS 'chaja'@'%' IDENTIFIED BY 'chaja';
    GRANT ALL PRIVILEGES ON *.* TO 'chaja'@'%';
    REVOKE READ_ONLY ADMIN ON *.* FROM 'chaja'@'%';
    CREATE DATABASE IF NOT EXISTS chaja CHARACTER SET utf8mb4;"
  sql replica -e "
    CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=$primary, MASTER_USER='repl',
      MASTER_PASSWORD='repl', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1;
    START SLAVE;"

  # Redis Cluster: 3 masters, 3 replicas; replicas sync at once so that
  # one can take over from the start.
  for port in "${redis_ports[@]}"; do
    mkdir -p "$dir/redis-$port"
    redis-server --port "$port" --bind 127.0.0.1 --daemonize yes --dir "$dir/redis-$port" \
      --pidfile "$dir/redis-$port/redis.pid" --logfile "$dir/redis-$port/redis.log" \
      --cluster-enabled yes --cluster-config-file "$dir/redis-$port/nodes.conf" \
      --cluster-node-timeout 1000 --save "" --appendonly no --repl-diskless-sync-delay 0
  done
  sleep 0.5
  redis-cli --cluster create $(printf '127.0.0.1:%s ' "${redis_ports[@]}") \
    --cluster-replicas 1 --cluster-yes >/dev/null
  for _ in $(seq 1 100); do
    redis-cli -p 17001 cluster info | grep -q cluster_state:ok && break
    sleep 0.2
  done

  # Rows, then one index built and copied to each replica.
  DATABASE_URL=$db_url CHAJA_INDEX_DIR="$dir/index-1" "$bin" seed --rows "$rows" \
    --manifest "$dir/seed-manifest.json" >/dev/null
  DATABASE_URL=$db_url CHAJA_INDEX_DIR="$dir/index-1" "$bin" reindex >/dev/null
  cp -r "$dir/index-1" "$dir/index-2"
  cp -r "$dir/index-1" "$dir/index-3"
  for n in 1 2 3; do start_chaja "$n"; done

  CHAJA_LB_BIND="127.0.0.1:$lb" CHAJA_1="127.0.0.1:${chaja_ports[0]}" \
    CHAJA_2="127.0.0.1:${chaja_ports[1]}" CHAJA_3="127.0.0.1:${chaja_ports[2]}" \
    haproxy -D -p "$dir/haproxy.pid" -f deploy/haproxy.cfg
  sleep 1.5
  status
}

status() {
  for n in 1 2 3; do
    printf 'chaja%s: %s\n' "$n" "$(curl -s "http://127.0.0.1:${chaja_ports[$((n - 1))]}/readyz" || echo down)"
  done
  printf 'balancer: %s\n' "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$lb/api/search?q=a")"
  printf 'redis: %s\n' "$(redis-cli -p "$(redis_master)" cluster info | grep cluster_state)"
  printf 'db replica: %s\n' "$(sql replica -e 'show slave status\G' 2>/dev/null | grep -E 'Slave_SQL_Running:' || echo down)"
}

kill_part() {
  case $1 in
    chaja1 | chaja2 | chaja3) kill -9 "$(cat "$dir/$1.pid")" ;;
    db-replica) kill -9 "$(cat "$dir/replica.pid")" ;;
    redis-master) kill -9 "$(cat "$dir/redis-$(redis_master)/redis.pid")" ;;
    *) echo "kill chaja1|chaja2|chaja3|db-replica|redis-master" >&2; exit 2 ;;
  esac
}

start_part() {
  case $1 in
    chaja1 | chaja2 | chaja3) start_chaja "${1#chaja}" ;;
    db-replica) start_mariadb replica "$replica" 2 --read-only=1 ;;
    *) echo "start chaja1|chaja2|chaja3|db-replica" >&2; exit 2 ;;
  esac
}

down() {
  [ -f "$dir/haproxy.pid" ] && kill "$(cat "$dir/haproxy.pid")" 2>/dev/null || true
  for n in 1 2 3; do [ -f "$dir/chaja$n.pid" ] && kill "$(cat "$dir/chaja$n.pid")" 2>/dev/null || true; done
  for port in "${redis_ports[@]}"; do redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; done
  for name in replica primary; do [ -f "$dir/$name.pid" ] && kill "$(cat "$dir/$name.pid")" 2>/dev/null || true; done
  sleep 2
  rm -rf "$dir"
}

case ${1:-} in
  up) up "${2:-}" ;;
  status) status ;;
  kill) kill_part "$2" ;;
  start) start_part "$2" ;;
  down) down ;;
  *) sed -n '2,16p' "$0"; exit 2 ;;
esac
