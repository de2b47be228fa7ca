package telegramfake

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"agentd/internal/connector/chatfake"
)

type method struct {
	name string // as Telegram spells it: the World's counters and faults use it
	fn   func(ctx context.Context, p params) (any, error)
}

// methods is the Bot API this fake speaks, keyed by the lower-case name
// (Telegram's method names are case-insensitive).
func (s *Server) methods() map[string]method {
	list := []method{
		{"getMe", s.getMe},
		{"getUpdates", s.getUpdates},
		{"setWebhook", s.setWebhook},
		{"deleteWebhook", s.deleteWebhook},
		{"getWebhookInfo", s.getWebhookInfo},
		{"sendMessage", s.sendMessage},
		{"editMessageText", s.editMessageText},
		{"sendChatAction", s.sendChatAction},
		{"sendPhoto", s.sendPhoto},
		{"sendDocument", s.sendDocument},
		{"getFile", s.getFile},
		{"setMyCommands", s.setMyCommands},
	}
	m := make(map[string]method, len(list))
	for _, x := range list {
		m[strings.ToLower(x.name)] = x
	}
	return m
}

func (s *Server) getMe(context.Context, params) (any, error) {
	return map[string]any{
		"id": num(s.bot.ID), "is_bot": true, "first_name": s.bot.Name, "username": s.bot.Username,
		"can_join_groups": true, "can_read_all_group_messages": true, "supports_inline_queries": false,
	}, nil
}

// chat finds the call's chat_id: an unknown one is "chat not found", a
// blocked one 403.
func (s *Server) chat(p params) (chatfake.Chat, error) {
	id := p.str("chat_id")
	if id == "" {
		return chatfake.Chat{}, badRequest("chat_id is empty")
	}
	c, ok := s.w.Chat(id)
	if !ok {
		return c, badRequest("chat not found")
	}
	s.mu.Lock()
	blocked := s.blocked[id]
	s.mu.Unlock()
	if blocked {
		if c.Kind == chatfake.DM {
			return c, &apiError{Code: 403, Desc: "Forbidden: bot was blocked by the user"}
		}
		return c, &apiError{Code: 403, Desc: "Forbidden: bot was kicked from the group chat"}
	}
	return c, nil
}

// thread checks message_thread_id: only a forum chat has topics.
func (s *Server) thread(c chatfake.Chat, p params) (string, error) {
	t, err := p.int("message_thread_id")
	if err != nil || t == 0 {
		return "", err
	}
	if !c.Forum {
		return "", badRequest("message thread not found")
	}
	return strconv.FormatInt(t, 10), nil
}

// replyTo checks reply_parameters.message_id (or the older
// reply_to_message_id): the message must exist in the chat unless
// allow_sending_without_reply.
func (s *Server) replyTo(c chatfake.Chat, p params) (string, error) {
	var rp struct {
		MessageID int64 `json:"message_id"`
		Allow     bool  `json:"allow_sending_without_reply"`
	}
	if err := p.decode("reply_parameters", &rp); err != nil {
		return "", err
	}
	if rp.MessageID == 0 {
		id, err := p.int("reply_to_message_id")
		if err != nil {
			return "", err
		}
		rp.MessageID, rp.Allow = id, p.bool("allow_sending_without_reply")
	}
	if rp.MessageID == 0 {
		return "", nil
	}
	id := strconv.FormatInt(rp.MessageID, 10)
	if s.exists(c.ID, id) {
		return id, nil
	}
	if rp.Allow {
		return "", nil
	}
	return "", badRequest("message to be replied not found")
}

// exists says whether message id is in chat (the bot's or a person's).
func (s *Server) exists(chat, id string) bool {
	if _, ok := s.w.Message(chat, id); ok {
		return true
	}
	_, ok := s.post(chat, id)
	return ok
}

func (s *Server) post(chat, id string) (chatfake.Post, bool) {
	for _, p := range s.w.Posts(1) {
		if p.Chat == chat && p.ID == id {
			return p, true
		}
	}
	return chatfake.Post{}, false
}

