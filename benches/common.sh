# Helpers the benches share; source after starting the server with
# `server` (its pid) and `port` set.

# The server's CPU time so far, in clock ticks.
cpu() { awk '{print $14 + $15}' "/proc/$server/stat"; }
ticks=$(getconf CLK_TCK)
# Waits until the server has used under 5% of a core for 5 s: merges the
# rebuild or the last phase left behind are not charged to the next one.
settle() {
  for _ in $(seq 1 60); do
    local a b; a=$(cpu); sleep 5; b=$(cpu)
    [ $(( (b - a) * 100 / ticks / 5 )) -lt 5 ] && return
  done
}
# The outbox id the indexer applied up to. /readyz answers 503 while the
# indexer lags: read its body either way. Polled every 0.1 s while a burst
# is applied, so it starts no interpreter: a Python per poll took 15% of
# this 2-core machine's CPU from the server it measured.
applied() {
  local body
  body=$(curl -s "http://127.0.0.1:$port/readyz" || true)
  [[ $body =~ \"applied_seq\":([0-9]+) ]] && echo "${BASH_REMATCH[1]}" || echo 0
}
