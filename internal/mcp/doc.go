// Package mcp connects agentd to MCP servers and offers their tools to
// agents.
//
// A Manager holds one connection per configured server name (one child
// process for a stdio server), shared by every agent that uses it. On
// connect it lists the server's tools and registers each one with agentd's
// tool registry as <server>__<tool>; it follows the server's
// notifications/tools/list_changed, unregisters a dead server's tools at
// once and reconnects with exponential backoff and jitter. Servers come from
// the configuration files (Set) or are added at run time (Add, persisted to
// a state file). Builtins offers tools over the servers' resources and
// prompts.
//
// The transports are stdio (a command run directly, never through a shell,
// with a minimal environment), streamable HTTP and the legacy HTTP+SSE
// transport. The rest of agentd sees only this package, never the MCP SDK's
// client side.
package mcp
