// The operator console: admin key, status polling, verify and reindex.
// Every server value is written with textContent.
import { formatCount, formatBytes, formatDateTime, getJson, renderMarked } from './api.js';

const KEY_NAME = 'chaja.adminKey';
const POLL_MS = 2000;
const REBUILD_POLL_MS = 1000;
const KEYWORDS_MS = 30_000;
const DRIFT_SHOWN = 100;
const RUNNING = ['scanning', 'catching_up'];
const TYPE_LABELS = { question: '질문', review: '리뷰' };
const PROBLEM_LABELS = { missing: '누락', extra: '초과', stale: '오래됨', duplicate: '중복', unreadable: '읽을 수 없음' };
const BREAKER_LABELS = { closed: '닫힘 (정상)', open: '열림 (Redis 건너뜀)', half_open: '반열림 (재시도 중)' };

const $ = (id) => document.getElementById(id);
const keyForm = $('key-form');
const keyInput = $('admin-key');
const authError = $('auth-error');
const errorBox = $('error');
const dashboard = $('dashboard');
const forgetKey = $('forget-key');
const runVerify = $('run-verify');
const verifyMessage = $('verify-message');
const runReindex = $('run-reindex');
const reindexMessage = $('reindex-message');
const progress = $('reindex-progress');

let timer = 0;
let statusSeq = 0; // answers to older status requests are dropped
let locked = false; // 401/403: no polling until a key is entered
let lastRun = null; // the last verify run here, until status reports one
let keywordsAt = 0;

const text = (id, value) => {
  $(id).textContent = value;
};

function adminFetch(url, method) {
  const key = sessionStorage.getItem(KEY_NAME);
  // Without a stored key no header at all: a loopback server with no key
  // configured lets such requests through.
  const headers = key ? { Authorization: `Bearer ${key}` } : undefined;
  return getJson(url, { headers, method });
}

// True when the answer was an authentication failure (and the page locked).
function lockedOut(answer) {
  if (answer.status !== 401 && answer.status !== 403) return false;
  locked = true;
  clearTimeout(timer);
  authError.textContent =
    answer.status === 401 ? '관리자 키가 필요합니다' : '관리자 키가 올바르지 않습니다';
  authError.hidden = false;
  keyForm.hidden = false;
  dashboard.hidden = true;
  keyInput.focus();
  return true;
}

function showError(message) {
  errorBox.textContent = message;
  errorBox.hidden = !message;
}

// --- status polling ----------------------------------------------------------

async function refresh() {
  clearTimeout(timer);
  const seq = ++statusSeq;
  const answer = await adminFetch('/api/admin/status');
  if (seq !== statusSeq || lockedOut(answer)) return;
  let delay = POLL_MS;
  if (answer.ok) {
    locked = false;
    authError.hidden = true;
    keyForm.hidden = true;
    dashboard.hidden = false;
    forgetKey.hidden = !sessionStorage.getItem(KEY_NAME);
    showError('');
    renderStatus(answer.body);
    if (RUNNING.includes(answer.body.rebuild?.state)) delay = REBUILD_POLL_MS;
    if (Date.now() - keywordsAt >= KEYWORDS_MS) loadKeywords();
  } else {
    showError(answer.error.message); // keep the last figures; retry on schedule
  }
  if (!document.hidden) timer = setTimeout(refresh, delay);
}

// No polling in a hidden tab; catch up as soon as it shows again.
document.addEventListener('visibilitychange', () => {
  clearTimeout(timer);
  if (!document.hidden && !locked) refresh();
});

function renderStatus(status) {
  const index = status.index ?? {};
  text('doc-count', formatCount(index.documents));
  text('doc-question', formatCount(index.by_type?.question));
  text('doc-review', formatCount(index.by_type?.review));
  text('index-size', formatBytes(index.size_bytes));
  text('generation', formatCount(index.generation));
  text('analyzer', index.analyzer ?? '—');
  text('normalization', index.normalization ?? '—');
  const names = (list) => (list?.length ? list.join(', ') : '없음');
  text('facet-names', names(index.facets));
  text('sortable-names', names(index.sortable));

  const mirror = status.mirror ?? {};
  badge('ready', mirror.ready, '정상', '준비 안 됨');
  badge('database', mirror.database_up, '연결됨', '연결 안 됨');
  text('backlog', mirror.backlog == null ? '알 수 없음' : `${formatCount(mirror.backlog)}건`);
  text(
    'lag',
    mirror.seconds_behind == null
      ? '알 수 없음'
      : `${mirror.seconds_behind.toLocaleString('ko-KR', { maximumFractionDigits: 1 })}초`,
  );
  text(
    'applied-rate',
    `${(mirror.applied_per_second ?? 0).toLocaleString('ko-KR', { maximumFractionDigits: 1 })}행/초`,
  );
  text('applied-seq', formatCount(mirror.applied_seq));
  text('last-commit', mirror.last_commit ? formatDateTime(mirror.last_commit) : '없음');
  renderQuarantine(mirror.quarantined ?? []);

  renderCache(status.cache ?? {});
  renderReplicas(status.replicas);
  renderVerify(status.verify ?? lastRun);
  renderRebuild(status.rebuild);
  text('updated', `마지막 갱신 ${formatDateTime(new Date().toISOString())}`);
}

