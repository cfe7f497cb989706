#!/usr/bin/env python3
"""Measures chaja's exact substring search against the engines a Korean team
would pick instead: Mroonga (Groonga inside MariaDB, bigram tokenizer),
PostgreSQL pg_trgm (GIN index, ILIKE) and SQLite FTS5 (trigram tokenizer),
on the same rows and the same never-seen queries. MySQL's FULLTEXT ngram
parser is not measured: MariaDB has none.

For each engine: build/load time, size on disk, and per query the latency of
"the 10 newest matching rows + the exact total" and whether that total is the
one chaja's rule gives (NFKC(keyword).lower() is a substring of
NFKC(title).lower() or of NFKC(content).lower()), computed here by brute
force over the rows in memory. Queries past --timeout are cancelled and
counted as timeouts. Where an engine's answer differs from the rule, the
divergence is classified and reported.

Run it through benches/peers.sh, which installs what is missing:
    bash benches/peers.sh [--rows N] [--queries N] [--timeout S] [--out FILE]
"""
import argparse
import datetime
import glob
import heapq
import http.client
import json
import math
import os
import platform
import random
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import unicodedata
import urllib.parse

import psycopg
import pymysql
import pymysql.cursors

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MYSQL_SOCKET = "/run/mysqld/mysqld.sock"
PEERS_DB = "chaja_peers"  # MariaDB (Mroonga) and PostgreSQL databases of this benchmark
SUBSET_DB = "chaja_peers_src"  # a smaller copy of chaja_100k for --rows below 100,000
CLASSES = ["1", "2", "3", "4", "5-8"]  # query length in characters
FORBIDDEN = set("'\"`\\%_")  # never in a query: quoting and LIKE wildcards
WARMUP_QUERIES = 5
SEED = 20240601


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


# --- chaja's rule -------------------------------------------------------------


def normalize(text):
    """chaja's normalization: NFKC, then lowercase with the final sigma as σ.

    Python's lower() turns a word-final Σ into ς; folding every ς into σ
    afterwards gives the same text as chaja's per-character rule."""
    return unicodedata.normalize("NFKC", text).lower().replace("ς", "σ")


class Doc:
    """One searchable row: a question (title, content) or a review (content)."""

    __slots__ = ("kind", "src_id", "created_at", "title", "content")

    def __init__(self, kind, src_id, created_at, title, content):
        self.kind, self.src_id, self.created_at = kind, src_id, created_at
        self.title, self.content = title, content

    def body(self):
        """The one text the peers index: title and content on two lines."""
        return self.title + "\n" + self.content if self.kind == "question" else self.content


# --- the source rows ----------------------------------------------------------


def mysql_root(database=None):
    return pymysql.connect(unix_socket=MYSQL_SOCKET, user="root", database=database,
                           charset="utf8mb4", autocommit=True)


def chaja_env(database, index_dir):
    env = dict(os.environ)
    env.update(DATABASE_URL=f"mysql://chaja_test:chaja_test@127.0.0.1:3306/{database}",
               CHAJA_INDEX_DIR=index_dir, CHAJA_KO_DIC=os.path.join(ROOT, "data", "ko-dic"))
    return env


