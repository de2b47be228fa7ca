package gateway_test

import (
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"agentd/internal/event"
	"agentd/internal/gateway"
	"agentd/internal/memory"
	"agentd/internal/store"
)

// memEnv serves history, working memory and long-term memory over a real
// store and a real memory database.
func memEnv(t *testing.T) (*env, *memory.Store) {
	e := newEnv(t, setup{})
	mem, err := memory.Open(t.Context(), filepath.Join(t.TempDir(), "memory.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mem.Close() })
	srv := gateway.New(&gateway.Options{Runtime: e.rt, Sessions: e.st, Agents: testAgents(), History: e.st, Memory: mem})
	e.http.Close()
	e.http = httptest.NewServer(srv)
	return e, mem
}

func TestWorkingMemoryRoutes(t *testing.T) {
	e, _ := memEnv(t)
	if code, _, body := e.do("GET", "/v1/sessions/a/k/working", ""); code != 404 {
		t.Fatalf("before the session exists: %d %s", code, body)
	}
	if _, _, err := e.st.Session(t.Context(), "a", "k"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		method, path, body string
		code               int
		want               string
	}{
		{"PUT", "/v1/sessions/a/k/working/plan", `["buy tea","repaint"]`, 200, `{"plan":["buy tea","repaint"]}`},
		{"PUT", "/v1/sessions/a/k/working/n", `42`, 200, `{"n":42}`},
		{"PUT", "/v1/sessions/a/k/working/bad", `{not json`, 400, `"bad_request"`},
		{"GET", "/v1/sessions/a/k/working", "", 200, `{"n":42,"plan":["buy tea","repaint"]}`},
		{"DELETE", "/v1/sessions/a/k/working/n", "", 200, `{"deleted":true}`},
		{"GET", "/v1/sessions/a/k/working", "", 200, `{"plan":["buy tea","repaint"]}`},
	} {
		code, _, body := e.do(c.method, c.path, c.body)
		if code != c.code || !strings.Contains(string(body), c.want) {
			t.Errorf("%s %s: %d %s, want %d with %s", c.method, c.path, code, body, c.code, c.want)
		}
	}
	// Each change is in the log.
	sess, _ := e.st.SessionByAddress(t.Context(), "a", "k")
	evs, err := e.st.Events(t.Context(), sess.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, ev := range evs {
		if ev.Kind == event.WorkingMemory {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d working_memory events, want 3", n)
	}
}

func TestHistorySearchRoute(t *testing.T) {
	e, _ := memEnv(t)
	sess, _, _ := e.st.Session(t.Context(), "a", "k")
	if err := e.st.Commit(t.Context(), &store.Batch{Session: sess.ID, Events: []event.Event{
		event.New(sess.ID, 1, event.Input, event.InputData{Text: "where is the lighthouse key"})}}); err != nil {
		t.Fatal(err)
	}
	code, _, body := e.do("GET", "/v1/history/search?q=lighthouse&agent=a", "")
	var page gateway.HistoryPage
	json.Unmarshal(body, &page)
	if code != 200 || len(page.Hits) != 1 || page.Hits[0].Session != "a/k" || !strings.Contains(page.Hits[0].Snippet, "«lighthouse»") {
		t.Fatalf("%d %s", code, body)
	}
	for _, bad := range []string{"/v1/history/search", "/v1/history/search?q=%22", "/v1/history/search?q=x&since=yesterday",
		"/v1/history/search?q=x&limit=-1", "/v1/history/search?q=x&cursor=garbage"} {
		if code, _, body := e.do("GET", bad, ""); code != 400 {
			t.Errorf("%s: %d %s", bad, code, body)
		}
	}
}

func TestMemoryRoutes(t *testing.T) {
	e, mem := memEnv(t)
	if _, err := mem.Remember(t.Context(), "a", memory.Remember{Entities: []memory.EntityInput{{Name: "Ada", Type: "person",
		Observations: []string{"likes green tea"}}}}, memory.Provenance{Session: "a/k", Turn: 1}); err != nil {
		t.Fatal(err)
	}
	code, _, body := e.do("GET", "/v1/memory?agent=a&q=tea", "")
	if code != 200 || !strings.Contains(string(body), "likes green tea") || !strings.Contains(string(body), `"session":"a/k"`) {
		t.Fatalf("recall: %d %s", code, body)
	}
	if code, _, body := e.do("GET", "/v1/memory?agent=b&q=tea", ""); code != 200 || strings.Contains(string(body), "tea") {
		t.Errorf("another agent's recall: %d %s", code, body)
	}
	if code, _, body := e.do("GET", "/v1/memory/entities/ada?agent=a", ""); code != 200 || !strings.Contains(string(body), "likes green tea") {
		t.Errorf("entity: %d %s", code, body)
	}
	if code, _, _ := e.do("GET", "/v1/memory/entities/nobody?agent=a", ""); code != 404 {
		t.Errorf("unknown entity: %d", code)
	}
	if code, _, _ := e.do("GET", "/v1/memory?q=tea", ""); code != 400 {
		t.Errorf("no agent: %d", code)
	}
	if code, _, body := e.do("POST", "/v1/memory/forget", `{"agent":"a","entities":["Ada"]}`); code != 200 || !strings.Contains(string(body), `"forgotten"`) {
		t.Errorf("forget: %d %s", code, body)
	}
	if code, _, body := e.do("GET", "/v1/memory?agent=a", ""); code != 200 || strings.Contains(string(body), "tea") {
		t.Errorf("after forget: %d %s", code, body)
	}
	if code, _, _ := e.do("POST", "/v1/memory/forget", `{"agent":"a","entitys":["x"]}`); code != 400 {
		t.Errorf("unknown field: %d", code)
	}
}
