package discordfake

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"agentd/internal/connector/chatfake"
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

// rest wraps a REST handler with what every call gets: a call of the
// World (counted, held, or answered with a scripted fault), the token
// check, rate limits with their headers, and JSON.
func (s *Server) rest(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := routeKey(r)
		fault, err := s.w.Call(r.Context(), key)
		if err != nil {
			return // the client went away while the call was held
		}
		if r.Header.Get("Authorization") != "Bot "+s.opts.Token {
			writeErr(w, &restErr{status: http.StatusUnauthorized, msg: "401: Unauthorized"})
			return
		}
		s.mu.Lock()
		limited, headers := s.limit(key, r.PathValue("channel"), s.w.Now())
		s.mu.Unlock()
		for k, v := range headers {
			w.Header().Set(k, v)
		}
		switch {
		case fault != nil && fault.Drop:
			chatfake.DropConn(w)
			return
		case fault != nil:
			writeFault(w, *fault)
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

// limit counts a call in its bucket and the global one. It returns the
// 429 to answer when either is spent, and the bucket's headers.
func (s *Server) limit(key, major string, now time.Time) (*chatfake.Fault, map[string]string) {
	if !now.Before(s.global.reset) {
		s.global = bucket{reset: now.Add(time.Second)}
	}
	s.global.count++
	if s.global.count > s.opts.GlobalLimit {
		return &chatfake.Fault{Status: http.StatusTooManyRequests, RetryAfter: s.global.reset.Sub(now), Global: true}, nil
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
		return &chatfake.Fault{Status: http.StatusTooManyRequests, RetryAfter: b.reset.Sub(now)}, h
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

// writeFault answers with a scripted fault in Discord's wire: a 429 with
// retry_after, global and X-RateLimit-Scope (user, or global), or the
// status with Body as the error's message.
func writeFault(w http.ResponseWriter, f chatfake.Fault) {
	if f.Status != http.StatusTooManyRequests {
		msg := f.Body
		if msg == "" {
			msg = http.StatusText(f.Status)
		}
		writeErr(w, &restErr{status: f.Status, msg: msg})
		return
	}
	scope := "user"
	if f.Global {
		scope = "global"
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
	Attachments []json.RawMessage `json:"attachments"`
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
	if _, ok := s.w.Chat(ch); !ok {
		return nil, &restErr{status: http.StatusNotFound, code: 10003, msg: "Unknown Channel"}
	}
	s.cmu.Lock() // one create at a time: a nonce sent twice at once makes one message
	defer s.cmu.Unlock()
	if m, ok := s.w.FindNonce(ch, nonce); ok && b.EnforceNonce && s.w.Now().Sub(m.Versions[0].At) < nonceWindow {
		return s.wireBot(m), nil
	}
	m := chatfake.Message{Chat: ch, Nonce: nonce}
	if b.AllowedMentions != nil {
		am, _ := json.Marshal(b.AllowedMentions)
		m.Meta = string(am)
	}
	if b.MessageReference != nil {
		m.ReplyTo = s.worldID(b.MessageReference.MessageID)
	}
	if len(files) > 0 {
		m.File = &files[0]
	}
	m = s.w.Create(m, content, "")
	out := s.wireBot(m)
	s.dispatchMessage(out, s.guild(ch))
	return out, nil
}

// nonceWindow is how long an enforced nonce returns its first message:
// Discord says "the past few minutes".
const nonceWindow = 5 * time.Minute

// readCreate decodes a create's body: JSON, or multipart with
// payload_json and files[n].
func readCreate(r *http.Request, b *createBody) ([]chatfake.File, *restErr) {
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
	var files []chatfake.File
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
			files = append(files, chatfake.File{Name: p.FileName(), Type: p.Header.Get("Content-Type"), Data: data})
		}
	}
	return files, nil
}

func (s *Server) editMessage(r *http.Request) (any, *restErr) {
	var b createBody
	if json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&b) != nil {
		return nil, &restErr{status: http.StatusBadRequest, code: 50109, msg: "The request body contains invalid JSON."}
	}
	ch, id := r.PathValue("channel"), s.worldID(r.PathValue("id"))
	m, ok := s.w.Message(ch, id)
	if !ok {
		if _, posted := s.post(ch, id); posted {
			return nil, &restErr{status: http.StatusForbidden, code: 50005, msg: "Cannot edit a message authored by another user"}
		}
		return nil, &restErr{status: http.StatusNotFound, code: 10008, msg: "Unknown Message"}
	}
	if b.Content != nil {
		if utf8.RuneCountInString(*b.Content) > maxContent {
			return nil, tooLong("content")
		}
		if *b.Content == "" && m.File == nil {
			return nil, errEmpty
		}
		s.w.Edit(ch, id, *b.Content, "") // the same text again is accepted
		m, _ = s.w.Message(ch, id)
	}
	return s.wireBot(m), nil
}

// post finds a person's message.
func (s *Server) post(ch, id string) (chatfake.Post, bool) {
	for _, p := range s.w.Posts(1) {
		if p.Chat == ch && p.ID == id {
			return p, true
		}
	}
	return chatfake.Post{}, false
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
	ch, after := r.PathValue("channel"), q.Get("after")
	if _, ok := s.w.Chat(ch); !ok {
		return nil, &restErr{status: http.StatusNotFound, code: 10003, msg: "Unknown Channel"}
	}
	var all []map[string]any
	for _, p := range s.w.Posts(1) {
		if p.Chat == ch {
			all = append(all, s.wirePost(p))
		}
	}
	for _, m := range s.w.Messages(ch) {
		all = append(all, s.wireBot(m))
	}
	slices.SortFunc(all, func(a, b map[string]any) int {
		return cmpID(a["id"].(string), b["id"].(string))
	})
	out := []map[string]any{}
	for _, m := range all {
		if after != "" && cmpID(m["id"].(string), after) <= 0 {
			continue
		}
		if len(out) == limit {
			break
		}
		delete(m, "guild_id") // REST messages do not carry it
		out = append(out, m)
	}
	slices.Reverse(out) // newest first, as Discord answers
	return out, nil
}

func (s *Server) typing(r *http.Request) (any, *restErr) {
	if _, ok := s.w.Chat(r.PathValue("channel")); !ok {
		return nil, &restErr{status: http.StatusNotFound, code: 10003, msg: "Unknown Channel"}
	}
	return nil, nil
}

// serveCDN serves a person's attachment (a World file).
func (s *Server) serveCDN(w http.ResponseWriter, r *http.Request) {
	f, ok := s.w.File(r.PathValue("file"))
	if !ok || f.Name != r.PathValue("name") {
		http.NotFound(w, r)
		return
	}
	if f.Type != "" {
		w.Header().Set("Content-Type", f.Type)
	}
	_, _ = w.Write(f.Data)
}

// wireBot is a bot message as Discord sends it.
func (s *Server) wireBot(m chatfake.Message) map[string]any {
	out := s.wire(m.ID, m.Chat, s.wireUser(s.Bot()), m.Text(), m.ReplyTo, m.Versions[0].At)
	if m.Nonce != "" {
		out["nonce"] = m.Nonce
	}
	if f := m.File; f != nil {
		out["attachments"] = []map[string]any{{"id": "0", "filename": f.Name, "content_type": f.Type, "size": len(f.Data)}}
	}
	if len(m.Versions) > 1 {
		out["edited_timestamp"] = m.Versions[len(m.Versions)-1].At.UTC().Format(time.RFC3339Nano)
	}
	return out
}

// wirePost is a person's message as Discord sends it.
func (s *Server) wirePost(p chatfake.Post) map[string]any {
	u, _ := s.w.User(p.User)
	out := s.wire(p.ID, p.Chat, s.wireUser(u), p.Text, p.ReplyTo, p.At)
	var mentions []map[string]any
	for _, sub := range mentionRE.FindAllStringSubmatch(p.Text, -1) {
		mu, ok := s.w.User(sub[1])
		if !ok {
			mu = chatfake.User{ID: sub[1]}
		}
		mentions = append(mentions, s.wireUser(mu))
	}
	out["mentions"] = orEmpty(mentions)
	var atts []map[string]any
	s.mu.Lock()
	base := s.url
	s.mu.Unlock()
	for _, f := range p.Files {
		atts = append(atts, map[string]any{
			"id": f.ID, "filename": f.Name, "content_type": f.Type, "size": len(f.Data),
			"url": base + "/cdn/" + url.PathEscape(f.ID) + "/" + url.PathEscape(f.Name),
		})
	}
	out["attachments"] = orEmpty(atts)
	return out
}

func (s *Server) wire(id, ch string, author map[string]any, text, replyTo string, at time.Time) map[string]any {
	out := map[string]any{
		"id": s.wireID(id), "channel_id": ch, "author": author, "content": text,
		"timestamp": at.UTC().Format(time.RFC3339Nano), "mentions": []any{},
		"attachments": []any{}, "type": 0,
	}
	if guild := s.guild(ch); guild != "" {
		out["guild_id"] = guild
	}
	if replyTo != "" {
		out["type"] = 19
		out["message_reference"] = map[string]string{"message_id": s.wireID(replyTo), "channel_id": ch}
	}
	return out
}

func (s *Server) wireUser(u chatfake.User) map[string]any {
	out := map[string]any{"id": u.ID, "username": u.Username, "global_name": u.Name}
	if u.Username == "" {
		out["username"] = u.Name
	}
	if u.Bot {
		out["bot"] = true
	}
	return out
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// cmpID orders snowflakes: a shorter decimal is smaller.
func cmpID(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}

var mentionRE = regexp.MustCompile(`<@!?(\d+)>`)
