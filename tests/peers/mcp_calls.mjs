// Lists every tool of agenthost's MCP server over stdio with the official TypeScript SDK client
// (whose schema checks refuse a malformed tool list), then calls tools, and prints one JSON object:
// {"tools": [names], "calls": [{"name", "text", "isError"} or {"name", "error"}]}.
//   node mcp_calls.mjs AGENTHOST CONFIG '[{"name": "...", "arguments": {...}}, ...]'
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [command, config, callsJson] = process.argv.slice(2);
const transport = new StdioClientTransport({ command, args: ['--config', config, 'mcp'], stderr: 'ignore' });
const client = new Client({ name: 'agenthost-boundary-test', version: '1.0.0' });
await client.connect(transport);
const out = { tools: [], calls: [] };
let cursor;
do {
  const page = await client.listTools(cursor ? { cursor } : {});
  out.tools.push(...page.tools.map((t) => t.name));
  cursor = page.nextCursor;
} while (cursor);
for (const call of JSON.parse(callsJson ?? '[]')) {
  try {
    const r = await client.callTool(call);
    out.calls.push({ name: call.name, text: r.content?.[0]?.text ?? null, isError: r.isError ?? false });
  } catch (e) {
    out.calls.push({ name: call.name, error: String(e.message ?? e) });
  }
}
out.alive = (await client.ping()) !== undefined;
await client.close();
console.log(JSON.stringify(out));
