// ts-client.mjs drives agentd's MCP facade with the official TypeScript SDK
// and prints what it saw as one JSON object on stdout.
//
//   node ts-client.mjs stdio <command> [args...]   spawn the server, speak over its stdin/stdout
//   node ts-client.mjs http <url>                   connect over streamable HTTP
//
// It lists the tools, calls the first ask_* tool (in session "ts"), reads
// that session's log two events at a time until it has all of it, and calls
// read_session_log with a bad address.
//
// Module resolution: ESM imports ignore NODE_PATH, so the SDK is loaded with
// a require function from createRequire, whose resolution honours NODE_PATH.
// Set NODE_PATH to the node_modules directory that holds
// @modelcontextprotocol/sdk. The stdio server inherits this process's
// environment.
import { createRequire } from "node:module";
import { isDeepStrictEqual } from "node:util";

const require = createRequire(import.meta.url);
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");

function usage() {
  process.stderr.write("usage: ts-client.mjs stdio <command> [args...] | http <url>\n");
  process.exit(2);
}

function text(result) {
  return (result.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("");
}

const [mode, ...target] = process.argv.slice(2);
let transport;
if (mode === "stdio" && target.length > 0) {
  transport = new StdioClientTransport({
    command: target[0],
    args: target.slice(1),
    env: { ...process.env },
    stderr: "inherit",
  });
} else if (mode === "http" && target.length === 1) {
  transport = new StreamableHTTPClientTransport(new URL(target[0]));
} else {
  usage();
}

const client = new Client({ name: "agentd-ts-interop", version: "1.0.0" });
await client.connect(transport);

const out = { server: client.getServerVersion() };

const { tools } = await client.listTools();
out.tools = tools
  .map((t) => ({ name: t.name, readOnly: t.annotations?.readOnlyHint ?? false }))
  .sort((a, b) => a.name.localeCompare(b.name));

const ask = out.tools.map((t) => t.name).find((n) => n.startsWith("ask_"));
if (!ask) {
  throw new Error("no ask_* tool");
}
const agent = ask.slice("ask_".length);
const reply = await client.callTool({ name: ask, arguments: { message: "hello from typescript", session: "ts" } });
out.ask = { tool: ask, isError: reply.isError ?? false, text: text(reply) };

out.pages = [];
let after = 0;
for (let i = 0; i < 10; i++) {
  const res = await client.callTool({
    name: "read_session_log",
    arguments: { session: `${agent}/ts`, after, limit: 2 },
  });
  if (res.isError) {
    out.pages.push({ error: text(res) });
    break;
  }
  const page = JSON.parse(text(res));
  out.pages.push({
    session: page.session,
    seqs: page.events.map((e) => e.seq),
    kinds: page.events.map((e) => e.kind),
    next: page.next,
    more: page.more,
    structuredMatchesText: isDeepStrictEqual(res.structuredContent, page),
  });
  after = page.next;
  if (!page.more) {
    break;
  }
}

const bad = await client.callTool({ name: "read_session_log", arguments: { session: "no-slash" } });
out.badLog = { isError: bad.isError ?? false, text: text(bad) };

await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
