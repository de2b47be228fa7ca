package fakellm

import "agentd/internal/jsonstr"

// Anthropic Messages.
//
// A stream is a series of named SSE events: message_start (the message with
// empty content and the input token count), ping, then for each content
// block (thinking, text, tool_use, in that order) content_block_start, its
// deltas (thinking_delta and signature_delta, text_delta, input_json_delta)
// and content_block_stop, then message_delta (stop_reason and the output
// token count) and message_stop.

const (
	anContextWindow = 200000
	anSignature     = "ZmFrZWxsbS1zaWduYXR1cmU=" // thinking blocks' signature
)

func streamAnthropic(e *sse, ex *exchange, rp *reply, model string, id uint64) {
	scratch := ex.scratch
	b := append(ex.out[:0], "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_fake"...)
	b = appendUint(b, id)
	b = append(b, `","type":"message","role":"assistant","model":`...)
	b = jsonstr.Append(b, model)
	b = append(b, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":`...)
	b = appendInt(b, rp.in)
	b = append(b, `,"output_tokens":`...)
	b = appendInt(b, min(1, rp.out))
	b = append(b, "}}}\n\n"...)
	if !e.send(b) {
		ex.out = b
		return
	}
	b = append(b[:0], "event: ping\ndata: {\"type\":\"ping\"}\n\n"...)
	if !e.send(b) {
		ex.out = b
		return
	}
	index := 0
	if rp.hasThink {
		b = anBlockStart(b[:0], index)
		b = append(b, `{"type":"thinking","thinking":"","signature":""}}`+"\n\n"...)
		if !e.send(b) {
			ex.out = b
			return
		}
		var ok bool
		if b, ok = anDeltas(e, b, index, `{"type":"thinking_delta","thinking":`, rp.think.of(scratch), rp.chunks); !ok {
			ex.out = b
			return
		}
		b = anDelta(b[:0], index)
		b = append(b, `{"type":"signature_delta","signature":"`+anSignature+`"}}`+"\n\n"...)
		if !e.send(b) {
			ex.out = b
			return
		}
		if b = anBlockStop(b[:0], index); !e.send(b) {
			ex.out = b
			return
		}
		index++
	}
	if rp.text.len() > 0 || len(rp.calls) == 0 {
		b = anBlockStart(b[:0], index)
		b = append(b, `{"type":"text","text":""}}`+"\n\n"...)
		if !e.send(b) {
			ex.out = b
			return
		}
		var ok bool
		if b, ok = anDeltas(e, b, index, `{"type":"text_delta","text":`, rp.text.of(scratch), rp.chunks); !ok {
			ex.out = b
			return
		}
		if b = anBlockStop(b[:0], index); !e.send(b) {
			ex.out = b
			return
		}
		index++
	}
	for _, c := range rp.calls {
		b = anBlockStart(b[:0], index)
		b = append(b, `{"type":"tool_use","id":`...)
		b = jsonstr.Append(b, c.id.of(scratch))
		b = append(b, `,"name":`...)
		b = append(b, c.spec.nameJSON...)
		b = append(b, `,"input":{}}}`+"\n\n"...)
		if !e.send(b) {
			ex.out = b
			return
		}
		var ok bool
		if b, ok = anDeltas(e, b, index, `{"type":"input_json_delta","partial_json":`, c.args.of(scratch), rp.chunks); !ok {
			ex.out = b
			return
		}
		if b = anBlockStop(b[:0], index); !e.send(b) {
			ex.out = b
			return
		}
		index++
	}
	b = append(b[:0], "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\""...)
	b = append(b, anStop(rp)...)
	b = append(b, `","stop_sequence":null},"usage":{"output_tokens":`...)
	b = appendInt(b, rp.out)
	b = append(b, "}}\n\n"...)
	if !e.send(b) {
		ex.out = b
		return
	}
	b = append(b[:0], "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
	e.send(b)
	ex.out = b
}

// anDeltas sends s in k pieces as content_block_delta events of one block,
// each delta's JSON opened by head; it reports whether every send succeeded.
func anDeltas(e *sse, b []byte, index int, head string, s []byte, k int) ([]byte, bool) {
	p := pieces{s: s, k: k}
	for piece, ok := p.next(); ok; piece, ok = p.next() {
		b = anDelta(b[:0], index)
		b = append(b, head...)
		b = jsonstr.Append(b, piece)
		b = append(b, "}}\n\n"...)
		if !e.send(b) {
			return b, false
		}
	}
	return b, true
}

func anBlockStart(b []byte, index int) []byte {
	b = append(b, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":"...)
	b = appendInt(b, index)
	return append(b, `,"content_block":`...)
}

func anDelta(b []byte, index int) []byte {
	b = append(b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":"...)
	b = appendInt(b, index)
	return append(b, `,"delta":`...)
}

func anBlockStop(b []byte, index int) []byte {
	b = append(b, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":"...)
	b = appendInt(b, index)
	return append(b, "}\n\n"...)
}

func anStop(rp *reply) string {
	if rp.limited {
		return "max_tokens"
	}
	if len(rp.calls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

// bodyAnthropic appends a message object.
func bodyAnthropic(b []byte, ex *exchange, rp *reply, model string, id uint64) []byte {
	scratch := ex.scratch
	b = append(b, `{"id":"msg_fake`...)
	b = appendUint(b, id)
	b = append(b, `","type":"message","role":"assistant","model":`...)
	b = jsonstr.Append(b, model)
	b = append(b, `,"content":[`...)
	sep := false
	if rp.hasThink {
		b = append(b, `{"type":"thinking","thinking":`...)
		b = jsonstr.Append(b, rp.think.of(scratch))
		b = append(b, `,"signature":"`+anSignature+`"}`...)
		sep = true
	}
	if rp.text.len() > 0 || len(rp.calls) == 0 {
		if sep {
			b = append(b, ',')
		}
		b = append(b, `{"type":"text","text":`...)
		b = jsonstr.Append(b, rp.text.of(scratch))
		b = append(b, '}')
		sep = true
	}
	for _, c := range rp.calls {
		if sep {
			b = append(b, ',')
		}
		b = append(b, `{"type":"tool_use","id":`...)
		b = jsonstr.Append(b, c.id.of(scratch))
		b = append(b, `,"name":`...)
		b = append(b, c.spec.nameJSON...)
		b = append(b, `,"input":`...)
		b = append(b, c.args.of(scratch)...)
		b = append(b, '}')
		sep = true
	}
	b = append(b, `],"stop_reason":"`...)
	b = append(b, anStop(rp)...)
	b = append(b, `","stop_sequence":null,"usage":{"input_tokens":`...)
	b = appendInt(b, rp.in)
	b = append(b, `,"output_tokens":`...)
	b = appendInt(b, rp.out)
	return append(b, "}}\n"...)
}

// anErrorBody appends an Anthropic error object.
func anErrorBody(b []byte, typ, msg string) []byte {
	b = append(b, `{"type":"error","error":{"type":`...)
	b = jsonstr.Append(b, typ)
	b = append(b, `,"message":`...)
	b = jsonstr.Append(b, msg)
	return append(b, "}}\n"...)
}

// anError returns the error type and message Anthropic sends with status.
func anError(status int) (typ, msg string) {
	switch status {
	case 400:
		return "invalid_request_error", "Invalid request."
	case 401:
		return "authentication_error", "invalid x-api-key"
	case 403:
		return "permission_error", "Your API key does not have permission to use the specified resource."
	case 404:
		return "not_found_error", "The requested resource could not be found."
	case 413:
		return "request_too_large", "Request exceeds the maximum allowed number of bytes."
	case 429:
		return "rate_limit_error", "Number of requests has exceeded your rate limit. Please try again later."
	case 500:
		return "api_error", "Internal server error"
	case 529:
		return "overloaded_error", "Overloaded"
	}
	if status < 500 {
		return "invalid_request_error", "Request failed."
	}
	return "api_error", "Service unavailable"
}