function badge(id, good, yes, no) {
  const el = $(id);
  el.textContent = good ? yes : no;
  el.classList.toggle('ok', Boolean(good));
  el.classList.toggle('bad', !good);
}

function row(cells) {
  const tr = document.createElement('tr');
  cells.forEach(([value, numeric], i) => {
    const cell = document.createElement(i === 0 ? 'th' : 'td');
    if (i === 0) cell.scope = 'row';
    if (numeric) cell.className = 'num';
    cell.textContent = value;
    tr.append(cell);
  });
  return tr;
}

function renderCache(cache) {
  const rows = (cache.tiers ?? []).map(({ tier, hits, misses }) => {
    // `grace` counts stale answers served while another request
    // recomputes; it has no misses of its own, so no ratio either.
    if (tier === 'grace') {
      return row([[tier], [formatCount(hits), true], ['—', true], ['—', true]]);
    }
    const lookups = hits + misses;
    const ratio = lookups > 0
      ? `${((hits / lookups) * 100).toLocaleString('ko-KR', { maximumFractionDigits: 1 })}%`
      : '—';
    return row([[tier], [formatCount(hits), true], [formatCount(misses), true], [ratio, true]]);
  });
  $('cache-table').tBodies[0].replaceChildren(...rows);
  const redis = cache.redis;
  const redisState = $('redis-state');
  redisState.hidden = !redis?.configured;
  if (redis?.configured) {
    redisState.textContent = `Redis 차단기: ${BREAKER_LABELS[redis.breaker] ?? redis.breaker}`;
  }
}

function renderReplicas(replicas) {
  const table = $('replicas-table');
  const note = $('replicas-empty');
  if (!replicas?.length) {
    table.hidden = true;
    note.hidden = false;
    note.textContent = replicas ? '등록된 인스턴스가 없습니다' : '데이터베이스에 연결할 수 없습니다';
    return;
  }
  table.hidden = false;
  note.hidden = true;
  table.tBodies[0].replaceChildren(
    ...replicas.map((r) =>
      row([
        [r.replica_id],
        [formatCount(r.applied_seq), true],
        [formatCount(r.behind), true],
        [formatDateTime(r.updated_at)],
      ]),
    ),
  );
}

// Rows the indexer could not read (an invalid key), left out of the index.
function renderQuarantine(rows) {
  text('quarantined', rows.length ? `${formatCount(rows.length)}행` : '없음');
  const list = $('quarantine-list');
  const items = rows.slice(0, DRIFT_SHOWN).map((r) => {
    const item = document.createElement('li');
    item.textContent = `${TYPE_LABELS[r.source] ?? r.source} ${JSON.stringify(r.key)} — ${r.reason}`;
    return item;
  });
  list.replaceChildren(...items);
  list.hidden = items.length === 0;
}

// --- verify ------------------------------------------------------------------

function renderVerify(report) {
  const result = $('verify-result');
  const counts = $('verify-counts');
  if (!report) {
    result.textContent = '아직 실행하지 않음';
    counts.hidden = true;
    return;
  }
  // The live report may lack `clean`; no drift of any kind is clean.
  const clean = report.clean ?? ['missing', 'extra', 'stale', 'duplicate', 'unreadable'].every((k) => !report[k]);
  const summary = clean
    ? '일치'
    : `불일치: 누락 ${formatCount(report.missing)}, 초과 ${formatCount(report.extra)}, ` +
      `오래됨 ${formatCount(report.stale)}, 중복 ${formatCount(report.duplicate)}, ` +
      `읽을 수 없음 ${formatCount(report.unreadable ?? 0)}`;
  result.textContent = report.at ? `${summary} (${formatDateTime(report.at)})` : summary;
  counts.hidden = false;
  text('verify-questions', formatCount(report.rows_in_db?.question));
  text('verify-reviews', formatCount(report.rows_in_db?.review));
  text('verify-docs', formatCount(report.docs_in_index));
  text('verify-missing', formatCount(report.missing));
  text('verify-extra', formatCount(report.extra));
  text('verify-stale', formatCount(report.stale));
  text('verify-duplicate', formatCount(report.duplicate));
}

function renderDrift(drift) {
  const list = $('verify-drift');
  const items = drift.slice(0, DRIFT_SHOWN).map((d) => {
    const item = document.createElement('li');
    item.textContent = `${TYPE_LABELS[d.type] ?? d.type} #${d.id} — ${PROBLEM_LABELS[d.problem] ?? d.problem}`;
    return item;
  });
  if (drift.length > DRIFT_SHOWN) {
    const rest = document.createElement('li');
    rest.textContent = `외 ${formatCount(drift.length - DRIFT_SHOWN)}건`;
    items.push(rest);
  }
  list.replaceChildren(...items);
  list.hidden = items.length === 0;
}

