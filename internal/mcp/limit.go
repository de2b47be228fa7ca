package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"unicode/utf8"

	"agentd/internal/model"
)

// Large results.
//
// A tool result is cut while it is read from the server, never after: what
// a server sends (a stdio server's frames, an HTTP server's bodies and
// event streams) passes through a limitReader before the MCP SDK sees it.
// Frames up to smallFrame bytes pass unchanged without being parsed. A
// larger frame is parsed as it streams in, and inside the parts of a
// JSON-RPC message that carry a result's payload — result.content,
// result.structuredContent, result.contents (a resource read),
// result.messages (a prompt) and error — its strings are cut:
//
//   - text strings longer than keepShort share the message's text budget
//     (Options.MaxResultBytes): one longer than what is left is cut to it,
//     but never below keepShort bytes, so that types, URIs and MIME types
//     stay whole;
//   - base64 strings ("data", "blob": images, audio, binary resources) are
//     kept whole up to maxBinary (an image a model can take) within the
//     message's binary budget, and emptied otherwise, since a cut one
//     would not decode;
//   - past hardSlack beyond both budgets, the remaining items of arrays
//     and objects are dropped.
//
// When anything was cut, the result gets `"_meta": {"agentd/omitted": N}`,
// N being the bytes left out (decoded), which becomes tool.Result.Omitted
// and the note the model reads. The SDK thus decodes a frame of bounded
// size whatever the server sent, and the connection stays usable: before,
// a frame over the SDK's 16 MiB line limit ended it. A frame that is not
// valid JSON is passed on as it is (the SDK reports it, as before).

// DefaultMaxResultBytes is the default text budget of one server message.
const DefaultMaxResultBytes = 1 << 20

// MetaOmitted is the _meta key of a result that was cut while it was read:
// how many bytes were left out.
const MetaOmitted = "agentd/omitted"

const (
	// smallFrame is a stdio server's read buffer: frames that fit pass
	// unparsed. An HTTP body, read once, gets a smaller one (smallBody).
	smallFrame = 64 << 10
	smallBody  = 16 << 10
	// keepShort: strings this short are never cut.
	keepShort = 256
	// maxBinary is the longest base64 string kept: model.MaxImageBytes
	// encoded.
	maxBinary = (model.MaxImageBytes + 2) / 3 * 4
	// hardSlack is how far a message may grow beyond its budgets (keys,
	// numbers, short strings) before items are dropped.
	hardSlack = 256 << 10
	// maxFrame bounds the buffered rewrite of a frame outside the
	// payload: past it the frame is passed on unparsed (the SDK's own
	// limit, 16 MiB, then refuses it).
	maxFrame = 16 << 20
	// maxNesting: deeper frames are passed on unparsed.
	maxNesting = 1000
)

// errUnparsed stops the rewrite of a frame that is not valid JSON, or too
// big or deep to parse; the rest of the frame is passed on as it is.
var errUnparsed = errors.New("frame passed on unparsed")

// Framings a limitReader reads.
const (
	framedLines = iota // newline-delimited JSON (stdio)
	framedBody         // one JSON value (an HTTP application/json body)
	framedSSE          // server-sent events whose data lines hold JSON
)

// limits are a limitReader's sizes; tests make them small.
type limits struct {
	small  int // the read buffer: smaller frames pass unparsed
	text   int // the text budget of one message
	short  int // strings this short are never cut
	binary int // the longest base64 string kept
	frame  int // the longest frame rewritten outside the payload
}

func defaultLimits(text int) limits {
	if text <= 0 {
		text = DefaultMaxResultBytes
	}
	return limits{small: smallFrame, text: text, short: keepShort, binary: maxBinary, frame: maxFrame}
}

// limitReader passes on a server's messages with their payloads cut to
// budget (see "Large results" above). It is not safe for concurrent use.
type limitReader struct {
	br      *bufio.Reader
	closer  io.Closer // nil for none
	framing int
	lim     limits

	out  []byte // rewritten bytes not yet read
	off  int
	raw  bool // pass bytes on until the end of the frame
	err  error
	done bool // a body's value was handled
}

