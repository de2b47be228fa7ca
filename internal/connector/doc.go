// Package connector connects agents to chat platforms (Telegram, Discord,
// Slack): a connector instance is an integration row naming a platform, a
// bot token by reference and the agent its people talk to. It receives a
// platform's messages, decides who may talk (pairing, allowlists, group
// gating), hands each message to the agent system as a person's contact
// with the platform's idempotency key, streams the reply by editing one
// message in place, and delivers the final reply through a durable outbox:
// a reply delivered is recorded with the platform's message id and never
// sent again; one not yet delivered is delivered after a crash.
//
// The runtime does not know connectors exist: arrows point inward
// (connector → agentsys → runtime). Each platform's wire lives in its own
// package under this one (telegram, discord, slack), with a fake server
// beside it that speaks the same wire for tests.
package connector
