// Serves `agenthost mcp` (stdio) as Streamable HTTP, so tools that speak only HTTP (the official
// conformance suite, @modelcontextprotocol/conformance, has no stdio mode) can drive the stdio
// server. Each HTTP session is one `agenthost mcp` process; messages pass through unchanged both
// ways. What the server says during a call (progress, log lines, its sampling and elicitation
// requests) goes back on that call's stream; the rest on the session's listening stream.
//
//   node mcp_stdio_adapter.mjs PORT AGENTHOST CONFIG
//
// It prints "listening" once ready. The DNS-rebinding and stream scenarios of the suite test this
// adapter's HTTP side (the SDK's), not agenthost's stdio.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [port, agenthost, config] = process.argv.slice(2);
const sessions = new Map();

async function newSession() {
  const stdio = new StdioClientTransport({ command: agenthost, args: ['--config', config, 'mcp'], stderr: 'inherit' });
  const calls = [];               // ids of the client's tools/call requests not answered yet
  const byToken = new Map();      // progress token -> the call that asked for it
  const front = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (id) => sessions.set(id, front),
    enableDnsRebindingProtection: true,
    allowedHosts: [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`],
  });
  front.onmessage = (message) => {
    if (message.method === 'tools/call' && message.id !== undefined) {
      calls.push(message.id);
      const token = message.params?._meta?.progressToken;
      if (token !== undefined) byToken.set(token, message.id);
    }
    stdio.send(message).catch((e) => console.error('adapter: to agenthost:', e.message));
  };
  stdio.onmessage = (message) => {
    let related;
    if ('result' in message || 'error' in message) {
      const at = calls.indexOf(message.id);
      if (at >= 0) calls.splice(at, 1);
    } else if (message.method === 'notifications/progress') {
      related = byToken.get(message.params?.progressToken);
    } else if (calls.length > 0) {
      related = calls[calls.length - 1];
    }
    front.send(message, related === undefined ? undefined : { relatedRequestId: related })
      .catch((e) => console.error('adapter: to client:', e.message));
  };
  front.onclose = () => {
    if (front.sessionId) sessions.delete(front.sessionId);
    stdio.close();
  };
  await stdio.start();
  return { front, stdio };
}

http.createServer(async (req, res) => {
  try {
    const sid = req.headers['mcp-session-id'];
    let front = sid ? sessions.get(sid) : undefined;
    if (!front) {
      if (sid || req.method !== 'POST') {
        res.writeHead(sid ? 404 : 400, { 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }));
        return;
      }
      const fresh = await newSession();
      await fresh.front.handleRequest(req, res);
      if (!fresh.front.sessionId) await fresh.stdio.close();  // refused before a session began
      return;
    }
    await front.handleRequest(req, res);
  } catch (e) {
    console.error('adapter:', e);
    if (!res.headersSent) res.writeHead(500).end();
  }
}).listen(Number(port), '127.0.0.1', () => console.log('listening'));
