// The agenthost web panel. Talks to `agenthost serve` only through its public API: /api/chat
// (start a run, then read its events as SSE), /api/conversations (list, read, rename, delete),
// /api/runs/:id/*, /v1/models (the provider and model pickers), /readyz, /api/plugins and
// /api/resources (plugin resources: graph://<name> drawn on the canvas, torrent://downloads in the
// downloads panel — the same hook the MCP server uses). It logs in through the server's /login
// (the printed URL or the panel's form): an HttpOnly cookie plus a session secret this script
// sends as a header. It never sees the token.
'use strict';

const $ = (id) => document.getElementById(id);
const state = {
  conversation: localStorage.getItem('agenthost-conversation') || '',
  conversations: [],
  conversationsLoad: 0,  // which load of the list is the newest: an older answer must not replace it
  renaming: false,  // a conversation's name is being typed: the list waits
  run: 0,
  lastSeq: 0,
  running: false,
  streamAbort: null,
  graphUri: '',
  userPickedGraph: false,
  selected: new Set(),
  cy: null,
  toolLines: new Map(),   // call_id → {element, summary, resultPre, started, tool, args}
  assistant: null,        // the assistant message being streamed: {element, text}
  reasoning: null,        // its reasoning <div>
  shownAnswer: '',        // the text of the last assistant message shown (the end event's answer is not shown twice)
  models: new Map(),      // provider → its models, from /v1/models
  panels: { graph: false, downloads: false, activity: false },  // which side panels have content
  downloads: new Map(),   // hash → the last state seen
  downloadsTimer: 0,
  loginShown: false,
};

// ---- API ----

async function api(path, options = {}) {
  const headers = Object.assign({}, options.headers || {});
  if (options.body && !headers['Content-Type']) headers['Content-Type'] = 'application/json';
  // The session: this header (its secret from the login page) and the HttpOnly cookie, together.
  const session = localStorage.getItem('agenthost-session');
  if (session) headers['X-Agenthost-Session'] = session;
  let res;
  try { res = await fetch(path, Object.assign({}, options, { headers })); } catch (e) {
    if (!(options.signal && options.signal.aborted)) serverAway(true);
    throw new Error('the server is not answering (stopped or restarting); the panel reconnects by itself');
  }
  serverAway(false);
  if (res.status === 401) showLogin();
  return res;
}

async function apiJson(path, options) {
  const res = await api(path, options);
  if (res.status === 204) return {};
  const body = await res.json().catch(() => ({}));
  // The server's words for a 401 are for API clients (a header to send): a person logs in.
  if (res.status === 401) throw new Error('this browser is not logged in to the server: log in with the form (what you typed is kept)');
  if (!res.ok) throw new Error((body.error && body.error.message) || `the server answered ${res.status} ${res.statusText}`);
  return body;
}

// ---- the server going away and coming back ----

// While the server does not answer, a banner says so and /readyz is asked every 2 s; once it
// answers, the banner goes and the open conversation is read again (a run the restart
// interrupted shows Resume, one the server resumed by itself streams again).
function serverAway(away) {
  if (away === !!state.away) return;
  state.away = away;
  $('server-away').hidden = !away;
  clearInterval(state.awayTimer);
  if (away) {
    log('warn', 'the server is not answering');
    if (state.running && state.assistant) markCutOff(state.assistant.element);
    $('status-ready').textContent = 'server unreachable';
    $('status-ready').className = 'not-ready';
    state.awayTimer = setInterval(loadStatus, 2000);
    return;
  }
  log('info', 'the server answers again');
  loadStatus();
  if (state.cancelWhenBack && state.cancelWhenBack === state.run) cancelRun();
  if (state.signedIn) loadPluginReport();  // a restarted server may have loaded other plugins
  if (state.signedIn && state.conversation && !state.streamAbort) openConversation(state.conversation);
}

// The server's login form: shown when the API says the browser is not logged in.
function showLogin() {
  if (state.loginShown) return;
  state.loginShown = true;
  if (new URLSearchParams(location.search).get('login') === 'failed')
    $('login-text').textContent = 'That token was not right. Paste the token from data_dir/server-token (or the [server] token_env variable), or open the login URL agenthost serve printed.';
  $('login').addEventListener('cancel', (e) => e.preventDefault());  // nothing works without logging in
  $('login').addEventListener('close', () => setTimeout(() => $('login').showModal()));  // a browser may close it anyway
  $('login').showModal();
}

// ---- Markdown: markdown-it renders, DOMPurify cleans, links open in a new tab ----

const markdown = window.markdownit && window.DOMPurify ? window.markdownit({ html: false, linkify: true, breaks: false }) : null;
if (markdown) {
  // Images are not loaded (no request leaves for a model's URL): each is a link that says what it
  // shows, its alt text kept (an outside try: an image vanished, alt text and all).
  markdown.renderer.rules.image = (tokens, idx) => {
    const token = tokens[idx];
    const src = token.attrGet('src') || '';
    const alt = token.content || src;
    return `<a href="${markdown.utils.escapeHtml(src)}" class="image-link">🖼 ${markdown.utils.escapeHtml(alt)}</a>`;
  };
  window.DOMPurify.addHook('afterSanitizeAttributes', (node) => {
    if (node.tagName === 'A') { node.setAttribute('target', '_blank'); node.setAttribute('rel', 'noopener noreferrer'); }
  });
}

function renderMarkdown(element, text) {
  if (!markdown || text.length > kMarkdownLimit) { element.classList.add('plain'); element.textContent = text; return; }
  element.innerHTML = window.DOMPurify.sanitize(markdown.render(text), { FORBID_TAGS: ['img', 'style', 'form', 'input', 'button'] });
  for (const pre of element.querySelectorAll('pre')) {
    const block = document.createElement('div');
    block.className = 'code-block';
    const copy = document.createElement('button');
    copy.type = 'button';
    copy.className = 'copy';
    copy.textContent = 'Copy';
    copy.setAttribute('aria-label', 'Copy this code');
    copy.addEventListener('click', () => copyText(pre.innerText, copy));
    pre.tabIndex = 0;  // a long line scrolls: the keyboard can reach it
    pre.replaceWith(block);
    block.append(pre, copy);
    const code = pre.querySelector(':scope > code');
    if (code) highlightCode(code);
  }
}

