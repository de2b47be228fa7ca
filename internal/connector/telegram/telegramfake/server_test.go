package telegramfake_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"agentd/internal/connector/chatfake"
	"agentd/internal/connector/telegram/telegramfake"
)

type answer struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
}

func call(t *testing.T, url, body string) answer {
	t.Helper()
	a, err := post(url, body)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func post(url, body string) (answer, error) {
	var a answer
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return a, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		return a, err
	}
	if !a.OK && a.ErrorCode != resp.StatusCode {
		return a, fmt.Errorf("error_code %d, HTTP %d", a.ErrorCode, resp.StatusCode)
	}
	return a, nil
}

// The wire as Telegram answers it, call by call.
func TestWire(t *testing.T) {
	w := chatfake.New(nil)
	w.AddUser(chatfake.User{ID: "42", Name: "Alice"})
	w.AddChat(chatfake.Chat{ID: "42", Kind: chatfake.DM})
	s := telegramfake.New(&telegramfake.Options{World: w})
	defer s.Close()
	srv := httptest.NewServer(s)
	defer srv.Close()
	api := srv.URL + "/bot" + s.Token() + "/"
	w.SendAsUser("42", "42", "one")
	w.SendAsUser("42", "42", "two")
	tests := []struct {
		name, url, body string
		code            int    // 0: ok
		has             string // in the result or description
	}{
		{"wrong token", srv.URL + "/bot1:x/getMe", `{}`, 401, "Unauthorized"},
		{"unknown method", api + "fly", `{}`, 404, "Not Found"},
		{"getMe", api + "getme", `{}`, 0, `"username":"agentd_bot"`},
		{"updates", api + "getUpdates", `{"timeout":0}`, 0, `"text":"one"`},
		{"offset confirms", api + "getUpdates", `{"offset":500000001}`, 0, `"update_id":500000001`},
		{"confirmed are gone", api + "getUpdates", `{"offset":500000002}`, 0, `[]`},
		{"chat not found", api + "sendMessage", `{"chat_id":7,"text":"x"}`, 400, "Bad Request: chat not found"},
		{"empty text", api + "sendMessage", `{"chat_id":42,"text":" "}`, 400, "message text is empty"},
		{"reserved character", api + "sendMessage", `{"chat_id":42,"text":"a.b","parse_mode":"MarkdownV2"}`, 400, `can't parse entities: Character '.' is reserved`},
		{"too long", api + "sendMessage", `{"chat_id":42,"text":"` + strings.Repeat("a", 4097) + `"}`, 400, "message is too long"},
		{"sent", api + "sendMessage", `{"chat_id":"42","text":"*hi*","parse_mode":"MarkdownV2"}`, 0, `"entities":[{"type":"bold","offset":0,"length":2}]`},
		{"not modified", api + "editMessageText", `{"chat_id":42,"message_id":3,"text":"*hi*","parse_mode":"MarkdownV2"}`, 400, "message is not modified"},
		{"edit", api + "editMessageText", `{"chat_id":42,"message_id":3,"text":"hi there"}`, 0, `"text":"hi there"`},
		{"edit of none", api + "editMessageText", `{"chat_id":42,"message_id":99,"text":"x"}`, 400, "message to edit not found"},
		{"bad action", api + "sendChatAction", `{"chat_id":42,"action":"dancing"}`, 400, "wrong parameter action"},
		{"bad command", api + "setMyCommands", `{"commands":[{"command":"Bad-Name","description":"x"}]}`, 400, "BOT_COMMAND_INVALID"},
		{"bad secret", api + "setWebhook", `{"url":"https://x.test","secret_token":"a b"}`, 400, "unallowed characters"},
	}
	for _, tt := range tests {
		a := call(t, tt.url, tt.body)
		got := string(a.Result)
		if !a.OK {
			got = a.Description
		}
		if (tt.code == 0) != a.OK || (!a.OK && a.ErrorCode != tt.code) || !strings.Contains(got, tt.has) {
			t.Errorf("%s: ok %v code %d %s; want code %d with %q", tt.name, a.OK, a.ErrorCode, got, tt.code, tt.has)
		}
	}
}

// Two pollers: the older one ends with 409, as Telegram's does.
func TestSecondPollerEndsFirst(t *testing.T) {
	s := telegramfake.New(nil)
	defer s.Close()
	srv := httptest.NewServer(s)
	defer srv.Close()
	api := srv.URL + "/bot" + s.Token() + "/getUpdates"
	first := make(chan answer, 1)
	go func() { a, _ := post(api, `{"timeout":50}`); first <- a }()
	ctx := context.Background()
	s.World().Wait(ctx, func() bool { return s.World().Count("getUpdates") == 1 })
	go post(api, `{"timeout":1}`)
	a := <-first
	if a.OK || a.ErrorCode != 409 || !strings.Contains(a.Description, "terminated by other getUpdates request") {
		t.Fatalf("first poller: %+v", a)
	}
}

func TestFileDownload(t *testing.T) {
	s := telegramfake.New(nil)
	defer s.Close()
	srv := httptest.NewServer(s)
	defer srv.Close()
	f := s.World().AddFile(chatfake.File{Name: "a.jpg", Type: "image/jpeg", Data: []byte("JPEG")})
	a := call(t, srv.URL+"/bot"+s.Token()+"/getFile", `{"file_id":"`+f.ID+`"}`)
	var got struct {
		FilePath string `json:"file_path"`
	}
	json.Unmarshal(a.Result, &got)
	for _, tt := range []struct {
		url  string
		code int
	}{
		{srv.URL + "/file/bot" + s.Token() + "/" + got.FilePath, 200},
		{srv.URL + "/file/bot1:x/" + got.FilePath, 401},
		{srv.URL + "/file/bot" + s.Token() + "/photos/nope.jpg", 404},
	} {
		resp, err := http.Get(tt.url)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.code || (tt.code == 200 && string(body) != "JPEG") {
			t.Errorf("GET %s: %d %q", tt.url, resp.StatusCode, body)
		}
	}
}

// A test waiting on the World sees the fake's own state change (a webhook
// set), not only the World's.
func TestWaitSeesWebhookSet(t *testing.T) {
	s := telegramfake.New(nil)
	defer s.Close()
	srv := httptest.NewServer(s)
	defer srv.Close()
	w := s.World()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	release := w.HoldNext("setWebhook")
	go post(srv.URL+"/bot"+s.Token()+"/setWebhook", `{"url":"`+srv.URL+`/hook"}`)
	if err := w.Wait(ctx, func() bool { return w.Count("setWebhook") == 1 }); err != nil {
		t.Fatal(err)
	}
	checked := make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	go func() {
		done <- w.Wait(ctx, func() bool {
			defer once.Do(func() { close(checked) })
			u, _ := s.Webhook()
			return u != ""
		})
	}()
	<-checked
	release()
	if err := <-done; err != nil {
		t.Fatalf("the webhook set woke no Wait: %v", err)
	}
}
