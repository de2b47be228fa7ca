package agentsys

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/store"
)

type tags map[string][]string

func (t tags) Tagged(tag string) []string { return t[tag] }

func TestSendReachesParentsChildrenAndTargets(t *testing.T) {
	h := newHarness(t, nil)
	h.holdText("slow")
	keeper := typedAgent("keeper", agent.TypeSystem, "memory-keeper")
	h.setDef(keeper)
	h.sys.o.Tags = tags{"memory-keeper": {"keeper"}, "many": {"a", "b"}}
	child := h.startChild(StartRequest{Prompt: "slow child", Template: "worker"})

	// Parent to child, child to parent (silent), keyed on the call.
	rc, addr, err := h.sys.Send(context.Background(), SendRequest{Caller: "assistant", CallerSession: "assistant/main", CallID: "m1",
		Target: child.ID, Text: "more work", Hops: 1})
	if err != nil || addr != child.ID+"/main" {
		t.Fatalf("to the child: %s %v", addr, err)
	}
	again, _, err := h.sys.Send(context.Background(), SendRequest{Caller: "assistant", CallerSession: "assistant/main", CallID: "m1",
		Target: child.ID, Text: "more work", Hops: 1})
	if err != nil || !again.Duplicate || again.Turn != rc.Turn {
		t.Errorf("a re-run send: %+v %v", again, err)
	}
	if _, _, err := h.sys.Send(context.Background(), SendRequest{Caller: child.ID, CallerSession: child.ID + "/main", CallID: "m2",
		Target: "assistant", Text: "fyi", Silent: true}); err != nil {
		t.Fatalf("to the parent: %v", err)
	}
	h.eventually("the silent message in the parent's log", func() bool {
		for _, d := range h.reports("assistant/main", child.ID) {
			if d.Silent && d.Text == "fyi" {
				return true
			}
		}
		return false
	})
	// Out of reach: an agent that is neither parent nor child, unless
	// agents.targets allows it.
	_, _, err = h.sys.Send(context.Background(), SendRequest{Caller: "helper", CallerSession: "helper/main", CallID: "m3",
		Target: child.ID, Text: "hi"})
	if !errors.Is(err, ErrReach) {
		t.Errorf("helper to the child: %v", err)
	}
	helper := *h.defs["helper"]
	helper.Agents.Targets = []string{"keeper"}
	h.setDef(&helper)
	if _, addr, err := h.sys.Send(context.Background(), SendRequest{Caller: "helper", CallerSession: "helper/main", CallID: "m4",
		Target: "#memory-keeper", Text: "remember"}); err != nil || addr != "keeper/main" {
		t.Errorf("helper to #memory-keeper: %s %v", addr, err)
	}
	for _, c := range []struct {
		target string
		want   error
	}{
		{"#nobody", ErrNotFound},
		{"#many", ErrNotFound},
		{"ghost", ErrNotFound},
		{"", ErrNotFound}, // no user agent yet
	} {
		if _, _, err := h.sys.Send(context.Background(), SendRequest{Caller: "helper", CallerSession: "helper/main", Target: c.target,
			Text: "x"}); !errors.Is(err, c.want) {
			t.Errorf("target %q: %v, want %v", c.target, err, c.want)
		}
	}
}

func TestSendToMostRecentUserAgent(t *testing.T) {
	h := newHarness(t, nil)
	u, _, err := h.sys.Contact(context.Background(), Contact{Template: "helper", Connector: "tg", Channel: "1", User: "ann", Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	h.eventually("ann's turn", func() bool { return h.instance(u.ID).State == store.AgentIdle })
	// A background agent helper started may message it: user agents of
	// its own template are in reach.
	bg := h.startChild(StartRequest{Caller: "helper", Prompt: "x", Template: "helper", Detached: true})
	h.eventually("bg ended", func() bool { return store.AgentEnded(h.instance(bg.ID).State) })
	h.reported(bg.ID)
	child := h.startChild(StartRequest{Caller: u.ID, CallerSession: u.ID + "/main", Prompt: "y", Template: "helper", CallID: "c"})
	_ = child
	_, addr, err := h.sys.Send(context.Background(), SendRequest{Caller: u.ID, CallerSession: u.ID + "/main", Text: "note", CallID: "n"})
	if err != nil || addr != u.ID+"/main" {
		t.Errorf("most recent user agent: %s %v", addr, err)
	}
}

func TestAskAnswersInTheCalleesSession(t *testing.T) {
	h := newHarness(t, nil)
	h.holdText("slow")
	child := h.startChild(StartRequest{Prompt: "x", Template: "worker"})
	h.reported(child.ID)
	// An ended agent takes no question.
	if _, err := h.sys.Ask(context.Background(), AskRequest{Caller: "assistant", CallerSession: "assistant/main", Target: child.ID,
		Question: "?"}); !errors.Is(err, ErrEnded) {
		t.Errorf("ask an ended agent: %v", err)
	}
	assistant := *h.defs["assistant"]
	assistant.Agents.Targets = []string{"helper"}
	h.setDef(&assistant)
	res, err := h.sys.Ask(context.Background(), AskRequest{Caller: "assistant", CallerSession: "assistant/main", CallID: "q1",
		Target: "helper", Question: "what time is it?"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "re: what time is it?" || res.Status != event.StatusDone || res.Session != "helper/ask:assistant" {
		t.Errorf("answer %+v", res)
	}
	// A question not answered in time is cancelled, and says where it stays.
	_, err = h.sys.Ask(context.Background(), AskRequest{Caller: "assistant", CallerSession: "assistant/main", CallID: "q2",
		Target: "helper", Question: "slow question", Timeout: 20 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "helper/ask:assistant") {
		t.Errorf("a late answer: %v", err)
	}
}
