// The agenthost web panel. Talks to `agenthost serve` only through its public API: /api/chat
// (start a run, then read its events as SSE), /api/conversations, /api/runs/:id/*, /readyz,
// /api/plugins and /api/resources (plugin resources such as graph://<name>, the same hook the MCP
// server uses). Knows nothing graph-specific beyond drawing a {nodes, edges, frames, storylines}
// document; re-reads resources after tool results and at the end of a run.
'use strict';

const $ = (id) => document.getElementById(id);
const state = {
  token: sessionStorage.getItem('agenthost-token') || '',
  conversation: localStorage.getItem('agenthost-conversation') || '',
  run: 0,
  lastSeq: 0,
  running: false,
  streamAbort: null,
  graphUri: '',
  userPickedGraph: false,
  selected: new Set(),
  cy: null,
  toolLines: new Map(),   // call_id → {element, started}
  assistant: null,        // the assistant message being streamed
  reasoning: null,        // its reasoning <details>
};

// ---- API ----

async function api(path, options = {}) {
  const headers = Object.assign({}, options.headers || {});
  if (state.token) headers.Authorization = `Bearer ${state.token}`;
  if (options.body && !headers['Content-Type']) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, Object.assign({}, options, { headers }));
  if (res.status === 401) {
    const token = window.prompt('This agenthost needs its access token (the [server] token_env variable):');
    if (token) {
      state.token = token;
      sessionStorage.setItem('agenthost-token', token);
      return api(path, options);
    }
  }
  return res;
}

async function apiJson(path, options) {
  const res = await api(path, options);
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error((body.error && body.error.message) || `HTTP ${res.status}`);
  return body;
}

// ---- activity log and status ----

function log(level, text) {
  const li = document.createElement('li');
  li.className = level;
  li.textContent = `${new Date().toLocaleTimeString()} ${level}: ${text}`;
  $('log').prepend(li);
  while ($('log').children.length > 200) $('log').lastChild.remove();
}

async function loadStatus() {
  try {
    const res = await api('/readyz');
    const body = await res.json();
    $('status-provider').textContent = `provider ${body.provider || '?'}${body.model ? ' · ' + body.model : ''}`;
    $('status-ready').textContent = body.ready ? 'ready' : `not ready: ${(body.error && body.error.message) || 'see /readyz'}`;
    $('status-ready').className = body.ready ? 'ready' : 'not-ready';
  } catch (e) {
    $('status-ready').textContent = 'server unreachable';
    $('status-ready').className = 'not-ready';
  }
  try {
    const report = await apiJson('/api/plugins');
    for (const p of report.plugins || []) {
      if (p.error) log('error', `plugin ${p.name}: ${p.error.message}`);
      for (const w of p.warnings || []) log('warn', `plugin ${p.name}: ${w}`);
    }
  } catch (e) { log('error', `plugins: ${e.message}`); }
}

function setRunning(running) {
  state.running = running;
  $('send').disabled = running;
  $('cancel').hidden = !running;
  $('status-run').textContent = running ? `run ${state.run} running` : (state.run ? `run ${state.run} idle` : '');
  if (!running) $('status-queue').textContent = '';
}

// ---- conversations ----

async function loadConversations() {
  let list = [];
  try { list = (await apiJson('/api/conversations')).conversations || []; } catch (e) { log('error', e.message); }
  const ul = $('conversation-list');
  ul.replaceChildren();
  for (const c of list) {
    const li = document.createElement('li');
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = c.last_prompt || c.id;
    b.title = `${c.id} · ${c.runs} run(s)${c.busy ? ' · running' : ''}`;
    b.setAttribute('aria-current', c.id === state.conversation ? 'true' : 'false');
    b.addEventListener('click', () => openConversation(c.id));
    li.append(b);
    ul.append(li);
  }
}

