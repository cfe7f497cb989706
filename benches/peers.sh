#!/usr/bin/env bash
# Measures chaja against the engines a Korean team would pick instead --
# Mroonga (Groonga in MariaDB, bigram tokenizer), PostgreSQL pg_trgm and
# SQLite FTS5 trigram -- on the same rows and the same never-seen queries:
# build time, size, latency of "top-10 newest + exact total", timeouts, and
# whether each total is exactly what chaja's LIKE-after-normalization rule
# gives. MySQL's ngram parser is only mentioned (MariaDB has none).
# This script installs what is missing, then runs benches/peers.py.
#
#   bash benches/peers.sh [--rows N] [--queries N] [--timeout S] [--out FILE]
#                         [--database NAME] [--reuse-index DIR] [--engines LIST]
#
# CHAJA_BIN names the chaja binary (default target/release/chaja).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export CHAJA_BIN=${CHAJA_BIN:-$root/target/release/chaja}

# Mroonga: the Debian package, then the plugin in the running MariaDB.
if ! mysql -uroot -N -e "SHOW ENGINES" | grep -q '^Mroonga'; then
  if [ ! -f /usr/lib/mysql/plugin/ha_mroonga.so ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-plugin-mroonga >/dev/null
  fi
  if [ -f /usr/share/mysql/mroonga/install.sql ]; then
    mysql -uroot < /usr/share/mysql/mroonga/install.sql  # the plugin and its functions
  else
    mysql -uroot -e "INSTALL SONAME 'ha_mroonga'"
  fi
fi

# PostgreSQL 15 with pg_trgm (in postgresql-contrib), running.
if [ ! -f /usr/share/postgresql/15/extension/pg_trgm.control ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-contrib >/dev/null
fi
pg_isready -q -h 127.0.0.1 -p 5432 || pg_ctlcluster --skip-systemctl-redirect 15 main start

# Python clients for MariaDB and PostgreSQL (SQLite is in the standard library).
venv=$root/target/peers-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -c 'import pymysql, psycopg' 2>/dev/null ||
  "$venv/bin/pip" install -q pymysql 'psycopg[binary]'
"$venv/bin/python" -c 'import sqlite3, sys; sys.exit(sqlite3.sqlite_version_info < (3, 34))' ||
  { echo "SQLite >= 3.34 is needed for the FTS5 trigram tokenizer" >&2; exit 1; }

exec "$venv/bin/python" "$root/benches/peers.py" "$@"
