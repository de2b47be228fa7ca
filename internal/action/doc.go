// Package action is the `action` extension type: a declarative HTTP tool.
// An action row's spec says how to make a request from a tool call's
// arguments (a URL, query and JSON body filled from them, headers with
// secret references) and what of the answer the model reads; its
// Handler registers it as a tool under the row's name and swaps it for
// the next version in one step.
//
// Nothing in a row can widen where agentd connects: the URL's host is
// fixed text that must be in the row's allow_hosts (redirects too), and
// every connection goes through the SSRF guard, whose blocked ranges only
// the operator opens (agentd.yaml actions.allow_networks). Secrets are
// read when a call needs them and replaced by their references in
// whatever the call returns.
package action
