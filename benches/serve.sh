# Sourced by the load-test scripts: start and stop `chaja serve` from
# "$bin" on 127.0.0.1:8080 (set CHAJA_BIND to it).
serve() { # extra env assignments...
  env "$@" "$bin" serve &
  server=$!
  for _ in $(seq 1 100); do curl -fs http://127.0.0.1:8080/healthz >/dev/null && return; sleep 0.2; done
  echo "server did not start" >&2; exit 1
}
stop() { kill -TERM "$server"; wait "$server" || true; }
