#!/usr/bin/env bash
# An hour's soak with faults (issue 62, item 7).
#
# What it measures: whether chaja stays exact and keeps answering through an
# hour of load while what it stands on fails under it. On a MariaDB and a
# Redis of its own it builds a Spring-style board (tables `question` and
# `answer`) from `chaja seed` rows, attaches it with [[source]], rebuilds the
# index and serves it. Then, for CHAJA_SOAK_MINUTES, all at once:
#   - searches: `chaja loadtest --scenario longtail` (queries cut from the
#     server's own rows, none sent twice in a window), CHAJA_SOAK_CONNECTIONS
#     users, in back-to-back windows of about 60 s, each window's report kept;
#   - a probe: one never-seen query a second (two manifest keywords ANDed;
#     in turn plain, with a facet, a range and an attribute order) with
#     curl, each status code kept with its time, so that a 5xx can be
#     placed inside or outside a fault window to the second;
#   - text edits by plain SQL from CHAJA_SOAK_WRITERS writers, each
#     CHAJA_SOAK_EDIT_RATE statements a second:
#     bodies and titles changed, rows inserted, soft-deleted (is_deleted,
#     which the sources' filter reads), restored and hard-deleted, a few
#     multi-row transactions and a rolled-back one, and now and then a
#     transaction held open 20-90 s;
#   - a storm of CHAJA_SOAK_STORM_RATE single-row counter updates a second:
#     40% question.view_count (a column chaja does not read: no outbox row),
#     30% question.like_count and 15% answer.like_count (attributes:
#     patches), 15% answer.rating (a facet);
#   - a fault every 2-5 minutes, in turn: kill -9 of `chaja serve` (started
#     again at once), the MariaDB stopped for 10 s, the Redis stopped for
#     30 s. A fault window lasts until /readyz says ready again, plus 60 s;
#   - `chaja reindex` every CHAJA_SOAK_REINDEX_EVERY seconds, beside the live
#     index, which the server catches up and swaps in.
# Every 10 s the server's memory (VmRSS and RssAnon) and /readyz are
# sampled. At the end the writers stop, the mirror catches up, `chaja verify`
# compares every row with the index, and the totals and rating facets of
# CHAJA_SOAK_CHECK_KEYWORDS keywords are compared with SQL `LIKE`. It
# prints a summary, writes summary.md, rss.svg and p99.svg, and exits 1 on
# any divergence, any 5xx outside a fault window, or a fault the server did
# not recover from in 10 minutes.
#
# Run it from anywhere (the real run takes about 70 minutes with the setup):
#   bash benches/soak.sh
#   CHAJA_SOAK_MINUTES=4 CHAJA_SOAK_ROWS=3000 CHAJA_SOAK_FAULT_EVERY=60 \
#     CHAJA_SOAK_REINDEX_EVERY=150 CHAJA_SOAK_CONNECTIONS=10 bash benches/soak.sh
#
# Settings (environment):
#   CHAJA_SOAK_MINUTES (60)          length of the soak, setup not counted
#   CHAJA_SOAK_ROWS (100000)         rows seeded (a third questions)
#   CHAJA_SOAK_STORM_RATE (500)      counter and attribute updates a second
#   CHAJA_SOAK_WRITERS (8)           text writers, each its own client
#   CHAJA_SOAK_EDIT_RATE (2)         text-edit statements a second, per writer
#   CHAJA_SOAK_CONNECTIONS (100)     load-test users
#   CHAJA_SOAK_FAULT_EVERY (random 120-300)  seconds from a fault's end to the next
#   CHAJA_SOAK_REINDEX_EVERY (900)   seconds between rebuilds
#   CHAJA_SOAK_CHECK_KEYWORDS (20)   keywords whose totals are checked at the end
#   CHAJA_SOAK_DB_PORT (3317), CHAJA_SOAK_REDIS_PORT (6390), CHAJA_SOAK_PORT (8097)
#   BIN (target/release/chaja), WORK (target/soak, emptied first), both
#   relative to the repository root;
#   CHAJA_KO_DIC (data/ko-dic when that folder exists, else off),
#   CHAJA_SOAK_CORPUS (../shared/corpus/sentences.tsv.gz, used when present)
#
# Needs: a release build with the load tester (`cargo build --release`),
# mariadb-server (mariadb-install-db, mariadbd, the mariadb client),
# redis-server, curl, awk and python3 (standard library only); root, for
# `mariadbd --user=root`, as CI runs. It touches no shared service: its
# MariaDB (own datadir and socket under WORK) and Redis are the only ones
# it stops, and every process it starts is ended on exit.
#
# Output in WORK: faults.csv (start_s,end_s,kind,recovered), latency.csv
# (one row per load-test window), probe.csv (elapsed_s,status,seconds),
# rss.csv (elapsed_s,rss_kb,anon_kb), ready.csv (/readyz every 10 s),
# reindex.csv, writes.csv (each writer batch), verify.txt, check.txt,
# summary.md, rss.svg, p99.svg; logs: soak.log, serve.log, mariadb.err,
# redis.log, reindex/N.log, windows/N/ (each window's goose reports).
# Times are seconds since the soak's start (after the setup).
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C

minutes=${CHAJA_SOAK_MINUTES:-60}
rows=${CHAJA_SOAK_ROWS:-100000}
storm_rate=${CHAJA_SOAK_STORM_RATE:-500}
edit_rate=${CHAJA_SOAK_EDIT_RATE:-2}
writers=${CHAJA_SOAK_WRITERS:-8}
connections=${CHAJA_SOAK_CONNECTIONS:-100}
fault_every=${CHAJA_SOAK_FAULT_EVERY:-0} # 0: random, 120-300 s
reindex_every=${CHAJA_SOAK_REINDEX_EVERY:-900}
check_keywords=${CHAJA_SOAK_CHECK_KEYWORDS:-20}
db_port=${CHAJA_SOAK_DB_PORT:-3317}
redis_port=${CHAJA_SOAK_REDIS_PORT:-6390}
port=${CHAJA_SOAK_PORT:-8097}
corpus=${CHAJA_SOAK_CORPUS:-../shared/corpus/sentences.tsv.gz}
bin=${BIN:-target/release/chaja}
work=${WORK:-target/soak}
window_secs=60
admin_key=chaja-soak-admin
url=http://127.0.0.1:$port
if [ -z "${CHAJA_KO_DIC:-}" ]; then
  if [ -d data/ko-dic ]; then CHAJA_KO_DIC=data/ko-dic; else CHAJA_KO_DIC=off; fi
fi

die() { echo "soak: $*" >&2; exit 1; }

