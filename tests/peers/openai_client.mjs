// Drives `agenthost serve` with the official npm `openai` client, unchanged, and prints what it saw
// as one JSON object: node openai_client.mjs BASE_URL TOKEN
import OpenAI from 'openai';

const [base, token] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: token, maxRetries: 0 });
const ask = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'please add 2 and 3' }];
const out = {};

const plain = await client.chat.completions.create({ model: 'agenthost', messages: ask });
out.plain = { object: plain.object, content: plain.choices[0].message.content, finish: plain.choices[0].finish_reason, usage: plain.usage };

const stream = await client.chat.completions.create({
  model: 'agenthost', messages: ask, stream: true, stream_options: { include_usage: true },
});
out.stream = { text: '', chunks: 0, usage: null, finish: null };
for await (const chunk of stream) {
  out.stream.chunks += 1;
  const choice = chunk.choices[0];
  if (choice?.delta?.content) out.stream.text += choice.delta.content;
  if (choice?.finish_reason) out.stream.finish = choice.finish_reason;
  if (chunk.usage) out.stream.usage = chunk.usage;
}

out.models = (await client.models.list()).data.map((m) => m.id);

const describe = (e) => ({
  name: e.constructor.name, status: e.status, code: e.code ?? null,
  authentication: e instanceof OpenAI.AuthenticationError, notFound: e instanceof OpenAI.NotFoundError,
});
try {
  await new OpenAI({ baseURL: `${base}/v1`, apiKey: 'wrong-token', maxRetries: 0 }).chat.completions.create({ model: 'agenthost', messages: ask });
} catch (e) { out.unauthorized = describe(e); }
try {
  await client.chat.completions.create({ model: 'no-such-model', messages: ask });
} catch (e) { out.missing = describe(e); }

console.log(JSON.stringify(out));
