package discordfake

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxContent is a message's length limit: 2000 characters.
const maxContent = 2000

type bucket struct {
	count int
	reset time.Time
}

// restErr is Discord's error body.
type restErr struct {
	status int
	code   int
	msg    string
	errors any
}

type handler func(r *http.Request) (any, *restErr)

// routeKey is a call's rate-limit route, in the client's form:
// "POST /channels/{id}/messages".
func routeKey(r *http.Request) string {
	p := r.Pattern
	if i := strings.Index(p, " "); i >= 0 {
		p = p[i+1:]
	}
	if i := strings.Index(p, "/channels/"); i >= 0 {
		p = p[i:]
	} else if i := strings.Index(p, "/gateway/"); i >= 0 {
		p = p[i:]
	}
	p = strings.ReplaceAll(p, "{channel}", "{id}")
	return r.Method + " " + p
}

// rest wraps a REST handler with what every call gets: the token check,
// scripted faults, rate limits with their headers, and JSON.
func (s *Server) rest(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := routeKey(r)
		if r.Header.Get("Authorization") != "Bot "+s.opts.Token {
			writeErr(w, &restErr{status: http.StatusUnauthorized, msg: "401: Unauthorized"})
			return
		}
		major := r.PathValue("channel")
		s.mu.Lock()
		s.calls[key]++
		fault, faulted := s.takeFault(key)
		limited, headers := s.limit(key, major, time.Now())
		s.mu.Unlock()
		for k, v := range headers {
			w.Header().Set(k, v)
		}
		s.bump()
		switch {
		case faulted:
			writeFault(w, fault)
			return
		case limited != nil:
			writeFault(w, *limited)
			return
		}
		out, e := h(r)
		if e != nil {
			writeErr(w, e)
			return
		}
		if out == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}
}

func (s *Server) takeFault(key string) (Fault, bool) {
	fs := s.faults[key]
	if len(fs) == 0 {
		return Fault{}, false
	}
	s.faults[key] = fs[1:]
	return fs[0], true
}

// limit counts a call in its bucket and the global one. It returns the
// 429 to answer when either is spent, and the bucket's headers.
func (s *Server) limit(key, major string, now time.Time) (*Fault, map[string]string) {
	if !now.Before(s.global.reset) {
		s.global = bucket{reset: now.Add(time.Second)}
	}
	s.global.count++
	if s.global.count > s.opts.GlobalLimit {
		return &Fault{Status: http.StatusTooManyRequests, RetryAfter: s.global.reset.Sub(now), Global: true, Scope: "global"}, nil
	}
	name := bucketName(key)
	b := s.buckets[name+":"+major]
	if b == nil || !now.Before(b.reset) {
		b = &bucket{reset: now.Add(s.opts.BucketWindow)}
		s.buckets[name+":"+major] = b
	}
	b.count++
	remaining := max(s.opts.BucketLimit-b.count, 0)
	after := b.reset.Sub(now).Seconds()
	h := map[string]string{
		"X-RateLimit-Limit":       strconv.Itoa(s.opts.BucketLimit),
		"X-RateLimit-Remaining":   strconv.Itoa(remaining),
		"X-RateLimit-Reset":       strconv.FormatFloat(float64(b.reset.UnixMilli())/1000, 'f', 3, 64),
		"X-RateLimit-Reset-After": strconv.FormatFloat(after, 'f', 3, 64),
		"X-RateLimit-Bucket":      name,
	}
	if b.count > s.opts.BucketLimit {
		return &Fault{Status: http.StatusTooManyRequests, RetryAfter: b.reset.Sub(now), Scope: "user"}, h
	}
	return nil, h
}

// bucketName is an opaque name per route, as Discord's hashes are.
func bucketName(key string) string {
	var h uint32 = 2166136261
	for i := 0; i < len(key); i++ {
		h = (h ^ uint32(key[i])) * 16777619
	}
	return fmt.Sprintf("%08x", h)
}

func writeFault(w http.ResponseWriter, f Fault) {
	if f.Status != http.StatusTooManyRequests {
		msg := f.Body
		if msg == "" {
			msg = http.StatusText(f.Status)
		}
		writeErr(w, &restErr{status: f.Status, code: f.Code, msg: msg})
		return
	}
	scope := f.Scope
	if scope == "" {
		scope = "user"
		if f.Global {
			scope = "global"
		}
	}
	secs := f.RetryAfter.Seconds()
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(secs))))
	w.Header().Set("X-RateLimit-Scope", scope)
	if f.Global {
		w.Header().Set("X-RateLimit-Global", "true")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusTooManyRequests)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"message": "You are being rate limited.", "retry_after": secs, "global": f.Global,
	})
}

