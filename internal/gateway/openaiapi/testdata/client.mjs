// client.mjs talks to agentd's OpenAI-compatible API with the official
// `openai` npm client and prints what it saw as one JSON object on stdout.
//
//   node client.mjs <baseURL> <apiKey> <model>
//
// baseURL is the API root, such as http://127.0.0.1:7420/v1. It lists the
// models; sends a message without a session and continues the session the
// answer names (X-Agentd-Session); streams an answer chunk by chunk; streams
// one with the client's accumulating helper; sends a small PNG image as a
// data: URL; and makes requests that must fail: an unknown model, client
// tools, an image given by its http URL, and a turn whose model fails.
//
// `import OpenAI from "openai"` resolves from this file's directory up, so
// run it from a directory whose node_modules (or a parent's) holds openai:
// the Go test copies it next to a link to test/npm/node_modules.
import OpenAI from "openai";

const [baseURL, apiKey, model] = process.argv.slice(2);
if (!baseURL || !apiKey || !model) {
  process.stderr.write("usage: client.mjs <baseURL> <apiKey> <model>\n");
  process.exit(2);
}
const client = new OpenAI({ baseURL, apiKey });
const out = {};

async function failure(fn) {
  try {
    await fn();
    return { failed: false };
  } catch (e) {
    return {
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

// The agents, as models.
out.models = [];
for await (const m of client.models.list()) {
  out.models.push({ id: m.id, object: m.object, owned_by: m.owned_by, created: m.created });
}
out.model = await client.models.retrieve(model).then((m) => m.id);

// A new conversation, then its continuation.
{
  const { data, response } = await client.chat.completions
    .create({ model, messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "history from node" }] })
    .withResponse();
  const session = response.headers.get("x-agentd-session");
  out.first = { id: data.id, object: data.object, content: data.choices[0].message.content, finish: data.choices[0].finish_reason, usage: data.usage, session };
  const next = await client.chat.completions.create(
    {
      model,
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "history from node" },
        { role: "assistant", content: data.choices[0].message.content },
        { role: "user", content: "history again" },
      ],
    },
    { headers: { "X-Agentd-Session": session } },
  );
  out.second = { id: next.id, content: next.choices[0].message.content };
}

// A streamed answer, chunk by chunk.
{
  const stream = await client.chat.completions.create({
    model,
    stream: true,
    stream_options: { include_usage: true },
    user: "node-user",
    messages: [{ role: "user", content: "long story" }],
  });
  const s = { chunks: 0, roles: [], content: "", finish: [], usage: null, ids: new Set() };
  for await (const chunk of stream) {
    s.chunks++;
    s.ids.add(chunk.id);
    if (chunk.usage) s.usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta.role) s.roles.push(c.delta.role);
      if (c.delta.content) s.content += c.delta.content;
      if (c.finish_reason) s.finish.push(c.finish_reason);
    }
  }
  s.ids = [...s.ids];
  out.stream = s;
}

// The helper that accumulates a streamed answer into a completion.
{
  const runner = client.chat.completions.stream({ model, messages: [{ role: "user", content: "tool please" }] });
  let deltas = "";
  runner.on("content", (d) => (deltas += d));
  const final = await runner.finalChatCompletion();
  out.helper = { content: final.choices[0].message.content, finish: final.choices[0].finish_reason, role: final.choices[0].message.role, deltas };
}

// An image, as a data: URL (a 1×1 PNG).
const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
{
  const r = await client.chat.completions.create({
    model,
    messages: [
      {
        role: "user",
        content: [
          { type: "text", text: "picture from node" },
          { type: "image_url", image_url: { url: `data:image/png;base64,${png}`, detail: "low" } },
        ],
      },
    ],
  });
  out.image = { content: r.choices[0].message.content, finish: r.choices[0].finish_reason };
}

out.unknownModel = await failure(() => client.chat.completions.create({ model: "no-such-agent", messages: [{ role: "user", content: "hi" }] }));
out.tools = await failure(() =>
  client.chat.completions.create({
    model,
    messages: [{ role: "user", content: "hi" }],
    tools: [{ type: "function", function: { name: "f", parameters: { type: "object" } } }],
  }),
);
out.imageURL = await failure(() =>
  client.chat.completions.create({
    model,
    messages: [{ role: "user", content: [{ type: "text", text: "picture" }, { type: "image_url", image_url: { url: "https://example.com/cat.png" } }] }],
  }),
);
out.failedTurn = await failure(() => client.chat.completions.create({ model, messages: [{ role: "user", content: "fail from node" }] }));
out.failedStream = await failure(async () => {
  const stream = await client.chat.completions.create({ model, stream: true, messages: [{ role: "user", content: "fail from node stream" }] });
  for await (const _ of stream) {
    // the error arrives after the first chunk
  }
});

process.stdout.write(JSON.stringify(out) + "\n");