def source_database(args):
    """The database chaja and the peers read: chaja_100k, chaja_1m, or a copy
    of the first rows of one of them for other --rows (development runs)."""
    if args.database:
        return args.database
    if args.rows == 100_000:
        return "chaja_100k"
    if args.rows == 1_000_000:
        return "chaja_1m"
    origin = "chaja_100k" if args.rows < 100_000 else "chaja_1m"
    questions = max(1, args.rows // 3)
    log(f"copying the first {questions} questions of {origin} and their reviews "
        f"({args.rows} rows in all) into {SUBSET_DB}")
    conn = mysql_root()
    cur = conn.cursor()
    cur.execute(f"DROP DATABASE IF EXISTS {SUBSET_DB}")
    cur.execute(f"CREATE DATABASE {SUBSET_DB} CHARACTER SET utf8mb4")
    # chaja's own tables and triggers, as on any database it mirrors.
    subprocess.run([args.chaja_bin, "install"], env=chaja_env(SUBSET_DB, args.index_dir),
                   check=True, stdout=subprocess.DEVNULL)
    cur.execute(f"INSERT INTO {SUBSET_DB}.users SELECT * FROM {origin}.users")
    cur.execute(f"INSERT INTO {SUBSET_DB}.questions SELECT * FROM {origin}.questions "
                f"ORDER BY id LIMIT {questions}")
    cur.execute(f"INSERT INTO {SUBSET_DB}.reviews SELECT r.* FROM {origin}.reviews r "
                f"JOIN {SUBSET_DB}.questions q ON q.id = r.question_id "
                f"ORDER BY r.id LIMIT {args.rows - questions}")
    conn.close()
    return SUBSET_DB


def load_docs(database):
    conn = mysql_root(database)
    cur = conn.cursor(pymysql.cursors.SSCursor)
    docs = []
    cur.execute("SELECT id, created_at, title, content FROM questions ORDER BY id")
    for src_id, created_at, title, content in cur:
        docs.append(Doc("question", src_id, created_at, title, content))
    cur.execute("SELECT id, created_at, content FROM reviews ORDER BY id")
    for src_id, created_at, content in cur:
        docs.append(Doc("review", src_id, created_at, "", content))
    conn.close()
    return docs


# --- queries and their exact answers ------------------------------------------


def acceptable(keyword):
    """A query a person might type: starts and ends with a letter or digit,
    single spaces inside at most, no quotes, backslashes or LIKE wildcards
    (before or after normalization)."""
    if not (keyword[0].isalnum() and keyword[-1].isalnum()):
        return False
    if "  " in keyword or any(c in FORBIDDEN or (c.isspace() and c != " ") or not c.isprintable()
                              for c in keyword):
        return False
    normalized = normalize(keyword)
    return normalized == normalized.strip() and not any(c in FORBIDDEN for c in normalized)


def sample_queries(docs, count, seed, taken=()):
    """count substrings cut from random rows, spread evenly over CLASSES,
    distinct after normalization and not in taken, in a shuffled order."""
    rng = random.Random(seed)
    seen = {normalize(k) for _, k in taken}
    queries = []
    for i, cls in enumerate(CLASSES):
        wanted = count // len(CLASSES) + (1 if i < count % len(CLASSES) else 0)
        found = tries = 0
        while found < wanted and tries < 100_000:
            tries += 1
            doc = docs[rng.randrange(len(docs))]
            text = doc.title if doc.kind == "question" and rng.random() < 0.1 else doc.content
            length = rng.randint(5, 8) if cls == "5-8" else int(cls)
            if len(text) < length:
                continue
            start = rng.randrange(len(text) - length + 1)
            keyword = text[start:start + length]
            if not acceptable(keyword) or normalize(keyword) in seen:
                continue
            seen.add(normalize(keyword))
            queries.append((cls, keyword))
            found += 1
    rng.shuffle(queries)
    return queries


class Oracle:
    """Brute-force answers over the rows in memory, under chaja's rule and,
    to explain divergences, under the rules other engines follow."""

    def __init__(self, docs):
        self.docs = docs
        # Title and content apart (NUL between them): no match spans both.
        self.texts = [normalize(d.title) + "\0" + normalize(d.content) for d in docs]
        self.alternatives = {}  # rule name -> (keyword function, texts)
        self.counts = {}

    def expected(self, keyword):
        """(total, created_at of the 10 newest matches, newest first)."""
        k = normalize(keyword)
        hits = [i for i, t in enumerate(self.texts) if k in t]
        newest = heapq.nlargest(10, (self.docs[i].created_at for i in hits))
        return len(hits), newest

    # Rules of other engines, over the peers' text (title and content on two lines).
    RULES = {
        "no NFKC (lowercase only)": lambda s: s.lower().replace("ς", "σ"),
        "no NFKC, ASCII-only case folding": lambda s: s.translate(ASCII_LOWER),
        "blanks ignored": lambda s: "".join(normalize(s).split()),
    }

    def count_under(self, rule, keyword):
        key = (rule, keyword)
        if key not in self.counts:
            fold = self.RULES[rule]
            if rule not in self.alternatives:
                self.alternatives[rule] = [fold(d.body()) for d in self.docs]
            k = fold(keyword)
            self.counts[key] = sum(1 for t in self.alternatives[rule] if k in t)
        return self.counts[key]


ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def divergence_class(oracle, keyword, expected, got):
    """Why an engine's total differs from the rule: a rule that reproduces it
    exactly, else what the keyword holds that tokenizers treat apart."""
    for rule in Oracle.RULES:
        if oracle.count_under(rule, keyword) == got:
            return rule
    if " " in keyword:
        return "keyword with a space"
    if not all(c.isalnum() for c in keyword):
        return "keyword with symbols"
    if len(keyword) <= 2:
        return "1-2 characters"
    return "other"


# --- engines ------------------------------------------------------------------


class QueryTimeout(Exception):
    pass


class Mroonga:
    name = "Mroonga"
    setup = ("storage mode; FULLTEXT INDEX with tokenizer TokenBigramSplitSymbolAlphaDigit, "
             "normalizer NormalizerAuto; MATCH ... AGAINST('+\"kw\"' IN BOOLEAN MODE), "
             "ORDER BY created_at DESC LIMIT 10 + COUNT(*); match escalation off")
    semantics = ("Groonga bigrams (Latin and digits split too) after NormalizerAuto (NFKC of "
                 "Unicode 5.1, lowercase): a phrase is a run of adjacent bigram tokens, and "
                 "blanks are not characters but token boundaries, so `스프링 부트` also finds "
                 "`스프링부트` (and matches cross the title/content line break).")

    def __init__(self, source):
        self.source = source

    def version(self):
        conn = mysql_root()
        cur = conn.cursor()
        cur.execute("SELECT VERSION(), @@mroonga_version, @@mroonga_libgroonga_version")
        server, mroonga, groonga = cur.fetchone()
        conn.close()
        return f"MariaDB {server}, Mroonga {mroonga} (Groonga {groonga})"

    def build(self, docs):
        conn = mysql_root()
        cur = conn.cursor()
        cur.execute(f"DROP DATABASE IF EXISTS {PEERS_DB}")
        cur.execute(f"CREATE DATABASE {PEERS_DB} CHARACTER SET utf8mb4")
        cur.execute(f"""CREATE TABLE {PEERS_DB}.docs (
            id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
            kind VARCHAR(8) NOT NULL,
            src_id BIGINT NOT NULL,
            created_at BIGINT NOT NULL,
            body MEDIUMTEXT NOT NULL,
            KEY created_at (created_at)
        ) ENGINE=Mroonga DEFAULT CHARSET=utf8mb4""")
        started = time.perf_counter()
        cur.execute(f"INSERT INTO {PEERS_DB}.docs (kind, src_id, created_at, body) "
                    f"SELECT 'question', id, created_at, CONCAT(title, CHAR(10 USING utf8mb4), content) "
                    f"FROM {self.source}.questions ORDER BY id")
        cur.execute(f"INSERT INTO {PEERS_DB}.docs (kind, src_id, created_at, body) "
                    f"SELECT 'review', id, created_at, content FROM {self.source}.reviews ORDER BY id")
        # The index is built once over the loaded rows (Groonga's static build).
        cur.execute(f"ALTER TABLE {PEERS_DB}.docs ADD FULLTEXT INDEX body_ft (body) COMMENT "
                    "'tokenizer \"TokenBigramSplitSymbolAlphaDigit\", normalizer \"NormalizerAuto\"'")
        elapsed = time.perf_counter() - started
        cur.execute(f"SELECT COUNT(*) FROM {PEERS_DB}.docs")
        assert cur.fetchone()[0] == len(docs), "Mroonga holds other rows than the source"
        conn.close()
        return elapsed

    def size(self):
        conn = mysql_root()
        cur = conn.cursor()
        cur.execute("SELECT @@datadir")
        datadir = cur.fetchone()[0]
        conn.close()
        # Storage mode keeps rows and index in the Groonga database's files.
        return sum(os.path.getsize(f) for f in glob.glob(os.path.join(datadir, PEERS_DB + ".mrn*")))

    def start(self):
        self.conn = mysql_root(PEERS_DB)
        self.conn.cursor().execute("SET SESSION mroonga_match_escalation_threshold = -1")
        self.killer = mysql_root()

    def kill(self):
        try:
            self.killer.cursor().execute(f"KILL QUERY {self.conn.thread_id()}")
        except pymysql.MySQLError:
            pass

    def search(self, keyword, timeout):
        against = '+"' + keyword + '"'
        timer = threading.Timer(timeout, self.kill)
        timer.start()
        try:
            cur = self.conn.cursor()
            cur.execute("SELECT created_at FROM docs WHERE MATCH(body) AGAINST(%s IN BOOLEAN MODE) "
                        "ORDER BY created_at DESC LIMIT 10", (against,))
            newest = [r[0] for r in cur.fetchall()]
            cur.execute("SELECT COUNT(*) FROM docs WHERE MATCH(body) AGAINST(%s IN BOOLEAN MODE)",
                        (against,))
            total = cur.fetchone()[0]
        except pymysql.err.OperationalError as e:
            if e.args[0] in (1317, 1969, 3024):  # interrupted, statement time exceeded
                raise QueryTimeout() from e
            raise
        finally:
            timer.cancel()
        return total, newest

    def stop(self):
        self.conn.close()
        self.killer.close()


class Postgres:
    name = "PostgreSQL pg_trgm"
    setup = ("GIN (body gin_trgm_ops) + btree (created_at); body ILIKE '%kw%' "
             "ORDER BY created_at DESC LIMIT 10 + count(*); statement_timeout")
    semantics = ("ILIKE compares lower() of the raw text (locale {ctype}): no NFKC, so "
                 "compatibility and fullwidth forms differ, and ς is not σ; the trigram index "
                 "only narrows the rows and ILIKE rechecks them, so the count is exact under "
                 "ILIKE's rule; a 1-2 character keyword has no trigram, so the index cannot help.")
    DSN = "host=127.0.0.1 port=5432 user=postgres dbname={db}"

    def connect(self, db):
        # prepare_threshold=None: every query planned with its own keyword.
        return psycopg.connect(self.DSN.format(db=db), autocommit=True, prepare_threshold=None)

    def version(self):
        with self.connect("test") as conn:
            row = conn.execute("SHOW server_version").fetchone()
            ctype = conn.execute("SELECT datctype FROM pg_database WHERE datname = 'test'").fetchone()[0]
        self.semantics = self.semantics.format(ctype=ctype)
        return f"PostgreSQL {row[0]}"

    def build(self, docs):
        with self.connect("test") as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {PEERS_DB} WITH (FORCE)")
            admin.execute(f"CREATE DATABASE {PEERS_DB} TEMPLATE template0 ENCODING 'UTF8'"
                          " LC_COLLATE 'C.UTF-8' LC_CTYPE 'C.UTF-8'")
        with self.connect(PEERS_DB) as conn:
            conn.execute("CREATE EXTENSION pg_trgm")
            conn.execute("CREATE TABLE docs (id bigserial PRIMARY KEY, kind text NOT NULL, "
                         "src_id bigint NOT NULL, created_at bigint NOT NULL, body text NOT NULL)")
            started = time.perf_counter()
            with conn.cursor() as cur:
                with cur.copy("COPY docs (kind, src_id, created_at, body) FROM STDIN") as copy:
                    for d in docs:
                        copy.write_row((d.kind, d.src_id, d.created_at, d.body()))
            conn.execute("SET maintenance_work_mem = '256MB'")  # chaja's writer gets as much
            conn.execute("CREATE INDEX docs_body_trgm ON docs USING gin (body gin_trgm_ops)")
            conn.execute("CREATE INDEX docs_created_at ON docs (created_at)")
            conn.execute("VACUUM ANALYZE docs")
            return time.perf_counter() - started

    def size(self):
        with self.connect(PEERS_DB) as conn:
            total, index = conn.execute("SELECT pg_total_relation_size('docs'), "
                                        "pg_relation_size('docs_body_trgm')").fetchone()
        self.size_detail = f"GIN index {index / 1e6:.0f} MB of it"
        return total

    def start(self):
        self.conn = self.connect(PEERS_DB)

    def search(self, keyword, timeout):
        pattern = "%" + keyword + "%"
        started = time.perf_counter()
        try:
            self.conn.execute(f"SET statement_timeout = {max(1, int(timeout * 1000))}")
            newest = [r[0] for r in self.conn.execute(
                "SELECT created_at FROM docs WHERE body ILIKE %s ORDER BY created_at DESC LIMIT 10",
                (pattern,)).fetchall()]
            left = timeout - (time.perf_counter() - started)
            if left <= 0:
                raise QueryTimeout()
            self.conn.execute(f"SET statement_timeout = {max(1, int(left * 1000))}")
            total = self.conn.execute("SELECT count(*) FROM docs WHERE body ILIKE %s",
                                      (pattern,)).fetchone()[0]
        except psycopg.errors.QueryCanceled as e:
            raise QueryTimeout() from e
        return total, newest

    def stop(self):
        self.conn.close()


class Sqlite:
    name = "SQLite FTS5 trigram"
    setup = ("external-content fts5(body, tokenize='trigram case_sensitive 0') over a table with "
             "an index on created_at; 3+ characters: MATCH '\"kw\"'; 1-2 characters: "
             "body LIKE '%kw%' (the documented fallback, a full scan); interrupt() on timeout")
    semantics = ("3+ characters: trigram phrase, Unicode case folding but no NFKC; 1-2 "
                 "characters: the trigram index cannot match them (the FTS5 documentation), so "
                 "LIKE scans the table, and SQLite's LIKE folds ASCII letters only.")

    def __init__(self, workdir):
        self.path = os.path.join(workdir, "peers.sqlite")

    def version(self):
        return f"SQLite {sqlite3.sqlite_version}"

    def build(self, docs):
        for suffix in ("", "-journal", "-wal", "-shm"):
            if os.path.exists(self.path + suffix):
                os.remove(self.path + suffix)
        conn = sqlite3.connect(self.path, isolation_level=None)
        conn.execute("CREATE TABLE docs (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, "
                     "src_id INTEGER NOT NULL, created_at INTEGER NOT NULL, body TEXT NOT NULL)")
        started = time.perf_counter()
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO docs (kind, src_id, created_at, body) VALUES (?, ?, ?, ?)",
                         ((d.kind, d.src_id, d.created_at, d.body()) for d in docs))
        conn.execute("COMMIT")
        conn.execute("CREATE INDEX docs_created_at ON docs (created_at)")
        conn.execute("CREATE VIRTUAL TABLE fts USING fts5(body, content='docs', content_rowid='id', "
                     "tokenize='trigram case_sensitive 0')")
        conn.execute("INSERT INTO fts(fts) VALUES ('rebuild')")
        conn.execute("ANALYZE")
        elapsed = time.perf_counter() - started
        conn.close()
        return elapsed

    def size(self):
        return os.path.getsize(self.path)

    def start(self):
        self.conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)

    def search(self, keyword, timeout):
        timer = threading.Timer(timeout, self.conn.interrupt)
        timer.start()
        try:
            if len(keyword) >= 3:
                phrase = '"' + keyword + '"'
                newest = [r[0] for r in self.conn.execute(
                    "SELECT created_at FROM docs WHERE id IN (SELECT rowid FROM fts WHERE fts MATCH ?) "
                    "ORDER BY created_at DESC LIMIT 10", (phrase,))]
                total = self.conn.execute("SELECT count(*) FROM fts WHERE fts MATCH ?",
                                          (phrase,)).fetchone()[0]
            else:
                pattern = "%" + keyword + "%"
                newest = [r[0] for r in self.conn.execute(
                    "SELECT created_at FROM docs WHERE body LIKE ? ORDER BY created_at DESC LIMIT 10",
                    (pattern,))]
                total = self.conn.execute("SELECT count(*) FROM docs WHERE body LIKE ?",
                                          (pattern,)).fetchone()[0]
        except sqlite3.OperationalError as e:
            if "interrupted" in str(e):
                raise QueryTimeout() from e
            raise
        finally:
            timer.cancel()
        return total, newest

    def stop(self):
        self.conn.close()