runVerify.addEventListener('click', async () => {
  runVerify.disabled = true;
  verifyMessage.textContent = '검증 중…';
  const answer = await adminFetch('/api/admin/verify');
  runVerify.disabled = false;
  if (lockedOut(answer)) return;
  if (!answer.ok) {
    verifyMessage.textContent = answer.error.message;
    return;
  }
  verifyMessage.textContent = '검증 완료';
  lastRun = answer.body;
  renderVerify(answer.body);
  renderDrift(answer.body.drift ?? []);
  refresh();
});

// --- reindex -----------------------------------------------------------------

function renderRebuild(rebuild) {
  const state = $('reindex-state');
  const running = RUNNING.includes(rebuild?.state);
  runReindex.disabled = running;
  progress.hidden = !running;
  if (!rebuild) {
    state.textContent = '진행 중인 재색인 없음';
  } else if (running) {
    if (rebuild.total > 0) {
      progress.max = rebuild.total;
      progress.value = Math.min(rebuild.scanned, rebuild.total);
    } else {
      progress.removeAttribute('value'); // total unknown yet: indeterminate
    }
    const phase = rebuild.state === 'scanning' ? '문서 읽는 중' : '변경분 반영 중';
    // The generation is known once the scan is published.
    const generation = rebuild.generation == null ? '' : ` (generation ${rebuild.generation})`;
    state.textContent =
      `${phase}: ${formatCount(rebuild.scanned)} / ${formatCount(rebuild.total)}${generation}`;
  } else if (rebuild.state === 'done') {
    state.textContent = `새 색인으로 교체됨 (generation ${rebuild.generation})`;
  } else {
    state.textContent = `재색인 실패: ${rebuild.error ?? '알 수 없는 오류'}`;
  }
}

runReindex.addEventListener('click', async () => {
  if (!confirm('색인을 처음부터 새로 만든 뒤 교체합니다. 계속할까요?')) return;
  runReindex.disabled = true;
  reindexMessage.textContent = '';
  const answer = await adminFetch('/api/admin/reindex', 'POST');
  if (lockedOut(answer)) return;
  // 202: progress shows from the next status; 409 and others: their message.
  if (!answer.ok) reindexMessage.textContent = answer.error.message;
  refresh(); // also re-enables the button unless a rebuild runs
});

// --- keywords ----------------------------------------------------------------

async function loadKeywords() {
  keywordsAt = Date.now();
  // Public endpoints; the server's default window is the last hour.
  const [top, zero] = await Promise.all([
    getJson('/api/search/trending?limit=10'),
    getJson('/api/search/zero-results?limit=10'),
  ]);
  renderKeywords($('console-trending'), top);
  renderKeywords($('zero-results'), zero);
}

function renderKeywords(list, answer) {
  const keywords = answer.ok ? answer.body.keywords ?? [] : [];
  if (keywords.length === 0) {
    const item = document.createElement('li');
    item.className = 'none';
    item.textContent = answer.ok ? '없음' : answer.error.message;
    list.replaceChildren(item);
    return;
  }
  list.replaceChildren(
    ...keywords.map(({ keyword, count }) => {
      const item = document.createElement('li');
      const times = document.createElement('span');
      times.className = 'kw-count';
      times.textContent = `${formatCount(count)}회`;
      item.append(keyword, times);
      return item;
    }),
  );
}

// --- key ---------------------------------------------------------------------

keyForm.addEventListener('submit', (event) => {
  event.preventDefault();
  const key = keyInput.value.trim();
  if (!key) return;
  sessionStorage.setItem(KEY_NAME, key);
  keyInput.value = '';
  locked = false;
  refresh();
});

forgetKey.addEventListener('click', () => {
  sessionStorage.removeItem(KEY_NAME);
  location.reload();
});

refresh();

// 비슷한 글 찾기: a like search of a pasted text, as a page would ask it.
const similarForm = $('similar-form');
similarForm.addEventListener('submit', async (event) => {
  event.preventDefault();
  const message = $('similar-message');
  const results = $('similar-results');
  results.replaceChildren();
  message.textContent = '';
  const answer = await getJson('/api/similar', {
    method: 'POST',
    json: { text: $('similar-text').value, size: 10 },
  });
  if (!answer.ok) {
    message.textContent = answer.error.message;
    return;
  }
  const { hits, analysis, took_ms: took } = answer.body;
  message.textContent = `${hits.length}건, ${took.toFixed(1)} ms (${analysis === 'morphemes' ? '형태소' : '단어'} 기준)`;
  for (const hit of hits) {
    const item = document.createElement('li');
    item.append(`[${TYPE_LABELS[hit.type] ?? hit.type} ${hit.id}] `);
    const title = document.createElement('span');
    renderMarked(title, hit.title ?? hit.snippet);
    item.append(title, ` — ${hit.because.join(', ')}`);
    results.append(item);
  }
});
