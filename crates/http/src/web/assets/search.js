// The search page: results as you type, suggestions, type tabs, paging and
// URL state. Server strings are rendered as text (see renderMarked).
import { renderMarked, formatCount, formatDate, getJson } from './api.js';

const PAGE_SIZE = 20;
const DEBOUNCE_MS = 200;
const TRENDING_MS = 60_000;
const TYPES = ['all', 'question', 'review'];
const SORTS = ['recent', 'oldest', 'relevance'];
const TYPE_LABELS = { question: '질문', review: '리뷰' };
// Names a board would show; any other attribute shows its own name.
const SORT_LABELS = { like_count: '추천순', rating: '평점순', view_count: '조회순' };
const FACET_LABELS = { rating: '평점', category: '게시판' };
const facetValueLabel = (name, value) => (name === 'rating' ? `★${value}` : value);

const $ = (id) => document.getElementById(id);
const form = $('search-form');
const box = $('q');
const list = $('suggestions');
const types = $('types');
const tabs = [...types.querySelectorAll('[role="tab"]')];
const sortSelect = $('sort');
const fromInput = $('from');
const toInput = $('to');
const errorBox = $('error');
const total = $('total');
const took = $('took');
const expanded = $('expanded');
const didYouMean = $('did-you-mean');
const didYouMeanList = $('did-you-mean-list');
const panel = $('results-panel');
const results = $('results');
const empty = $('empty');
const sentinel = $('sentinel');
const more = $('more');
const trendingSection = $('trending-section');
const trending = $('trending');
const facetsBox = $('facets');

// --- state -----------------------------------------------------------------

let current = null; // the query last sent; later pages repeat it
let cursor = null; // next_cursor of the last page shown
let seen = new Set(); // "type:id" of the hits shown, so pages never repeat one
let request = null; // AbortController of the search or page in flight
let searchSeq = 0; // bumped by every new search: older answers are dropped
let loadingPage = false;
let counts = { key: '', all: null, question: null, review: null };
let typingTimer = 0;
let suggestRequest = null;
let activeIndex = -1;
let trendingShown = '';
// What the sources declare (GET /api/search/options): facets shown as chips
// and attributes offered as orders.
let searchOptions = { facets: [], sortable: [] };
let facetFilter = null; // { name, value } of the chip pressed, or null

// --- controls and URL ------------------------------------------------------

function selectedType() {
  return tabs.find((tab) => tab.getAttribute('aria-selected') === 'true').dataset.type;
}

function readControls() {
  return {
    q: box.value.trim(),
    type: selectedType(),
    sort: sortSelect.value,
    from: fromInput.value,
    to: toInput.value,
    facet: facetFilter,
  };
}

const sorts = () => [...SORTS, ...searchOptions.sortable.map((name) => `attr.${name}.desc`)];

function readUrl() {
  const params = new URLSearchParams(location.search);
  const oneOf = (value, allowed) => (allowed.includes(value) ? value : allowed[0]);
  const date = (value) => (/^\d{4}-\d{2}-\d{2}$/.test(value ?? '') ? value : '');
  return {
    q: (params.get('q') ?? '').slice(0, 100),
    type: oneOf(params.get('type'), TYPES),
    sort: oneOf(params.get('sort'), sorts()),
    from: date(params.get('from')),
    to: date(params.get('to')),
    facet: facetFromUrl(params),
  };
}

// The one `attr.<facet>=<value>` the URL may carry.
function facetFromUrl(params) {
  for (const name of searchOptions.facets) {
    const value = params.get(`attr.${name}`);
    if (value) return { name, value: value.slice(0, 200) };
  }
  return null;
}

function writeControls(state) {
  facetFilter = state.facet;
  box.value = state.q;
  selectTab(state.type);
  sortSelect.value = state.sort;
  fromInput.value = state.from;
  toInput.value = state.to;
  syncDateBounds();
}

function updateUrl(state, mode) {
  const params = new URLSearchParams();
  if (state.q) params.set('q', state.q);
  if (state.type !== 'all') params.set('type', state.type);
  if (state.sort !== 'recent') params.set('sort', state.sort);
  if (state.from) params.set('from', state.from);
  if (state.to) params.set('to', state.to);
  if (state.facet) params.set(`attr.${state.facet.name}`, state.facet.value);
  const query = params.toString();
  if (location.search === (query ? `?${query}` : '')) return; // no duplicate history entries
  const url = query ? `?${query}` : location.pathname;
  if (mode === 'push') history.pushState(null, '', url);
  else history.replaceState(null, '', url);
}

