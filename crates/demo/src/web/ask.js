// The demo's question form: as the title and body are typed, the questions
// already asked that are most like them ("비슷한 질문이 이미 있어요"), from
// POST /api/similar, debounced as the search box is.
import { getJson, renderMarked } from '/assets/api.js';

const form = document.getElementById('ask-form');
const title = document.getElementById('title');
const content = document.getElementById('content');
const author = document.getElementById('author');
const section = document.getElementById('similar-section');
const list = document.getElementById('similar');
const error = document.getElementById('ask-error');
const done = document.getElementById('ask-done');

// Waits this long after the last keystroke, as the search box's
// suggestions do: one request per pause, not one per key.
const DEBOUNCE_MS = 250;
let timer = null;
let inFlight = null;

function schedule() {
  clearTimeout(timer);
  timer = setTimeout(lookUp, DEBOUNCE_MS);
}

async function lookUp() {
  const typedTitle = title.value.trim();
  const typedBody = content.value.trim();
  if (!typedTitle && !typedBody) {
    show([]);
    return;
  }
  inFlight?.abort();
  inFlight = new AbortController();
  let answer;
  try {
    answer = await getJson('/api/similar', {
      method: 'POST',
      signal: inFlight.signal,
      json: { title: typedTitle || null, text: typedBody, type: 'question', size: 5 },
    });
  } catch (e) {
    if (e.name === 'AbortError') return;
    throw e;
  }
  // Nothing to show for an error here: the form works without the list.
  show(answer.ok ? answer.body.hits : []);
}

function show(hits) {
  list.replaceChildren();
  for (const hit of hits ?? []) {
    const item = document.createElement('li');
    item.className = 'similar-hit';
    item.dataset.id = String(hit.id);
    const heading = document.createElement('strong');
    renderMarked(heading, hit.title ?? hit.snippet);
    item.append(heading);
    if (hit.because?.length) {
      const why = document.createElement('span');
      why.className = 'muted';
      why.textContent = ` · ${hit.because.join(', ')}`;
      item.append(why);
    }
    list.append(item);
  }
  section.hidden = list.childElementCount === 0;
}

title.addEventListener('input', schedule);
content.addEventListener('input', schedule);

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  error.hidden = true;
  done.hidden = true;
  const answer = await getJson('/api/questions', {
    method: 'POST',
    json: { author_id: Number(author.value), title: title.value, content: content.value },
  });
  if (!answer.ok) {
    error.textContent = answer.error.message;
    error.hidden = false;
    return;
  }
  done.textContent = `질문 ${answer.body.id}번을 올렸습니다. 곧 검색됩니다.`;
  done.hidden = false;
});