class Chaja:
    name = "chaja"
    setup = ("`chaja reindex`, then `chaja serve` with CHAJA_CACHE_L1_MB=0 (no cache); "
             "GET /api/search?q=kw&size=10 (a keyword with a space sent as a \"quoted phrase\")")
    semantics = "The rule itself: any divergence is a bug."

    def __init__(self, binary, source, index_dir, reuse, timeout, workdir):
        self.binary, self.source, self.index_dir = binary, source, index_dir
        self.reuse, self.timeout, self.workdir = reuse, timeout, workdir
        self.env = chaja_env(source, index_dir)

    def version(self):
        out = subprocess.run([self.binary, "--version"], capture_output=True, text=True).stdout.strip()
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip() or "unknown"
        return f"{out} (binary {self.binary}; work tree at commit {commit})"

    def build(self, docs):
        if self.reuse:
            return None
        shutil.rmtree(self.index_dir, ignore_errors=True)
        with open(os.path.join(self.workdir, "chaja-reindex.log"), "w") as out:
            started = time.perf_counter()
            subprocess.run([self.binary, "reindex"], env=self.env, stdout=out,
                           stderr=subprocess.STDOUT, check=True)
            return time.perf_counter() - started

    def size(self):
        return int(subprocess.run(["du", "-sb", self.index_dir], capture_output=True,
                                  text=True, check=True).stdout.split()[0])

    def start(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        env = dict(self.env, CHAJA_BIND=f"127.0.0.1:{self.port}", CHAJA_CACHE_L1_MB="0",
                   CHAJA_REQUEST_TIMEOUT_MS=str(int(self.timeout * 1000)))
        self.log = open(os.path.join(self.workdir, "chaja-serve.log"), "w")
        self.proc = subprocess.Popen([self.binary, "serve"], env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        # Ready, and done replaying the outbox, so the queries measure serving only.
        deadline = time.time() + 600
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"chaja serve exited; see {self.log.name}")
            if time.time() > deadline:
                raise RuntimeError(f"chaja serve not ready after 600 s; see {self.log.name}")
            try:
                status, body = self.get("/readyz", 5)
                ready = json.loads(body)
                if status == 200 and ready["indexer"]["outbox_backlog"] == 0 and not ready["warming"]:
                    break
            except (OSError, ValueError, KeyError, http.client.HTTPException):
                pass
            time.sleep(0.5)
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)

    def get(self, path, timeout):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def search(self, keyword, timeout):
        q = '"' + keyword + '"' if " " in keyword else keyword
        path = "/api/search?" + urllib.parse.urlencode({"q": q, "size": 10})
        try:
            self.conn.timeout = timeout
            if self.conn.sock is not None:
                self.conn.sock.settimeout(timeout)
            self.conn.request("GET", path)
            response = self.conn.getresponse()
            body = response.read()
        except (socket.timeout, TimeoutError) as e:
            self.conn.close()  # reconnects on the next request
            raise QueryTimeout() from e
        except (http.client.HTTPException, ConnectionError):
            self.conn.close()
            raise
        if response.status == 503:
            raise QueryTimeout()
        if response.status != 200:
            raise RuntimeError(f"chaja answered {response.status}: {body[:200]!r}")
        answer = json.loads(body)
        newest = [round(datetime.datetime.fromisoformat(h["created_at"].replace("Z", "+00:00"))
                        .timestamp() * 1000) for h in answer["hits"]]
        return answer["total"], newest

    def stop(self):
        self.conn.close()
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


