// Drives agenthost's web panel in headless Chromium (Debian's, through playwright-core) against a
// running `agenthost serve`. "main": the scripted provider builds a graph, then is asked twice to
// delete a node (approved once, rejected once). "resume": a run interrupted by a shutdown is resumed
// from the panel. Throws on the first failed expectation; prints a JSON summary. Screenshots go to
// SHOTS. With TOKEN, every fresh browser context logs in first through /login?token=… (the URL
// agenthost serve prints), which sets the panel's HttpOnly cookie.
//   node web_panel.mjs URL SHOTS [main|resume] [TOKEN]
import { chromium } from 'playwright-core';
import { mkdirSync } from 'node:fs';

const [url, shots, scenario = 'main', token = ''] = process.argv.slice(2);
mkdirSync(shots, { recursive: true });
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
});
const out = {};
const expect = (ok, what) => { if (!ok) throw new Error(`expected: ${what}`); };
const text = (page, selector) => page.locator(selector).innerText();
// Opens the panel, logging in first; a page's Content-Security-Policy violations are collected.
const cspViolations = [];
const open = async (page) => {
  page.on('console', (m) => { if (m.type() === 'error' && m.text().includes('Content Security Policy')) cspViolations.push(m.text()); });
  await page.goto(token ? `${url}/login?token=${encodeURIComponent(token)}` : url);
  expect(new URL(page.url()).pathname === '/' && !page.url().includes('token='), `the login redirects to the panel, got ${page.url()}`);
};

