#!/usr/bin/env bash
# Fuzzes the running API from its own OpenAPI document with schemathesis 4:
# every operation, checked for no 5xx, documented status codes, response
# bodies that match their schemas, and content types. `.ci/run` runs it
# after `cargo test` (which builds target/debug/chaja).
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/schemathesis
if [ ! -x "$venv/bin/st" ]; then
  if ! python3 -m venv "$venv" >/dev/null 2>&1; then
    # Debian keeps venv apart from python3.
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv
    rm -rf "$venv" && python3 -m venv "$venv"
  fi
  "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis>=4,<5"
fi

dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export DATABASE_URL="sqlite:$dir/chaja.db?mode=rwc" CHAJA_INDEX_DIR="$dir/index" CHAJA_KO_DIC=off
target/debug/chaja seed --rows 50 --manifest "$dir/manifest.json" >/dev/null
CHAJA_BIND="127.0.0.1:$port" target/debug/chaja serve >"$dir/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 1 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done

# Hypothesis's "too slow" health check is about the fuzzer, not the API:
# drawing 20,000-character bodies that match the text pattern takes long on
# a busy 2-core machine, and a cold run failed on it twice (POST and PUT
# /api/questions) with every case passing. It is suppressed; every check
# of the API stays on.
# CI runs the seeded, repeatable phases. The stateful phase chains calls on
# data the server answered with, so its runs differ; it found an
# undocumented 422 once. Run it too with
# CHAJA_ST_PHASES=examples,coverage,fuzzing,stateful.
"$venv/bin/st" --config-file tests/schemathesis.toml run "http://127.0.0.1:$port/api-docs/openapi.json" \
  --checks not_a_server_error,status_code_conformance,response_schema_conformance,content_type_conformance \
  --phases "${CHAJA_ST_PHASES:-examples,coverage,fuzzing}" \
  --max-examples 20 --workers 1 --seed 1 --no-color --suppress-health-check=too_slow