# --- measuring ----------------------------------------------------------------


def run_engine(engine, docs, warmup, queries, expected, timeout):
    """Build, measure the size, then send every query once, in order."""
    result = {"engine": engine, "version": engine.version()}
    log(f"== {engine.name}: building")
    result["build"] = engine.build(docs)
    result["size"] = engine.size()
    engine.start()
    try:
        for _, keyword in warmup:
            try:
                engine.search(keyword, timeout)
            except QueryTimeout:
                pass
        answers = []
        for n, ((cls, keyword), (want_total, want_newest)) in enumerate(zip(queries, expected), 1):
            started = time.perf_counter()
            try:
                total, newest = engine.search(keyword, timeout)
                timed_out = False
            except QueryTimeout:
                total, newest, timed_out = None, None, True
            elapsed = time.perf_counter() - started
            if elapsed > timeout:
                timed_out = True
            answers.append({"class": cls, "keyword": keyword, "ms": elapsed * 1000,
                            "timeout": timed_out, "total": total, "expected": want_total,
                            "exact": not timed_out and total == want_total,
                            "newest_ok": not timed_out and newest == want_newest})
            if n % 50 == 0:
                log(f"   {n}/{len(queries)} queries")
        result["answers"] = answers
    finally:
        engine.stop()
    return result


