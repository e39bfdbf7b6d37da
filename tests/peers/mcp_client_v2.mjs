// Drives agenthost's MCP server with the v2 TypeScript client in version-negotiation "auto" mode
// (it probes server/discover; a server offering 2026-07-28 is then spoken to statelessly, others
// through initialize) and prints what it saw as one JSON object.   node mcp_client_v2.mjs stdio AGENTHOST CONFIG   |   node mcp_client_v2.mjs http URL TOKEN
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const [mode, target, extra] = process.argv.slice(2);
const transport = mode === 'stdio'
  ? new StdioClientTransport({ command: target, args: ['--config', extra, 'mcp'], stderr: 'ignore' })
  : new StreamableHTTPClientTransport(new URL(`${target}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${extra}` } } });
const client = new Client({ name: 'agenthost-test-v2', version: '2.0.0' }, { versionNegotiation: { mode: 'auto', probe: { timeoutMs: 3000 } } });
await client.connect(transport);
const out = { server: client.getServerVersion(), protocol: client.getNegotiatedProtocolVersion?.() ?? transport.protocolVersion ?? null };
out.tools = (await client.listTools()).tools.map((t) => t.name);
const echo = await client.callTool({ name: 'echo', arguments: { text: 'hello from v2' } });
out.echo = { text: echo.content[0].text, isError: echo.isError ?? false };
await client.close();
console.log(JSON.stringify(out));