# --- checks, and the work folder -----------------------------------------
[ -x "$bin" ] || die "no binary at $bin (cargo build --release, or set BIN)"
for tool in mariadb-install-db mariadb redis-server redis-cli curl awk python3 pgrep timeout; do
  command -v "$tool" >/dev/null || die "$tool is missing"
done
[ -x /usr/sbin/mariadbd ] || die "/usr/sbin/mariadbd is missing (apt-get install mariadb-server)"
for p in "$db_port" "$redis_port" "$port"; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then die "port $p is taken: set CHAJA_SOAK_*_PORT"; fi
done
# WORK is emptied: only when it is a soak's own folder (or new, or empty).
if [ -d "$work" ] && [ -n "$(ls -A "$work")" ] && [ ! -e "$work/.chaja-soak" ]; then
  die "$work is not empty and not a soak's folder: set WORK"
fi
rm -rf "$work"
mkdir -p "$work/windows" "$work/reindex" "$work/redis"
touch "$work/.chaja-soak"
work=$(cd "$work" && pwd)
bin=$(realpath "$bin")

# --- time: milliseconds since the soak's start ---------------------------
now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
t0=$(now_ms)
el() { local ms=$(($(now_ms) - t0)); printf '%d.%03d' $((ms / 1000)) $((ms % 1000)); }
log() { printf '[%s +%ss] %s\n' "$(date +%T)" "$(el)" "$*" | tee -a "$work/soak.log" >&2; }

# --- the analysis: one python3 file, standard library only ---------------
# Subcommands: probes (the probe's queries), window (one load-test
# window's figures), check (totals and facets against SQL), summary.
cat >"$work/soak.py" <<'PY'
"""Helpers of benches/soak.sh; standard library only."""
import csv, json, os, random, re, subprocess, sys, urllib.parse, urllib.request
from html import escape


def keywords(manifest):
    """The manifest's keywords, class by class, in its order."""
    classes = json.load(open(manifest))["classes"]
    return [[k["keyword"] for k in ks] for _, ks in sorted(classes.items())]


def probes(manifest, count, out):
    """`count` distinct queries of two keywords ANDed, URL-encoded."""
    words = sorted({w for ws in keywords(manifest) for w in ws
                    if len(w) >= 2 and '"' not in w and not w.isspace()})
    rng = random.Random(62)
    size = 2 if len(words) ** 2 > 4 * count else 3
    seen, lines = set(), []
    while len(lines) < count and len(seen) < 50 * count:
        query = " ".join(rng.sample(words, size))
        if query not in seen:
            seen.add(query)
            lines.append(urllib.parse.quote(query))
    open(out, "w").write("\n".join(lines) + "\n")


def aggregated(rows):
    return next((r for r in rows or [] if r.get("name") == "Aggregated"), None)


def window(directory):
    """requests,rps,p50_ms,p99_ms,errors_5xx,errors_other of one window,
    from goose's report.json (zeros when the window never ran)."""
    try:
        report = json.load(open(os.path.join(directory, "report.json")))
    except (OSError, ValueError):
        print("0,0,,,0,0")
        return
    requests = aggregated(report.get("raw_request_metrics")) or {}
    times = aggregated(report.get("raw_response_metrics")) or {}
    codes = aggregated(report.get("status_code_metrics")) or {}
    n5xx = sum(int(n.replace(",", "")) for n, code in
               re.findall(r"([\d,]+) \[(\d+)\]", codes.get("status_codes", ""))
               if 500 <= int(code) <= 599)
    total = requests.get("number_of_requests", 0)
    failed = requests.get("number_of_failures", 0)
    rps = requests.get("requests_per_second") or 0
    p50 = times.get("percentile_50", "") if total else ""
    p99 = times.get("percentile_99", "") if total else ""
    print(f"{total},{rps:.1f},{p50},{p99},{n5xx},{failed - n5xx}")


def check(manifest, url, key, socket, count):
    """Totals by type and the rating facet of `count` Hangul keywords, from
    the API against SQL LIKE on the same rows. Prints one line a keyword
    and a last line `checked N keywords, M mismatches`."""
    hangul = lambda w: 2 <= len(w) <= 6 and all("\uac00" <= c <= "\ud7a3" for c in w)
    picked, classes = [], [[w for w in ws if hangul(w)] for ws in keywords(manifest)]
    while len(picked) < count and any(classes):
        for ws in classes:
            if ws and len(picked) < count:
                w = ws.pop(0)
                if w not in picked:
                    picked.append(w)

    def api(query):
        request = urllib.request.Request(f"{url}/api/search?{query}",
                                         headers={"Authorization": f"Bearer {key}"})
        return json.load(urllib.request.urlopen(request, timeout=60))

    def sql(statement):
        out = subprocess.run(["mariadb", "--no-defaults", "--default-character-set=utf8mb4",
                              "-S", socket, "-uroot", "-N", "-B", "board", "-e", statement],
                             check=True, capture_output=True, text=True).stdout
        return [line.split("\t") for line in out.splitlines() if line]

    mismatches = 0
    for w in picked:
        q = urllib.parse.quote(w)
        both = api(f"q={q}&size=1")
        answers = api(f"q={q}&type=answer&size=1&facets=rating")
        like = f"LIKE BINARY '%{w}%'"
        questions = int(sql(f"SELECT COUNT(*) FROM question WHERE is_deleted = 0 "
                            f"AND (title {like} OR body {like})")[0][0])
        ratings = {r: int(n) for r, n in sql(
            f"SELECT IFNULL(rating, 'none'), COUNT(*) FROM answer WHERE is_deleted = 0 "
            f"AND body {like} GROUP BY rating")}
        sql_side = {"question": questions, "answer": sum(ratings.values()),
                    "rating": {r: n for r, n in ratings.items() if r != "none"}}
        totals = both.get("totals", {})
        api_side = {"question": totals.get("question", 0), "answer": totals.get("answer", 0),
                    "rating": {r: n for r, n in answers.get("facets", {}).get("rating", {})
                               .get("values", {}).items()}}
        same = api_side == sql_side and both.get("total") == questions + sql_side["answer"]
        mismatches += not same
        print(f"{w}: {'ok' if same else 'MISMATCH'} api {json.dumps(api_side, ensure_ascii=False)}"
              + ("" if same else f" sql {json.dumps(sql_side, ensure_ascii=False)}"))
    print(f"checked {len(picked)} keywords, {mismatches} mismatches")


# --- the summary -----------------------------------------------------------

def rows(work, name):
    try:
        with open(os.path.join(work, name)) as f:
            return list(csv.DictReader(f))
    except OSError:
        return []


def num(value, default=None):
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def inside(t, windows):
    return any(s <= t <= e for s, e in windows)


def mean(values):
    values = list(values)
    return sum(values) / len(values) if values else None