def percentile(values, p):
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


# --- the report ---------------------------------------------------------------


def machine():
    model = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kb = int(f.readline().split()[1])
    return f"{os.cpu_count()} cores ({model}), {mem_kb / 1024 ** 2:.1f} GiB RAM, {platform.platform()}"


def stats_row(label, answers, timeout):
    n = len(answers)
    ms = [a["ms"] for a in answers]
    exact = sum(a["exact"] for a in answers)
    newest = sum(a["newest_ok"] for a in answers)
    timeouts = sum(a["timeout"] for a in answers)
    return (f"| {label} | {n} | {exact}/{n} | {newest}/{n} | {timeouts} | "
            f"{percentile(ms, 50):.1f} | {percentile(ms, 99):.1f} | {max(ms):.1f} |")


def report(args, info, results, oracle):
    lines = [f"# chaja against its peers: exact substring search over {info['docs']:,} rows", ""]
    lines += [
        f"- Date: {info['date']}; whole run {info['wall'] / 60:.1f} min",
        f"- Machine: {machine()}",
        f"- Load average at start / end: {info['load_start']} / {info['load_end']}; "
        f"this benchmark ran at nice {os.nice(0)} (its chaja too; MariaDB and PostgreSQL at "
        "their own priority)",
        f"- Data: MariaDB database `{info['database']}`: {info['questions']:,} questions "
        f"(title + content) and {info['reviews']:,} reviews (content), {info['text_mb']:.0f} MB of "
        "UTF-8 text; every engine holds exactly these rows",
        f"- Queries: {len(info['queries'])} never-seen substrings cut from random rows (seed "
        f"{SEED}), spread evenly over lengths {', '.join(CLASSES)} characters; they start and end "
        "with a letter or digit, may hold single spaces, and hold no quote, backslash, `%` or "
        f"`_`. Each is sent once per engine, in the same order, after {WARMUP_QUERIES} other "
        f"warm-up queries. Timeout {args.timeout:g} s for top-10 + total together.",
        "- Expected totals: brute force in Python over the same rows with chaja's rule "
        "(NFKC(keyword).lower() a substring of NFKC(title).lower() or of NFKC(content).lower(), "
        "ς as σ).",
        "- Versions: " + "; ".join(r["version"] for r in results),
        "- MySQL FULLTEXT ngram parser: not available on MariaDB (it has no ngram parser), "
        "so not measured here.",
        "",
        "## Build and size",
        "",
        "| engine | setup | build / load (s) | on disk (MB) |",
        "|---|---|---:|---:|",
    ]
    for r in results:
        e = r["engine"]
        build = "reused" if r["build"] is None else f"{r['build']:.1f}"
        size = f"{r['size'] / 1e6:.0f}"
        detail = getattr(e, "size_detail", None)
        lines.append(f"| {e.name} | {e.setup} | {build} | {size}{' (' + detail + ')' if detail else ''} |")
    lines += ["", "Build: Mroonga from INSERT ... SELECT in MariaDB to the end of ALTER TABLE ADD "
              "FULLTEXT; PostgreSQL from COPY to the end of VACUUM ANALYZE; SQLite from the "
              "first INSERT to the end of the FTS5 rebuild and ANALYZE; chaja: `chaja reindex`, "
              "reading MariaDB (Korean morphology included). Size: Mroonga the Groonga files of "
              "the database (rows + index), PostgreSQL pg_total_relation_size (table, TOAST, "
              "indexes), SQLite the file, chaja the index directory.", ""]
    lines += ["## Latency and exactness per class", "",
              "Latency: top-10 newest + exact total (two queries where the engine needs two), "
              "wall clock in this client, ms; a timed-out query counts at its time spent. "
              "exact: total equals the rule's; top-10 ok: the 10 newest matches' created_at "
              "equal the rule's.", "",
              "| engine / class | queries | exact | top-10 ok | timeouts | p50 | p99 | max |",
              "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        for cls in CLASSES:
            answers = [a for a in r["answers"] if a["class"] == cls]
            if answers:
                lines.append(stats_row(f"{r['engine'].name}, {cls} char", answers, args.timeout))
    lines += ["", "## All classes", "",
              "| engine | queries | exact | top-10 ok | timeouts | p50 | p99 | max |",
              "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append(stats_row(r["engine"].name, r["answers"], args.timeout))
    lines += ["", "## Semantic notes", ""]
    for r in results:
        e = r["engine"]
        wrong = [a for a in r["answers"] if not a["timeout"] and not a["exact"]]
        lines.append(f"- **{e.name}**: {e.semantics}")
        if not wrong:
            lines.append("  Divergences: none.")
            continue
        classes = {}
        for a in wrong:
            label = divergence_class(oracle, a["keyword"], a["expected"], a["total"])
            over = "more" if a["total"] > a["expected"] else "fewer"
            classes.setdefault(label, []).append((a, over))
        lines.append(f"  Divergences: {len(wrong)} of {len(r['answers'])} queries.")
        for label, items in sorted(classes.items(), key=lambda kv: -len(kv[1])):
            more = sum(1 for _, o in items if o == "more")
            examples = ", ".join(f"`{a['keyword']}` {a['total']} vs {a['expected']}" for a, _ in items[:3])
            lines.append(f"  - {label}: {len(items)} ({more} found more rows, "
                         f"{len(items) - more} fewer); e.g. {examples}")
    lines += ["", "Divergence classes: a rule named here reproduces the engine's total exactly "
              "(\"no NFKC\": lowercase of the raw text; \"no NFKC, ASCII-only case folding\": SQLite's "
              "LIKE on the raw text; \"blanks ignored\": the text and keyword with all whitespace removed); otherwise "
              "the class says what the keyword holds. Divergences in 1-2 character keywords "
              "that no such rule explains are listed as such.", ""]
    return "\n".join(lines)


# --- main ---------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000,
                        help="100000 (chaja_100k) or 1000000 (chaja_1m); other counts copy the "
                             "first rows of one of them (for development)")
    parser.add_argument("--database", help="the MariaDB database to read instead")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per query")
    parser.add_argument("--out", default="peers-report.md")
    parser.add_argument("--engines", default="mroonga,postgres,sqlite,chaja",
                        help="comma-separated subset of mroonga,postgres,sqlite,chaja")
    parser.add_argument("--reuse-index", metavar="DIR",
                        help="serve this chaja index instead of rebuilding one (build time not measured)")
    parser.add_argument("--workdir", default=os.path.join(ROOT, "target", "peers"),
                        help="SQLite file, chaja's index and logs")
    args = parser.parse_args()
    args.chaja_bin = os.path.abspath(os.environ.get("CHAJA_BIN") or os.path.join(ROOT, "target", "release", "chaja"))
    os.makedirs(args.workdir, exist_ok=True)
    args.index_dir = os.path.abspath(args.reuse_index or os.path.join(args.workdir, "chaja-index"))

    began = time.time()
    info = {"date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
            "load_start": open("/proc/loadavg").read().split()[0]}
    info["database"] = source_database(args)
    log(f"reading the rows of {info['database']}")
    docs = load_docs(info["database"])
    info["docs"] = len(docs)
    info["questions"] = sum(d.kind == "question" for d in docs)
    info["reviews"] = len(docs) - info["questions"]
    info["text_mb"] = sum(len(d.body().encode()) for d in docs) / 1e6

    queries = sample_queries(docs, args.queries, SEED)
    warmup = sample_queries(docs, WARMUP_QUERIES, SEED + 1, taken=queries)
    info["queries"] = queries
    log(f"{len(docs)} rows, {info['text_mb']:.0f} MB; computing the exact answers of {len(queries)} queries")
    oracle = Oracle(docs)
    expected = [oracle.expected(k) for _, k in queries]

    chosen = args.engines.split(",")
    engines = {
        "mroonga": lambda: Mroonga(info["database"]),
        "postgres": lambda: Postgres(),
        "sqlite": lambda: Sqlite(args.workdir),
        "chaja": lambda: Chaja(args.chaja_bin, info["database"], args.index_dir,
                               bool(args.reuse_index), args.timeout, args.workdir),
    }
    log("MySQL FULLTEXT ngram parser: not available on MariaDB; not measured")
    results = []
    for key in chosen:
        results.append(run_engine(engines[key](), docs, warmup, queries, expected, args.timeout))
    info["load_end"] = open("/proc/loadavg").read().split()[0]
    info["wall"] = time.time() - began

    text = report(args, info, results, oracle)
    with open(args.out, "w") as f:
        f.write(text)
    print(text)
    # Every answer, for a closer look.
    with open(os.path.join(args.workdir, "answers.json"), "w") as f:
        json.dump({r["engine"].name: r["answers"] for r in results}, f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