async function openConversation(id) {
  stopStream();
  state.conversation = id;
  localStorage.setItem('agenthost-conversation', id);
  $('transcript').replaceChildren();
  $('tasks').replaceChildren();
  $('approval').hidden = true;
  $('resume').hidden = true;
  state.toolLines.clear();
  state.assistant = null;
  let convo;
  try { convo = await apiJson(`/api/conversations/${encodeURIComponent(id)}`); } catch (e) {
    log('warn', `conversation ${id}: ${e.message}`);
    state.conversation = '';
    localStorage.removeItem('agenthost-conversation');
    await loadConversations();
    return;
  }
  for (const m of convo.messages) renderStored(m);
  renderTasks(convo.tasks);
  await loadConversations();
  const last = convo.runs.length ? convo.runs[convo.runs.length - 1] : null;
  if (last) {
    state.run = last.id;
    if (last.status === 'paused') {  // the call waiting for approval is the one without a result
      const pending = [...state.toolLines.values()].filter((l) => l.element.classList.contains('running')).pop();
      showApproval(pending ? { tool: pending.tool, arguments: pending.args } : {});
    }
    if (convo.busy) { setRunning(true); stream(last.id, 0, true); } else setRunning(false);
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
}

function newConversation() {
  stopStream();
  state.conversation = '';
  state.run = 0;
  localStorage.removeItem('agenthost-conversation');
  $('transcript').replaceChildren();
  $('tasks').replaceChildren();
  $('approval').hidden = true;
  setRunning(false);
  loadConversations();
  $('prompt').focus();
}

// ---- transcript ----

function scrollDown() { $('transcript').scrollTop = $('transcript').scrollHeight; }

function addMessage(kind, text) {
  const div = document.createElement('div');
  div.className = `message ${kind}`;
  div.textContent = text;
  $('transcript').append(div);
  scrollDown();
  return div;
}

function short(value, n = 80) {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > n ? text.slice(0, n) + '…' : text;
}

function addToolLine(callId, tool, args) {
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
  state.assistant = null;
  scrollDown();
}

function finishToolLine(callId, tool, content, isError, ms) {
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
    if (msg.content) addMessage('assistant', msg.content);
    for (const call of msg.tool_calls || []) addToolLine(call.id, call.name, call.arguments);
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
}

function showApproval(data) {
  $('approval').hidden = false;
  $('approval-text').textContent = `The agent wants to run ${data.tool || 'a tool'}${data.arguments ? ' ' + short(data.arguments, 160) : ''}` +
    `${data.reason ? ` — ${data.reason}` : ''}. Approve it?`;
  $('approve').focus();
}

// ---- the SSE stream (fetch, so the token can be sent) ----

function stopStream() {
  if (state.streamAbort) state.streamAbort.abort();
  state.streamAbort = null;
}

async function stream(run, after = 0, replay = false) {
  stopStream();
  const controller = new AbortController();
  state.streamAbort = controller;
  state.lastSeq = after;
  // A stored transcript was just drawn: replayed events before `after` would draw it twice.
  const skipDrawing = replay;
  for (let attempt = 0; attempt < 20 && !controller.signal.aborted; attempt++) {
    try {
      const res = await api(`/api/chat?run=${run}`, { headers: { 'Last-Event-ID': String(state.lastSeq) }, signal: controller.signal });
      if (!res.ok) { log('error', `stream: HTTP ${res.status}`); break; }
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
          // Replaying after a reload of the stored transcript: what it drew already is not drawn twice.
          if (!(skipDrawing && ['token', 'reasoning', 'tool_call', 'tool_result', 'gap'].includes(name))) onEvent(name, event);
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
    case 'token':
      if (!state.assistant) state.assistant = addMessage('assistant', '');
      state.assistant.textContent += e.text;
      scrollDown();
      break;
    case 'reasoning':
      if (!state.reasoning) state.reasoning = addReasoning('');
      state.reasoning.textContent += e.text;
      break;
    case 'tool_call':
      state.reasoning = null;
      addToolLine(e.call_id, e.tool, e.arguments);
      break;
    case 'tool_result':
      finishToolLine(e.call_id, e.tool, e.content, e.is_error);
      refreshGraphs();
      break;
    case 'tasks': renderTasks(e.tasks); break;
    case 'approval': showApproval(e); break;
    case 'queue': $('status-queue').textContent = e.ahead > 0 ? `queue: ${e.ahead} ahead` : ''; break;
    case 'status':
      $('status-queue').textContent = e.text;
      state.assistant = null;
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
      state.assistant = null;
      state.reasoning = null;
      if (e.stop_reason === 'approval_pending') $('status-run').textContent = `run ${state.run} waiting for approval`;
      else $('approval').hidden = true;
      if (!e.ok && e.error && e.stop_reason !== 'approval_pending') log('error', `run ${e.run}: ${e.error}`);
      refreshGraphs();
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
  if (state.conversation) body.conversation = state.conversation;
  if (state.selected.size) body.context = { selected_nodes: [...state.selected], graph: graphName(state.graphUri) };
  addMessage('user', message);
  $('prompt').value = '';
  try {
    const started = await apiJson('/api/chat', { method: 'POST', body: JSON.stringify(body) });
    state.conversation = started.conversation;
    localStorage.setItem('agenthost-conversation', started.conversation);
    state.run = started.run;
    setRunning(true);
    loadConversations();
    stream(started.run);
  } catch (e) {
    addMessage('error', e.message);
    log('error', e.message);
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
    stream(state.run, state.lastSeq);
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

// ---- the graph canvas ----

function graphName(uri) { return uri ? decodeURIComponent(uri.replace(/^graph:\/\//, '').replace(/\?.*$/, '')) : ''; }

function canvasNotice(text) {
  const div = document.createElement('div');
  div.className = 'notice';
  div.textContent = text;
  $('canvas').replaceChildren(div);
}

async function refreshGraphs() {
  let resources = [];
  try { resources = (await apiJson('/api/resources')).resources || []; } catch (e) { log('error', `resources: ${e.message}`); return; }
  const graphs = resources.filter((r) => r.mimeType === 'application/json' && r.uri.startsWith('graph://'));
  const select = $('graph-select');
  select.replaceChildren(...graphs.map((g) => new Option(g.name, g.uri)));
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
  doc.storylines.forEach((s, i) => {
    const members = s.members.map((m) => byName.get(m.name || m)).filter(Boolean);
    for (let k = 1; k < members.length; k++)
      elements.push({ group: 'edges', data: { id: `s${s.id}_${k}`, source: `n${members[k - 1].id}`, target: `n${members[k].id}`, label: k === 1 ? s.title : '', story: true } });
  });

  if (!state.cy) {
    $('canvas').replaceChildren();
    state.cy = window.cytoscape({
      container: $('canvas'),
      elements: [],
      wheelSensitivity: 0.3,
      style: [
        { selector: 'node', style: { label: 'data(label)', 'background-color': 'data(color)', color: '#1b1f24', 'font-size': 12,
          'text-valign': 'bottom', 'text-margin-y': 4, width: 26, height: 26 } },
        { selector: 'node[?frame]', style: { 'background-color': '#eef2ff', 'background-opacity': 0.6, 'border-color': '#6366f1',
          'border-width': 1, shape: 'round-rectangle', 'text-valign': 'top', 'font-weight': 600 } },
        { selector: 'node:selected', style: { 'border-width': 4, 'border-color': '#ffbf47' } },
        { selector: 'edge', style: { label: 'data(label)', width: 2, 'line-color': '#8c959f', 'target-arrow-color': '#8c959f',
          'curve-style': 'bezier', 'font-size': 10, 'text-rotation': 'autorotate', color: '#57606a' } },
        { selector: 'edge[?directed]', style: { 'target-arrow-shape': 'triangle' } },
        { selector: 'edge[?story]', style: { 'line-style': 'dashed', 'line-color': '#d97706', 'target-arrow-shape': 'vee', 'target-arrow-color': '#d97706' } },
      ],
    });
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
  const unplaced = cy.nodes().filter((n) => !n.data('frame') && !n.data('placed'));
  if (unplaced.length) {
    cy.layout({ name: 'cose', animate: false, fit: true, padding: 40, randomize: false }).run();
    if (cy.zoom() > 1.2) { cy.zoom(1.2); cy.center(); }  // a few nodes should not fill the screen
    unplaced.forEach((n) => n.data('placed', true));
  }
}

// ---- wiring ----

function init() {
  $('prompt-form').addEventListener('submit', send);
  $('prompt').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey) { e.preventDefault(); $('prompt-form').requestSubmit(); }
  });
  $('approve').addEventListener('click', () => decide('approve'));
  $('reject').addEventListener('click', () => decide('reject'));
  $('cancel').addEventListener('click', cancelRun);
  $('resume').addEventListener('click', resumeRun);
  $('new-conversation').addEventListener('click', newConversation);
  $('graph-select').addEventListener('change', (e) => { state.userPickedGraph = true; state.graphUri = e.target.value; drawGraph(state.graphUri); });
  $('fit').addEventListener('click', () => state.cy && state.cy.fit(undefined, 40));
  $('clear-selection').addEventListener('click', () => state.cy && state.cy.$(':selected').unselect());
  if (!window.cytoscape) canvasNotice(rendererMissing());
  loadStatus();
  refreshGraphs();
  if (state.conversation) openConversation(state.conversation); else loadConversations();
  setInterval(loadStatus, 15000);
}

init();
window.agenthostPanel = state;  // for tests and the curious: the panel's state, read-only by convention