def fmt(value, unit="", digits=0):
    return "n/a" if value is None else f"{value:,.{digits}f}{unit}"


def chart(path, title, ylabel, series, bands, xmax):
    """A line chart as SVG: series [(name, [(x_s, y)], color)], where a y
    of None breaks the line; bands [(start_s, end_s, color, label)] shaded
    behind; x in minutes."""
    W, H, L, R, T, B = 960, 400, 70, 170, 40, 50
    ymax = max([y for _, pts, _ in series for _, y in pts if y is not None] + [1e-9]) * 1.1
    xmax = max(xmax, 1)
    sx = lambda x: L + (W - L - R) * x / xmax
    sy = lambda y: H - B - (H - T - B) * y / ymax
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'font-family="sans-serif" font-size="12">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{L}" y="22" font-size="15">{escape(title)}</text>']
    for s, e, color, label in bands:
        out.append(f'<rect x="{sx(s):.1f}" y="{T}" width="{max(sx(e) - sx(s), 1.5):.1f}" '
                   f'height="{H - T - B}" fill="{color}" fill-opacity="0.22">'
                   f'<title>{escape(label)}</title></rect>')
    out.append(f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" stroke="black"/>')
    out.append(f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" stroke="black"/>')
    step = next(m for m in (1, 2, 5, 10, 15, 30, 60, 120) if xmax / 60 / m <= 12)
    for m in range(0, int(xmax / 60) + 1, step):
        x = sx(m * 60)
        out.append(f'<line x1="{x:.1f}" y1="{H - B}" x2="{x:.1f}" y2="{H - B + 5}" stroke="black"/>'
                   f'<text x="{x:.1f}" y="{H - B + 18}" text-anchor="middle">{m}</text>')
    out.append(f'<text x="{(L + W - R) / 2}" y="{H - 10}" text-anchor="middle">minutes</text>')
    raw = ymax / 5
    magnitude = 10 ** len(str(int(raw))) / 10 if raw >= 1 else 0.1
    ystep = next(k * magnitude for k in (1, 2, 5, 10) if k * magnitude >= raw)
    y = 0.0
    while y <= ymax:
        out.append(f'<line x1="{L - 5}" y1="{sy(y):.1f}" x2="{W - R}" y2="{sy(y):.1f}" '
                   f'stroke="#ddd"/><text x="{L - 8}" y="{sy(y) + 4:.1f}" '
                   f'text-anchor="end">{y:g}</text>')
        y += ystep
    out.append(f'<text x="16" y="{(T + H - B) / 2}" transform="rotate(-90 16 {(T + H - B) / 2})" '
               f'text-anchor="middle">{escape(ylabel)}</text>')
    legend = [(name, color, "line") for name, _, color in series]
    legend += sorted({(label.split(" ")[0], color, "band") for _, _, color, label in bands})
    for i, (name, color, kind) in enumerate(legend):
        y = T + 10 + 18 * i
        if kind == "line":
            out.append(f'<line x1="{W - R + 10}" y1="{y}" x2="{W - R + 30}" y2="{y}" '
                       f'stroke="{color}" stroke-width="2"/>')
        else:
            out.append(f'<rect x="{W - R + 10}" y="{y - 6}" width="20" height="12" '
                       f'fill="{color}" fill-opacity="0.3"/>')
        out.append(f'<text x="{W - R + 36}" y="{y + 4}">{escape(name)}</text>')
    for name, pts, color in series:
        runs, run = [], []
        for x, y in pts + [(None, None)]:
            if y is None:
                runs.append(run)
                run = []
            else:
                run.append(f"{sx(x):.1f},{sy(y):.1f}")
        for run in filter(None, runs):
            out.append(f'<polyline points="{" ".join(run)}" fill="none" stroke="{color}" stroke-width="1.5"/>')
    out.append("</svg>")
    open(path, "w").write("\n".join(out) + "\n")


def summary(work):
    meta = json.load(open(os.path.join(work, "meta.json")))
    ran = meta["ran_s"]
    faults = [(num(r["start_s"]), num(r["end_s"]), r["kind"], r["recovered"] == "1")
              for r in rows(work, "faults.csv")]
    fault_windows = [(s, e) for s, e, _, _ in faults]
    rebuilds = [(num(r["start_s"]), num(r["end_s"]), r["rc"]) for r in rows(work, "reindex.csv")]
    windows = rows(work, "latency.csv")
    probe = rows(work, "probe.csv")
    rss = [(num(r["elapsed_s"]), num(r["rss_kb"]), num(r["anon_kb"])) for r in rows(work, "rss.csv")]
    writes = rows(work, "writes.csv")
    lines, failures = [], []
    say = lines.append

    say(f"# chaja soak: {ran / 60:.1f} minutes on {meta['rows']:,} rows")
    say("")
    say(f"- setup (seed, board, install, first rebuild, start) {meta['setup_s'] / 60:.1f} min; "
        f"{meta['connections']} search users, {meta['storm_rate']} counter updates/s, "
        f"{meta['edit_rate']} text edits/s, Korean dictionary {meta['ko_dic']}")
    kinds = {}
    for _, _, kind, _ in faults:
        kinds[kind] = kinds.get(kind, 0) + 1
    recover = [e - s for s, e, _, ok in faults if ok]
    stuck = sum(1 for f in faults if not f[3])
    say(f"- faults: {len(faults)} ({', '.join(f'{k} {n}' for k, n in sorted(kinds.items())) or 'none'}); "
        f"each window from the fault to ready again + 60 s: longest {fmt(max(recover, default=None), ' s', 1)}"
        + (f"; NOT READY again within 10 minutes: {stuck}" if stuck else ""))
    if stuck:
        failures.append(f"{stuck} faults not recovered")
    crashes = rows(work, "crashes.csv")
    if crashes:
        say(f"- chaja serve DIED BY ITSELF {len(crashes)} times (at {', '.join(r['elapsed_s'] for r in crashes)} s; "
            f"started again each time)")
        failures.append(f"{len(crashes)} crashes")
    done = [r for r in rebuilds if r[2] == "0"]
    gens = sorted({int(r["generation"]) for r in rows(work, "ready.csv") if r.get("generation")})
    say(f"- rebuilds (`chaja reindex` while serving): {len(rebuilds)} run, {len(done)} succeeded"
        + (f", {len(rebuilds) - len(done)} failed (rc {', '.join(r[2] for r in rebuilds if r[2] != '0')})"
           if len(done) < len(rebuilds) else "")
        + (f"; generations served {gens[0]} to {gens[-1]}" if gens else ""))

    # 5xx: the probe places each one to the second; a load-test window
    # that overlapped a fault counts all of its 5xx as inside.
    p_in = sum(1 for r in probe if r["status"].startswith("5") and inside(num(r["elapsed_s"]), fault_windows))
    p_out = sum(1 for r in probe if r["status"].startswith("5") and not inside(num(r["elapsed_s"]), fault_windows))
    w_in = sum(int(r["errors_5xx"]) for r in windows if r["fault"] == "1")
    w_out = sum(int(r["errors_5xx"]) for r in windows if r["fault"] != "1")
    o_in = sum(int(r["errors_other"]) for r in windows if r["fault"] == "1")
    o_out = sum(int(r["errors_other"]) for r in windows if r["fault"] != "1")
    p_other_in = sum(1 for r in probe if not r["status"].startswith(("2", "5")) and inside(num(r["elapsed_s"]), fault_windows))
    p_other_out = sum(1 for r in probe if not r["status"].startswith(("2", "5")) and not inside(num(r["elapsed_s"]), fault_windows))
    say(f"- 5xx inside fault windows: {w_in + p_in} (load test {w_in}, probe {p_in}); "
        f"outside: {w_out + p_out} (load test {w_out}, probe {p_out})")
    say(f"- other failures (refused connections, timeouts, 4xx) inside: {o_in + p_other_in}, "
        f"outside: {o_out + p_other_out}")
    if w_out + p_out:
        failures.append(f"{w_out + p_out} 5xx outside fault windows")
    failed_windows = sum(1 for r in windows if r["rc"] != "0")

    def stats(selected):
        """Answered searches/s (failures left out), the mean p99, the worst p99."""
        requests = sum(num(r["requests"], 0) - num(r["errors_5xx"], 0) - num(r["errors_other"], 0)
                       for r in selected)
        secs = sum(num(r["duration_s"], 0) for r in selected)
        p99 = [num(r["p99_ms"]) for r in selected if num(r["p99_ms"]) is not None]
        return (requests / secs if secs else None, mean(p99), max(p99, default=None))

    last_start = ran - 600
    groups = [("whole run", windows),
              ("first 10 minutes", [r for r in windows if num(r["elapsed_s"]) < 600]),
              ("last 10 minutes", [r for r in windows if num(r["elapsed_s"]) >= last_start])]
    say(f"- load-test windows: {len(windows)} ({failed_windows} did not run to the end, "
        f"{sum(1 for r in windows if r['fault'] == '1')} overlapped a fault); p99 is the mean of the "
        f"windows' p99 (goose keeps no histogram across windows), fault-free windows only:")
    for name, selected in groups:
        rps, _, _ = stats(selected)
        _, p99, worst = stats([r for r in selected if r["fault"] != "1"])
        say(f"  - {name}: {fmt(rps, ' searches answered/s', 1)}, p99 {fmt(p99, ' ms')} (worst window {fmt(worst, ' ms')})")
    ok_probe = sorted(num(r["seconds"]) * 1000 for r in probe
                      if r["status"].startswith("2") and not inside(num(r["elapsed_s"]), fault_windows))
    if ok_probe:
        at = lambda p: ok_probe[min(len(ok_probe) - 1, int(len(ok_probe) * p))]
        say(f"- probe outside faults: {len(ok_probe)} answers, p50 {at(0.5):.0f} ms, p99 {at(0.99):.0f} ms, max {ok_probe[-1]:.0f} ms")

    def memory(column):
        """At minute 10, at the end and the most, in MiB."""
        values = [(r[0], r[column]) for r in rss if r[column] is not None]
        at10 = min(values, key=lambda v: abs(v[0] - 600))[1] if values and ran >= 600 else None
        mib = lambda kb: None if kb is None else kb / 1024
        return (f"at minute 10 {fmt(mib(at10), ' MiB')}, at the end "
                f"{fmt(mib(values[-1][1]) if values else None, ' MiB')}, "
                f"max {fmt(mib(max((v for _, v in values), default=None)), ' MiB')}")
    say(f"- serve VmRSS: {memory(1)}; of it anonymous (RssAnon: heap, not the mapped index): "
        f"{memory(2)}; the process starts anew at each kill -9")

    asked = {"storm": meta["storm_rate"], "edits": meta["edit_rate"]}
    for kind in ("storm", "edits", "longtx"):
        batch = [r for r in writes if r["kind"] == kind]
        sent = sum(int(r["statements"]) for r in batch)
        errors = sum(int(r["errors"]) for r in batch)
        rate = f" ({(sent - errors) / ran:,.1f}/s done, {asked[kind]}/s asked)" if kind in asked else ""
        if batch:
            say(f"- writes, {kind}: {sent:,} statements in {len(batch)} batches, {errors:,} failed{rate}")
    say(f"- caught up after the writers stopped: {meta['catchup']}")
    verify = open(os.path.join(work, "verify.txt")).read() if os.path.exists(os.path.join(work, "verify.txt")) else ""
    first = next((l for l in verify.splitlines() if "index docs" in l), None)
    counts = {k: int(v) for k, v in re.findall(r"(missing|extra|stale|duplicate|unreadable) (\d+)", first or "")}
    divergences = sum(counts.values()) if counts else None
    first = first or verify.strip()[-300:] or "did not run"
    say(f"- `chaja verify` (exit {meta['verify_rc']}): {first}")
    say(f"- divergences: {fmt(divergences)}")
    if divergences is None or divergences or meta["verify_rc"] != 0:
        failures.append(f"verify: {fmt(divergences)} divergences, exit {meta['verify_rc']}")
    check_text = open(os.path.join(work, "check.txt")).read() if os.path.exists(os.path.join(work, "check.txt")) else ""
    last = check_text.strip().splitlines()[-1] if check_text.strip() else "did not run"
    say(f"- totals and rating facets against SQL LIKE: {last}")
    m = re.search(r"(\d+) mismatches", last)
    if not m or int(m.group(1)):
        failures.append(f"totals check: {last}")
    say("")
    say("PASS" if not failures else "FAIL: " + "; ".join(failures))

    colors = {"chaja_kill": "#d62728", "mariadb_restart": "#ff7f0e", "redis_down": "#9467bd"}
    bands = [(s, e, colors.get(k, "#888"), f"{k} {s:.0f}-{e:.0f} s") for s, e, k, _ in faults]
    bands += [(s, e, "#1f77b4", f"reindex {s:.0f}-{e:.0f} s") for s, e, _ in rebuilds]
    # The memory line breaks where the process was killed or died.
    restarts = [s for s, _, k, _ in faults if k == "chaja_kill"] + [num(r["elapsed_s"]) for r in crashes]
    def memory_line(column):
        points, before = [], None
        for sample in rss:
            if before is not None and any(before < t <= sample[0] for t in restarts):
                points.append((sample[0], None))
            if sample[column] is not None:
                points.append((sample[0], sample[column] / 1024))
            before = sample[0]
        return points
    chart(os.path.join(work, "rss.svg"), "chaja serve memory (shaded: faults, rebuilds)", "MiB",
          [("VmRSS", memory_line(1), "#2ca02c"), ("RssAnon", memory_line(2), "#8c564b")], bands, ran)
    mid = lambda r: num(r["elapsed_s"]) + num(r["duration_s"], 0) / 2
    chart(os.path.join(work, "p99.svg"), "search latency per load-test window (shaded: faults, rebuilds)", "ms",
          [("p99", [(mid(r), num(r["p99_ms"])) for r in windows if num(r["p99_ms"]) is not None], "#000000"),
           ("p50", [(mid(r), num(r["p50_ms"])) for r in windows if num(r["p50_ms"]) is not None], "#2ca02c")],
          bands, ran)
    text = "\n".join(lines) + "\n"
    open(os.path.join(work, "summary.md"), "w").write(text)
    print(text, end="")
    return 1 if failures else 0


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "probes":
        probes(args[0], int(args[1]), args[2])
    elif command == "window":
        window(args[0])
    elif command == "check":
        check(args[0], args[1], args[2], args[3], int(args[4]))
    elif command == "summary":
        sys.exit(summary(args[0]))
PY

# --- the private MariaDB, Redis and chaja serve --------------------------
db_sock=$work/mariadb.sock
sql() { mariadb --no-defaults --default-character-set=utf8mb4 -S "$db_sock" -uroot "$@"; }
# Waits up to $2 s for process $1 to be gone.
wait_gone() {
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.1
  done
  return 1
}
# Commits are not synced one by one (flush at commit = 2): the storm's
# commits would otherwise queue on the disk the machine's builds share.
# Its restarts are clean shutdowns, which lose nothing either way.
start_db() {
  /usr/sbin/mariadbd --no-defaults --user=root --datadir="$work/mariadb" --port="$db_port" \
    --socket="$db_sock" --pid-file="$work/mariadb.pid" --log-error="$work/mariadb.err" \
    --bind-address=127.0.0.1 --skip-name-resolve --default-time-zone=+00:00 \
    --character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci \
    --innodb-buffer-pool-size=1G --innodb-flush-log-at-trx-commit=2 --max-connections=500 \
    </dev/null >/dev/null 2>&1 &
  echo $! >"$work/db.pid"
  local i
  for ((i = 0; i < 1200; i++)); do
    if sql -e 'SELECT 1' >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  die "the private MariaDB did not start: see $work/mariadb.err"
}
# Stops what $work/$1.pid names: TERM, then KILL after $2 s.
stop_pidfile() { # name seconds
  local pid
  pid=$(cat "$work/$1.pid")
  kill -TERM "$pid" 2>/dev/null || true
  wait_gone "$pid" "$2" || kill -9 "$pid" 2>/dev/null || true
}
stop_db() { stop_pidfile db 120; }
start_redis() {
  redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$work/redis" --logfile "$work/redis.log" </dev/null >/dev/null 2>&1 &
  echo $! >"$work/redis.pid"
  local i
  for ((i = 0; i < 100; i++)); do
    if redis-cli -p "$redis_port" ping 2>/dev/null | grep -q PONG; then return 0; fi
    sleep 0.1
  done
  die "the private Redis did not start: see $work/redis.log"
}
stop_redis() { stop_pidfile redis 30; }
start_serve() {
  "$bin" serve >>"$work/serve.log" 2>&1 &
  echo $! >"$work/serve.pid"
}
# Waits up to $1 s for /readyz to answer 200.
wait_ready() {
  local until=$(($(now_ms) + $1 * 1000))
  while (($(now_ms) < until)); do
    if curl -fs -o /dev/null --max-time 2 "$url/readyz"; then return 0; fi
    sleep 0.5
  done
  return 1
}

# --- cleanup: every process this script started, by its id ---------------
loops=()
reindex_pid=
# shellcheck disable=SC2317 # called from the EXIT trap
descendants() {
  local child
  for child in $(pgrep -P "$1" || true); do
    echo "$child"
    descendants "$child"
  done
}
# shellcheck disable=SC2317
kill_tree() { # pid: the process and everything under it
  local all
  all="$1 $(descendants "$1")"
  # shellcheck disable=SC2086 # a list of pids
  kill -TERM $all 2>/dev/null || true
}
# shellcheck disable=SC2317
cleanup() {
  set +e
  for pid in "${loops[@]}" $reindex_pid; do kill_tree "$pid"; done
  for name in serve redis db; do
    [ -f "$work/$name.pid" ] || continue
    pid=$(cat "$work/$name.pid")
    kill -TERM "$pid" 2>/dev/null && { wait_gone "$pid" 60 || kill -9 "$pid" 2>/dev/null; }
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- setup ----------------------------------------------------------------
log "== private MariaDB on :$db_port and Redis on :$redis_port, under $work"
mariadb-install-db --no-defaults --user=root --auth-root-authentication-method=normal \
  --skip-test-db --datadir="$work/mariadb" >"$work/mariadb-install.log" 2>&1
start_db
sql -e "CREATE USER 'chaja'@'127.0.0.1' IDENTIFIED BY 'chaja';
  GRANT ALL PRIVILEGES ON *.* TO 'chaja'@'127.0.0.1';
  CREATE DATABASE seed CHARACTER SET utf8mb4; CREATE DATABASE board CHARACTER SET utf8mb4;"
start_redis

unset DATABASE_READ_URL CHAJA_REPLICA_ID CHAJA_CONFIG
seed_args=(--rows "$rows" --manifest "$work/seed-manifest.json")
if [ -f "$corpus" ]; then seed_args+=(--corpus "$corpus"); fi
log "== chaja seed ${seed_args[*]}"
DATABASE_URL="mysql://chaja:chaja@127.0.0.1:$db_port/seed" "$bin" seed "${seed_args[@]}" \
  2>&1 | tee -a "$work/setup.log" | tail -n 1

log "== the board: the seed's questions and reviews as Spring-style question and answer tables"
sql board <<'SQL'
CREATE TABLE question (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  member_id BIGINT NOT NULL,
  title VARCHAR(255) NOT NULL,
  body MEDIUMTEXT NOT NULL,
  view_count INT NOT NULL DEFAULT 0,
  like_count INT NOT NULL DEFAULT 0,
  is_deleted BIT(1) NOT NULL DEFAULT b'0',
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NULL,
  KEY question_deleted (is_deleted)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE TABLE answer (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  question_id BIGINT NOT NULL,
  member_id BIGINT NOT NULL,
  body MEDIUMTEXT NOT NULL,
  rating INT NULL,
  like_count INT NOT NULL DEFAULT 0,
  is_deleted BIT(1) NOT NULL DEFAULT b'0',
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NULL,
  KEY answer_question (question_id),
  KEY answer_deleted (is_deleted)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
INSERT INTO question (id, member_id, title, body, like_count, created_at)
  SELECT id, author_id, title, content, like_count, FROM_UNIXTIME(created_at / 1000)
  FROM seed.questions;
INSERT INTO answer (id, question_id, member_id, body, rating, created_at)
  SELECT id, question_id, author_id, content, rating, FROM_UNIXTIME(created_at / 1000)
  FROM seed.reviews;
DROP DATABASE seed;
SQL
cat >"$work/board.toml" <<'TOML'
# The soak's board: columns chaja reads are the key, created_at, the
# fields, the attributes and is_deleted (the filter); view_count and
# updated_at it does not read.
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

[[source]]
name = "answer"
table = "answer"
id = "id"
created_at = "created_at"
fields = ["body"]
filter = "is_deleted = 0"
attributes = ["member_id", "question_id", "rating", "like_count"]
numeric = ["rating", "like_count"]
facets = ["rating"]
sortable = ["like_count"]
TOML
log "board: $(sql -N board -e "SELECT CONCAT((SELECT COUNT(*) FROM question), ' questions, ',
  (SELECT COUNT(*) FROM answer), ' answers, ',
  (SELECT ROUND(SUM(LENGTH(body)) / 1e6) FROM answer) + (SELECT ROUND(SUM(LENGTH(title) + LENGTH(body)) / 1e6) FROM question), ' MB of text')")"

export DATABASE_URL="mysql://chaja:chaja@127.0.0.1:$db_port/board"
export REDIS_URL="redis://127.0.0.1:$redis_port"
export CHAJA_CONFIG=$work/board.toml CHAJA_INDEX_DIR=$work/index CHAJA_BIND=127.0.0.1:$port
export CHAJA_ADMIN_KEY=$admin_key CHAJA_KO_DIC CHAJA_CACHE_PREFIX=chaja-soak
export RUST_LOG=${RUST_LOG:-info}
"$bin" install | tee -a "$work/setup.log"
log "== chaja reindex (the first index)"
"$bin" reindex >"$work/reindex/0.log" 2>&1 || die "the first reindex failed: see $work/reindex/0.log"
grep '^reindexed' "$work/reindex/0.log" | tee -a "$work/setup.log" >&2 || true
start_serve
wait_ready 600 || die "chaja serve did not become ready: see $work/serve.log"
python3 "$work/soak.py" probes "$work/seed-manifest.json" $((minutes * 60 + 600)) "$work/probes.txt"

# --- the soak ---------------------------------------------------------------
setup_s=$(el)
t0=$(now_ms)
deadline=$((t0 + minutes * 60000))
echo "start_s,end_s,kind,recovered" >"$work/faults.csv"
echo "elapsed_s,duration_s,requests,rps,p50_ms,p99_ms,errors_5xx,errors_other,fault,rc" >"$work/latency.csv"
echo "elapsed_s,status,seconds" >"$work/probe.csv"
echo "elapsed_s,rss_kb,anon_kb" >"$work/rss.csv"
echo "elapsed_s,status,generation,docs,applied_seq,backlog,seconds_behind,redis" >"$work/ready.csv"
echo "start_s,end_s,rc" >"$work/reindex.csv"
echo "elapsed_s,kind,statements,errors,ms" >"$work/writes.csv"
echo "elapsed_s" >"$work/crashes.csv"
log "== soak: $minutes minutes (setup took ${setup_s} s)"

# Every 10 s: the server's memory, and what /readyz says.
sample_loop() {
  local pid status body code
  while (($(now_ms) < deadline)); do
    pid=$(cat "$work/serve.pid")
    status=$(awk '/^VmRSS:/ {r = $2} /^RssAnon:/ {a = $2} END {if (r != "") print r "," a}' \
      "/proc/$pid/status" 2>/dev/null || true)
    if [ -n "$status" ]; then echo "$(el),$status" >>"$work/rss.csv"; fi
    body=$(curl -s --max-time 2 -w ' %{http_code}' "$url/readyz" || true)
    code=${body##* }
    echo "$(el),$code,$(field generation "$body"),$(field docs "$body"),$(field applied_seq "$body"),$(field outbox_backlog "$body"),$(field seconds_behind "$body"),$(field redis "$body")" >>"$work/ready.csv"
    sleep 10
  done
}
# A field of a JSON body, without an interpreter: "name":value.
field() {
  if [[ $2 =~ \"$1\":\"?([^,\"\}]*) ]]; then echo "${BASH_REMATCH[1]}"; fi
}

# Once a second, a never-seen query (two manifest keywords ANDed), in turn
# plain, with the rating facet, with a range, and in an attribute order.
probe_loop() {
  local query out n=0
  local shapes=("" "&type=answer&facets=rating" "&type=answer&attr.rating.gte=3" "&sort=attr.like_count.desc")
  while IFS= read -r query && (($(now_ms) < deadline)); do
    n=$((n + 1))
    out=$(curl -s -o /dev/null --max-time 15 -H "Authorization: Bearer $admin_key" \
      -w '%{http_code},%{time_total}' "$url/api/search?q=$query&size=10${shapes[n % 4]}" || true)
    echo "$(el),$out" >>"$work/probe.csv"
    sleep 1
  done <"$work/probes.txt"
}

# Runs SQL from stdin on the board, one statement after another (--force:
# past failures), and logs the batch: writes sent, failed, time. A batch
# that cannot connect failed whole; one whose connection is lost fails
# from there on (the client does not reconnect in batch mode), the line
# that sets @q and @a included, hence the cap.
batch() { # kind writes
  local start out errors
  start=$(now_ms)
  out=$(sql --force board 2>&1 >/dev/null || true)
  if grep -q '^ERROR [0-9]* ([A-Z0-9]*): ' <<<"$out"; then
    errors=$2
  else
    errors=$(grep -c '^ERROR' <<<"$out" || true)
    if ((errors > $2)); then errors=$2; fi
  fi
  echo "$(el),$1,$2,$errors,$(($(now_ms) - start))" >>"$work/writes.csv"
}
# Waits until a second has passed since $1 (ms).
pace() {
  local rest=$((1000 - ($(now_ms) - $1)))
  if ((rest > 0)); then sleep "$(printf '0.%03d' "$rest")"; fi
}

# The storm: single-row updates of counters and attributes, each its own
# transaction, on random rows (@q, @a: the highest keys now). Each
# second's batch starts on time, on its own client, even while earlier
# ones still run (at most 8 at once), so that a slow second does not
# lower the rate.
storm_loop() {
  local start
  while (($(now_ms) < deadline)); do
    start=$(now_ms)
    while (($(jobs -pr | wc -l) >= 8)); do wait -n || true; done
    awk -v n="$storm_rate" -v seed="$RANDOM$RANDOM" 'BEGIN {
      srand(seed)
      print "SET @q = (SELECT MAX(id) FROM question), @a = (SELECT MAX(id) FROM answer);"
      for (i = 0; i < n; i++) {
        r = rand(); x = rand()
        if (r < 0.40)      printf "UPDATE question SET view_count = view_count + 1 WHERE id = CEIL(%.7f * @q);\n", x
        else if (r < 0.70) printf "UPDATE question SET like_count = like_count + 1 WHERE id = CEIL(%.7f * @q);\n", x
        else if (r < 0.85) printf "UPDATE answer SET like_count = like_count + 1 WHERE id = CEIL(%.7f * @a);\n", x
        else               printf "UPDATE answer SET rating = 1 + COALESCE(rating, 0) %% 5 WHERE id = CEIL(%.7f * @a);\n", x
      }
    }' | batch storm "$storm_rate" &
    pace "$start"
  done
  wait
}

# Text edits: what a board's users and moderators do, by plain SQL.
edit_loop() {
  local start
  while (($(now_ms) < deadline)); do
    start=$(now_ms)
    awk -v n="$edit_rate" -v seed="$RANDOM$RANDOM" 'BEGIN {
      srand(seed)
      split("수정 추가 확인 트랜잭션 배포 쿠버네티스 인덱스 캐시 장애 복구", words, " ")
      print "SET @q = (SELECT MAX(id) FROM question), @a = (SELECT MAX(id) FROM answer);"
      for (i = 0; i < n; i++) {
        r = rand(); x = rand(); y = rand()
        w = words[1 + int(rand() * 10)] " " int(rand() * 1000000)
        if (r < 0.25)      printf "UPDATE question SET body = CONCAT(body, \" %s\"), updated_at = UTC_TIMESTAMP(6) WHERE id = CEIL(%.7f * @q);\n", w, x
        else if (r < 0.33) printf "UPDATE question SET title = CONCAT(SUBSTRING_INDEX(title, \" #\", 1), \" #%s\"), updated_at = UTC_TIMESTAMP(6) WHERE id = CEIL(%.7f * @q);\n", w, x
        else if (r < 0.55) printf "UPDATE answer SET body = CONCAT(body, \" %s\"), updated_at = UTC_TIMESTAMP(6) WHERE id = CEIL(%.7f * @a);\n", w, x
        else if (r < 0.65) printf "INSERT INTO question (member_id, title, body, created_at) SELECT member_id, CONCAT(\"다시 \", title), CONCAT(body, \" %s\"), UTC_TIMESTAMP(6) FROM question WHERE id = CEIL(%.7f * @q);\n", w, x
        else if (r < 0.77) printf "INSERT INTO answer (question_id, member_id, body, rating, created_at) SELECT CEIL(%.7f * @q), member_id, CONCAT(body, \" %s\"), rating, UTC_TIMESTAMP(6) FROM answer WHERE id = CEIL(%.7f * @a);\n", y, w, x
        else if (r < 0.80) printf "UPDATE question SET is_deleted = 1 WHERE id = CEIL(%.7f * @q);\n", x
        else if (r < 0.84) printf "UPDATE answer SET is_deleted = 1 WHERE id = CEIL(%.7f * @a);\n", x
        else if (r < 0.87) print "UPDATE answer SET is_deleted = 0 WHERE is_deleted = 1 LIMIT 1;"
        else if (r < 0.88) print "UPDATE question SET is_deleted = 0 WHERE is_deleted = 1 LIMIT 1;"
        else if (r < 0.91) printf "DELETE FROM answer WHERE id = CEIL(%.7f * @a);\n", x
        else if (r < 0.93) printf "DELETE FROM question WHERE id = CEIL(%.7f * @q);\n", x
        else if (r < 0.97) printf "BEGIN; UPDATE question SET body = CONCAT(body, \" %s\") WHERE id = CEIL(%.7f * @q); UPDATE answer SET body = CONCAT(body, \" %s\"), rating = 5 WHERE question_id = CEIL(%.7f * @q); COMMIT;\n", w, x, w, x
        else               printf "BEGIN; UPDATE question SET body = \"되돌림\" WHERE id = CEIL(%.7f * @q); DELETE FROM answer WHERE id = CEIL(%.7f * @a); ROLLBACK;\n", x, y
      }
    }' | batch edits "$edit_rate"
    pace "$start"
  done
}

# Now and then a transaction held open 20-90 s (past CHAJA_GAP_GRACE_SECS
# at times): its outbox ids are taken long before it commits. It writes
# only rows of its own (a question and an answer copied from random rows,
# then the question edited), reading in READ COMMITTED, which locks no
# row it copies from: a transaction that held a row the storm updates
# stalled the storm for its whole length. None is left open at the
# deadline.
longtx_loop() {
  local hold wait_s
  while :; do
    wait_s=$((60 + RANDOM % 121))
    hold=$((20 + RANDOM % 71))
    if (($(now_ms) + (wait_s + hold + 5) * 1000 > deadline)); then break; fi
    sleep "$wait_s"
    printf '%s\n' "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED;" \
      "SET @q = (SELECT MAX(id) FROM question), @a = (SELECT MAX(id) FROM answer);" \
      "SET @id = CEIL(RAND() * @q), @aid = CEIL(RAND() * @a);" \
      "BEGIN;" \
      "INSERT INTO question (member_id, title, body, created_at) SELECT member_id, CONCAT('늦은 커밋 ', title), body, UTC_TIMESTAMP(6) FROM question WHERE id = @id;" \
      "SET @new = LAST_INSERT_ID();" \
      "INSERT INTO answer (question_id, member_id, body, rating, created_at) SELECT @new, member_id, CONCAT('늦은 답변 ', body), rating, UTC_TIMESTAMP(6) FROM answer WHERE id = @aid;" \
      "DO SLEEP($hold);" \
      "UPDATE question SET body = CONCAT(body, ' 오래 열린 트랜잭션 $hold'), updated_at = UTC_TIMESTAMP(6) WHERE id = @new;" \
      "COMMIT;" | batch longtx 10
  done
}

# Whether [$1, $2] overlapped a fault: one ended in faults.csv, or one
# still going (fault.active).
overlaps() {
  if [ -e "$work/fault.active" ]; then echo 1; return; fi
  awk -F, -v s="$1" -v e="$2" 'NR > 1 && $1 < e && $2 > s {f = 1} END {print f + 0}' "$work/faults.csv"
}

# Back-to-back load-test windows of up to 60 s, until the deadline. A
# window that cannot start (the server down) is logged and retried 5 s later.
loadtest_loop() {
  local n=0 w dir start end rc figures
  while :; do
    w=$(((deadline - $(now_ms)) / 1000))
    if ((w > window_secs)); then w=$window_secs; fi
    if ((w < 10)); then break; fi
    n=$((n + 1))
    dir=$work/windows/$(printf '%03d' "$n")
    mkdir -p "$dir"
    start=$(el)
    if timeout -k 10 $((w + 120)) "$bin" loadtest --scenario longtail --host "$url" \
      --users "$connections" --hatch-rate "$connections" --run-time "$w" \
      --admin-key "$admin_key" --report-dir "$dir" >"$dir/out.txt" 2>&1; then rc=0; else rc=$?; fi
    end=$(el)
    figures=$(python3 "$work/soak.py" window "$dir" || echo "0,0,,,0,0")
    echo "$start,$(awk -v s="$start" -v e="$end" 'BEGIN {printf "%.1f", e - s}'),$figures,$(overlaps "$start" "$end"),$rc" >>"$work/latency.csv"
    if ((rc != 0)); then sleep 5; fi
  done
}

# A fault window: from its start until /readyz says ready again, plus the
# 60 s after it (issue 62 counts those as the fault's).
fault() { # kind
  local kind=$1 start recovered=1 pid
  start=$(el)
  echo "$start $kind" >"$work/fault.active"
  log "fault: $kind"
  case $kind in
    chaja_kill)
      pid=$(cat "$work/serve.pid")
      kill -9 "$pid" 2>/dev/null || true
      wait_gone "$pid" 30 || true
      start_serve
      ;;
    mariadb_restart)
      stop_db
      sleep 10
      start_db
      ;;
    redis_down)
      stop_redis
      sleep 30
      start_redis
      ;;
  esac
  if wait_ready 600; then sleep 60; else recovered=0; log "not ready 10 minutes after $kind"; fi
  echo "$start,$(el),$kind,$recovered" >>"$work/faults.csv"
  rm -f "$work/fault.active"
  log "fault over: $kind"
}

reindex_n=0
start_reindex() {
  if [ -n "$reindex_pid" ] && kill -0 "$reindex_pid" 2>/dev/null; then
    log "the last rebuild still runs: none started"
    return 0
  fi
  reindex_n=$((reindex_n + 1))
  log "reindex $reindex_n"
  (
    start=$(el)
    if "$bin" reindex >"$work/reindex/$reindex_n.log" 2>&1; then rc=0; else rc=$?; fi
    echo "$start,$(el),$rc" >>"$work/reindex.csv"
  ) &
  reindex_pid=$!
}

sample_loop & loops+=($!)
probe_loop & loops+=($!)
storm_loop & loops+=($!)
if ((edit_rate > 0)); then
  for _ in $(seq 1 "$writers"); do edit_loop & loops+=($!); done
fi
longtx_loop & loops+=($!)
loadtest_loop & loops+=($!)

# The schedule: faults in turn, rebuilds every REINDEX_EVERY s; none
# started in the last minute. A server that dies outside a fault is a
# crash: logged, started again, and the run fails.
kinds=(chaja_kill mariadb_restart redis_down)
k=0
gap=$((fault_every > 0 ? fault_every : 120 + RANDOM % 181))
next_fault=$(($(now_ms) + gap * 1000))
next_reindex=$((t0 + reindex_every * 1000))
while (($(now_ms) < deadline)); do
  now=$(now_ms)
  if ! kill -0 "$(cat "$work/serve.pid")" 2>/dev/null; then
    log "chaja serve died by itself: see $work/serve.log; starting it again"
    printf '%s\n' "$(el)" >>"$work/crashes.csv"
    start_serve
  fi
  if ((reindex_every > 0 && now >= next_reindex)); then
    if ((deadline - now > 60000)); then start_reindex; fi
    next_reindex=$((next_reindex + reindex_every * 1000))
  fi
  if ((now >= next_fault && deadline - now > 60000)); then
    fault "${kinds[k % 3]}"
    k=$((k + 1))
    gap=$((fault_every > 0 ? fault_every : 120 + RANDOM % 181))
    next_fault=$(($(now_ms) + gap * 1000))
  fi
  sleep 1
done
ran_s=$(el)

# --- the end: writers stop, the mirror catches up, verify -----------------
log "== the end: waiting for the writers, the load test and any rebuild to finish"
for pid in "${loops[@]}"; do wait "$pid" || true; done
if [ -n "$reindex_pid" ]; then wait "$reindex_pid" || true; fi
wait_ready 600 || log "not ready after the soak"
target=$(sql -N board -e "SELECT COALESCE(MAX(seq), 0) FROM search_outbox")
log "waiting for the server to apply outbox row $target"
caught=$(now_ms)
catchup="not within 15 minutes"
while (($(now_ms) - caught < 900000)); do
  body=$(curl -s --max-time 2 "$url/readyz" || true)
  applied=$(field applied_seq "$body")
  if [ "${applied:-0}" -ge "$target" ] && [ "$(field outbox_backlog "$body")" = 0 ]; then
    catchup="$(((($(now_ms) - caught) + 500) / 1000)) s (outbox row $target)"
    break
  fi
  sleep 0.5
done
log "caught up: $catchup"
sleep 3 # the answer cache's staleness bound, 2.5 s
log "== chaja verify"
if "$bin" verify >"$work/verify.txt" 2>&1; then verify_rc=0; else verify_rc=$?; fi
grep -E 'index docs|^  ' "$work/verify.txt" | head -n 21 >&2 || true
log "== totals and facets of $check_keywords keywords against SQL LIKE"
python3 "$work/soak.py" check "$work/seed-manifest.json" "$url" "$admin_key" "$db_sock" \
  "$check_keywords" >"$work/check.txt" 2>&1 || true
tail -n 1 "$work/check.txt" >&2

cat >"$work/meta.json" <<JSON
{"ran_s": $ran_s, "setup_s": $setup_s, "rows": $rows, "connections": $connections,
 "storm_rate": $storm_rate, "edit_rate": $edit_rate, "ko_dic": "$CHAJA_KO_DIC",
 "catchup": "$catchup", "verify_rc": $verify_rc}
JSON
echo
if python3 "$work/soak.py" summary "$work"; then status=0; else status=1; fi
echo "charts: $work/rss.svg $work/p99.svg; summary: $work/summary.md"
exit "$status"
