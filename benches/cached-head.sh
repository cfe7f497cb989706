#!/usr/bin/env bash
# The cached head (issue 28): N repeating queries, all cached, and one hot
# keyword, against a running chaja at HOST, with wrk on 100 connections.
# The queries are N distinct Hangul words of 2-4 characters from the
# corpus, a fixed draw (shuf with a constant random source, which favours
# words early in sort order); each is searched twice first, so that every
# request of the run is a cache hit.
#
#   HOST=http://127.0.0.1:8080 bash benches/cached-head.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# grep -P matches Hangul only in a UTF-8 locale.
export LC_ALL=C.UTF-8
host=${HOST:-http://127.0.0.1:8080}
n=${N:-1200}
corpus=${CORPUS:-../shared/corpus/sentences.tsv.gz}
paths=$(mktemp)
trap 'rm -f "$paths"' EXIT
zcat "$corpus" | cut -f3 | tr ' ' '\n' | grep -P '^\p{Hangul}{2,4}$' | sort -u \
  | shuf -n "$n" --random-source=<(yes) \
  | python3 -c 'import sys, urllib.parse
for w in sys.stdin: print("/api/search?q=" + urllib.parse.quote(w.strip()) + "&size=10")' > "$paths"
for _ in 1 2; do
  while read -r p; do curl -s -o /dev/null "$host$p"; done < "$paths"
done
echo "== $(wc -l < "$paths") cached queries"
PATHS=$paths wrk -t1 -c100 -d5s -s benches/rotate.lua "$host" > /dev/null
PATHS=$paths wrk -t1 -c100 -d20s --latency -s benches/rotate.lua "$host" | grep -E "Requests/sec|50%|99%|Non-2xx"
echo "== one hot keyword (있습니다)"
hot="$host/api/search?q=%EC%9E%88%EC%8A%B5%EB%8B%88%EB%8B%A4&size=10"
curl -s -o /dev/null "$hot"
wrk -t1 -c100 -d20s --latency "$hot" | grep -E "Requests/sec|50%|99%|Non-2xx"