// A code block whose fence names a language highlight.js knows is coloured (panel.css has the
// colours); one without a language stays plain (guessing is slow and often wrong). Streamed text is
// drawn again every frame: the blocks already coloured come from a small cache, bounded in characters.
const highlighted = new Map();  // language + "\n" + code → its HTML
let highlightedChars = 0;
function highlightCode(code) {
  const language = (/(?:^|\s)language-([\w+#.-]+)/.exec(code.className) || [])[1];
  if (!window.hljs || !language || !window.hljs.getLanguage(language)) return;
  const key = `${language}\n${code.textContent}`;
  let html = highlighted.get(key);
  if (html === undefined) {
    html = window.hljs.highlight(code.textContent, { language, ignoreIllegals: true }).value;  // escapes the text
    highlighted.set(key, html);
    highlightedChars += key.length + html.length;
    for (const [k, v] of highlighted) {
      if (highlightedChars <= 1000000) break;
      highlighted.delete(k);
      highlightedChars -= k.length + v.length;
    }
  }
  code.innerHTML = html;
  code.classList.add('hljs');
}

// ---- diagrams: a ```mermaid block of a complete answer is drawn ----
// mermaid is large: its script is loaded the first time an answer holds a diagram, and a diagram is
// drawn once its answer is complete (settleAssistant, addAssistant), not on every streamed frame.
// Drawn, the block becomes a <figure>: the picture, then its source folded under it. A block mermaid
// cannot draw stays a code block with a note; without mermaid it stays as it is.
let mermaidLoad = null;  // the promise of window.mermaid (null when it cannot be had)
let diagramIds = 0;
const diagramSources = new WeakMap();  // a drawn picture → its source (drawn again in the other theme)

function loadMermaid() {
  mermaidLoad = mermaidLoad || new Promise((resolve) => {
    const script = document.createElement('script');
    script.src = '/panel/vendor/mermaid.min.js';
    script.onload = () => resolve(window.mermaid || null);  // without npm the build serves a stand-in that defines nothing
    script.onerror = () => resolve(null);
    document.head.append(script);
  });
  return mermaidLoad;
}

async function diagramSvg(mermaid, source) {
  const id = `diagram-${++diagramIds}`;
  // Labels as SVG text, not HTML in a <foreignObject>: DOMPurify removes HTML inside SVG.
  mermaid.initialize({ startOnLoad: false, securityLevel: 'strict', suppressErrorRendering: true, htmlLabels: false,
    flowchart: { htmlLabels: false }, theme: document.documentElement.dataset.theme === 'dark' ? 'dark' : 'default' });
  try {
    const { svg } = await mermaid.render(id, source);
    return window.DOMPurify.sanitize(svg, { USE_PROFILES: { svg: true, svgFilters: true } });
  } finally {
    for (const left of [id, `d${id}`]) { const e = document.getElementById(left); if (e) e.remove(); }  // what a failed drawing leaves
  }
}

async function drawDiagrams(element) {
  const blocks = [...element.querySelectorAll('.code-block')]
    .filter((b) => !b.dataset.diagram && b.querySelector(':scope > pre > code.language-mermaid'));
  if (!blocks.length || !window.DOMPurify) return;
  for (const block of blocks) block.dataset.diagram = 'drawing';
  const mermaid = await loadMermaid();
  if (!mermaid) return;
  for (const block of blocks) {
    if (!block.isConnected) continue;  // drawn again or cleared meanwhile
    const source = block.querySelector('code').textContent;
    try {
      const svg = await diagramSvg(mermaid, source);
      if (!block.isConnected) continue;
      const picture = document.createElement('div');
      picture.className = 'diagram-picture';
      picture.setAttribute('role', 'img');  // on the picture, not the figure: the source's <summary> must stay reachable
      picture.setAttribute('aria-label', `Diagram: ${source.trim().split('\n')[0].trim()}`);
      picture.innerHTML = svg;
      diagramSources.set(picture, source);
      const details = document.createElement('details');
      const summary = document.createElement('summary');
      summary.textContent = 'Show source';
      const figure = document.createElement('figure');
      figure.className = 'diagram';
      block.replaceWith(figure);
      details.append(summary, block);
      figure.append(picture, details);
      block.dataset.diagram = 'drawn';
    } catch (e) {
      block.dataset.diagram = 'failed';
      const note = document.createElement('p');
      note.className = 'diagram-note';
      note.textContent = `This diagram could not be drawn (${String((e && e.message) || e).split('\n')[0].replace(/:$/, '')}).`;
      block.append(note);
      log('warn', `diagram: ${(e && e.message) || e}`);
    }
  }
}

// The theme changed: the diagrams are drawn again in its colours.
async function redrawDiagrams() {
  const pictures = [...document.querySelectorAll('#transcript .diagram-picture')];
  if (!pictures.length) return;
  const mermaid = await loadMermaid();
  for (const picture of pictures) {
    try { picture.innerHTML = await diagramSvg(mermaid, diagramSources.get(picture)); } catch (e) { log('warn', `diagram: ${e.message}`); }
  }
}

async function copyText(text, button) {
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = 'Copied';
  } catch (e) {
    button.textContent = 'Copy failed';
    log('warn', `copy: ${e.message}`);
  }
  setTimeout(() => { button.textContent = 'Copy'; }, 1500);
}

// ---- activity log and status ----

// An error the user caused and must see (not only in the activity log), for a few seconds.
function tell(text) {
  log('error', text);
  $('toast').textContent = text;
  $('toast').hidden = false;
  clearTimeout(state.toastTimer);
  state.toastTimer = setTimeout(() => { $('toast').hidden = true; }, 8000);
}

function log(level, text) {
  const li = document.createElement('li');
  li.className = level;
  li.textContent = `${new Date().toLocaleTimeString()} ${level}: ${text}`;
  $('log').prepend(li);
  while ($('log').children.length > 200) $('log').lastChild.remove();
}

// The status bar names the provider of the conversation's run: the one picked, else the default.
function showProvider(provider, model) {
  state.runProvider = provider;
  const defaults = state.defaults || { provider: '?', model: '' };
  const name = provider || defaults.provider;
  const shownModel = provider ? model : model || defaults.model;
  $('status-provider').textContent = `provider ${name}${shownModel ? ' · ' + shownModel : ''}`;
}

async function loadStatus() {
  try {
    const res = await api('/readyz');
    const body = await res.json();
    state.defaults = { provider: body.provider || '?', model: body.model || '' };
    if (!state.runProvider) showProvider('', '');
    $('status-ready').textContent = body.ready ? 'ready' : `not ready: ${(body.error && body.error.message) || 'see /readyz'}`;
    $('status-ready').className = body.ready ? 'ready' : 'not-ready';
    $('provider').options[0].textContent = `default (${body.provider || '?'})`;
    $('model').options[0].textContent = `default${body.model ? ` (${body.model})` : ''}`;
  } catch (e) {
    $('status-ready').textContent = 'server unreachable';
    $('status-ready').className = 'not-ready';
  }
}

// The plugins' errors and warnings, into the activity log (once signed in: it needs the session).
async function loadPluginReport() {
  try {
    const report = await apiJson('/api/plugins');
    for (const p of report.plugins || []) {
      if (p.error) log('error', `plugin ${p.name}: ${p.error.message}`);
      for (const w of p.warnings || []) log('warn', `plugin ${p.name}: ${w}`);
    }
  } catch (e) { log('error', `plugins: ${e.message}`); }
}

// How a run ended, where the user looks: the status bar, and the transcript for a failure.
function showOutcome(e, reopened = false) {
  const words = { done: 'done', cancelled: 'cancelled', approval_pending: 'waiting for approval', interrupted: 'interrupted' };
  const status = e.ok ? 'done' : words[e.stop_reason] || 'failed';
  $('status-run').textContent = `run ${e.run || state.run} ${status}`;
  if (reopened && !e.ok && e.error && e.stop_reason !== 'approval_pending') addMessage('error', e.error);  // live, the error event said it
}

function setRunning(running) {
  state.running = running;
  $('send').disabled = running;
  $('cancel').hidden = !running;
  $('status-run').textContent = running ? `run ${state.run} running` : (state.run ? `run ${state.run} idle` : '');
  if (!running) $('status-queue').textContent = '';
}

// ---- provider and model pickers (from /v1/models: "agenthost/<provider>" and "<provider>/<model>") ----

async function loadModels() {
  let ids = [];
  try { ids = ((await apiJson('/v1/models')).data || []).map((m) => m.id); } catch (e) { log('warn', `models: ${e.message}`); return; }
  state.models.clear();
  for (const id of ids) if (id.startsWith('agenthost/')) state.models.set(id.slice(10), []);
  for (const id of ids) {
    const slash = id.indexOf('/');
    const provider = id.slice(0, slash);
    if (slash > 0 && provider !== 'agenthost' && state.models.has(provider)) state.models.get(provider).push(id.slice(slash + 1));
  }
  const select = $('provider');
  select.replaceChildren(select.options[0], ...[...state.models.keys()].map((p) => new Option(p, p)));
  applyPicks(savedPicks());
}

function fillModels(provider) {
  const select = $('model');
  const models = provider ? state.models.get(provider) || [] : [];
  select.replaceChildren(select.options[0], ...models.map((m) => new Option(m, m)));
  select.disabled = !provider;
}

// The provider and model chosen for a conversation are kept in this browser and sent with each
// message; undefined when none were chosen for it.
function picksOf(conversation) { return JSON.parse(localStorage.getItem('agenthost-picks') || '{}')[conversation || '']; }

function savedPicks() { return picksOf(state.conversation) || { provider: '', model: '' }; }

function savePicks() {
  const all = JSON.parse(localStorage.getItem('agenthost-picks') || '{}');
  all[state.conversation || ''] = { provider: $('provider').value, model: $('model').value, mode: $('mode').value };
  localStorage.setItem('agenthost-picks', JSON.stringify(all));
}

function applyPicks(picks) {
  const provider = state.models.has(picks.provider) ? picks.provider : '';
  $('provider').value = provider;
  fillModels(provider);
  $('model').value = provider && (state.models.get(provider) || []).includes(picks.model) ? picks.model : '';
  // The mode chosen last is kept (an outside try: it fell back to execute after a reload).
  if (picks.mode && [...$('mode').options].some((o) => o.value === picks.mode)) $('mode').value = picks.mode;
}

// ---- conversations: newest first, searched, renamed, deleted ----

function fold(text) { return text.normalize('NFD').replace(/[\u0300-\u036f]/g, '').toLowerCase(); }

function conversationLabel(c) { return c.title || c.last_prompt || c.id; }

// Loads may overlap (a run's end and a delete each start one). Only the newest load's answer is
// drawn: an older one may have been read before the delete and would bring the deleted
// conversation back, for good, on a slow server.
async function loadConversations() {
  const load = ++state.conversationsLoad;
  let conversations = null;
  try { conversations = (await apiJson('/api/conversations')).conversations || []; } catch (e) { log('error', e.message); }
  if (load !== state.conversationsLoad) return;
  if (conversations) state.conversations = conversations;
  drawConversations();
}

// While a name is being typed the list is not redrawn: a redraw (a run's end reads the list again)
// would take the input away and the keys typed next would go nowhere. The rename draws it when done.
function drawConversations() {
  if (state.renaming) return;
  const query = fold($('conversation-search').value.trim());
  const shown = state.conversations.filter((c) => !query || fold(`${c.title || ''} ${c.last_prompt || ''} ${c.id}`).includes(query));
  const ul = $('conversation-list');
  // A keyboard user's place survives the redraw: the same button of the same conversation keeps the focus.
  const focused = ul.contains(document.activeElement) ? document.activeElement : null;
  const place = focused && focused.closest('li') ? { id: focused.closest('li').dataset.id, index: [...focused.parentElement.children].indexOf(focused) } : null;
  ul.replaceChildren(...shown.map(conversationItem));
  if (place) {
    const li = [...ul.children].find((x) => x.dataset.id === place.id);
    const again = li && li.children[place.index];
    if (again) again.focus();
  }
  $('conversation-empty').hidden = shown.length > 0;
  $('conversation-empty').textContent = state.conversations.length ? 'No conversation matches the search.' : 'No conversations yet.';
}

function iconButton(text, label, onClick) {
  const b = document.createElement('button');
  b.type = 'button';
  b.className = 'icon';
  b.textContent = text;
  b.setAttribute('aria-label', label);
  b.title = label;
  b.addEventListener('click', onClick);
  return b;
}

function conversationItem(c) {
  const li = document.createElement('li');
  li.dataset.id = c.id;
  const current = c.id === state.conversation;
  li.classList.toggle('current', current);
  const open = document.createElement('button');
  open.type = 'button';
  open.className = 'open';
  open.textContent = conversationLabel(c);
  open.title = `${new Date(c.updated_at * 1000).toLocaleString()} · ${c.runs} run(s)${c.busy ? ' · running' : ''}`;
  if (c.busy) {  // a run of it is going on: a dot, and words for a screen reader
    const dot = document.createElement('span');
    dot.className = 'busy-dot';
    dot.setAttribute('aria-hidden', 'true');
    const words = document.createElement('span');
    words.className = 'visually-hidden';
    words.textContent = ' (running)';
    open.prepend(dot);
    open.append(words);
    li.classList.add('busy');
  }
  open.setAttribute('aria-current', current ? 'true' : 'false');
  open.addEventListener('click', () => { openConversation(c.id); closeDrawers(); });
  const label = conversationLabel(c);
  li.append(open,
    iconButton('✎', `Rename “${label}”`, () => startRename(li, c)),
    iconButton('✖', `Delete “${label}”`, () => confirmDelete(c)));
  return li;
}

function startRename(li, c) {
  const input = document.createElement('input');
  input.type = 'text';
  input.className = 'rename-input';
  input.value = c.title || c.last_prompt || '';
  input.maxLength = 200;
  input.setAttribute('aria-label', 'New name of the conversation (Enter saves, Escape cancels)');
  li.replaceChildren(input);
  state.renaming = true;
  input.focus();
  input.select();
  let settled = false;
  const finish = async (save) => {
    if (settled) return;
    settled = true;
    state.renaming = false;
    if (save && input.value.trim() !== (c.title || '')) {
      try {
        await apiJson(`/api/conversations/${encodeURIComponent(c.id)}`, { method: 'PATCH', body: JSON.stringify({ title: input.value.trim() }) });
      } catch (e) { tell(`Could not rename: ${e.message}`); }
    }
    await loadConversations();
    // Back to the conversation renamed (or not), found by its id whatever its name now; unless
    // the focus went somewhere meanwhile (a click away, another rename begun on a slow server).
    if (document.activeElement && document.activeElement !== document.body) return;
    const again = [...$('conversation-list').children].find((x) => x.dataset.id === c.id);
    ((again && again.querySelector('.open')) || $('conversation-search')).focus();
  };
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') { e.preventDefault(); finish(true); }
    if (e.key === 'Escape') { e.preventDefault(); finish(false); }
  });
  // Clicking away cancels, as Escape does: only Enter saves a name (an outside try: a half-typed name was saved).
  input.addEventListener('blur', () => finish(false));
}