function selectTab(type) {
  for (const tab of tabs) {
    const selected = tab.dataset.type === type;
    tab.setAttribute('aria-selected', String(selected));
    tab.tabIndex = selected ? 0 : -1; // roving tabindex: one tab stop for the tablist
    if (selected) panel.setAttribute('aria-labelledby', tab.id);
  }
}

// The pickers refuse a range that ends before it starts.
function syncDateBounds() {
  toInput.min = fromInput.value;
  fromInput.max = toInput.value;
}

// --- searching -------------------------------------------------------------

function apiUrl(state, after) {
  const params = new URLSearchParams({ q: state.q });
  if (state.type !== 'all') params.set('type', state.type);
  if (state.sort !== 'recent') params.set('sort', state.sort);
  // Dates are Korean calendar days, whole days inclusive.
  if (state.from) params.set('from', `${state.from}T00:00:00+09:00`);
  if (state.to) params.set('to', `${state.to}T23:59:59.999+09:00`);
  if (searchOptions.facets.length > 0) params.set('facets', searchOptions.facets.join(','));
  if (state.facet) params.set(`attr.${state.facet.name}`, state.facet.value);
  params.set('size', String(PAGE_SIZE));
  if (after) params.set('cursor', after);
  return `/api/search?${params}`;
}

// Resolves to null when the request was aborted by a newer one.
async function fetchPage(state, after, signal) {
  try {
    return await getJson(apiUrl(state, after), { signal });
  } catch {
    return null;
  }
}

const sameFacet = (a, b) => (a?.name ?? '') === (b?.name ?? '') && (a?.value ?? '') === (b?.value ?? '');
const sameQuery = (a, b) =>
  Boolean(b) && ['q', 'type', 'sort', 'from', 'to'].every((k) => a[k] === b[k]) && sameFacet(a.facet, b.facet);

/**
 * Runs the search the controls describe. `mode`: 'push' for committed
 * actions, 'replace' while typing, null when the URL already says it.
 */