try {
  if (scenario === 'resume') {
    const page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
    await open(page);
    await page.click('#conversation-list li button');
    await page.waitForSelector('#resume:not([hidden])', { timeout: 15000 });
    out.resume_label = await text(page, '#resume');
    await page.screenshot({ path: `${shots}/6-interrupted.png` });
    await page.click('#resume');
    await page.waitForFunction(() => document.querySelector('#transcript').innerText.includes('three steps done'), null, { timeout: 20000 });
    expect(await page.locator('#resume').isHidden(), 'the resume button goes away');
    out.transcript = await text(page, '#transcript');
    await page.screenshot({ path: `${shots}/7-resumed.png` });
    await browser.close();
    console.log(JSON.stringify(out));
    process.exit(0);
  }
  const page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  const chatBodies = [];
  page.on('request', (r) => { if (r.url().endsWith('/api/chat') && r.method() === 'POST') chatBodies.push(JSON.parse(r.postData())); });
  await open(page);
  await page.waitForSelector('#status-ready.ready');
  out.status = await text(page, '#status-bar');

  // Count the assistant text's changes: streamed token by token means many.
  await page.evaluate(() => {
    window.__updates = 0;
    new MutationObserver(() => { window.__updates++; }).observe(document.getElementById('transcript'), { subtree: true, characterData: true, childList: true });
  });
  await page.focus('#prompt');
  await page.keyboard.type('make a solar graph');
  await page.keyboard.press('Enter');  // Enter sends
  await page.waitForFunction(() => document.querySelector('#transcript').innerText.includes('Made the Solar graph'), null, { timeout: 15000 });
  out.updates = await page.evaluate(() => window.__updates);
  expect(out.updates > 8, `the answer streamed in pieces (saw ${out.updates} updates)`);
  out.tool_lines = await page.locator('#transcript details.tool summary').allInnerTexts();
  expect(out.tool_lines.length === 4 && out.tool_lines[0].includes('create_graph') && out.tool_lines[1].includes('apply_graph_spec') &&
    out.tool_lines[2].includes('create_frame') && out.tool_lines[3].includes('create_storyline'),
    `four tool lines, got ${JSON.stringify(out.tool_lines)}`);
  expect(await page.locator('#transcript details.reasoning').count() === 1, 'the reasoning folded in a <details>');
  await page.waitForSelector('#canvas[data-nodes="3"]', { timeout: 10000 });
  await page.waitForFunction(() => document.getElementById('graph-summary').innerText.includes('1 frame · 1 storyline'), null, { timeout: 10000 });
  out.graph_summary = await text(page, '#graph-summary');
  out.frame = await page.evaluate(() => {
    const cy = window.agenthostPanel.cy;
    const frame = cy.nodes().filter((n) => n.data('frame'))[0];
    return { label: frame && frame.data('label'), children: frame ? frame.children().map((c) => c.data('label')).sort() : [],
      story_edges: cy.edges().filter((e) => e.data('story')).length };
  });
  expect(out.frame.label === 'Earth system' && out.frame.children.join() === 'Earth,Moon' && out.frame.story_edges === 2,
    `the frame holds Earth and Moon and the storyline is two dashed edges, got ${JSON.stringify(out.frame)}`);
  await page.waitForFunction(() => document.getElementById('status-bar').innerText.includes('idle'), null, { timeout: 10000 });
  await page.screenshot({ path: `${shots}/1-graph-built.png` });

  // Select "Sun" on the canvas: the next request carries it in its context.
  const sun = await page.evaluate(() => {
    const n = window.agenthostPanel.cy.nodes().filter((x) => x.data('label') === 'Sun')[0];
    const p = n.renderedPosition();
    const box = document.getElementById('canvas').getBoundingClientRect();
    return { x: box.left + p.x, y: box.top + p.y };
  });
  await page.mouse.click(sun.x, sun.y);
  await page.waitForFunction(() => document.getElementById('selection').innerText.includes('Sun'));

  // A destructive call pauses the run; approve it.
  await page.fill('#prompt', 'delete the earth');
  await page.click('#send');
  await page.waitForSelector('#approval:not([hidden])', { timeout: 15000 });
  out.approval_text = await text(page, '#approval-text');
  expect(out.approval_text.includes('delete_nodes'), 'the approval names the tool');
  expect(JSON.stringify(chatBodies[1].context) === JSON.stringify({ selected_nodes: ['Sun'], graph: 'Solar' }),
    `the selection in the request's context, got ${JSON.stringify(chatBodies[1])}`);
  await page.screenshot({ path: `${shots}/2-approval.png` });
  await page.click('#approve');
  await page.waitForFunction(() => document.querySelector('#transcript').innerText.includes('Deleted the Earth.'), null, { timeout: 15000 });
  await page.waitForSelector('#canvas[data-nodes="2"]', { timeout: 10000 });

  // Another one, rejected with a reason.
  await page.fill('#prompt', 'delete the sun');
  await page.keyboard.press('Enter');
  await page.focus('#prompt');
  await page.waitForSelector('#approval:not([hidden])', { timeout: 15000 });
  // By keyboard only: type the reason, Tab to Reject, press Enter.
  await page.focus('#reject-reason');
  await page.keyboard.type('keep the sun, it is useful');
  await page.keyboard.press('Tab');
  expect(await page.evaluate(() => document.activeElement.id) === 'reject', 'Tab from the reason reaches Reject');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.querySelector('#transcript').innerText.includes('Kept the Sun.'), null, { timeout: 15000 });
  out.rejected_line = (await page.locator('#transcript details.tool summary').allInnerTexts()).pop();
  expect(out.rejected_line.includes('keep the sun'), `the reason reached the model as the call's result, got ${out.rejected_line}`);
  await page.waitForSelector('#canvas[data-nodes="2"]');

  // Reload: the same conversation comes back.
  await page.reload();
  await page.waitForFunction(() => document.querySelector('#transcript').innerText.includes('Kept the Sun.'), null, { timeout: 15000 });
  out.after_reload = await text(page, '#transcript');
  expect(out.after_reload.includes('make a solar graph') && out.after_reload.includes('Made the Solar graph'), 'the whole conversation after a reload');
  await page.waitForSelector('#conversation-list li button[aria-current="true"]');
  out.conversations = await page.locator('#conversation-list li').count();
  await page.waitForSelector('#canvas[data-nodes="2"]');
  await page.screenshot({ path: `${shots}/3-after-reload-1280x720.png` });
  await page.setViewportSize({ width: 1920, height: 1080 });
  await page.screenshot({ path: `${shots}/4-1920x1080.png` });

  // Keyboard: from the prompt, Tab walks to the mode selector and then to Send.
  await page.focus('#prompt');
  const walk = [];
  for (let i = 0; i < 2; i++) { await page.keyboard.press('Tab'); walk.push(await page.evaluate(() => document.activeElement.id)); }
  expect(walk.join() === 'mode,send', `Tab from the prompt goes to mode, then send; got ${walk}`);
  out.focus_outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
  expect(out.focus_outline !== 'none', 'the focused button shows an outline');

  // Contrast (WCAG 2): text against its effective background, at least 4.5:1.
  out.contrast = await page.evaluate(() => {
    const rgb = (c) => (c.match(/[\d.]+/g) || []).map(Number);
    const lum = ([r, g, b]) => [r, g, b].map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
      .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
    const background = (el) => {
      for (; el; el = el.parentElement) {
        const c = rgb(getComputedStyle(el).backgroundColor);
        if (c.length === 3 || c[3] > 0) return c.slice(0, 3);
      }
      return [255, 255, 255];
    };
    const ratio = (el) => {
      const a = lum(rgb(getComputedStyle(el).color).slice(0, 3)), b = lum(background(el));
      return Math.round(((Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)) * 10) / 10;
    };
    const checked = {};
    for (const sel of ['#transcript .assistant', '#transcript details.tool summary', '#send', '#new-conversation', '#mode',
      '#status-provider', '#status-ready', '#status-run', '#graph-summary', '#log li', '#prompt'])
      for (const el of document.querySelectorAll(sel)) { checked[sel] = Math.min(checked[sel] ?? 99, ratio(el)); }
    return checked;
  });
  const low = Object.entries(out.contrast).filter(([, r]) => r < 4.5);
  expect(Object.keys(out.contrast).length >= 8 && low.length === 0, `contrast of at least 4.5:1, got ${JSON.stringify(out.contrast)}`);
  expect(pageErrors.length === 0, `no script errors, got ${pageErrors.join('; ')}`);
  expect(cspViolations.length === 0, `no Content-Security-Policy violations, got ${cspViolations.join('; ')}`);

  // Without the renderer the panel still works and the canvas says why.
  const bare = await browser.newPage({ viewport: { width: 1280, height: 720 } });
  await bare.route('**/panel/vendor/cytoscape.min.js', (route) => route.fulfill({ status: 404, body: '' }));
  await open(bare);  // a fresh browser context: open the conversation from the list
  await bare.click('#conversation-list li button');
  await bare.waitForFunction(() => document.querySelector('#transcript').innerText.includes('Kept the Sun.'), null, { timeout: 15000 });
  out.without_renderer = await text(bare, '#canvas');
  expect(out.without_renderer.includes('not installed'), `the canvas explains the missing renderer, got ${out.without_renderer}`);
  await bare.screenshot({ path: `${shots}/5-without-renderer.png` });
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