function confirmDelete(c) {
  const dialog = $('confirm');
  $('confirm-text').textContent = `“${conversationLabel(c)}” and its ${c.runs} run(s) will be removed from this agenthost. This cannot be undone.`;
  dialog.returnValue = '';
  dialog.onclose = async () => {
    if (dialog.returnValue !== 'ok') return;
    try {
      await apiJson(`/api/conversations/${encodeURIComponent(c.id)}`, { method: 'DELETE' });
      log('info', `deleted the conversation ${conversationLabel(c)}`);
      if (c.id === state.conversation) newConversation(); else await loadConversations();
    } catch (e) { tell(`Could not delete: ${e.message}`); }
    $('new-conversation').focus();
  };
  dialog.showModal();
}

// ---- branches: an edited prompt or a regenerated answer is a new run after an earlier turn ----

// The conversation's runs as a tree: each run follows the turn its after_turn names (0: none).
function conversationTree(convo) {
  const runs = new Map(convo.runs.map((r) => [r.turn, r]));
  const children = new Map();
  for (const r of convo.runs) children.set(r.after_turn, [...(children.get(r.after_turn) || []), r.turn]);
  for (const list of children.values()) list.sort((a, b) => a - b);
  return { runs, children, newest: convo.runs.reduce((n, r) => Math.max(n, r.turn), 0) };
}

// The conversation as read from the server, and its runs' tree, for drawing branches and exporting.
function keepConversation(convo) {
  state.convo = convo;
  state.tree = conversationTree(convo);
}

function followed(tree, turn) { const run = tree.runs.get(turn); return run ? run.after_turn : turn - 1; }

// The newest turn at or below `turn`: a version chosen shows its latest continuation.
function newestBelow(tree, turn) {
  let newest = turn;
  for (const stack = [turn]; stack.length;) {
    const t = stack.pop();
    newest = Math.max(newest, t);
    stack.push(...(tree.children.get(t) || []));
  }
  return newest;
}

function branchTurns(tree, leaf) {
  const turns = new Set();
  for (let t = leaf; t > 0 && !turns.has(t); t = followed(tree, t)) turns.add(t);
  return turns;
}

// The shown branch, from the stored messages: each prompt with its versions and Edit, each answer
// with the model that wrote it, Copy and Regenerate.
function drawBranch() {
  const { convo, tree } = state;
  const turns = branchTurns(tree, state.leaf);
  clearTranscript();
  state.bulk = true;  // one layout for the whole transcript, not one per message
  try {
    let turn = 0;
    for (const m of convo.messages) {
      if (!turns.has(m.turn)) continue;
      if (m.turn !== turn && turn) addAnswerBar(turn);
      turn = m.turn;
      const element = renderStored(m);
      if (m.kind === 'prompt' && element) addPromptBar(element, m.turn);
    }
    if (turn) addAnswerBar(turn);
  } finally { state.bulk = false; }
  if (!convo.messages.length) showWelcome();
  showPartial();
}

function smallButton(text, label, onClick) {
  const b = iconButton(text, label, onClick);
  b.className = 'small';
  return b;
}

// Under a prompt: its versions (‹ 2/3 ›) when it was edited or its answer regenerated, and Edit.
function addPromptBar(bubble, turn) {
  const tree = state.tree;
  const run = tree.runs.get(turn);
  if (!run) return;
  const bar = document.createElement('div');
  bar.className = 'prompt-bar';
  bar.dataset.turn = String(turn);
  const versions = tree.children.get(run.after_turn) || [turn];
  if (versions.length > 1) {
    const at = versions.indexOf(turn);
    const show = (k) => () => {
      state.leaf = newestBelow(tree, versions[k]);
      drawBranch();
      // The focus stays on the arrows: the same one, or the other when that one reached the end.
      const bar = document.querySelector(`#transcript .prompt-bar[data-turn="${versions[k]}"]`);
      const order = k < at ? ['.older', '.newer'] : ['.newer', '.older'];
      const target = bar && order.map((c) => bar.querySelector(c)).find((b) => b && !b.disabled);
      if (target) target.focus();
    };
    const older = smallButton('‹', at > 0 ? `Show the previous version (${at} of ${versions.length})` : 'No older version', show(at - 1));
    older.classList.add('older');
    older.disabled = at === 0;
    const where = document.createElement('span');
    where.className = 'muted';
    where.textContent = `${at + 1}/${versions.length}`;
    const newer = smallButton('›', at + 1 < versions.length ? `Show the next version (${at + 2} of ${versions.length})` : 'No newer version', show(at + 1));
    newer.classList.add('newer');
    newer.disabled = at === versions.length - 1;
    bar.append(older, where, newer);
  }
  const edit = smallButton('Edit', 'Edit this message and send it again (the old version is kept)', () => startEdit(bubble, bar, run));
  bar.append(edit);
  bubble.after(bar);
}

// Under an answer: the provider and model that wrote it, Copy answer and Regenerate.
function addAnswerBar(turn) {
  const run = state.tree && state.tree.runs.get(turn);
  if (!run || run.status === 'running' || run.status === 'paused') return;  // not answered yet
  const bar = document.createElement('div');
  bar.className = 'answer-bar';
  bar.dataset.turn = String(turn);
  const who = document.createElement('span');
  who.className = 'muted model-name';
  who.textContent = `${run.provider || 'default'}${run.model ? ` · ${run.model}` : ''}`;
  bar.append(who);
  if (run.answer) {
    const copy = smallButton('Copy', 'Copy the whole answer', () => copyText(run.answer, copy));
    bar.append(copy);
  }
  const again = smallButton('Regenerate', 'Regenerate: ask again for a new answer to this message (this one is kept)',
    () => startRun({ message: run.prompt, after_turn: run.after_turn }, 'regenerating'));
  bar.append(again);
  $('transcript').append(bar);
}

function startEdit(bubble, bar, run) {
  if (state.running) return tell('Wait for the run to end (or cancel it) before editing a message.');
  const form = document.createElement('form');
  form.className = 'edit-form';
  const box = document.createElement('textarea');
  box.value = run.prompt || bubble.textContent;
  box.rows = Math.min(10, box.value.split('\n').length + 1);
  box.setAttribute('aria-label', 'The message, edited (Enter sends it as a new version, Escape cancels)');
  const send = document.createElement('button');
  send.type = 'submit';
  send.className = 'primary';
  send.textContent = 'Send';
  const cancel = document.createElement('button');
  cancel.type = 'button';
  cancel.textContent = 'Cancel';
  const row = document.createElement('div');
  row.className = 'row';
  row.append(send, cancel);
  form.append(box, row);
  bubble.hidden = true;
  bar.hidden = true;
  bubble.after(form);
  const close = () => { form.remove(); bubble.hidden = false; bar.hidden = false; bar.querySelector('button:last-child').focus(); };
  cancel.addEventListener('click', close);
  box.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') { e.preventDefault(); close(); }
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); form.requestSubmit(); }
  });
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const message = box.value.trim();
    if (message) startRun({ message, after_turn: run.after_turn }, 'sending the edited message');
  });
  box.focus();
}

// What every run started here sends: the message, the mode, provider and model picked, and the
// graph selection; `extra` adds the conversation's turn it follows (an edit, a regeneration).
function chatBody(message, extra = {}) {
  const body = Object.assign({ message, mode: $('mode').value }, extra);
  if ($('provider').value) body.provider = $('provider').value;
  if ($('model').value) body.model = $('model').value;
  if (state.conversation) body.conversation = state.conversation;
  if (state.selected.size) body.context = { selected_nodes: [...state.selected], graph: graphName(state.graphUri) };
  return body;
}

// An edit or a regeneration: a new run after an earlier turn; the conversation is drawn again on
// its new branch, which streams.
async function startRun(fields, doing) {
  if (state.running) return tell('Wait for the run to end (or cancel it) first.');
  // The transcript is drawn again, so the element the focus was on goes: the message box takes it
  // now, not after the round trips (a slow server left it on the page meanwhile).
  $('prompt').focus();
  try {
    const started = await apiJson('/api/chat', { method: 'POST', body: JSON.stringify(chatBody(fields.message, { after_turn: fields.after_turn })) });
    log('info', `${doing}: run ${started.run}`);
    await openConversation(started.conversation, { newest: true });
    if (document.activeElement === document.body) $('prompt').focus();
  } catch (e) { tell(`Could not start: ${e.message}`); }
}

// ---- a partial answer: what streamed before the server stopped is kept on the page ----

function keepPartial() {
  const seg = state.assistant;
  if (state.running && seg && seg.text) localStorage.setItem('agenthost-partial', JSON.stringify({ conversation: state.conversation, run: state.run, text: seg.text.slice(0, 200000) }));
}

