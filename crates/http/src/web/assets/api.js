// Shared helpers for the chaja pages. Values from the server reach the DOM
// only as text nodes / textContent; nothing here uses innerHTML.

const ENTITIES = { '&lt;': '<', '&gt;': '>', '&amp;': '&', '&quot;': '"', '&#39;': "'" };

// One pass over the five entities the server produces, so "&amp;lt;" decodes
// to the text "&lt;" and not on to "<".
function decodeEntities(text) {
  return text.replace(/&(?:lt|gt|amp|quot|#39);/g, (entity) => ENTITIES[entity]);
}

/**
 * Appends a highlighted server string (HTML-escaped, with <em>…</em> marks)
 * to `parent`: the marks become real <em> elements, everything else text.
 * Unbalanced marks are tolerated: an <em> without </em> runs to the end.
 */
export function renderMarked(parent, marked) {
  let inMark = false;
  // The capture group keeps the tokens in the result, in order.
  for (const piece of String(marked ?? '').split(/(<\/?em>)/)) {
    if (piece === '<em>') inMark = true;
    else if (piece === '</em>') inMark = false;
    else if (piece) {
      const text = document.createTextNode(decodeEntities(piece));
      if (inMark) {
        const em = document.createElement('em');
        em.append(text);
        parent.append(em);
      } else {
        parent.append(text);
      }
    }
  }
}

const isNumber = (n) => typeof n === 'number' && Number.isFinite(n);

/** 12345 → "12,345"; null or not a number → "—". */
export function formatCount(n) {
  return isNumber(n) ? n.toLocaleString('ko-KR') : '—';
}

const dateFormat = new Intl.DateTimeFormat('ko-KR', { dateStyle: 'long', timeZone: 'Asia/Seoul' });
const dateTimeFormat = new Intl.DateTimeFormat('ko-KR', {
  dateStyle: 'medium',
  timeStyle: 'medium',
  timeZone: 'Asia/Seoul',
});

function formatWith(format, iso) {
  const date = iso ? new Date(iso) : null;
  return date && !Number.isNaN(date.getTime()) ? format.format(date) : '—';
}

/** "2025-12-01T01:39:39.230Z" → "2025년 12월 1일" (Korean calendar date). */
export const formatDate = (iso) => formatWith(dateFormat, iso);

/** "2025-12-01T01:39:39.230Z" → "2025. 12. 1. 오전 10:39:39" (KST). */
export const formatDateTime = (iso) => formatWith(dateTimeFormat, iso);

/** 5242880 → "5 MB" (binary units, at most one decimal). */
export function formatBytes(n) {
  if (!isNumber(n)) return '—';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toLocaleString('ko-KR', { maximumFractionDigits: 1 })} ${units[unit]}`;
}

const NETWORK_ERROR = { code: 'network', message: '서버에 연결할 수 없습니다' };

/**
 * Fetches JSON (sending `json` as the body when given) and never throws,
 * except AbortError (callers that abort
 * ignore it). Answers {ok: true, status, body} for 2xx, otherwise
 * {ok: false, status, error: {code, message}}; status is 0 when no
 * response arrived, the HTTP status when one did but its body was not JSON.
 */
export async function getJson(url, { signal, headers, method = 'GET', json } = {}) {
  let response;
  let body;
  const init = { method, signal, headers, cache: 'no-store' };
  if (json !== undefined) {
    // A JSON request body (a like search of a long text).
    init.headers = { ...headers, 'content-type': 'application/json' };
    init.body = JSON.stringify(json);
  }
  try {
    response = await fetch(url, init);
    body = await response.json();
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    return { ok: false, status: response ? response.status : 0, error: NETWORK_ERROR };
  }
  if (response.ok) return { ok: true, status: response.status, body };
  const error = body?.error;
  return {
    ok: false,
    status: response.status,
    error: {
      code: String(error?.code ?? `http_${response.status}`),
      message: String(error?.message ?? `요청이 실패했습니다 (HTTP ${response.status})`),
    },
  };
}
