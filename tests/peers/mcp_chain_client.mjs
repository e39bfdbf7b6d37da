// An MCP client that takes sampling and elicitation (as VS Code does), driving agenthost's server
// whose bridge reaches server-everything: what that server asks of its client (agenthost) must come
// back to this one, and its progress too. Also asks for a destructive tool, which agenthost must
// put to this client as an approval. Prints what it saw as one JSON object.
//   node mcp_chain_client.mjs URL TOKEN           the whole chain
//   node mcp_chain_client.mjs URL TOKEN kill=PID  the server (PID) dies while its question waits
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const [url, token, mode] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: 'chain-test', version: '1.0.0' }, { capabilities: { sampling: {}, elicitation: {} } });
const out = { sampled: [], elicited: [] };
const text = (result) => result.content.map((c) => c.text ?? `[${c.type}]`).join('\n');
client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
  out.sampled.push(request.params.messages[0].content.text);
  return { role: 'assistant', content: { type: 'text', text: 'an answer from the chain client' }, model: 'chain-model' };
});
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  out.elicited.push(request.params.message);
  const fields = Object.keys(request.params.requestedSchema?.properties ?? {});
  if (fields.includes('approve')) return { action: 'accept', content: { approve: true } };
  return { action: 'accept', content: { name: 'Ada Lovelace' } };
});
if (mode?.startsWith('kill=')) {
  // The question is never answered: the bridged server is killed while it waits for it.
  client.setRequestHandler(ElicitRequestSchema, () => new Promise(() => {
    setTimeout(() => process.kill(Number(mode.slice(5)), 'SIGKILL'), 500);
  }));
  await client.connect(transport);
  const started = Date.now();
  const died = await client.callTool({ name: 'everything__trigger_elicitation_request', arguments: {} });
  console.log(JSON.stringify({ kill: { ms: Date.now() - started, text: text(died), isError: died.isError ?? false } }));
  await client.close();
  process.exit(0);
}
await client.connect(transport);
const tools = (await client.listTools()).tools.map((t) => t.name);
out.tools = tools;
const sampling = await client.callTool({ name: 'everything__trigger_sampling_request', arguments: { prompt: 'say hi' } });
out.sampling = { text: text(sampling), isError: sampling.isError ?? false };
const elicitation = await client.callTool({ name: 'everything__trigger_elicitation_request', arguments: {} });
out.elicitation = { text: text(elicitation), isError: elicitation.isError ?? false };
const roots = await client.callTool({ name: 'everything__get_roots_list', arguments: {} });
out.roots = { text: text(roots), isError: roots.isError ?? false };
const progress = [];
const long = await client.callTool({ name: 'everything__trigger_long_running_operation', arguments: { duration: 1, steps: 4 } },
  undefined, { onprogress: (p) => progress.push(p.progress) });
out.progress = { values: progress, isError: long.isError ?? false };
const image = await client.callTool({ name: 'everything__get_tiny_image', arguments: {} });
out.image_types = image.content.map((c) => c.type);
// The bridged server's prompts, completion, resources and templates, through agenthost.
out.prompts = (await client.listPrompts()).prompts.map((p) => p.name);
const prompt = await client.getPrompt({ name: 'everything__simple-prompt', arguments: {} });
out.prompt_text = prompt.messages.map((m) => m.content.text ?? '').join('\n');
const completed = await client.complete({ ref: { type: 'ref/prompt', name: 'everything__completable-prompt' },
  argument: { name: 'department', value: 'Eng' } });
out.completion = completed.completion.values;
const resources = (await client.listResources()).resources;
out.resource_names = resources.map((r) => r.name).filter((n) => n.startsWith('[everything]'));
const bridged = resources.find((r) => r.name.startsWith('[everything]'));
out.resource_read = bridged ? (await client.readResource({ uri: bridged.uri })).contents.length : 0;
out.templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
const approved = await client.callTool({ name: 'delete_item', arguments: { name: 'x' } });
out.approved = { text: text(approved), isError: approved.isError ?? false };
await client.close();
console.log(JSON.stringify(out));