// Shown after the stored transcript when the store does not hold it (the step that streamed it was
// not finished when the server stopped), marked as cut off.
function showPartial() {
  let partial = null;
  try { partial = JSON.parse(localStorage.getItem('agenthost-partial') || 'null'); } catch (e) { partial = null; }
  if (!partial || partial.conversation !== state.conversation) return;
  const run = [...state.tree.runs.values()].find((r) => r.id === partial.run);
  const stored = [...$('transcript').querySelectorAll('.message.assistant')].some((m) => m.textContent.includes(partial.text.slice(0, 200).trim()));
  if (!run || stored || (run.answer && run.answer.includes(partial.text.slice(0, 200).trim()))) return;
  if (!branchTurns(state.tree, state.leaf).has(run.turn)) return;
  state.partialElement = markCutOff(addMessage('assistant', partial.text));
}

function markCutOff(div) {
  if (div.classList.contains('partial')) return div;
  div.classList.add('partial');
  const note = document.createElement('p');
  note.className = 'partial-note muted';
  note.textContent = 'Cut off here: the server stopped while this was being written. It is kept on this page only.';
  div.after(note);
  div.partialNote = note;
  return div;
}

// The resumed run writes its answer again: the cut-off copy has served its purpose.
function dropPartial() {
  const div = state.partialElement;
  state.partialElement = null;
  localStorage.removeItem('agenthost-partial');
  if (div) { if (div.partialNote) div.partialNote.remove(); div.remove(); }
}

// What is being written for a conversation (its message and attached files) is kept in this browser
// per conversation ("new" before it has an id): a reload, a login or a switch to another
// conversation and back finds it again.
function draftKey(conversation = state.conversation) { return `agenthost-draft:${conversation || 'new'}`; }

function saveDraft() {
  const files = attachedFiles();
  if ($('prompt').value || files.length) localStorage.setItem(draftKey(), JSON.stringify({ text: $('prompt').value, files }));
  else localStorage.removeItem(draftKey());
}

function restoreDraft() {
  let draft = null;
  try { draft = JSON.parse(localStorage.getItem(draftKey()) || 'null'); } catch (e) { draft = null; }
  $('prompt').value = (draft && draft.text) || '';
  $('attachments').replaceChildren();
  for (const f of (draft && draft.files) || []) attachmentChip(f);
  showAttachments();
}

// ---- attachments: files saved into the folder the operator allows, named in the next message ----

async function loadAttachmentSettings() {
  try { state.attachments = await apiJson('/api/attachments'); } catch (e) { state.attachments = { enabled: false }; }
  const on = !!state.attachments.enabled;
  $('attach').hidden = !on;
  if (on) $('attach-note').textContent = `Files are saved in the folder ${state.attachments.folder} (at most ${Math.round(state.attachments.max_bytes / 1048576)} MB each), where the agent can read them.`;
}

function fileBase64(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ''));
    reader.onerror = () => reject(reader.error || new Error('the file could not be read'));
    reader.readAsDataURL(file);
  });
}

async function attachFiles(files) {
  const limits = state.attachments || {};
  for (const file of files) {
    if (file.size > limits.max_bytes) { tell(`${file.name} is larger than ${Math.round(limits.max_bytes / 1048576)} MB, the most this server takes.`); continue; }
    const chip = attachmentChip({ name: file.name, saving: true });
    try {
      const saved = await apiJson('/api/attachments', { method: 'POST', body: JSON.stringify({ name: file.name, content_base64: await fileBase64(file) }) });
      chip.remove();
      attachmentChip(saved);
      saveDraft();
      log('info', `attached ${saved.path} (folder ${saved.folder})`);
    } catch (e) { chip.remove(); tell(`Could not attach ${file.name}: ${e.message}`); }
  }
  showAttachments();
}

// The files attached to the message being written (their chips), and the list shown only with some.
function attachedFiles() {
  return [...$('attachments').querySelectorAll('li[data-path]')].map((li) => ({ folder: li.dataset.folder, path: li.dataset.path }));
}

function showAttachments() { $('attachments').hidden = !$('attachments').children.length; }

// One attached file above the message box: its name, and ✕ to leave it out of the message (the
// saved file stays in the folder).
function attachmentChip(file) {
  const li = document.createElement('li');
  li.className = 'attachment';
  if (!file.saving) { li.dataset.folder = file.folder; li.dataset.path = file.path; }
  const label = document.createElement('span');
  label.textContent = file.saving ? `${file.name} (saving…)` : `${file.path}`;
  li.append(label);
  if (!file.saving) li.append(smallButton('✕', `Leave ${file.path} out of the message (it stays in the folder)`, () => { li.remove(); showAttachments(); saveDraft(); $('prompt').focus(); }));
  $('attachments').append(li);
  showAttachments();
  return li;
}

// The attached files, as the message names them (so the transcript keeps them) and as the
// request's context; the chips are cleared.
function takeAttachments() {
  const files = attachedFiles();
  $('attachments').replaceChildren();
  showAttachments();
  return files;
}

// ---- export: the conversation as Markdown (the branch shown) or JSON (everything, every branch) ----

function conversationMarkdown() {
  const { convo, tree } = state;
  const turns = branchTurns(tree, state.leaf);
  const lines = [`# ${convo.title || convo.id}`, '', `Exported from agenthost on ${new Date().toISOString()}, conversation \`${convo.id}\`.`, ''];
  let headed = 0;  // the turn whose answer has its heading already
  for (const m of convo.messages) {
    if (!turns.has(m.turn)) continue;
    const msg = m.message || {};
    const run = tree.runs.get(m.turn);
    if (m.kind === 'prompt') { lines.push('## You', '', msg.content || '', ''); continue; }
    if (msg.role === 'assistant') {
      if (msg.content) {
        if (headed !== m.turn) lines.push(`## Agent${run ? ` (${run.provider}${run.model ? ` · ${run.model}` : ''})` : ''}`, '');
        headed = m.turn;
        lines.push(msg.content, '');
      }
      for (const call of msg.tool_calls || [])
        if (!isAnswerTool(call.name)) lines.push(`> Tool call \`${call.name}\`: \`${short(call.arguments, 300)}\``, '');
    } else if (msg.role === 'tool') {
      const result = m.result && m.result.content !== undefined ? m.result.content : msg.content;
      lines.push(`> Result of \`${msg.name}\`: ${short(result, 500).replace(/\n/g, ' ')}`, '');
    }
  }
  return lines.join('\n');
}

function exportConversation(format) {
  $('export').open = false;
  $('export').querySelector('summary').focus();
  if (!state.convo || state.convo.id !== state.conversation) return tell('Open a conversation to export it.');
  const text = format === 'md' ? conversationMarkdown()
    : JSON.stringify({ exported_at: new Date().toISOString(), conversation: state.convo }, null, 2);
  const name = `${(state.convo.title || state.convo.id).replace(/[^\p{L}\p{N}._-]+/gu, '-').replace(/^-|-$/g, '').slice(0, 60) || 'conversation'}.${format}`;
  const link = document.createElement('a');
  link.href = URL.createObjectURL(new Blob([text], { type: format === 'md' ? 'text/markdown' : 'application/json' }));
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10000);
  log('info', `exported ${name}`);
}

function clearTranscript() {
  $('transcript').replaceChildren();
  state.toolLines.clear();
  state.assistant = null;
  state.reasoning = null;
  state.shownAnswer = '';
}

async function openConversation(id, options = {}) {
  stopStream();
  keepPartial();
  const switched = id !== state.conversation;
  if (switched) saveDraft();
  state.conversation = id;
  if (switched) restoreDraft();
  localStorage.setItem('agenthost-conversation', id);
  let convo;
  try { convo = await apiJson(`/api/conversations/${encodeURIComponent(id)}`); } catch (e) {
    log('warn', `conversation ${id}: ${e.message}`);
    if (state.away) return;  // the server is away: the page stays as it is until it answers again
    state.conversation = '';
    localStorage.removeItem('agenthost-conversation');
    showWelcome();
    await loadConversations();
    return;
  }
  if (id !== state.conversation) return;  // another one was opened meanwhile
  renderTasks([]);
  $('approval').hidden = true;
  $('resume').hidden = true;
  keepConversation(convo);
  $('export').hidden = false;
  // The branch shown: the one shown before (same conversation), else the newest.
  const keep = !options.newest && !switched && state.tree.runs.has(state.leaf);
  state.leaf = keep ? newestBelow(state.tree, state.leaf) : state.tree.newest;
  drawBranch();
  renderTasks(convo.tasks);
  const last = convo.runs.length ? convo.runs[convo.runs.length - 1] : null;
  applyPicks(picksOf(id) || { provider: last ? last.provider : '', model: '' });
  showProvider(last ? last.provider || '' : '', last ? last.model || '' : '');
  await loadConversations();
  if (last) {
    state.run = last.id;
    if (last.status === 'paused') {  // the call waiting for approval is the one without a result
      const pending = [...state.toolLines.values()].filter((l) => l.element.classList.contains('running')).pop();
      showApproval(pending ? { tool: pending.tool, arguments: pending.args } : {});
    }
    if (convo.busy) { setRunning(true); stream(last.id, 0, true); } else {
      setRunning(false);
      showOutcome({ run: last.id, ok: last.status === 'completed', stop_reason: last.status === 'paused' ? 'approval_pending' : last.stop_reason,
        error: last.status === 'failed' ? last.error : '' }, true);
    }
    // Stopped by a shutdown, a crash, the provider or the store, where it can go on: offer to.
    if (last.resumable && last.status !== 'paused' && !convo.busy) {
      for (const line of state.toolLines.values())
        if (line.element.classList.contains('running')) {
          line.element.classList.remove('running');
          line.summary.textContent = `⏸ ${line.tool}(${short(line.args)}) — interrupted; resuming settles it`;
        }
      $('resume').hidden = false;
      $('resume').textContent = `Resume run ${last.id}`;
      log('warn', `run ${last.id} ${last.status === 'interrupted' ? 'was interrupted' : 'failed'}${last.error ? ': ' + last.error : ''}`);
    }
  }
  scrollDown();
}

