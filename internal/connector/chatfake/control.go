package chatfake

import (
	"encoding/json"
	"net/http"
	"strings"
)

// SendRequest is a POST /_fake/send body: a person's message. An unknown
// user or chat is added (Kind "" is DM when Chat is User's id, else
// Group).
type SendRequest struct {
	Chat    string `json:"chat"`
	User    string `json:"user"`
	Name    string `json:"name,omitempty"`
	Kind    string `json:"kind,omitempty"`
	Thread  string `json:"thread,omitempty"`
	ReplyTo string `json:"reply_to,omitempty"`
	Text    string `json:"text"`
}

// Control is the fake's control API, for demos and benchmarks driving a
// fake from outside its process (agentd fakechat):
//
//	POST /_fake/send       a SendRequest → the Post made
//	GET  /_fake/messages   the bot's messages (?chat= one chat), with every version
func (w *World) Control() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /_fake/send", func(rw http.ResponseWriter, r *http.Request) {
		var req SendRequest
		if err := json.NewDecoder(http.MaxBytesReader(rw, r.Body, 1<<20)).Decode(&req); err != nil {
			http.Error(rw, "bad body: "+err.Error(), http.StatusBadRequest)
			return
		}
		if req.Chat == "" || req.User == "" {
			http.Error(rw, "chat and user are required", http.StatusBadRequest)
			return
		}
		if _, ok := w.User(req.User); !ok {
			name := req.Name
			if name == "" {
				name = "User " + req.User
			}
			w.AddUser(User{ID: req.User, Name: name, Username: strings.ToLower(strings.ReplaceAll(name, " ", "_"))})
		}
		if _, ok := w.Chat(req.Chat); !ok {
			kind := req.Kind
			if kind == "" {
				kind = Group
				if req.Chat == req.User {
					kind = DM
				}
			}
			w.AddChat(Chat{ID: req.Chat, Kind: kind, Title: "chat " + req.Chat, Forum: req.Thread != ""})
		}
		p := w.Send(Post{Chat: req.Chat, User: req.User, Text: req.Text, Thread: req.Thread, ReplyTo: req.ReplyTo})
		writeJSON(rw, p)
	})
	mux.HandleFunc("GET /_fake/messages", func(rw http.ResponseWriter, r *http.Request) {
		ms := w.Messages(r.URL.Query().Get("chat"))
		if ms == nil {
			ms = []Message{}
		}
		writeJSON(rw, ms)
	})
	return mux
}

func writeJSON(rw http.ResponseWriter, v any) {
	rw.Header().Set("Content-Type", "application/json")
	json.NewEncoder(rw).Encode(v)
}
