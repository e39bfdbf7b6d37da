// The official npm `openai` client with its DEFAULT retries (maxRetries 2) against `agenthost serve`
// whose model fails in a given way: one chat.completions.create per prompt, counting the HTTP attempts
// the client made. Two passes: as shipped (it obeys x-should-retry), and "ignoring", where the
// responses reach the client without x-should-retry / Retry-After, so it retries 408/409/429/5xx;
// there each request carries an Idempotency-Key header (the client sends none by itself; a header
// given per request goes with each of its retries).
// Prints {"obeying": {PROMPT: result}, "ignoring": {PROMPT: result}}.
//   node openai_errors.mjs BASE_URL TOKEN '["prompt", ...]'
import OpenAI from 'openai';

const [base, token, promptsJson] = process.argv.slice(2);
const prompts = JSON.parse(promptsJson);

async function pass(ignoring) {
  const results = {};
  for (const prompt of prompts) {
    const attempts = [];
    const client = new OpenAI({
      baseURL: `${base}/v1`, apiKey: token, // maxRetries: the default (2)
      fetch: async (url, init) => {
        attempts.push({ key: new Headers(init?.headers).get('idempotency-key') });
        const res = await fetch(url, init);
        if (!ignoring) return res;
        const headers = new Headers(res.headers);
        headers.delete('x-should-retry');
        headers.delete('retry-after');
        return new Response(await res.arrayBuffer(), { status: res.status, statusText: res.statusText, headers });
      },
    });
    const started = Date.now();
    const result = {};
    try {
      const options = ignoring ? { headers: { 'Idempotency-Key': `test-${crypto.randomUUID()}` } } : {};
      const r = await client.chat.completions.create({ model: 'agenthost', messages: [{ role: 'user', content: prompt }] }, options);
      result.ok = true;
      result.content = r.choices[0].message.content;
    } catch (e) {
      result.ok = false;
      result.name = e.constructor.name;
      result.status = e.status ?? null;
      result.code = e.code ?? null;
      result.type = e.type ?? null;
      result.should_retry = e.headers?.get?.('x-should-retry') ?? null;
      result.retry_after = e.headers?.get?.('retry-after') ?? null;
      result.replayed = e.headers?.get?.('idempotent-replayed') ?? null;
    }
    result.attempts = attempts.length;
    result.keys = new Set(attempts.map((a) => a.key)).size;
    result.key = attempts[0]?.key ?? null;
    result.ms = Date.now() - started;
    results[prompt] = result;
  }
  return results;
}

const out = { obeying: await pass(false), ignoring: await pass(true) };
console.log(JSON.stringify(out));
