// Drives agenthost's MCP server with the official TypeScript SDK client and prints what it saw as
// one JSON object.   node mcp_client.mjs stdio AGENTHOST CONFIG   |   node mcp_client.mjs http URL TOKEN
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const [mode, target, extra] = process.argv.slice(2);
const transport = mode === 'stdio'
  ? new StdioClientTransport({ command: target, args: ['--config', extra, 'mcp'], stderr: 'ignore' })
  : new StreamableHTTPClientTransport(new URL(`${target}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${extra}` } } });
const client = new Client({ name: 'agenthost-test', version: '1.0.0' });
await client.connect(transport);
const out = { server: client.getServerVersion(), protocol: transport.protocolVersion ?? null };

const tools = (await client.listTools()).tools;
out.tools = tools.map((t) => t.name);
out.echo_annotations = tools.find((t) => t.name === 'echo')?.annotations ?? null;
const echo = await client.callTool({ name: 'echo', arguments: { text: 'hello over MCP' } });
out.echo = { text: echo.content[0].text, isError: echo.isError ?? false };
const bad = await client.callTool({ name: 'add', arguments: { a: 'one', b: 2 } });
out.bad = { text: bad.content[0].text, isError: bad.isError ?? false };
const destructive = await client.callTool({ name: 'delete_item', arguments: { name: 'x' } });
out.destructive = { text: destructive.content[0].text, isError: destructive.isError ?? false };

out.resources = (await client.listResources()).resources.map((r) => r.uri).filter((u) => u.startsWith('memory://'));
const facts = await client.readResource({ uri: 'memory://facts' });
out.facts = JSON.parse(facts.contents[0].text);

const controller = new AbortController();
const started = Date.now();
setTimeout(() => controller.abort(), 300);
try {
  await client.callTool({ name: 'probe_wait', arguments: { ms: 20000 } }, undefined, { signal: controller.signal });
  out.cancel = { aborted: false };
} catch (e) {
  out.cancel = { aborted: true, name: e.name, ms: Date.now() - started };
}
// A plugin grows a tool: the server says so unasked, and the new tool is listed and callable.
const changed = new Promise((resolve) => client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve(true)));
await client.callTool({ name: 'probe_grow', arguments: {} });
out.list_changed = await Promise.race([changed, new Promise((resolve) => setTimeout(() => resolve(false), 5000).unref())]);
out.grown = (await client.listTools()).tools.some((t) => t.name === 'probe_extra') && !out.tools.includes('probe_extra');
out.extra = (await client.callTool({ name: 'probe_extra', arguments: {} })).content[0].text;
try {
  await client.callTool({ name: 'no_such_tool', arguments: {} });
} catch (e) {
  out.unknown = { code: e.code ?? null, message: String(e.message) };
}
await client.close();
console.log(JSON.stringify(out));