// newLimitReader reads r, framed as framing says, with lim.
func newLimitReader(r io.Reader, framing int, lim limits) *limitReader {
	l := &limitReader{br: bufio.NewReaderSize(r, lim.small), framing: framing, lim: lim}
	if c, ok := r.(io.Closer); ok {
		l.closer = c
	}
	return l
}

// Close closes the source.
func (l *limitReader) Close() error {
	if l.closer == nil {
		return nil
	}
	return l.closer.Close()
}

func (l *limitReader) Read(p []byte) (int, error) {
	for l.off == len(l.out) {
		if l.err != nil {
			return 0, l.err
		}
		if cap(l.out) > l.lim.small {
			l.out = nil // do not keep a large frame's buffer
		}
		l.out, l.off = l.out[:0], 0
		l.err = l.fill()
	}
	n := copy(p, l.out[l.off:])
	l.off += n
	return n, nil
}

// fill reads the next piece: a frame that fits the buffer, a rewritten
// large frame, or a piece of a frame passed on unparsed.
func (l *limitReader) fill() error {
	if l.framing == framedBody {
		return l.fillBody()
	}
	line, err := l.br.ReadSlice('\n')
	l.out = append(l.out, line...)
	if l.raw {
		l.raw = errors.Is(err, bufio.ErrBufferFull)
		return ignoreFull(err)
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		return err
	}
	// A large frame: rewrite it from what was read.
	pre := bytes.Clone(line)
	l.out = l.out[:0]
	if l.framing == framedSSE {
		field, rest, ok := bytes.Cut(pre, []byte(":"))
		if !ok || string(field) != "data" {
			l.out = append(l.out, pre...)
			l.raw = true
			return nil
		}
		n := len(field) + 1
		if len(rest) > 0 && rest[0] == ' ' {
			n++
		}
		l.out = append(l.out, pre[:n]...)
		pre = pre[n:]
	}
	return l.rewrite(pre)
}

// fillBody handles an HTTP body: one JSON value.
func (l *limitReader) fillBody() error {
	if l.done || l.raw {
		if l.br.Buffered() == 0 {
			if _, err := l.br.Peek(1); err != nil {
				return err
			}
		}
		b, _ := l.br.Peek(l.br.Buffered())
		l.out = append(l.out, b...)
		l.br.Discard(len(b))
		return nil
	}
	l.done = true
	if _, err := l.br.Peek(l.lim.small); err != nil {
		// The whole body is buffered: small, passed on as it is.
		b, _ := l.br.Peek(l.br.Buffered())
		l.out = append(l.out, b...)
		l.br.Discard(len(b))
		return err
	}
	return l.rewrite(nil)
}

// rewrite parses one frame (pre, then the source) into l.out.
func (l *limitReader) rewrite(pre []byte) error {
	p := &parser{src: source{pre: pre, br: l.br}, out: l.out, lim: l.lim}
	err := p.frame()
	l.out = p.out
	switch {
	case errors.Is(err, errUnparsed):
		// Until something is cut, the rewrite is the bytes consumed, as
		// they were: pass on the rest of the frame after them.
		l.out = append(l.out, p.src.pre...)
		l.raw = true
		return nil
	case err != nil:
		return err
	}
	if l.framing == framedBody {
		l.raw = true // whatever follows the value
		return nil
	}
	// The rest of the line (the newline, or trailing bytes the SDK
	// refuses).
	l.out = append(l.out, p.src.pre...)
	l.raw = true
	return nil
}

func ignoreFull(err error) error {
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil
	}
	return err
}

// source is a frame's bytes: what was read ahead, then the reader.
type source struct {
	pre []byte
	br  *bufio.Reader
}

