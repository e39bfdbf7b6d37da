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
  const res = await fetch(path, Object.assign({}, options, { headers }));
  if (res.status === 401) showLogin();
  return res;
}

async function apiJson(path, options) {
  const res = await api(path, options);
  if (res.status === 204) return {};
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error((body.error && body.error.message) || `the server answered ${res.status} ${res.statusText}`);
  return body;
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
  if (state.signedIn) await loadPluginReport();
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
    // Back to the conversation renamed (or not), found by its id whatever its name now.
    const again = [...$('conversation-list').children].find((x) => x.dataset.id === c.id);
    (again ? again.querySelector('.open') : $('conversation-search')).focus();
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

function clearTranscript() {
  $('transcript').replaceChildren();
  state.toolLines.clear();
  state.assistant = null;
  state.reasoning = null;
  state.shownAnswer = '';
}

async function openConversation(id) {
  stopStream();
  state.conversation = id;
  localStorage.setItem('agenthost-conversation', id);
  clearTranscript();
  renderTasks([]);
  $('approval').hidden = true;
  $('resume').hidden = true;
  let convo;
  try { convo = await apiJson(`/api/conversations/${encodeURIComponent(id)}`); } catch (e) {
    log('warn', `conversation ${id}: ${e.message}`);
    state.conversation = '';
    localStorage.removeItem('agenthost-conversation');
    showWelcome();
    await loadConversations();
    return;
  }
  state.bulk = true;  // one layout for the whole transcript, not one per message
  try { for (const m of convo.messages) renderStored(m); } finally { state.bulk = false; }
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
    if (last.status === 'interrupted' && !convo.busy) {  // stopped by a shutdown or a crash: offer to go on
      for (const line of state.toolLines.values())
        if (line.element.classList.contains('running')) {
          line.element.classList.remove('running');
          line.summary.textContent = `⏸ ${line.tool}(${short(line.args)}) — interrupted; resuming settles it`;
        }
      $('resume').hidden = false;
      $('resume').textContent = `Resume run ${last.id}`;
      log('warn', `run ${last.id} was interrupted${last.error ? ': ' + last.error : ''}`);
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
  state.conversation = '';
  state.run = 0;
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
  return addMessage('assistant', text);
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
  if (state.assistant) state.assistant.element.removeAttribute('aria-busy');
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
      if (ended) return;
    } catch (e) {
      if (controller.signal.aborted) return;
      log('warn', `stream interrupted (${e.message}); reconnecting`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

function onEvent(name, e) {
  switch (name) {
    case 'token': appendToken(e.text); break;
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
      break;
  }
}

// ---- sending, approving, cancelling ----

async function send(event) {
  event.preventDefault();
  const message = $('prompt').value.trim();
  if (!message || state.running) return;
  const body = { message, mode: $('mode').value };
  if ($('provider').value) body.provider = $('provider').value;
  if ($('model').value) body.model = $('model').value;
  if (state.conversation) body.conversation = state.conversation;
  if (state.selected.size) body.context = { selected_nodes: [...state.selected], graph: graphName(state.graphUri) };
  const bubble = addMessage('user', message);
  state.shownAnswer = '';
  $('prompt').value = '';
  try {
    const started = await apiJson('/api/chat', { method: 'POST', body: JSON.stringify(body) });
    state.conversation = started.conversation;
    localStorage.setItem('agenthost-conversation', started.conversation);
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
    log('info', `run ${state.run}: resumed`);
    setRunning(true);
    stream(state.run, 0);
  } catch (e) { log('error', e.message); }
}

async function cancelRun() {
  if (!state.run) return;
  try { await apiJson(`/api/runs/${state.run}/cancel`, { method: 'POST', body: '{}' }); log('info', `run ${state.run}: cancelling`); } catch (e) { log('error', e.message); }
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

function setTheme(theme, remember) {
  document.documentElement.dataset.theme = theme;
  if (remember) localStorage.setItem('agenthost-theme', theme);
  $('theme-toggle').setAttribute('aria-label', theme === 'dark' ? 'Switch to the light theme' : 'Switch to the dark theme');
  if (state.cy) state.cy.style(graphStyle());
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
    if (n.x !== null && n.y !== null && n.x !== undefined) node.position = { x: n.x, y: n.y };
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
  $('theme-toggle').addEventListener('click', () => setTheme(document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark', true));
  window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', (e) => {
    if (!localStorage.getItem('agenthost-theme')) setTheme(e.matches ? 'dark' : 'light', false);
  });
  window.matchMedia('(max-width: 900px)').addEventListener('change', (e) => { setSidebar(!e.matches); layoutPanels(); });
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && narrow() && !document.querySelector('dialog[open]')) closeDrawers();
  });
  setTheme(document.documentElement.dataset.theme || 'light', false);
  setSidebar(!narrow());
  layoutPanels();
  if (!window.cytoscape) canvasNotice(rendererMissing());
  if (new URLSearchParams(location.search).get('login') === 'failed') showLogin();
  loadStatus();  // /readyz needs no session: the status bar works before a login
  setInterval(loadStatus, 15000);
  // One request first: without a session it is the one 401, and the login form, not one 401 per
  // part of the panel (an outside try: six in the console before logging in).
  await loadConversations();
  if (state.loginShown) return;
  state.signedIn = true;
  loadPluginReport();
  loadModels();
  refreshResources();
  if (state.conversation) openConversation(state.conversation);
}

init();
window.agenthostPanel = state;  // for tests and the curious: the panel's state, read-only by convention