// The welcome of an empty conversation: the one in index.html, kept when the page starts.
const welcomeNode = $('welcome').cloneNode(true);

function showWelcome() {
  clearTranscript();
  $('transcript').append(welcomeNode.cloneNode(true));
}

function newConversation() {
  stopStream();
  saveDraft();
  state.conversation = '';
  restoreDraft();
  state.convo = null;
  state.tree = null;
  state.leaf = 0;
  state.run = 0;
  $('export').hidden = true;
  localStorage.removeItem('agenthost-conversation');
  showWelcome();
  renderTasks([]);
  $('approval').hidden = true;
  $('resume').hidden = true;
  applyPicks(savedPicks());
  setRunning(false);
  loadConversations();
  closeDrawers();
  $('prompt').focus();
}

// ---- transcript ----

function scrollDown() { if (!state.bulk) $('transcript').scrollTop = $('transcript').scrollHeight; }

// Answers longer than this are shown as their text: drawing Markdown again on every token of a
// multi-megabyte answer would freeze the page.
const kMarkdownLimit = 100000;

function addMessage(kind, text) {
  const welcome = $('welcome');
  if (welcome) welcome.remove();
  const div = document.createElement('div');
  div.className = `message ${kind}`;
  if (kind === 'assistant') renderMarkdown(div, text); else div.textContent = text;
  $('transcript').append(div);
  scrollDown();
  return div;
}

function addAssistant(text) {
  state.shownAnswer = text;
  const div = addMessage('assistant', text);
  drawDiagrams(div);  // a whole answer: its diagrams are drawn now
  return div;
}

// Streamed text: the Markdown is drawn again at most once a frame.
function appendToken(text) {
  if (!state.assistant) {
    state.assistant = { element: addMessage('assistant', ''), text: '', pending: false };
    state.assistant.element.setAttribute('aria-busy', 'true');  // read once it is complete, not on every redraw
  }
  const seg = state.assistant;
  if ($('status-queue').textContent.startsWith('waiting for the model')) $('status-queue').textContent = '';
  seg.text += text;
  state.shownAnswer = seg.text;
  if (seg.pending) return;
  seg.pending = true;
  requestAnimationFrame(() => {
    seg.pending = false;
    const stick = $('transcript').scrollHeight - $('transcript').scrollTop - $('transcript').clientHeight < 60;
    renderMarkdown(seg.element, seg.text);
    if (!seg.element.hasAttribute('aria-busy')) drawDiagrams(seg.element);  // settled before this frame
    if (stick) scrollDown();
  });
}

function short(value, n = 80) {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > n ? text.slice(0, n) + '…' : text;
}

// agent_done's summary is the turn's answer: it is shown as the assistant's message, not as a tool
// line — live as soon as the call arrives; in a stored transcript the run's answer message has it.
function isAnswerTool(tool) { return tool === 'agent_done'; }

function settleAssistant() {
  const seg = state.assistant;
  if (seg) {
    seg.element.removeAttribute('aria-busy');
    if (!seg.pending) drawDiagrams(seg.element);  // else once its last frame is drawn
  }
  state.assistant = null;
}

function addToolLine(callId, tool, args, stored = false) {
  if (isAnswerTool(tool)) {
    if (!stored && args && typeof args.summary === 'string') addAssistant(args.summary);
    settleAssistant();
    return;
  }
  const welcome = $('welcome');
  if (welcome) welcome.remove();
  const d = document.createElement('details');
  d.className = 'tool running';
  const summary = document.createElement('summary');
  summary.textContent = `▸ ${tool}(${short(args)})`;
  const argsPre = document.createElement('pre');
  argsPre.textContent = JSON.stringify(args, null, 2);
  const resultPre = document.createElement('pre');
  resultPre.className = 'result';
  resultPre.textContent = '(running)';
  d.append(summary, argsPre, resultPre);
  $('transcript').append(d);
  state.toolLines.set(callId, { element: d, summary, resultPre, started: performance.now(), tool, args });
  settleAssistant();
  scrollDown();
}

function finishToolLine(callId, tool, content, isError, ms) {
  if (isAnswerTool(tool)) return;
  let line = state.toolLines.get(callId);
  if (!line) {
    addToolLine(callId, tool, {});
    line = state.toolLines.get(callId);
  }
  line.element.classList.remove('running');
  if (isError) line.element.classList.add('failed');
  const took = ms !== undefined ? ms : performance.now() - line.started;
  line.summary.textContent = `${isError ? '✗' : '✓'} ${line.tool}(${short(line.args)}) → ${short(content, 60)}${took ? ` · ${Math.round(took)} ms` : ''}`;
  line.resultPre.textContent = typeof content === 'string' ? content : JSON.stringify(content, null, 2);
}

function renderStored(m) {
  const msg = m.message || {};
  if (m.kind === 'prompt') return addMessage('user', msg.content || '');
  if (msg.role === 'assistant') {
    if (msg.reasoning) addReasoning(msg.reasoning);
    if (msg.content) addAssistant(msg.content);
    for (const call of msg.tool_calls || []) addToolLine(call.id, call.name, call.arguments, true);
    return;
  }
  if (msg.role === 'tool') {
    const result = m.result || {};
    return finishToolLine(msg.tool_call_id, msg.name, result.content !== undefined ? result.content : msg.content, !!result.is_error, 0);
  }
}

function addReasoning(text) {
  const d = document.createElement('details');
  d.className = 'reasoning';
  const s = document.createElement('summary');
  s.textContent = 'Reasoning';
  const p = document.createElement('div');
  p.textContent = text;
  d.append(s, p);
  $('transcript').append(d);
  return p;
}

// The plan (steps with their status) and the task stack; given as an array of steps or as
// {plan, stack}.
function renderTasks(tasks) {
  const plan = Array.isArray(tasks) ? tasks : (tasks && Array.isArray(tasks.plan) ? tasks.plan : []);
  const stack = tasks && Array.isArray(tasks.stack) ? tasks.stack : [];
  const ol = $('tasks');
  ol.replaceChildren();
  for (const title of stack.slice().reverse()) {
    const li = document.createElement('li');
    li.dataset.status = 'stack';
    li.textContent = `(stack) ${title}`;
    ol.append(li);
  }
  for (const t of plan) {
    const li = document.createElement('li');
    li.dataset.status = t.status;
    li.textContent = `${t.title} — ${t.status.replace('_', ' ')}${t.note ? ` (${t.note})` : ''}`;
    ol.append(li);
  }
  $('tasks-empty').hidden = ol.children.length > 0;
  setPanelContent('activity', ol.children.length > 0);
}

// The focus stays where the user is (typing elsewhere must never approve); the buttons take a
// click or a key only after a moment, so a click or key meant for something else cannot approve a
// call that just appeared. Every argument is shown.
function showApproval(data) {
  state.decided = false;
  $('approval').hidden = false;
  $('approval-text').textContent = `The agent wants to run ${data.tool || 'a tool'}${data.reason ? ` — ${data.reason}` : ''}. Approve it?`;
  $('approval-args').textContent = data.arguments !== undefined ? JSON.stringify(data.arguments, null, 2) : '';
  $('approval-args').hidden = data.arguments === undefined;
  for (const id of ['approve', 'reject']) $(id).disabled = true;
  clearTimeout(state.armTimer);
  state.armTimer = setTimeout(() => { for (const id of ['approve', 'reject']) $(id).disabled = false; }, 800);
  log('warn', `approval needed: ${data.tool || 'a tool'}`);
}

// A tool asks the person something while its call runs (MCP elicitation): one field per property
// of its flat schema, prefilled with the defaults. Built with DOM nodes only: the question's words
// are text, never markup.
function showQuestion(data) {
  const form = $('question');
  const fields = $('question-fields');
  fields.replaceChildren();
  $('question-text').textContent = `${data.tool || 'A tool'} asks: ${data.message || ''}`;
  const schema = data.schema && typeof data.schema === 'object' ? data.schema : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const props = schema.properties && typeof schema.properties === 'object' ? schema.properties : {};
  for (const [name, field] of Object.entries(props)) {
    const label = document.createElement('label');
    const title = document.createElement('span');
    title.textContent = (field.title || name) + (required.has(name) ? ' *' : '');
    label.append(title);
    const options = questionChoices(field);
    let input;
    if (field.type === 'boolean') {
      input = document.createElement('input');
      input.type = 'checkbox';
      input.checked = field.default === true;
    } else if (options.length && field.type !== 'array') {
      input = document.createElement('select');
      for (const o of options) input.append(new Option(o.title, o.value, false, o.value === field.default));
    } else if (options.length) {
      input = document.createElement('select');
      input.multiple = true;
      const chosen = Array.isArray(field.default) ? field.default : [];
      for (const o of options) input.append(new Option(o.title, o.value, false, chosen.includes(o.value)));
    } else {
      input = document.createElement('input');
      input.type = field.type === 'integer' || field.type === 'number' ? 'number' : 'text';
      if (field.type === 'number') input.step = 'any';
      if (field.default !== undefined) input.value = String(field.default);
      input.required = required.has(name);
    }
    input.dataset.name = name;
    input.dataset.type = field.type || 'string';
    label.append(input);
    if (field.description) {  // shown, not a tooltip: it is often what the field means
      const about = document.createElement('small');
      about.id = `question-about-${name}`;
      about.textContent = field.description;
      input.setAttribute('aria-describedby', about.id);
      label.append(about);
    }
    fields.append(label);
  }
  form.hidden = false;
  $('status-queue').textContent = 'waiting for your answer';
  log('warn', `${data.tool || 'a tool'} asks a question`);
}

function questionChoices(field) {
  const f = field.type === 'array' && field.items ? field.items : field;
  if (Array.isArray(f.enum)) return f.enum.map((v, i) => ({ value: v, title: (f.enumNames && f.enumNames[i]) || v }));
  const list = f.oneOf || f.anyOf;
  return Array.isArray(list) ? list.filter((o) => o && o.const !== undefined).map((o) => ({ value: o.const, title: o.title || o.const })) : [];
}

