package fakellm

import (
	"time"

	"agentd/internal/jsonstr"
)

// OpenAI Chat Completions.
//
// A stream is a series of chat.completion.chunk objects, each on an SSE
// "data:" line: the role, then delta.reasoning_content pieces, delta.content
// pieces, delta.tool_calls (the first piece of each call carries its id,
// type and name), a chunk with finish_reason, a usage chunk with empty
// choices when stream_options.include_usage is set, and "data: [DONE]".

const oaContextWindow = 128000

func streamOpenAI(e *sse, ex *exchange, rp *reply, model string, id uint64, includeUsage bool) {
	scratch := ex.scratch
	pre := ex.pre[:0]
	pre = append(pre, `data: {"id":"chatcmpl-fake`...)
	pre = appendUint(pre, id)
	pre = append(pre, `","object":"chat.completion.chunk","created":`...)
	pre = appendInt(pre, int(time.Now().Unix()))
	pre = append(pre, `,"model":`...)
	pre = jsonstr.Append(pre, model)
	pre = append(pre, `,"choices":[`...)
	ex.pre = pre

	b := oaChunkStart(ex.out[:0], pre)
	b = append(b, `"role":"assistant","content":""`...)
	b = oaChunkEnd(b, "", includeUsage)
	if !e.send(b) {
		ex.out = b
		return
	}
	if rp.hasThink {
		var ok bool
		if b, ok = oaDeltas(e, b, pre, `"reasoning_content":`, rp.think.of(scratch), rp.chunks, includeUsage); !ok {
			ex.out = b
			return
		}
	}
	var ok bool
	if b, ok = oaDeltas(e, b, pre, `"content":`, rp.text.of(scratch), rp.chunks, includeUsage); !ok {
		ex.out = b
		return
	}
	for i, c := range rp.calls {
		b = oaChunkStart(b[:0], pre)
		b = append(b, `"tool_calls":[{"index":`...)
		b = appendInt(b, i)
		b = append(b, `,"id":`...)
		b = jsonstr.Append(b, c.id.of(scratch))
		b = append(b, `,"type":"function","function":{"name":`...)
		b = append(b, c.spec.nameJSON...)
		b = append(b, `,"arguments":""}}]`...)
		b = oaChunkEnd(b, "", includeUsage)
		if !e.send(b) {
			ex.out = b
			return
		}
		p := pieces{s: c.args.of(scratch), k: rp.chunks}
		for piece, ok := p.next(); ok; piece, ok = p.next() {
			b = oaChunkStart(b[:0], pre)
			b = append(b, `"tool_calls":[{"index":`...)
			b = appendInt(b, i)
			b = append(b, `,"function":{"arguments":`...)
			b = jsonstr.Append(b, piece)
			b = append(b, `}}]`...)
			b = oaChunkEnd(b, "", includeUsage)
			if !e.send(b) {
				ex.out = b
				return
			}
		}
	}
	b = oaChunkStart(b[:0], pre)
	b = oaChunkEnd(b, oaFinish(rp), includeUsage)
	if !e.send(b) {
		ex.out = b
		return
	}
	if includeUsage {
		b = append(b[:0], pre...)
		b = append(b, `],"usage":`...)
		b = oaUsage(b, rp)
		b = append(b, "}\n\n"...)
		if !e.send(b) {
			ex.out = b
			return
		}
	}
	b = append(b[:0], "data: [DONE]\n\n"...)
	e.send(b)
	ex.out = b
}

// oaDeltas sends s in k pieces as chunks whose delta holds field; it
// reports whether every send succeeded.
func oaDeltas(e *sse, b, pre []byte, field string, s []byte, k int, includeUsage bool) ([]byte, bool) {
	p := pieces{s: s, k: k}
	for piece, ok := p.next(); ok; piece, ok = p.next() {
		b = oaChunkStart(b[:0], pre)
		b = append(b, field...)
		b = jsonstr.Append(b, piece)
		b = oaChunkEnd(b, "", includeUsage)
		if !e.send(b) {
			return b, false
		}
	}
	return b, true
}