// chunk returns bytes available now (at least one, unless an error).
func (s *source) chunk() ([]byte, error) {
	if len(s.pre) > 0 {
		return s.pre, nil
	}
	if s.br.Buffered() == 0 {
		if _, err := s.br.Peek(1); err != nil {
			if errors.Is(err, io.EOF) {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	b, _ := s.br.Peek(s.br.Buffered())
	return b, nil
}

// skip consumes n bytes of the last chunk.
func (s *source) skip(n int) {
	if len(s.pre) > 0 {
		s.pre = s.pre[n:]
		return
	}
	s.br.Discard(n)
}

func (s *source) peek() (byte, error) {
	b, err := s.chunk()
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

// Where a value sits in a message, which decides how it may be cut.
type place uint8

const (
	plain   place = iota // passed on unchanged
	message              // a JSON-RPC message
	result               // a message's result object
	payload              // inside a result's payload: strings are cut
	binary               // a base64 string inside the payload
)

// parser rewrites one frame.
type parser struct {
	src   source
	out   []byte
	start int // where the frame starts in out
	lim   limits
	depth int

	// The current message's budgets.
	textLeft, binLeft, hard int
	msgStart                int
	omitted                 int64
}

// frame rewrites one JSON value and the whitespace before it.
func (p *parser) frame() error {
	p.start = len(p.out)
	if err := p.space(); err != nil {
		return err
	}
	c, err := p.src.peek()
	if err != nil {
		return unparsed(err)
	}
	switch c {
	case '{':
		err = p.value(message)
	case '[':
		err = p.array(message) // a batch
	default:
		err = p.value(plain)
	}
	return err
}

// unparsed turns a read error inside a frame into errUnparsed, keeping
// real read errors (the connection's).
func unparsed(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return errUnparsed
	}
	return err
}

func (p *parser) space() error {
	for {
		c, err := p.src.peek()
		if err != nil {
			return unparsed(err)
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			p.out = append(p.out, c)
			p.src.skip(1)
		default:
			return nil
		}
	}
}

// value rewrites one JSON value at pl.
func (p *parser) value(pl place) error {
	if len(p.out)-p.start > p.lim.frame && pl < payload {
		return errUnparsed
	}
	if err := p.space(); err != nil {
		return err
	}
	c, err := p.src.peek()
	if err != nil {
		return unparsed(err)
	}
	switch {
	case c == '{':
		if pl == message {
			p.textLeft, p.binLeft, p.omitted, p.msgStart = p.lim.text, p.lim.binary, 0, len(p.out)
			p.hard = p.lim.text + p.lim.binary + hardSlack
		}
		return p.object(pl)
	case c == '[':
		if pl == message || pl == result {
			pl = plain
		}
		return p.array(pl)
	case c == '"':
		return p.str(pl)
	default:
		return p.scalar()
	}
}

// enter counts a level of nesting.
func (p *parser) enter() error {
	p.depth++
	if p.depth > maxNesting {
		return errUnparsed
	}
	return nil
}

func (p *parser) object(pl place) error {
	if err := p.enter(); err != nil {
		return err
	}
	defer func() { p.depth-- }()
	p.src.skip(1)
	p.out = append(p.out, '{')
	members := 0
	for {
		if err := p.space(); err != nil {
			return err
		}
		c, err := p.src.peek()
		if err != nil {
			return unparsed(err)
		}
		if c == '}' {
			break
		}
		if members > 0 {
			if c != ',' {
				return errUnparsed
			}
			if pl >= payload && p.over() {
				if err := p.drop('}'); err != nil {
					return err
				}
				break
			}
			p.src.skip(1)
			p.out = append(p.out, ',')
			if err := p.space(); err != nil {
				return err
			}
		}
		key, err := p.key(pl)
		if err != nil {
			return err
		}
		if err := p.space(); err != nil {
			return err
		}
		if c, err := p.src.peek(); err != nil || c != ':' {
			return unparsed(orSyntax(err))
		}
		p.src.skip(1)
		p.out = append(p.out, ':')
		if err := p.value(memberPlace(pl, key)); err != nil {
			return err
		}
		members++
	}
	p.src.skip(1)
	if pl == result && p.omitted > 0 {
		if members > 0 {
			p.out = append(p.out, ',')
		}
		p.out = append(p.out, `"_meta":{"`+MetaOmitted+`":`...)
		p.out = strconv.AppendInt(p.out, p.omitted, 10)
		p.out = append(p.out, '}')
	}
	p.out = append(p.out, '}')
	return nil
}

func orSyntax(err error) error {
	if err == nil {
		return errUnparsed
	}
	return err
}

// memberPlace is where the value of the member key of an object at pl
// sits.
func memberPlace(pl place, key string) place {
	switch pl {
	case message:
		switch key {
		case "result":
			return result
		case "error":
			return payload
		}
	case result:
		switch key {
		case "content", "structuredContent", "contents", "messages":
			return payload
		}
	case payload, binary:
		if key == "data" || key == "blob" {
			return binary
		}
		return payload
	}
	return plain
}

func (p *parser) array(pl place) error {
	if err := p.enter(); err != nil {
		return err
	}
	defer func() { p.depth-- }()
	p.src.skip(1)
	p.out = append(p.out, '[')
	elem := pl
	if pl == binary {
		elem = payload
	}
	for n := 0; ; n++ {
		if err := p.space(); err != nil {
			return err
		}
		c, err := p.src.peek()
		if err != nil {
			return unparsed(err)
		}
		if c == ']' {
			break
		}
		if n > 0 {
			if c != ',' {
				return errUnparsed
			}
			if pl >= payload && p.over() {
				if err := p.drop(']'); err != nil {
					return err
				}
				break
			}
			p.src.skip(1)
			p.out = append(p.out, ',')
		}
		if err := p.value(elem); err != nil {
			return err
		}
	}
	p.src.skip(1)
	p.out = append(p.out, ']')
	return nil
}

// over reports whether the message has grown past its hard limit.
func (p *parser) over() bool { return len(p.out)-p.msgStart > p.hard }

// drop skips the rest of a container up to (not including) its closing
// byte, counting the bytes left out.
func (p *parser) drop(closing byte) error {
	depth := 0
	inStr, esc := false, false
	for {
		b, err := p.src.chunk()
		if err != nil {
			return unparsed(err)
		}
		for i, c := range b {
			switch {
			case inStr && esc:
				esc = false
			case inStr && c == '\\':
				esc = true
			case inStr && c == '"':
				inStr = false
			case inStr:
			case c == '"':
				inStr = true
			case c == '{' || c == '[':
				depth++
			case (c == '}' || c == ']') && depth > 0:
				depth--
			case c == closing:
				p.omitted += int64(i)
				p.src.skip(i)
				return nil
			case c == '}' || c == ']':
				return errUnparsed
			}
		}
		p.omitted += int64(len(b))
		p.src.skip(len(b))
	}
}

// key passes on an object's key and returns it (decoded, when short).
func (p *parser) key(pl place) (string, error) {
	c, err := p.src.peek()
	if err != nil {
		return "", unparsed(err)
	}
	if c != '"' {
		return "", errUnparsed
	}
	from := len(p.out)
	limit := -1
	if pl >= payload {
		limit = max(p.textLeft, p.lim.short) // cut as text, but free
	}
	_, skipped, err := p.copyStr(limit)
	if err != nil {
		return "", err
	}
	p.omitted += skipped
	raw := p.out[from:]
	if len(raw) > 64 {
		return "", nil // no key agentd looks for is that long
	}
	var k string
	if json.Unmarshal(raw, &k) != nil {
		return "", errUnparsed
	}
	return k, nil
}

// str passes on a string at pl, cut to budget inside the payload.
func (p *parser) str(pl place) error {
	from := len(p.out)
	switch pl {
	case payload:
		_, skipped, err := p.copyStr(max(p.textLeft, p.lim.short))
		p.omitted += skipped
		if n := len(p.out) - from - 2; n > p.lim.short {
			// Short strings (types, names) do not use the budget.
			p.textLeft = max(p.textLeft-n, 0)
		}
		return err
	case binary:
		cut, skipped, err := p.copyStr(p.binLeft)
		if err != nil {
			return err
		}
		n := len(p.out) - from - 2
		if cut {
			// A cut base64 string would not decode: leave it empty.
			p.omitted += int64(n) + skipped
			p.out = append(p.out[:from], '"', '"')
			return nil
		}
		p.binLeft -= n
		return nil
	}
	_, _, err := p.copyStr(-1)
	return err
}

// copyStr passes on a string, its content cut to limit bytes (as sent,
// escapes whole and UTF-8 sequences whole) unless limit is negative. It
// reports whether it cut, and how many bytes (decoded) it left out.
func (p *parser) copyStr(limit int) (cut bool, skipped int64, err error) {
	p.src.skip(1) // the opening quote, seen by the caller
	p.out = append(p.out, '"')
	kept := 0
	for {
		b, err := p.src.chunk()
		if err != nil {
			return cut, skipped, unparsed(err)
		}
		i := 0
		for i < len(b) && b[i] != '"' && b[i] != '\\' && b[i] >= 0x20 {
			i++
		}
		run := b[:i]
		switch {
		case cut:
			skipped += int64(len(run))
		case limit < 0 || kept+len(run) <= limit:
			p.out = append(p.out, run...)
			kept += len(run)
			if limit < 0 && len(p.out)-p.start > p.lim.frame {
				return cut, skipped, errUnparsed
			}
		default:
			k := limit - kept
			for k > 0 && !utf8.RuneStart(run[k]) {
				k--
			}
			p.out = append(p.out, run[:k]...)
			kept += k
			skipped += int64(len(run) - k)
			cut = true
		}
		p.src.skip(i)
		if i == len(b) {
			continue
		}
		switch c := b[i]; {
		case c == '"':
			p.src.skip(1)
			p.out = append(p.out, '"')
			return cut, skipped, nil
		case c < 0x20:
			return cut, skipped, errUnparsed // not JSON
		}
		esc, size, err := p.escape()
		if err != nil {
			return cut, skipped, err
		}
		if !cut && (limit < 0 || kept+len(esc) <= limit) {
			p.out = append(p.out, esc...)
			kept += len(esc)
			continue
		}
		cut = true
		skipped += int64(size)
	}
}

// escape consumes an escape sequence and returns it with the size of
// what it stands for, in UTF-8 bytes (a surrogate counts half a rune). On
// an error the bytes consumed are passed on as they came.
func (p *parser) escape() (seq []byte, size int, err error) {
	var buf [6]byte
	n := 0
	fail := func(err error) ([]byte, int, error) {
		p.out = append(p.out, buf[:n]...)
		return nil, 0, err
	}
	read := func(upto int) error {
		for ; n < upto; n++ {
			c, err := p.src.peek()
			if err != nil {
				return unparsed(err)
			}
			buf[n] = c
			p.src.skip(1)
		}
		return nil
	}
	if err := read(2); err != nil {
		return fail(err)
	}
	switch buf[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return buf[:2], 1, nil
	case 'u':
	default:
		return fail(errUnparsed)
	}
	if err := read(6); err != nil {
		return fail(err)
	}
	r, err := strconv.ParseUint(string(buf[2:6]), 16, 16)
	if err != nil {
		return fail(errUnparsed)
	}
	if r >= 0xD800 && r < 0xE000 {
		return buf[:6], 2, nil
	}
	return buf[:6], utf8.RuneLen(rune(r)), nil
}

// scalar passes on a number, true, false or null.
func (p *parser) scalar() error {
	for n := 0; ; {
		b, err := p.src.chunk()
		if err != nil {
			return unparsed(err)
		}
		i := 0
		for i < len(b) && (b[i] >= '0' && b[i] <= '9' || b[i] >= 'a' && b[i] <= 'z' || b[i] == '.' || b[i] == '-' || b[i] == '+' || b[i] == 'E') {
			i++
		}
		p.out = append(p.out, b[:i]...)
		p.src.skip(i)
		n += i
		if n == 0 {
			return errUnparsed // not a value
		}
		if i < len(b) {
			return nil
		}
		if len(p.out)-p.start > p.lim.frame {
			return errUnparsed
		}
	}
}

// limitBodies returns hc with its responses' MCP messages cut while they
// are read: JSON bodies and event streams.
func (m *Manager) limitBodies(hc *http.Client) *http.Client {
	c := *hc
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	lim := m.limits
	lim.small = smallBody
	c.Transport = &limitTransport{base: base, lim: lim}
	return &c
}

// limitTransport wraps response bodies in limitReaders.
type limitTransport struct {
	base http.RoundTripper
	lim  limits
}

func (t *limitTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
		resp.Body = newLimitReader(resp.Body, framedBody, t.lim)
		resp.ContentLength = -1
	case "text/event-stream":
		resp.Body = newLimitReader(resp.Body, framedSSE, t.lim)
	}
	return resp, nil
}