async function answerQuestion(action) {
  if (!state.run) return;
  const body = { action };
  if (action === 'accept') {
    body.content = {};
    for (const input of $('question-fields').querySelectorAll('[data-name]')) {
      const { name, type } = input.dataset;
      if (type === 'boolean') body.content[name] = input.checked;
      else if (input.multiple) body.content[name] = [...input.selectedOptions].map((o) => o.value);
      else if (input.value === '') continue;
      else if (type === 'integer' || type === 'number') body.content[name] = Number(input.value);
      else body.content[name] = input.value;
    }
  }
  try {
    await apiJson(`/api/runs/${state.run}/answer`, { method: 'POST', body: JSON.stringify(body) });
    $('question').hidden = true;
    $('toast').hidden = true;  // an earlier refusal of this answer no longer applies
    $('status-queue').textContent = '';
    log('info', `run ${state.run}: question ${action === 'accept' ? 'answered' : 'declined'}`);
  } catch (e) { tell(e.message); }
}

// ---- the SSE stream (fetch, so that it can be aborted and resumed after Last-Event-ID) ----

function stopStream() {
  if (state.streamAbort) state.streamAbort.abort();
  state.streamAbort = null;
}

async function stream(run, after = 0, replay = false) {
  stopStream();
  const controller = new AbortController();
  state.streamAbort = controller;
  state.lastSeq = after;
  // A stored transcript was just drawn and the run's events are read from its start: what the
  // transcript holds (its tool calls, and the text of the steps that made them) is not drawn twice.
  // Drawing starts at a tool call it does not hold, or at the model request after the last one it
  // holds (the step that was under way).
  const drawn = new Set(replay ? state.toolLines.keys() : []);
  let seen = 0;
  let skipping = replay;
  for (let attempt = 0; attempt < 20 && !controller.signal.aborted; attempt++) {
    try {
      const res = await api(`/api/chat?run=${run}`, { headers: { 'Last-Event-ID': String(state.lastSeq) }, signal: controller.signal });
      if (!res.ok) { log('error', `stream: the server answered ${res.status}`); break; }
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      let ended = false;
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          let name = 'message', data = '', id = 0;
          for (const line of block.split('\n')) {
            if (line.startsWith('event: ')) name = line.slice(7);
            else if (line.startsWith('data: ')) data += line.slice(6);
            else if (line.startsWith('id: ')) id = Number(line.slice(4));
          }
          if (id) state.lastSeq = Math.max(state.lastSeq, id);
          if (!data) continue;
          const event = JSON.parse(data);
          if (skipping) {
            if (name === 'tool_call' && drawn.has(event.call_id)) { seen++; continue; }
            if (name === 'tool_call' || (name === 'status' && seen >= drawn.size)) skipping = false;
            // Also history: the pause a decision already answered (its approval and its end).
            // A question is not: its call may still wait for it (its tool_result closes it if not).
            else if (['token', 'reasoning', 'gap', 'approval', 'log'].includes(name)) continue;
            else if (name === 'end' && event.stop_reason === 'approval_pending' && state.decided) continue;
          }
          onEvent(name, event);
          if (name === 'end') ended = true;
        }
      }
      if (ended) break;
    } catch (e) {
      if (controller.signal.aborted) return;
      if (state.away) break;  // the conversation is read again when the server answers (serverAway)
      log('warn', `stream interrupted (${e.message}); reconnecting`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  if (state.streamAbort === controller) state.streamAbort = null;
  keepPartial();
}

function onEvent(name, e) {
  switch (name) {
    case 'token': if (state.partialElement) dropPartial(); appendToken(e.text); break;
    case 'reasoning':
      if (!state.reasoning) state.reasoning = addReasoning('');
      state.reasoning.textContent += e.text;
      break;
    case 'tool_call':
      state.reasoning = null;
      addToolLine(e.call_id, e.tool, e.arguments);
      break;
    case 'tool_result':
      $('question').hidden = true;  // the call ended: a question it left open is moot
      finishToolLine(e.call_id, e.tool, e.content, e.is_error);
      refreshResources();
      break;
    case 'tasks': renderTasks(e.tasks); break;
    case 'approval': showApproval(e); break;
    case 'question': showQuestion(e); break;
    case 'queue': $('status-queue').textContent = e.ahead > 0 ? `queue: ${e.ahead} ahead` : ''; break;
    case 'provider_switch':  // the run's fallback chain: the status bar names who answers now
      log('warn', e.reason);
      $('status-provider').textContent = `provider ${e.to} (fallback of ${state.runProvider || e.from})`;
      break;
    case 'status':
      $('status-queue').textContent = e.text;
      settleAssistant();
      state.reasoning = null;
      break;
    case 'log': log(e.level || 'info', e.message); break;
    case 'error': log('error', e.message); addMessage('error', e.message); break;
    case 'usage': break;
    case 'gap':  // the server no longer keeps events this page missed: redraw from the stored transcript
      log('warn', e.message);
      openConversation(state.conversation);
      break;
    case 'end':
      setRunning(false);
      // An answer no streamed text showed (a summary written at the iteration cap, for one).
      if (e.answer && e.answer.trim() !== state.shownAnswer.trim()) addAssistant(e.answer);
      settleAssistant();
      showOutcome(e);
      state.reasoning = null;
      if (e.stop_reason !== 'approval_pending') $('approval').hidden = true;
      $('question').hidden = true;
      if (!e.ok && e.error && e.stop_reason !== 'approval_pending') log('error', `run ${e.run}: ${e.error}`);
      refreshResources();
      loadConversations();
      finishLiveTurn(e.run || state.run);
      if (e.stop_reason === 'interrupted') watchInterrupted(e.run || state.run);
      break;
  }
}

// A run stopped by a shutdown: the server resumes the runs it started once it is back, perhaps
// before this page notices it was away. Its state is asked every 3 s (for 2 minutes); once it runs
// again, or ended otherwise, the conversation is read again and a running run streams on (an outside
// try: after a restart the page said "interrupted" while the run went on).
function watchInterrupted(run) {
  clearInterval(state.interruptedTimer);
  let asked = 0;
  state.interruptedTimer = setInterval(async () => {
    if (++asked > 40 || state.run !== run || state.running) return clearInterval(state.interruptedTimer);
    let report;
    try { report = await apiJson(`/api/runs/${run}`); } catch (e) { return; }
    if (report.status === 'interrupted' && !report.executing) return;
    clearInterval(state.interruptedTimer);
    if (state.run === run && !state.running) openConversation(state.conversation);
  }, 3000);
}

// A run streamed here ended: its turn is read back for the bars a stored turn has (the model that
// answered, Copy, Regenerate; Edit and the versions under its prompt).
async function finishLiveTurn(runId) {
  localStorage.removeItem('agenthost-partial');
  const id = state.conversation;
  let convo;
  try { convo = await apiJson(`/api/conversations/${encodeURIComponent(id)}`); } catch (e) { return; }
  if (id !== state.conversation || state.running) return;
  keepConversation(convo);
  const run = convo.runs.find((r) => r.id === runId);
  if (!run) return;
  state.leaf = newestBelow(state.tree, run.turn);
  const bubble = state.liveBubble;
  state.liveBubble = null;
  const next = bubble && bubble.nextElementSibling;
  if (bubble && bubble.isConnected && !(next && next.classList.contains('prompt-bar'))) addPromptBar(bubble, run.turn);
  const stick = $('transcript').scrollHeight - $('transcript').scrollTop - $('transcript').clientHeight < 80;
  if (!document.querySelector(`#transcript .answer-bar[data-turn="${run.turn}"]`)) addAnswerBar(run.turn);
  if (stick) scrollDown();  // the answer's bar comes into view with it
  if (convo.runs.length === 1 && run.status === 'completed') await titleByModel(id);
  loadConversations();  // stored as ended by now: the list's busy dot goes
}

// After a conversation's first answer the server may ask its model for a title ([server]
// model_titles); a server that titles with the first words says so once, and is not asked again.
async function titleByModel(id) {
  if (state.wordTitles) return;
  try {
    const res = await api(`/api/conversations/${encodeURIComponent(id)}/title`, { method: 'POST', body: '{}' });
    const body = await res.json().catch(() => ({}));
    if (res.status === 409 && body.error && body.error.code === 'model_titles_off') state.wordTitles = true;
    else if (res.ok) log('info', `conversation titled “${body.title}”`);
  } catch (e) { /* the list keeps the first words */ }
}

// ---- sending, approving, cancelling ----

async function send(event) {
  event.preventDefault();
  const message = $('prompt').value.trim();
  if (!message || state.running) return;
  // Shown an older branch (a version picked with ‹ ›), the message goes on from it.
  const older = state.conversation && state.tree && state.leaf && state.leaf !== state.tree.newest;
  const files = takeAttachments();
  const named = files.length ? `${message}\n\n${files.map((f) => `[attached: ${f.path} in the folder ${f.folder}]`).join('\n')}` : message;
  const body = chatBody(named, older ? { after_turn: state.leaf } : {});
  if (files.length) body.context = Object.assign(body.context || {}, { attachments: files });
  const bubble = addMessage('user', named);
  const draft = draftKey();  // sent, the draft goes (a new conversation's is under "new")
  state.shownAnswer = '';
  $('prompt').value = '';
  try {
    const started = await apiJson('/api/chat', { method: 'POST', body: JSON.stringify(body) });
    state.conversation = started.conversation;
    localStorage.setItem('agenthost-conversation', started.conversation);
    localStorage.removeItem(draft);
    state.liveBubble = bubble;
    $('export').hidden = false;
    savePicks();
    showProvider(body.provider || '', body.model || '');
    state.run = started.run;
    setRunning(true);
    loadConversations();
    stream(started.run);
  } catch (e) {
    // Nothing was started: the text goes back to the box, to send again once the cause is gone.
    bubble.remove();
    if (!$('prompt').value) $('prompt').value = message;
    for (const f of files) attachmentChip(f);
    tell(e.message);
  }
}

async function decide(action) {
  if (!state.run) return;
  const body = action === 'reject' ? { reason: $('reject-reason').value.trim() } : {};
  try {
    await apiJson(`/api/runs/${state.run}/${action}`, { method: 'POST', body: JSON.stringify(body) });
    $('approval').hidden = true;
    $('reject-reason').value = '';
    log('info', `run ${state.run}: ${action === 'approve' ? 'approved' : 'rejected'}`);
    setRunning(true);
    state.decided = true;  // a replay from the start skips the pause this answered
    stream(state.run, state.lastSeq, state.lastSeq === 0);
  } catch (e) { log('error', e.message); }
}

async function resumeRun() {
  if (!state.run) return;
  try {
    await apiJson(`/api/runs/${state.run}/resume`, { method: 'POST', body: '{}' });
    $('resume').hidden = true;
    $('prompt').focus();
    log('info', `run ${state.run}: resumed`);
    setRunning(true);
    stream(state.run, 0);
  } catch (e) { tell(`Could not resume: ${e.message}`); }
}

// A cancel the server cannot take now (it is away) is said, and sent once it answers again (an
// outside try: it was lost without a word, and the run went on).
async function cancelRun() {
  if (!state.run) return;
  const run = state.run;
  try {
    await apiJson(`/api/runs/${run}/cancel`, { method: 'POST', body: '{}' });
    state.cancelWhenBack = 0;
    log('info', `run ${run}: cancelling`);
  } catch (e) {
    if (state.away) { state.cancelWhenBack = run; tell('The server is not answering: the cancel is sent as soon as it is back.'); } else tell(`Could not cancel: ${e.message}`);
  }
}

// ---- side panels: shown when they have content, unless closed; opened or closed by hand ----

function panelChoice(name) { return localStorage.getItem(`agenthost-panel-${name}`) || 'auto'; }

function setPanelContent(name, has) {
  state.panels[name] = has;
  layoutPanels();
}

function panelVisible(name) {
  const choice = panelChoice(name);
  return choice === 'open' || (choice === 'auto' && state.panels[name] && !narrow());
}

function narrow() { return window.matchMedia('(max-width: 900px)').matches; }

function layoutPanels() {
  let any = false;
  for (const name of ['graph', 'downloads', 'activity']) {
    const visible = panelVisible(name);
    $(`${name}-panel`).hidden = !visible;
    const toggle = $(`toggle-${name}`);
    toggle.hidden = name !== 'activity' && !state.panels[name] && !visible;
    toggle.setAttribute('aria-pressed', String(visible));
    any = any || visible;
  }
  $('side-panels').hidden = !any;
  if (state.cy && !$('graph-panel').hidden) requestAnimationFrame(() => state.cy.resize());
}

function togglePanel(name) {
  const open = !panelVisible(name);
  localStorage.setItem(`agenthost-panel-${name}`, open ? 'open' : 'closed');
  if (open && narrow()) for (const other of ['graph', 'downloads', 'activity'])
    if (other !== name && panelVisible(other)) localStorage.setItem(`agenthost-panel-${other}`, 'auto');
  layoutPanels();
  if (open) $(`${name}-panel`).querySelector('.close').focus();
  else $(`toggle-${name}`).focus();
}

// On a phone the sidebar and the panels cover the chat: any of them closes when the chat is used.
function closeDrawers() {
  if (!narrow()) return;
  setSidebar(false);
  for (const name of ['graph', 'downloads', 'activity'])
    if (panelChoice(name) === 'open') localStorage.setItem(`agenthost-panel-${name}`, 'auto');
  layoutPanels();
}

function setSidebar(open) {
  $('sidebar').hidden = !open;
  $('toggle-sidebar').setAttribute('aria-expanded', String(open));
}

// ---- theme ----

function systemTheme() { return window.matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light'; }

function themeChoice() { return localStorage.getItem('agenthost-theme') || 'system'; }

// The toggle goes: the system's theme → the other one → the system's, chosen → the system's again
// (an outside try: once a theme was chosen the page never followed the system again).
function nextThemeChoice() {
  const choice = themeChoice(), system = systemTheme(), other = system === 'dark' ? 'light' : 'dark';
  return choice === 'system' ? other : choice === other ? system : 'system';
}

function chooseTheme(choice) {
  if (choice === 'system') localStorage.removeItem('agenthost-theme'); else localStorage.setItem('agenthost-theme', choice);
  setTheme(choice === 'system' ? systemTheme() : choice);
}

function setTheme(theme) {
  document.documentElement.dataset.theme = theme;
  const choice = themeChoice(), next = nextThemeChoice();
  const now = choice === 'system' ? `the system's (${theme})` : theme;
  const label = `Theme: ${now}. Switch to ${next === 'system' ? "the system's" : next}`;
  $('theme-toggle').setAttribute('aria-label', label);
  $('theme-toggle').title = label;
  if (state.cy) state.cy.style(graphStyle());
  redrawDiagrams();
}

// ---- plugin resources: graphs and downloads ----

async function refreshResources() {
  let resources = [];
  try { resources = (await apiJson('/api/resources')).resources || []; } catch (e) { log('error', `resources: ${e.message}`); return; }
  await refreshGraphs(resources);
  const downloads = resources.find((r) => r.uri === 'torrent://downloads');
  state.downloadsUri = downloads ? downloads.uri : '';
  await refreshDownloads();
}

function graphName(uri) { return uri ? decodeURIComponent(uri.replace(/^graph:\/\//, '').replace(/\?.*$/, '')) : ''; }

function canvasNotice(text) {
  const div = document.createElement('div');
  div.className = 'notice';
  div.textContent = text;
  $('canvas').replaceChildren(div);
}

async function refreshGraphs(resources) {
  const graphs = resources.filter((r) => r.mimeType === 'application/json' && r.uri.startsWith('graph://'));
  const select = $('graph-select');
  select.replaceChildren(...graphs.map((g) => new Option(g.name, g.uri)));
  setPanelContent('graph', graphs.length > 0);
  if (!graphs.length) {
    state.graphUri = '';
    $('graph-summary').textContent = '';
    if (!state.cy) canvasNotice(window.cytoscape ? 'No graph yet. Ask the agent to build one.' : rendererMissing());
    return;
  }
  const preferred = graphs.slice().sort((a, b) => ((b.annotations || {}).priority || 0) - ((a.annotations || {}).priority || 0))[0];
  if (!state.userPickedGraph || !graphs.some((g) => g.uri === state.graphUri)) state.graphUri = preferred.uri;
  select.value = state.graphUri;
  await drawGraph(state.graphUri);
}

function rendererMissing() {
  return 'The graph renderer (cytoscape) is not installed, so graphs cannot be drawn here. Build agenthost with npm available ' +
    '(web/package.json, npm ci) to get it. The transcript, tasks and log work without it.';
}

function cssVar(name) { return getComputedStyle(document.documentElement).getPropertyValue(name).trim(); }

function graphStyle() {
  const fg = cssVar('--fg'), muted = cssVar('--muted'), edge = cssVar('--edge'), story = cssVar('--story');
  return [
    { selector: 'node', style: { label: 'data(label)', 'background-color': 'data(color)', color: fg, 'font-size': 12,
      'text-valign': 'bottom', 'text-margin-y': 4, width: 26, height: 26 } },
    { selector: 'node[?frame]', style: { 'background-color': cssVar('--frame'), 'background-opacity': 0.6, 'border-color': cssVar('--frame-line'),
      'border-width': 1, shape: 'round-rectangle', 'text-valign': 'top', 'font-weight': 600 } },
    { selector: 'node:selected', style: { 'border-width': 4, 'border-color': cssVar('--focus') } },
    { selector: 'edge', style: { label: 'data(label)', width: 2, 'line-color': edge, 'target-arrow-color': edge,
      'curve-style': 'bezier', 'font-size': 10, 'text-rotation': 'autorotate', color: muted } },
    { selector: 'edge[?directed]', style: { 'target-arrow-shape': 'triangle' } },
    { selector: 'edge[?story]', style: { 'line-style': 'dashed', 'line-color': story, 'target-arrow-shape': 'vee', 'target-arrow-color': story } },
  ];
}

async function drawGraph(uri) {
  let doc;
  try {
    const read = await apiJson(`/api/resources/read?uri=${encodeURIComponent(uri)}`);
    doc = JSON.parse(read.contents[0].text);
  } catch (e) { log('error', `graph ${uri}: ${e.message}`); return; }
  const count = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;
  $('graph-summary').textContent = [count(doc.nodes.length, 'node'), count(doc.edges.length, 'edge'),
    count(doc.frames.length, 'frame'), count(doc.storylines.length, 'storyline')].join(' · ');
  if (!window.cytoscape) { canvasNotice(rendererMissing()); return; }
  const elements = [];
  const byName = new Map(doc.nodes.map((n) => [n.name, n]));
  const frameOf = new Map();
  for (const f of doc.frames) {
    elements.push({ group: 'nodes', data: { id: `f${f.id}`, label: f.name, frame: true } });
    for (const member of f.members) {
      const n = byName.get(member.name || member);
      if (n && !frameOf.has(n.id)) frameOf.set(n.id, `f${f.id}`);
    }
  }
  for (const n of doc.nodes) {
    const data = { id: `n${n.id}`, label: n.name, color: n.color || '#6b7280', type: n.type };
    if (frameOf.has(n.id)) data.parent = frameOf.get(n.id);
    const node = { group: 'nodes', data };
    if (n.x !== null && n.y !== null && n.x !== undefined) { node.position = { x: n.x, y: n.y }; data.stored = true; }
    elements.push(node);
  }
  for (const e of doc.edges)
    if (byName.has(e.source_name) && byName.has(e.target_name))
      elements.push({ group: 'edges', data: { id: `e${e.id}`, source: `n${e.source}`, target: `n${e.target}`, label: e.type, directed: !!e.directed } });
  doc.storylines.forEach((s) => {
    const members = s.members.map((m) => byName.get(m.name || m)).filter(Boolean);
    for (let k = 1; k < members.length; k++)
      elements.push({ group: 'edges', data: { id: `s${s.id}_${k}`, source: `n${members[k - 1].id}`, target: `n${members[k].id}`, label: k === 1 ? s.title : '', story: true } });
  });

  if (!state.cy) {
    $('canvas').replaceChildren();
    state.cy = window.cytoscape({ container: $('canvas'), elements: [], wheelSensitivity: 0.3, style: graphStyle() });
    watchCanvasSize();
    state.cy.on('select unselect', 'node', () => {
      state.selected = new Set(state.cy.$('node:selected').filter((n) => !n.data('frame')).map((n) => n.data('label')));
      $('selection').textContent = state.selected.size ? `selected: ${[...state.selected].join(', ')}` : '';
    });
  }
  const cy = state.cy;
  const wanted = new Set(elements.map((e) => e.data.id));
  cy.batch(() => {
    cy.elements().filter((e) => !wanted.has(e.id())).remove();
    for (const e of elements) {
      const existing = cy.getElementById(e.data.id);
      if (existing.empty()) { cy.add(e); continue; }
      const { parent, ...rest } = e.data;
      existing.data(rest);
      // A node that joined or left a frame changes parent: cytoscape needs move() for that.
      if (e.group === 'nodes' && (existing.parent().nonempty() ? existing.parent().id() : null) !== (parent || null))
        existing.move({ parent: parent || null });
    }
  });
  $('canvas').dataset.nodes = String(cy.nodes().filter((n) => !n.data('frame')).length);
  $('canvas').dataset.edges = String(cy.edges().length);
  cy.resize();
  const unplaced = cy.nodes().filter((n) => !n.data('frame') && !n.data('placed'));
  if (unplaced.length) {
    cy.layout({ name: 'cose', animate: false, fit: true, padding: 40, randomize: false }).run();
    if (cy.zoom() > 1.2) { cy.zoom(1.2); cy.center(); }  // a few nodes should not fill the screen
    unplaced.forEach((n) => n.data('placed', true));
  }
}

// A canvas that changes size (a phone turned, a drawer opened, a window resized) is fitted again,
// and one that turns from wide to tall or back is laid out again for its new shape, unless its
// nodes have stored places (an outside try: at 375 px a graph laid out for a wide window stayed one
// row, half of it off the screen).
function watchCanvasSize() {
  let shape = '';
  let timer = 0;
  new ResizeObserver(() => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      const cy = state.cy;
      const box = $('canvas').getBoundingClientRect();
      if (!cy || !box.width || !box.height) return;
      const now = box.width >= box.height ? 'wide' : 'tall';
      cy.resize();
      const stored = cy.nodes().some((n) => n.data('stored'));
      if (shape && now !== shape && !stored && cy.nodes().length > 1)
        cy.layout({ name: 'cose', animate: false, fit: true, padding: 30, randomize: true }).run();
      else cy.fit(undefined, 30);
      if (cy.zoom() > 1.2) { cy.zoom(1.2); cy.center(); }  // a few nodes should not fill the screen
      shape = now;
    }, 100);
  }).observe($('canvas'));
}

// The downloads panel: read live from the torrent plugin's resource, every 3 s while something
// downloads (every 20 s otherwise); a download of this conversation that finishes says so in the
// transcript.
async function refreshDownloads() {
  clearTimeout(state.downloadsTimer);
  if (!state.downloadsUri) { setPanelContent('downloads', false); return; }
  let doc;
  try {
    const read = await apiJson(`/api/resources/read?uri=${encodeURIComponent(state.downloadsUri)}`);
    doc = JSON.parse(read.contents[0].text);
  } catch (e) {
    log('warn', `downloads: ${e.message}`);
    state.downloadsTimer = setTimeout(refreshDownloads, 20000);
    return;
  }
  const list = doc.downloads || [];
  const ul = $('downloads');
  ul.replaceChildren(...list.map(downloadItem));
  const active = list.filter((d) => !d.done).length;
  $('downloads-summary').textContent = list.length ? `${active} active · ${list.length - active} finished` : '';
  $('downloads-note').hidden = !doc.stale && list.length > 0;
  $('downloads-note').textContent = doc.stale ? `Not live: ${doc.error || 'qBittorrent could not be reached'}. Showing the last known state.`
    : 'Nothing downloaded yet. Ask the agent to find something.';
  for (const d of list) {
    const before = state.downloads.get(d.hash);
    if (before && !before.done && d.done) {
      log('info', `download finished: ${d.name}`);
      if (d.conversation === state.conversation) addMessage('notice', `✓ Download finished: ${d.name}${d.save_path ? ` — saved in ${d.save_path}` : ''}`);
    }
    state.downloads.set(d.hash, d);
  }
  setPanelContent('downloads', list.length > 0);
  state.downloadsTimer = setTimeout(refreshDownloads, active ? 3000 : 20000);
}

function downloadItem(d) {
  const li = document.createElement('li');
  li.className = `download${d.done ? ' done' : ''}`;
  const name = document.createElement('div');
  name.className = 'name';
  name.textContent = d.name;
  const bar = document.createElement('progress');
  bar.max = 1;
  bar.value = Math.max(0, Math.min(1, Number(d.progress) || 0));
  const percent = `${Math.floor(bar.value * 100)}%`;
  bar.setAttribute('aria-label', `${d.name}: ${percent}`);
  const meta = document.createElement('div');
  meta.className = 'meta';
  const state_ = document.createElement('span');
  state_.className = d.done ? 'state-done' : '';
  state_.textContent = d.done ? '✓ finished' : d.state || 'unknown';
  const parts = [percent];
  if (!d.done && d.speed) parts.push(d.speed);
  if (!d.done && d.eta) parts.push(d.eta === 'unknown' ? 'time left unknown' : `${d.eta} left`);
  if (d.save_path) parts.push(`→ ${d.save_path}`);
  meta.append(state_, ` · ${parts.join(' · ')}`);
  li.append(name, bar, meta);
  return li;
}

// ---- wiring ----

async function init() {
  $('prompt-form').addEventListener('submit', send);
  $('prompt').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); $('prompt-form').requestSubmit(); }
  });
  $('prompt').addEventListener('focus', closeDrawers);
  // A draft survives a reload and a login (an outside try: re-logging in lost what was typed).
  $('prompt').addEventListener('input', saveDraft);
  restoreDraft();
  window.addEventListener('beforeunload', keepPartial);
  $('export-md').addEventListener('click', () => exportConversation('md'));
  // The export menu closes with Escape (the focus back on it) or a click elsewhere, as menus do.
  $('export').addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && $('export').open) { e.preventDefault(); e.stopPropagation(); $('export').open = false; $('export').querySelector('summary').focus(); }
  });
  document.addEventListener('click', (e) => { if ($('export').open && !$('export').contains(e.target)) $('export').open = false; });
  $('attach').addEventListener('click', () => $('attach-files').click());
  $('attach-files').addEventListener('change', (e) => { attachFiles([...e.target.files]); e.target.value = ''; });
  $('export-json').addEventListener('click', () => exportConversation('json'));
  $('approve').addEventListener('click', () => decide('approve'));
  $('question').addEventListener('submit', (event) => { event.preventDefault(); answerQuestion('accept'); });
  $('question-decline').addEventListener('click', () => answerQuestion('decline'));
  $('reject').addEventListener('click', () => decide('reject'));
  $('reject-reason').addEventListener('keydown', (e) => {
    if (e.key === 'Enter') { e.preventDefault(); if (!$('reject').disabled) decide('reject'); }  // the same moment's wait as the button
  });
  $('cancel').addEventListener('click', cancelRun);
  $('resume').addEventListener('click', resumeRun);
  $('new-conversation').addEventListener('click', newConversation);
  $('conversation-search').addEventListener('input', drawConversations);
  $('provider').addEventListener('change', () => { fillModels($('provider').value); savePicks(); });
  $('model').addEventListener('change', savePicks);
  $('mode').addEventListener('change', savePicks);
  $('graph-select').addEventListener('change', (e) => { state.userPickedGraph = true; state.graphUri = e.target.value; drawGraph(state.graphUri); });
  $('fit').addEventListener('click', () => state.cy && state.cy.fit(undefined, 40));
  $('clear-selection').addEventListener('click', () => state.cy && state.cy.$(':selected').unselect());
  $('toggle-sidebar').addEventListener('click', () => setSidebar($('sidebar').hidden));
  for (const name of ['graph', 'downloads', 'activity']) $(`toggle-${name}`).addEventListener('click', () => togglePanel(name));
  for (const close of document.querySelectorAll('[data-close]')) close.addEventListener('click', () => togglePanel(close.dataset.close));
  $('theme-toggle').addEventListener('click', () => chooseTheme(nextThemeChoice()));
  window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', (e) => {
    if (themeChoice() === 'system') setTheme(e.matches ? 'dark' : 'light'); else setTheme(document.documentElement.dataset.theme);
  });
  window.matchMedia('(max-width: 900px)').addEventListener('change', (e) => { setSidebar(!e.matches); layoutPanels(); });
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && narrow() && !document.querySelector('dialog[open]')) closeDrawers();
  });
  setTheme(document.documentElement.dataset.theme || 'light');
  setSidebar(!narrow());
  layoutPanels();
  if (!window.cytoscape) canvasNotice(rendererMissing());
  if (new URLSearchParams(location.search).get('login') === 'failed') showLogin();
  loadStatus();  // /readyz needs no session: the status bar works before a login
  // Every 5 s: a server that stopped is noticed while the page is idle (an outside try: it kept
  // saying "ready"); the list's busy markers follow runs started elsewhere.
  setInterval(() => { if (!state.away) loadStatus(); }, 5000);
  setInterval(() => { if (state.signedIn && !state.away) loadConversations(); }, 15000);
  // One request first: without a session it is the one 401, and the login form, not one 401 per
  // part of the panel (an outside try: six in the console before logging in).
  await loadConversations();
  if (state.loginShown) return;
  state.signedIn = true;
  loadPluginReport();
  loadAttachmentSettings();
  loadModels();
  refreshResources();
  if (state.conversation) openConversation(state.conversation);
}

init();
window.agenthostPanel = state;  // for tests and the curious: the panel's state, read-only by convention