func writeErr(w http.ResponseWriter, e *restErr) {
	body := map[string]any{"message": e.msg, "code": e.code}
	if e.errors != nil {
		body["errors"] = e.errors
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(body)
}

func (s *Server) gatewayBot(*http.Request) (any, *restErr) {
	return map[string]any{
		"url": s.wsBase() + "/gateway", "shards": 1,
		"session_start_limit": map[string]int{"total": 1000, "remaining": 999, "reset_after": 86400000, "max_concurrency": 1},
	}, nil
}

// createBody is POST /channels/{id}/messages's JSON, or a multipart's
// payload_json.
type createBody struct {
	Content         *string `json:"content"`
	Nonce           any     `json:"nonce"`
	EnforceNonce    bool    `json:"enforce_nonce"`
	AllowedMentions *struct {
		Parse []string `json:"parse"`
	} `json:"allowed_mentions"`
	MessageReference *struct {
		MessageID string `json:"message_id"`
	} `json:"message_reference"`
	Attachments []Attachment `json:"attachments"`
}

var errEmpty = &restErr{status: http.StatusBadRequest, code: 50006, msg: "Cannot send an empty message"}

func tooLong(field string) *restErr {
	return &restErr{status: http.StatusBadRequest, code: 50035, msg: "Invalid Form Body",
		errors: map[string]any{field: map[string]any{"_errors": []map[string]string{{
			"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 2000 or fewer in length.",
		}}}}}
}

func (s *Server) createMessage(r *http.Request) (any, *restErr) {
	var b createBody
	files, e := readCreate(r, &b)
	if e != nil {
		return nil, e
	}
	content := ""
	if b.Content != nil {
		content = *b.Content
	}
	if utf8.RuneCountInString(content) > maxContent {
		return nil, tooLong("content")
	}
	if content == "" && len(files) == 0 {
		return nil, errEmpty
	}
	nonce := ""
	switch n := b.Nonce.(type) {
	case string:
		nonce = n
	case float64:
		nonce = strconv.FormatFloat(n, 'f', -1, 64)
	}
	if len(nonce) > 25 {
		return nil, &restErr{status: http.StatusBadRequest, code: 50035, msg: "Invalid Form Body"}
	}
	ch := r.PathValue("channel")
	now := time.Now()
	bot := s.Bot()
	s.w.mu.Lock()
	c := s.w.channels[ch]
	if c == nil {
		s.w.mu.Unlock()
		return nil, &restErr{status: http.StatusNotFound, code: 10003, msg: "Unknown Channel"}
	}
	nk := ch + "\x00" + bot.ID + "\x00" + nonce
	if ne, ok := s.w.nonces[nk]; ok && b.EnforceNonce && nonce != "" && now.Sub(ne.at) < nonceWindow {
		m := s.w.find(ch, ne.id)
		out := wireMessage(m)
		s.w.mu.Unlock()
		return out, nil
	}
	m := &Message{
		ID: s.w.id(now), ChannelID: ch, GuildID: c.guild, Author: bot, Content: content,
		Nonce: nonce, Edits: []string{content}, At: now, Attachments: files,
		Pings: b.AllowedMentions == nil || len(b.AllowedMentions.Parse) > 0,
	}
	if b.MessageReference != nil {
		m.ReplyTo = b.MessageReference.MessageID
	}
	c.messages = append(c.messages, m)
	if nonce != "" {
		s.w.nonces[nk] = nonceEntry{id: m.ID, at: now}
	}
	out := wireMessage(m)
	s.w.bump()
	s.w.mu.Unlock()
	s.dispatchMessage(out, m.GuildID)
	return out, nil
}

// readCreate decodes a create's body: JSON, or multipart with
// payload_json and files[n].
func readCreate(r *http.Request, b *createBody) ([]Attachment, *restErr) {
	bad := &restErr{status: http.StatusBadRequest, code: 50109, msg: "The request body contains invalid JSON."}
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	body := io.LimitReader(r.Body, 26<<20)
	if mt != "multipart/form-data" {
		if json.NewDecoder(body).Decode(b) != nil {
			return nil, bad
		}
		return nil, nil
	}
	mr := multipart.NewReader(body, params["boundary"])
	var files []Attachment
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, bad
		}
		data, err := io.ReadAll(p)
		if err != nil {
			return nil, bad
		}
		switch name := p.FormName(); {
		case name == "payload_json":
			if json.Unmarshal(data, b) != nil {
				return nil, bad
			}
		case strings.HasPrefix(name, "files["):
			files = append(files, Attachment{ID: strconv.Itoa(len(files)), Filename: p.FileName(),
				ContentType: p.Header.Get("Content-Type"), Size: int64(len(data)), Data: data})
		}
	}
	return files, nil
}