func oaChunkStart(b, pre []byte) []byte {
	b = append(b, pre...)
	return append(b, `{"index":0,"delta":{`...)
}

func oaChunkEnd(b []byte, finish string, usageNull bool) []byte {
	b = append(b, `},"logprobs":null,"finish_reason":`...)
	if finish == "" {
		b = append(b, "null"...)
	} else {
		b = append(b, '"')
		b = append(b, finish...)
		b = append(b, '"')
	}
	b = append(b, "}]"...)
	if usageNull {
		b = append(b, `,"usage":null`...)
	}
	return append(b, "}\n\n"...)
}

func oaFinish(rp *reply) string {
	if rp.limited {
		return "length"
	}
	if len(rp.calls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func oaUsage(b []byte, rp *reply) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = appendInt(b, rp.in)
	b = append(b, `,"completion_tokens":`...)
	b = appendInt(b, rp.out)
	b = append(b, `,"total_tokens":`...)
	b = appendInt(b, rp.in+rp.out)
	return append(b, '}')
}

// bodyOpenAI appends a chat.completion object.
func bodyOpenAI(b []byte, ex *exchange, rp *reply, model string, id uint64) []byte {
	scratch := ex.scratch
	b = append(b, `{"id":"chatcmpl-fake`...)
	b = appendUint(b, id)
	b = append(b, `","object":"chat.completion","created":`...)
	b = appendInt(b, int(time.Now().Unix()))
	b = append(b, `,"model":`...)
	b = jsonstr.Append(b, model)
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	if rp.text.len() == 0 && len(rp.calls) > 0 {
		b = append(b, "null"...)
	} else {
		b = jsonstr.Append(b, rp.text.of(scratch))
	}
	if rp.hasThink {
		b = append(b, `,"reasoning_content":`...)
		b = jsonstr.Append(b, rp.think.of(scratch))
	}
	if len(rp.calls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, c := range rp.calls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = jsonstr.Append(b, c.id.of(scratch))
			b = append(b, `,"type":"function","function":{"name":`...)
			b = append(b, c.spec.nameJSON...)
			b = append(b, `,"arguments":`...)
			b = jsonstr.Append(b, c.args.of(scratch))
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	b = append(b, `},"logprobs":null,"finish_reason":"`...)
	b = append(b, oaFinish(rp)...)
	b = append(b, `"}],"usage":`...)
	b = oaUsage(b, rp)
	return append(b, "}\n"...)
}

// oaErrorBody appends an OpenAI error object.
func oaErrorBody(b []byte, typ, param, code, msg string) []byte {
	b = append(b, `{"error":{"message":`...)
	b = jsonstr.Append(b, msg)
	b = append(b, `,"type":`...)
	b = jsonstr.Append(b, typ)
	b = append(b, `,"param":`...)
	b = appendNullable(b, param)
	b = append(b, `,"code":`...)
	b = appendNullable(b, code)
	return append(b, "}}\n"...)
}

func appendNullable(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return jsonstr.Append(b, s)
}

// oaError returns the error type, code and message OpenAI sends with status.
func oaError(status int) (typ, code, msg string) {
	switch status {
	case 400:
		return "invalid_request_error", "", "Invalid request."
	case 401:
		return "invalid_request_error", "invalid_api_key", "Incorrect API key provided."
	case 403:
		return "invalid_request_error", "unsupported_country_region_territory", "Country, region, or territory not supported."
	case 404:
		return "invalid_request_error", "model_not_found", "The model does not exist or you do not have access to it."
	case 429:
		return "requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again later."
	case 500:
		return "server_error", "", "The server had an error while processing your request. Sorry about that!"
	case 503:
		return "server_error", "", "The engine is currently overloaded, please try again later."
	}
	if status < 500 {
		return "invalid_request_error", "", "Request failed."
	}
	return "server_error", "", "The server is overloaded or not ready yet."
}
