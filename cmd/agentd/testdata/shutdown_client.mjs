// shutdown_client.mjs sends one chat completion with the official `openai`
// npm client, retrying as the client does by itself, and prints the answer
// and every HTTP attempt it made as one JSON object on stdout.
//
//   node shutdown_client.mjs <baseURL> <apiKey> <model> <text> <idempotencyKey>
//
// Run it from a directory whose node_modules (or a parent's) holds openai.
import OpenAI from "openai";

const [baseURL, apiKey, model, text, key] = process.argv.slice(2);
const attempts = [];
const client = new OpenAI({
  baseURL,
  apiKey,
  maxRetries: 8,
  fetch: async (url, init) => {
    try {
      const r = await fetch(url, init);
      attempts.push({ status: r.status, retryAfter: r.headers.get("retry-after"), shouldRetry: r.headers.get("x-should-retry") });
      return r;
    } catch (e) {
      attempts.push({ error: String(e.cause?.code ?? e.message) });
      throw e;
    }
  },
});
let out;
try {
  const r = await client.chat.completions.create(
    { model, messages: [{ role: "user", content: text }] },
    { headers: { "Idempotency-Key": key } },
  );
  out = { content: r.choices[0].message.content };
} catch (e) {
  out = { failed: true, status: e.status ?? null, message: e.message };
}
console.log(JSON.stringify({ ...out, attempts }));
