// failures.mjs sends chat completions that must fail with the official
// `openai` npm client, which does not retry them (maxRetries 0), and
// prints what the client made of each failure as one JSON object on
// stdout: {name: {failed, class, status, type, code, param, message}}.
//
//   node failures.mjs <baseURL> <cases>
//
// cases is a JSON array of {"name", "apiKey", "model", "text"}, where text
// may be {"repeat": "x", "times": N} for a long one. Run it from a
// directory whose node_modules (or a parent's) holds openai.
import OpenAI from "openai";

const [baseURL, cases] = process.argv.slice(2);
if (!baseURL || !cases) {
  process.stderr.write("usage: failures.mjs <baseURL> <cases>\n");
  process.exit(2);
}
const out = {};
for (const c of JSON.parse(cases)) {
  const client = new OpenAI({ baseURL, apiKey: c.apiKey, maxRetries: 0 });
  const text = typeof c.text === "string" ? c.text : c.text.repeat.repeat(c.text.times);
  try {
    await client.chat.completions.create({ model: c.model, messages: [{ role: "user", content: text }] });
    out[c.name] = { failed: false };
  } catch (e) {
    out[c.name] = {
      failed: true,
      class: e.constructor.name,
      status: e.status ?? null,
      type: e.type ?? null,
      code: e.code ?? null,
      param: e.param ?? null,
      message: e.message,
    };
  }
}
process.stdout.write(JSON.stringify(out) + "\n");
