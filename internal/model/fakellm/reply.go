package fakellm

import (
	"unicode/utf8"

	"agentd/internal/jsonstr"
)

// span is a part of exchange.scratch.
type span struct{ start, end int }

func (s span) of(b []byte) []byte { return b[s.start:s.end] }

func (s span) len() int { return s.end - s.start }

// outCall is a rendered tool call.
type outCall struct {
	spec *callSpec
	id   span
	args span
}

// reply is a rendered response, its texts in exchange.scratch.
type reply struct {
	think    span
	hasThink bool
	text     span
	calls    []outCall
	in, out  int // token counts
	chunks   int
	truncate bool
	stall    bool // stop sending halfway and hold the connection open
	limited  bool // cut off at the request's max_tokens
}

// cut shortens the reply to limit output tokens, as a model that reaches
// its max_tokens stops: at about four bytes a token, reasoning first, then
// text; tool calls are dropped.
func (rp *reply) cut(ex *exchange, limit int) {
	rp.out, rp.limited = limit, true
	room := limit * 4
	for _, sp := range []*span{&rp.think, &rp.text} {
		n := min(sp.len(), room)
		for n > 0 && n < sp.len() && !utf8.RuneStart(ex.scratch[sp.start+n]) {
			n--
		}
		sp.end = sp.start + n
		room -= n
	}
	rp.calls = nil
}

// render fills in resp's templates for this request.
func render(ex *exchange, resp *response, t *turn, inTokens int) *reply {
	ex.rp = reply{chunks: resp.chunks, truncate: resp.truncate, in: inTokens, hasThink: resp.hasThink}
	rp := &ex.rp
	if rp.chunks == 0 {
		rp.chunks = DefaultChunks
	}
	b := ex.scratch[:0]
	start := len(b)
	b = renderTmpl(b, resp.think, t, false)
	rp.think = span{start, len(b)}

	text := resp.text
	if !resp.hasText && !resp.hasThink && len(resp.calls) == 0 {
		text = echoResponse.text
	}
	start = len(b)
	b = renderTmpl(b, text, t, false)
	rp.text = span{start, len(b)}

	if len(resp.calls) > 0 {
		prefix := "call_"
		if t.format == anthropic {
			prefix = "toolu_"
		}
		// Ids are stable for a turn, so retries and restarts see the same
		// ones, and differ between turns of a conversation.
		h := (fnvOffset64 ^ uint64(t.userIdx+1)) * fnvPrime64
		h = fnv64(h, t.lastUser)
		for n := range resp.calls {
			c := &resp.calls[n]
			start = len(b)
			b = append(b, prefix...)
			for shift := 28; shift >= 0; shift -= 4 {
				b = append(b, hexDigits[(h>>shift)&0xf])
			}
			b = append(b, '_')
			b = appendInt(b, t.index)
			b = append(b, '_')
			b = appendInt(b, n)
			id := span{start, len(b)}
			start = len(b)
			b = renderTmpl(b, c.args, t, true)
			ex.calls = append(ex.calls, outCall{spec: c, id: id, args: span{start, len(b)}})
		}
	}
	ex.scratch = b
	rp.calls = ex.calls

	if resp.usage != nil {
		rp.in, rp.out = resp.usage[0], resp.usage[1]
	} else {
		n := rp.think.len() + rp.text.len()
		for _, c := range rp.calls {
			n += len(c.spec.name) + c.args.len()
		}
		rp.out = max(1, n/4)
	}
	return rp
}

func renderTmpl(dst []byte, tm tmpl, t *turn, inJSON bool) []byte {
	for _, seg := range tm {
		var v string
		switch seg.v {
		case varNone:
			dst = append(dst, seg.lit...)
			continue
		case varNMessages:
			dst = appendInt(dst, len(t.msgs))
			continue
		case varImages:
			dst = appendInt(dst, t.images)
			continue
		case varLastUser:
			v = t.lastUser
		case varToolResult:
			v = t.lastToolResult()
		case varSystem:
			v = t.systemPrompt()
		}
		if inJSON {
			dst = jsonstr.AppendEscaped(dst, v)
		} else {
			dst = append(dst, v...)
		}
	}
	return dst
}

// pieces cuts a text into at most k pieces of about equal size, at UTF-8
// character boundaries.
type pieces struct {
	s        []byte
	k, i, at int
}

func (p *pieces) next() ([]byte, bool) {
	for p.i < p.k && p.at < len(p.s) {
		p.i++
		end := len(p.s) * p.i / p.k
		for end < len(p.s) && !utf8.RuneStart(p.s[end]) {
			end++
		}
		if end > p.at {
			piece := p.s[p.at:end]
			p.at = end
			return piece, true
		}
	}
	return nil, false
}