async function search(mode) {
  clearTimeout(typingTimer);
  const state = readControls();
  if (mode) updateUrl(state, mode);
  // Typing a space or retyping the same text changes nothing.
  if (mode === 'replace' && sameQuery(state, current)) return;
  request?.abort();
  const seq = ++searchSeq;
  loadingPage = false;
  current = state;

  // The server wants something besides spaces and quotes.
  if (!/[^\s"]/.test(state.q)) {
    clearResults();
    return;
  }
  if (state.from && state.to && state.from > state.to) {
    clearResults();
    showError('시작일은 종료일보다 늦을 수 없습니다.');
    return;
  }

  const controller = (request = new AbortController());
  panel.setAttribute('aria-busy', 'true');
  const answer = await fetchPage(state, null, controller.signal);
  if (!answer || seq !== searchSeq) return; // superseded
  request = null;
  panel.removeAttribute('aria-busy');
  if (!answer.ok) {
    clearResults();
    showError(answer.error.message);
    return;
  }
  showError('');
  showFirstPage(state, answer.body);
}

function showFirstPage(state, body) {
  results.replaceChildren();
  seen = new Set();
  appendHits(body.hits);
  cursor = body.next_cursor ?? null;
  updateCounts(state, body);
  renderFacets(state, body.facets ?? {});
  total.textContent = `총 ${formatCount(body.total)}건`;
  took.textContent = Number.isFinite(body.took_ms)
    ? `${body.took_ms.toLocaleString('ko-KR', { maximumFractionDigits: 1 })} ms`
    : '';
  empty.hidden = results.children.length > 0;

  const forms = body.expanded ?? [];
  expanded.hidden = forms.length === 0;
  expanded.textContent = `동의어 포함: ${forms.join(', ')}`;

  const alternatives = body.did_you_mean ?? [];
  didYouMean.hidden = alternatives.length === 0;
  didYouMeanList.replaceChildren(
    ...alternatives.map((alternative) => {
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'link-button';
      button.dataset.q = alternative.q;
      button.textContent = `${alternative.q} (${formatCount(alternative.total)}건)`;
      const item = document.createElement('li');
      item.append(button);
      return item;
    }),
  );
  pageDone();
}

function clearResults() {
  request?.abort();
  request = null;
  panel.removeAttribute('aria-busy');
  results.replaceChildren();
  seen = new Set();
  cursor = null;
  total.textContent = '';
  took.textContent = '';
  empty.hidden = true;
  expanded.hidden = true;
  didYouMean.hidden = true;
  counts = { key: '', all: null, question: null, review: null };
  renderCounts();
  facetsBox.replaceChildren();
  facetsBox.hidden = true;
  showError('');
  more.hidden = true;
}

function showError(message) {
  errorBox.textContent = message;
  errorBox.hidden = !message;
}

function appendHits(hits) {
  const fragment = document.createDocumentFragment();
  for (const hit of hits ?? []) {
    const key = `${hit.type}:${hit.id}`;
    if (seen.has(key)) continue;
    seen.add(key);
    fragment.append(renderHit(hit));
  }
  results.append(fragment);
}

function renderHit(hit) {
  const item = document.createElement('li');
  item.className = 'hit';
  item.dataset.type = hit.type;
  item.dataset.id = String(hit.id);

  const meta = document.createElement('div');
  meta.className = 'hit-meta';
  const badge = document.createElement('span');
  badge.className = 'hit-type';
  badge.textContent = TYPE_LABELS[hit.type] ?? hit.type;
  const date = document.createElement('time');
  date.className = 'hit-date';
  date.dateTime = hit.created_at;
  date.textContent = formatDate(hit.created_at);
  meta.append(badge, date);
  item.append(meta);

  if (hit.title != null) {
    const title = document.createElement('h3');
    title.className = 'hit-title';
    renderMarked(title, hit.title);
    item.append(title);
  }
  const snippet = document.createElement('p');
  snippet.className = 'hit-snippet';
  renderMarked(snippet, hit.snippet);
  item.append(snippet);

  // The hit's detail: the posts most like it (관련 질문), on demand.
  const related = document.createElement('button');
  related.type = 'button';
  related.className = 'related-toggle link-button';
  related.setAttribute('aria-expanded', 'false');
  related.textContent = hit.type === 'review' ? '비슷한 리뷰' : '관련 질문';
  item.append(related);
  return item;
}

async function toggleRelated(button) {
  const item = button.closest('li.hit');
  const open = button.getAttribute('aria-expanded') === 'true';
  item.querySelector('.related')?.remove();
  button.setAttribute('aria-expanded', String(!open));
  if (open) return;
  const list = document.createElement('ul');
  list.className = 'related';
  item.append(list);
  const params = new URLSearchParams({ source: item.dataset.type, id: item.dataset.id, size: '5' });
  const answer = await getJson(`/api/similar?${params}`);
  if (button.getAttribute('aria-expanded') !== 'true') return;
  if (!answer.ok) {
    list.textContent = answer.error.message;
    return;
  }
  if (!answer.body.hits.length) {
    list.textContent = '비슷한 글이 없습니다.';
    return;
  }
  for (const hit of answer.body.hits) {
    const entry = document.createElement('li');
    entry.className = 'related-hit';
    entry.dataset.id = String(hit.id);
    renderMarked(entry, hit.title ?? hit.snippet);
    list.append(entry);
  }
}

// Tab counts belong to one q/sort/from/to. A type=all answer gives all
// three; a filtered one gives its own type's count for sure, and the other
// type's only when the server counted it (a 0 there may just be the filter).
function updateCounts(state, body) {
  const key = JSON.stringify([state.q, state.sort, state.from, state.to, state.facet]);
  if (counts.key !== key) counts = { key, all: null, question: null, review: null };
  const totals = body.totals ?? {};
  if (state.type === 'all') {
    counts.all = body.total;
    counts.question = totals.question ?? null;
    counts.review = totals.review ?? null;
  } else {
    counts[state.type] = body.total;
    const other = state.type === 'question' ? 'review' : 'question';
    if (totals[other] > 0) counts[other] = totals[other];
    if (counts.question != null && counts.review != null) {
      counts.all = counts.question + counts.review;
    }
  }
  renderCounts();
}

function renderCounts() {
  for (const tab of tabs) {
    const count = counts[tab.dataset.type];
    tab.querySelector('.count').textContent = count == null ? '' : formatCount(count);
  }
}

// Each declared facet as a row of chips, "★5 1,203": pressing one filters
// by its value (attr.<name>=<value>), pressing it again clears the filter.
function renderFacets(state, facets) {
  const groups = [];
  for (const name of searchOptions.facets) {
    // The answer lists values the most frequent first, but a JavaScript
    // object puts integer-like keys ("1", "5") first in numeric order:
    // sort again, as the server did (count, then value).
    const values = Object.entries(facets[name]?.values ?? {}).sort(
      (a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0),
    );
    if (values.length === 0) continue;
    const group = document.createElement('div');
    group.className = 'facet';
    group.setAttribute('role', 'group');
    const label = document.createElement('span');
    label.className = 'facet-name';
    label.textContent = FACET_LABELS[name] ?? name;
    group.setAttribute('aria-label', label.textContent);
    group.append(label);
    for (const [value, count] of values) {
      const chip = document.createElement('button');
      chip.type = 'button';
      chip.className = 'chip';
      chip.dataset.name = name;
      chip.dataset.value = value;
      const pressed = state.facet?.name === name && state.facet?.value === value;
      chip.setAttribute('aria-pressed', String(pressed));
      chip.textContent = `${facetValueLabel(name, value)} ${formatCount(count)}`;
      group.append(chip);
    }
    groups.push(group);
  }
  facetsBox.replaceChildren(...groups);
  facetsBox.hidden = groups.length === 0;
}

// --- paging ----------------------------------------------------------------

async function loadMore() {
  if (!cursor || loadingPage) return;
  loadingPage = true;
  const seq = searchSeq;
  const controller = (request = new AbortController());
  const answer = await fetchPage(current, cursor, controller.signal);
  if (!answer || seq !== searchSeq) return; // a new search took over
  request = null;
  loadingPage = false;
  if (!answer.ok) {
    showError(answer.error.message); // "더 보기" stays for a retry
    return;
  }
  showError('');
  appendHits(answer.body.hits);
  cursor = answer.body.next_cursor ?? null;
  pageDone();
}

const observer = new IntersectionObserver(
  (entries) => {
    if (entries.some((entry) => entry.isIntersecting)) loadMore();
  },
  { rootMargin: '0px 0px 400px 0px' },
);

function pageDone() {
  more.hidden = !cursor;
  // Observing afresh reports whether the sentinel is still in view: a short
  // page would otherwise never trigger the next one.
  observer.unobserve(sentinel);
  if (cursor) observer.observe(sentinel);
}

// --- suggestions -----------------------------------------------------------

const options = () => [...list.children];

async function suggest() {
  suggestRequest?.abort();
  suggestRequest = null;
  const q = box.value;
  if (!q.trim()) {
    showSuggestions([]);
    return;
  }
  const controller = (suggestRequest = new AbortController());
  let answer;
  try {
    answer = await getJson(`/api/suggest?${new URLSearchParams({ q, limit: '8' })}`, {
      signal: controller.signal,
    });
  } catch {
    return; // aborted by a newer keystroke or a committed search
  }
  suggestRequest = null;
  // Suggestions are a convenience: failures just show none.
  showSuggestions(answer.ok ? answer.body.suggestions ?? [] : []);
}

function showSuggestions(suggestions) {
  list.replaceChildren(
    ...suggestions.map((suggestion, index) => {
      const option = document.createElement('li');
      option.id = `suggestion-${index}`;
      option.className = 'suggestion';
      option.setAttribute('role', 'option');
      option.setAttribute('aria-selected', 'false');
      option.textContent = suggestion.text;
      return option;
    }),
  );
  if (suggestions.length > 0 && document.activeElement === box) openList();
  else closeList();
}

function openList() {
  list.hidden = false;
  box.setAttribute('aria-expanded', 'true');
}

function closeList() {
  list.hidden = true;
  box.setAttribute('aria-expanded', 'false');
  setActive(-1);
}

function setActive(index) {
  activeIndex = index;
  options().forEach((option, i) => {
    option.setAttribute('aria-selected', String(i === index));
    option.classList.toggle('active', i === index);
  });
  if (index < 0) {
    box.removeAttribute('aria-activedescendant');
  } else {
    box.setAttribute('aria-activedescendant', `suggestion-${index}`);
    options()[index].scrollIntoView({ block: 'nearest' });
  }
}

function cancelSuggestions() {
  suggestRequest?.abort();
  suggestRequest = null;
  closeList();
}

// A committed search: immediate, with its own history entry.
function commit() {
  cancelSuggestions();
  search('push');
}

function pick(text) {
  box.value = text;
  commit();
}

// --- events ----------------------------------------------------------------

box.addEventListener('input', () => {
  clearTimeout(typingTimer);
  if (!box.value.trim()) cancelSuggestions();
  typingTimer = setTimeout(() => {
    search('replace');
    suggest();
  }, DEBOUNCE_MS);
});

box.addEventListener('keydown', (event) => {
  // While a Hangul syllable is being composed the keys belong to the IME.
  if (event.isComposing || event.keyCode === 229) return;
  const count = list.children.length;
  const open = !list.hidden && count > 0;
  if ((event.key === 'ArrowDown' || event.key === 'ArrowUp') && count > 0) {
    event.preventDefault();
    openList();
    const step = event.key === 'ArrowDown' ? 1 : -1;
    const start = step > 0 ? -1 : count; // from none, Down goes to the first, Up to the last
    setActive(((activeIndex < 0 ? start : activeIndex) + step + count) % count);
  } else if (event.key === 'Enter' && open && activeIndex >= 0) {
    event.preventDefault();
    pick(list.children[activeIndex].textContent);
  } else if (event.key === 'Escape' && open) {
    event.preventDefault(); // otherwise type=search would also clear the box
    closeList();
  }
});

box.addEventListener('blur', closeList);

// mousedown, not click: it comes before the box's blur closes the list.
list.addEventListener('mousedown', (event) => {
  const option = event.target.closest('[role="option"]');
  if (!option) return;
  event.preventDefault();
  pick(option.textContent);
});

form.addEventListener('submit', (event) => {
  event.preventDefault();
  commit();
});

types.addEventListener('click', (event) => {
  const tab = event.target.closest('[role="tab"]');
  if (!tab || tab.getAttribute('aria-selected') === 'true') return;
  selectTab(tab.dataset.type);
  commit();
});

// Arrow keys move between tabs and select them (the ARIA tabs pattern).
types.addEventListener('keydown', (event) => {
  const index = tabs.indexOf(document.activeElement);
  const moves = { ArrowRight: index + 1, ArrowLeft: index - 1, Home: 0, End: tabs.length - 1 };
  if (index < 0 || !(event.key in moves)) return;
  event.preventDefault();
  const tab = tabs[(moves[event.key] + tabs.length) % tabs.length];
  tab.focus();
  tab.click();
});

for (const control of [sortSelect, fromInput, toInput]) {
  control.addEventListener('change', () => {
    syncDateBounds();
    commit();
  });
}

facetsBox.addEventListener('click', (event) => {
  const chip = event.target.closest('button.chip');
  if (!chip) return;
  const { name, value } = chip.dataset;
  facetFilter = sameFacet(facetFilter, { name, value }) ? null : { name, value };
  commit();
});

didYouMeanList.addEventListener('click', (event) => {
  const button = event.target.closest('button[data-q]');
  if (button) pick(button.dataset.q);
});

more.addEventListener('click', loadMore);

results.addEventListener('click', (event) => {
  const button = event.target.closest('.related-toggle');
  if (button) toggleRelated(button);
});

window.addEventListener('popstate', () => {
  cancelSuggestions();
  writeControls(readUrl());
  search(null);
});

// --- trending --------------------------------------------------------------

async function loadTrending() {
  if (document.hidden) return;
  // The server's default window is the last hour.
  const answer = await getJson('/api/search/trending?limit=10');
  const keywords = answer.ok ? (answer.body.keywords ?? []).map((k) => k.keyword) : [];
  trendingSection.hidden = keywords.length === 0;
  // Re-rendering an unchanged list would drop the focus of a keyboard user.
  const key = JSON.stringify(keywords);
  if (key === trendingShown) return;
  trendingShown = key;
  trending.replaceChildren(
    ...keywords.map((keyword) => {
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'trend';
      button.textContent = keyword;
      const item = document.createElement('li');
      item.append(button);
      return item;
    }),
  );
}

trending.addEventListener('click', (event) => {
  const button = event.target.closest('button.trend');
  if (!button) return;
  pick(button.textContent);
  window.scrollTo({ top: 0 }); // on narrow screens the list sits below the results
});

// --- start -----------------------------------------------------------------

// The orders and facets the sources declare; without them the page offers
// the built-in orders only.
async function loadOptions() {
  const answer = await getJson('/api/search/options');
  if (!answer.ok) return;
  searchOptions = { facets: answer.body.facets ?? [], sortable: answer.body.sortable ?? [] };
  for (const name of searchOptions.sortable) {
    const option = document.createElement('option');
    option.value = `attr.${name}.desc`;
    option.textContent = SORT_LABELS[name] ?? `${name} 높은순`;
    sortSelect.append(option);
  }
}

await loadOptions();
writeControls(readUrl());
search(null);
loadTrending();
setInterval(loadTrending, TRENDING_MS);