func (s *Server) editMessage(r *http.Request) (any, *restErr) {
	var b createBody
	if json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&b) != nil {
		return nil, &restErr{status: http.StatusBadRequest, code: 50109, msg: "The request body contains invalid JSON."}
	}
	ch, id := r.PathValue("channel"), r.PathValue("id")
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	m := s.w.find(ch, id)
	if m == nil {
		return nil, &restErr{status: http.StatusNotFound, code: 10008, msg: "Unknown Message"}
	}
	if m.Author.ID != s.opts.BotID {
		return nil, &restErr{status: http.StatusForbidden, code: 50005, msg: "Cannot edit a message authored by another user"}
	}
	if b.Content != nil {
		if utf8.RuneCountInString(*b.Content) > maxContent {
			return nil, tooLong("content")
		}
		if *b.Content == "" && len(m.Attachments) == 0 {
			return nil, errEmpty
		}
		m.Content = *b.Content
		m.Edits = append(m.Edits, *b.Content)
		s.w.bump()
	}
	return wireMessage(m), nil
}

func (s *Server) listMessages(r *http.Request) (any, *restErr) {
	q := r.URL.Query()
	limit := 50
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return nil, &restErr{status: http.StatusBadRequest, code: 50035, msg: "Invalid Form Body"}
		}
		limit = n
	}
	after := q.Get("after")
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	c := s.w.channels[r.PathValue("channel")]
	if c == nil {
		return nil, &restErr{status: http.StatusNotFound, code: 10003, msg: "Unknown Channel"}
	}
	var out []map[string]any
	for _, m := range c.messages {
		if after != "" && !idLess(after, m.ID) {
			continue
		}
		if len(out) == limit {
			break
		}
		w := wireMessage(m)
		delete(w, "guild_id") // REST messages do not carry it
		out = append(out, w)
	}
	slices.Reverse(out) // newest first, as Discord answers
	if out == nil {
		out = []map[string]any{}
	}
	return out, nil
}

func (s *Server) typing(r *http.Request) (any, *restErr) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	if s.w.channels[r.PathValue("channel")] == nil {
		return nil, &restErr{status: http.StatusNotFound, code: 10003, msg: "Unknown Channel"}
	}
	return nil, nil
}

// serveCDN serves a person's attachment.
func (s *Server) serveCDN(w http.ResponseWriter, r *http.Request) {
	s.w.mu.Lock()
	m := s.w.find(r.PathValue("channel"), r.PathValue("id"))
	var a *Attachment
	if m != nil {
		for i := range m.Attachments {
			if m.Attachments[i].Filename == r.PathValue("name") {
				a = &m.Attachments[i]
			}
		}
	}
	s.w.mu.Unlock()
	if a == nil {
		http.NotFound(w, r)
		return
	}
	if a.ContentType != "" {
		w.Header().Set("Content-Type", a.ContentType)
	}
	_, _ = w.Write(a.Data)
}

// wireMessage is m as Discord sends it.
func wireMessage(m *Message) map[string]any {
	out := map[string]any{
		"id": m.ID, "channel_id": m.ChannelID, "author": m.Author, "content": m.Content,
		"timestamp": m.At.UTC().Format(time.RFC3339Nano), "mentions": orEmpty(m.Mentions),
		"attachments": orEmpty(m.Attachments), "type": 0,
	}
	if m.GuildID != "" {
		out["guild_id"] = m.GuildID
	}
	if m.Nonce != "" {
		out["nonce"] = m.Nonce
	}
	if m.ReplyTo != "" {
		out["type"] = 19
		out["message_reference"] = map[string]string{"message_id": m.ReplyTo, "channel_id": m.ChannelID}
	}
	return out
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func idLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

var mentionRE = regexp.MustCompile(`<@!?(\d+)>`)
