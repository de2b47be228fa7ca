package chatfake_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/connector/chatfake"
)

func TestPostsAndMessages(t *testing.T) {
	w := chatfake.New(nil)
	w.AddUser(chatfake.User{ID: "u1", Name: "Alice"})
	w.AddChat(chatfake.Chat{ID: "c1", Kind: chatfake.DM})
	p := w.SendAsUser("c1", "u1", "hello", chatfake.File{Name: "a.png", Type: "image/png", Data: []byte("x")})
	if p.Seq != 1 || p.Files[0].ID == "" {
		t.Fatalf("post = %+v", p)
	}
	if f, ok := w.File(p.Files[0].ID); !ok || string(f.Data) != "x" {
		t.Fatalf("file = %+v, %v", f, ok)
	}
	m := w.Create(chatfake.Message{Chat: "c1"}, "hi", "MarkdownV2")
	if changed, ok := w.Edit("c1", m.ID, "hi", "MarkdownV2"); changed || !ok {
		t.Fatalf("same edit: changed %v ok %v", changed, ok)
	}
	if changed, ok := w.Edit("c1", m.ID, "hi there", ""); !changed || !ok {
		t.Fatalf("edit: changed %v ok %v", changed, ok)
	}
	if _, ok := w.Edit("c2", m.ID, "x", ""); ok {
		t.Fatal("edit in another chat found the message")
	}
	got := w.Messages("c1")
	var texts []string
	for _, v := range got[0].Versions {
		texts = append(texts, v.Text+"|"+v.Markup)
	}
	if diff := cmp.Diff([]string{"hi|MarkdownV2", "hi there|"}, texts); diff != "" {
		t.Fatalf("versions (-want +got):\n%s", diff)
	}
	if got[0].Text() != "hi there" || got[0].Edits() != 1 {
		t.Fatalf("text %q edits %d", got[0].Text(), got[0].Edits())
	}
	if ps := w.Posts(2); len(ps) != 0 {
		t.Fatalf("posts from 2 = %v", ps)
	}
}

func TestFaultsInOrder(t *testing.T) {
	w := chatfake.New(nil)
	w.Fail("send", 2, chatfake.Fault{Status: 429, RetryAfter: time.Second})
	w.Fail("send", 1, chatfake.Fault{Status: 500})
	var got []int
	for range 4 {
		f, err := w.Call(context.Background(), "send")
		if err != nil {
			t.Fatal(err)
		}
		if f == nil {
			got = append(got, 200)
		} else {
			got = append(got, f.Status)
		}
	}
	if diff := cmp.Diff([]int{429, 429, 500, 200}, got); diff != "" {
		t.Fatalf("statuses (-want +got):\n%s", diff)
	}
	if w.Count("send") != 4 || w.Counts()["send"] != 4 {
		t.Fatalf("counts = %v", w.Counts())
	}
}

func TestHoldNextAndWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := chatfake.New(nil)
		release := w.HoldNext("send")
		done := make(chan struct{})
		go func() {
			defer close(done)
			w.Call(context.Background(), "send")
		}()
		ctx := context.Background()
		if err := w.Wait(ctx, func() bool { return w.Count("send") == 1 }); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("a held call answered before its release")
		default:
		}
		release()
		release()
		<-done

		// A held call ends with its ctx.
		w.HoldNext("edit")
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := w.Call(cctx, "edit"); !errors.Is(err, context.Canceled) {
			t.Fatalf("held call with ended ctx: %v", err)
		}

		// Wait ends with its ctx.
		tctx, tcancel := context.WithTimeout(ctx, time.Minute)
		defer tcancel()
		if err := w.Wait(tctx, func() bool { return false }); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("wait: %v", err)
		}
	})
}

func TestDropClosesConnections(t *testing.T) {
	w := chatfake.New(nil)
	entered := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		close(entered)
		<-r.Context().Done()
	}))
	srv.Config.ConnState = w.ConnState
	srv.Start()
	defer srv.Close()
	errc := make(chan error, 1)
	go func() {
		resp, err := http.Get(srv.URL)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	<-entered
	w.Drop()
	if err := <-errc; err == nil {
		t.Fatal("the call survived Drop")
	}
}

func TestDropConn(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		chatfake.DropConn(rw)
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err == nil {
		resp.Body.Close()
		t.Fatal("a dropped call answered")
	}
}

func TestControl(t *testing.T) {
	w := chatfake.New(nil)
	srv := httptest.NewServer(w.Control())
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/_fake/send", "application/json", strings.NewReader(`{"chat":"42","user":"42","name":"Alice","text":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if c, ok := w.Chat("42"); !ok || c.Kind != chatfake.DM {
		t.Fatalf("chat = %+v %v", c, ok)
	}
	if ps := w.Posts(1); len(ps) != 1 || ps[0].Text != "hi" {
		t.Fatalf("posts = %+v", ps)
	}
	w.Create(chatfake.Message{Chat: "42"}, "hello", "")
	resp, err = http.Get(srv.URL + "/_fake/messages?chat=42")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ms []chatfake.Message
	if err := json.NewDecoder(resp.Body).Decode(&ms); err != nil || len(ms) != 1 || ms[0].Text() != "hello" {
		t.Fatalf("messages = %+v, %v", ms, err)
	}
	resp, err = http.Post(srv.URL+"/_fake/send", "application/json", strings.NewReader(`{"text":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a send without chat: %d", resp.StatusCode)
	}
}