// text parses a message's text in its parse_mode and checks it as
// Telegram does: not empty, at most MaxText after parsing.
func text(p params, field string) (raw, mode string, plain string, ents []Entity, err error) {
	raw, mode = p.str(field), p.str("parse_mode")
	if !utf8.ValidString(raw) {
		return "", "", "", nil, badRequest(field + " must be encoded in UTF-8")
	}
	switch strings.ToLower(mode) {
	case "":
		plain = raw
	case "markdownv2":
		mode = "MarkdownV2"
		plain, ents, err = ParseMarkdownV2(raw)
		if err != nil {
			return "", "", "", nil, badRequest("can't parse entities: " + err.Error())
		}
	default:
		return "", "", "", nil, badRequest("unsupported parse_mode")
	}
	if field == "text" && strings.TrimSpace(plain) == "" {
		return "", "", "", nil, badRequest("message text is empty")
	}
	if field == "caption" && utf16Len(plain) > 1024 {
		return "", "", "", nil, badRequest("message caption is too long")
	}
	if utf16Len(plain) > MaxText {
		return "", "", "", nil, badRequest("message is too long")
	}
	return raw, mode, plain, ents, nil
}

func (s *Server) sendMessage(_ context.Context, p params) (any, error) {
	c, err := s.chat(p)
	if err != nil {
		return nil, err
	}
	thread, err := s.thread(c, p)
	if err != nil {
		return nil, err
	}
	reply, err := s.replyTo(c, p)
	if err != nil {
		return nil, err
	}
	raw, mode, plain, ents, err := text(p, "text")
	if err != nil {
		return nil, err
	}
	m := s.w.Create(chatfake.Message{Chat: c.ID, Thread: thread, ReplyTo: reply}, raw, mode)
	return s.botMessage(c, m, plain, ents), nil
}

func (s *Server) editMessageText(_ context.Context, p params) (any, error) {
	c, err := s.chat(p)
	if err != nil {
		return nil, err
	}
	id := p.str("message_id")
	if id == "" {
		return nil, badRequest("message identifier is not specified")
	}
	old, ok := s.w.Message(c.ID, id)
	if !ok {
		return nil, badRequest("message to edit not found")
	}
	raw, mode, plain, ents, err := text(p, "text")
	if err != nil {
		return nil, err
	}
	// Telegram compares what a reader sees, not the markup sent.
	last := old.Versions[len(old.Versions)-1]
	oldPlain, oldEnts := last.Text, []Entity(nil)
	if last.Markup == "MarkdownV2" {
		oldPlain, oldEnts, _ = ParseMarkdownV2(last.Text)
	}
	if oldPlain == plain && sameEntities(oldEnts, ents) {
		return nil, badRequest("message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message")
	}
	s.w.Edit(c.ID, id, raw, mode)
	m, _ := s.w.Message(c.ID, id)
	msg := s.botMessage(c, m, plain, ents)
	msg["edit_date"] = s.w.Now().Unix()
	return msg, nil
}

func sameEntities(a, b []Entity) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

var chatActions = map[string]bool{
	"typing": true, "upload_photo": true, "record_video": true, "upload_video": true, "record_voice": true,
	"upload_voice": true, "upload_document": true, "choose_sticker": true, "find_location": true,
	"record_video_note": true, "upload_video_note": true,
}

func (s *Server) sendChatAction(_ context.Context, p params) (any, error) {
	c, err := s.chat(p)
	if err != nil {
		return nil, err
	}
	if _, err := s.thread(c, p); err != nil {
		return nil, err
	}
	if !chatActions[p.str("action")] {
		return nil, badRequest("wrong parameter action in request")
	}
	return true, nil
}

func (s *Server) sendPhoto(ctx context.Context, p params) (any, error) {
	return s.sendFile(p, "photo")
}

func (s *Server) sendDocument(ctx context.Context, p params) (any, error) {
	return s.sendFile(p, "document")
}

