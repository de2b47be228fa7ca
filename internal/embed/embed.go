// Package embed turns text into vectors for agentd's long-term memory recall.
//
// Two embedders:
//
//   - Hashed, the built-in offline embedder used when no embedding service is
//     configured. It is lexical, not semantic: it hashes words and character
//     n-grams, so texts score as similar when they share words or spellings
//     ("deploy", "deployment", "deplyoment"), not when they share meaning
//     ("car" and "automobile" are unrelated to it). It needs no network and
//     no model files, so recall works on a fresh machine.
//   - OpenAI, a client for OpenAI-compatible /embeddings endpoints: OpenAI
//     itself, Ollama, vLLM, llama.cpp, LM Studio and others.
//
// Embedding in the background is the memory package's: a memory is marked
// pending in the transaction that writes it, so the work survives a crash,
// and its loop embeds in batches, backs off while the embedder is down and
// keeps recall on BM25 meanwhile.
//
// Every vector an Embedder returns is unit length (or all zeros for a text
// with nothing to embed), so cosine similarity is a plain dot product
// (see package vector).
package embed

import (
	"context"
	"errors"
)

// Embedder turns texts into vectors.
type Embedder interface {
	// Embed returns one vector per text, in order, each of Dim elements and
	// unit length; a text with nothing to embed gets a zero vector.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Dim is the length of the vectors; 0 while it is not yet known.
	Dim() int
	// Name identifies the embedder and its model, e.g. "hashed-ngram-384" or
	// "openai:text-embedding-3-small". Vectors from embedders with different
	// names are not comparable.
	Name() string
}

// Errors from embedders. Failures wrap one of them, so callers can tell an
// outage (fall back to BM25 and try again later) from a request that will
// never succeed.
var (
	// ErrUnavailable: the service could not be reached, timed out, answered
	// 5xx, or kept answering 429 after the allowed retries.
	ErrUnavailable = errors.New("embed: embedder unavailable")
	// ErrAuth: the service refused the credentials (HTTP 401 or 403).
	ErrAuth = errors.New("embed: authentication failed")
	// ErrRejected: the service refused this request (another 4xx, e.g. an
	// input too long for the model or an unknown model).
	ErrRejected = errors.New("embed: request rejected")
	// ErrBadResponse: the service answered with something that is not a
	// valid embeddings response for the request.
	ErrBadResponse = errors.New("embed: bad response")
)