// sendFile sends a photo or a document: a file_id of the World, an HTTP
// URL (Telegram fetches it; the fake keeps the URL), or an upload.
func (s *Server) sendFile(p params, field string) (any, error) {
	c, err := s.chat(p)
	if err != nil {
		return nil, err
	}
	thread, err := s.thread(c, p)
	if err != nil {
		return nil, err
	}
	reply, err := s.replyTo(c, p)
	if err != nil {
		return nil, err
	}
	raw, mode, plain, ents, err := text(p, "caption")
	if err != nil {
		return nil, err
	}
	var f chatfake.File
	if up, ok := p.files[field]; ok {
		f = s.w.AddFile(up)
	} else if v := p.str(field); strings.HasPrefix(v, "attach://") {
		up, ok := p.files[strings.TrimPrefix(v, "attach://")]
		if !ok {
			return nil, badRequest("wrong file identifier/HTTP URL specified")
		}
		f = s.w.AddFile(up)
	} else if strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://") {
		f = s.w.AddFile(chatfake.File{URL: v, Name: v[strings.LastIndexByte(v, '/')+1:]})
	} else if old, ok := s.w.File(v); ok {
		f = old
	} else if v == "" {
		return nil, badRequest("there is no " + field + " in the request")
	} else {
		return nil, badRequest("wrong file identifier/HTTP URL specified")
	}
	if field == "photo" && f.URL == "" && !strings.HasPrefix(f.Type, "image/") && f.Type != "" && f.Type != "application/octet-stream" {
		return nil, badRequest("IMAGE_PROCESS_FAILED")
	}
	m := s.w.Create(chatfake.Message{Chat: c.ID, Thread: thread, ReplyTo: reply, File: &f}, raw, mode)
	msg := s.botMessage(c, m, "", nil)
	if plain != "" {
		msg["caption"] = plain
		if len(ents) > 0 {
			msg["caption_entities"] = ents
		}
	}
	if field == "photo" {
		msg["photo"] = []any{s.photoSize(f)}
	} else {
		msg["document"] = s.document(f)
	}
	return msg, nil
}

func (s *Server) getFile(_ context.Context, p params) (any, error) {
	f, ok := s.w.File(p.str("file_id"))
	if !ok {
		return nil, badRequest("invalid file_id")
	}
	if len(f.Data) > 20<<20 {
		return nil, badRequest("file is too big")
	}
	path := "documents/file_" + f.ID
	if strings.HasPrefix(f.Type, "image/") {
		path = "photos/file_" + f.ID + ".jpg"
	}
	s.mu.Lock()
	s.paths[path] = f.ID
	s.mu.Unlock()
	return map[string]any{"file_id": f.ID, "file_unique_id": "u" + f.ID, "file_size": len(f.Data), "file_path": path}, nil
}

// serveFile is the download of a file getFile gave a path for:
// GET /file/bot<token>/<file_path>.
func (s *Server) serveFile(rw http.ResponseWriter, rest string) {
	token, path, _ := strings.Cut(rest, "/")
	if token != s.token {
		writeError(rw, &apiError{Code: 401, Desc: "Unauthorized"})
		return
	}
	s.mu.Lock()
	id, ok := s.paths[path]
	s.mu.Unlock()
	f, found := s.w.File(id)
	if !ok || !found {
		writeError(rw, &apiError{Code: 404, Desc: "Not Found"})
		return
	}
	typ := f.Type
	if typ == "" {
		typ = "application/octet-stream"
	}
	rw.Header().Set("Content-Type", typ)
	rw.WriteHeader(200)
	rw.Write(f.Data)
}

var commandRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9_]{1,32}$`) }) // compiled when first used: agentd starts light

func (s *Server) setMyCommands(_ context.Context, p params) (any, error) {
	var cmds []BotCommand
	if err := p.decode("commands", &cmds); err != nil {
		return nil, err
	}
	if len(cmds) > 100 {
		return nil, badRequest("too many commands specified")
	}
	for _, c := range cmds {
		if !commandRE().MatchString(c.Command) {
			return nil, badRequest("BOT_COMMAND_INVALID")
		}
		if n := utf16Len(c.Description); n < 1 || n > 256 {
			return nil, badRequest("BOT_COMMAND_DESCRIPTION_INVALID")
		}
	}
	s.mu.Lock()
	s.commands = cmds
	s.mu.Unlock()
	s.w.Touch()
	return true, nil
}

// num writes a World id as the Bot API's integer.
func num(id string) any {
	if n, err := strconv.ParseInt(id, 10, 64); err == nil {
		return n
	}
	return id
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
