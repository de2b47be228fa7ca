package engine

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/approval"
	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/tool"
)

// A tool learns the turn that calls it, the hops of the input the turn
// serves and the memory scope of its agent: an agent tool sends its
// message one hop further, a memory tool stays in the scope.
func TestCallCarriesTurnHopsScope(t *testing.T) {
	p := &script{resps: []func(*model.Request) (*model.Response, error){
		calls(model.ToolCall{ID: "c1", Name: "probe", Args: json.RawMessage(`{}`)}), text("done")}}
	h := newHarness(t, models{"m": p})
	var got []tool.Call
	err := h.tools.Register(tool.Func(tool.Spec{Name: "probe", InputSchema: json.RawMessage(`{"type":"object"}`), ReadOnly: true},
		func(ctx context.Context, c *tool.Call) (tool.Result, error) {
			got = append(got, tool.Call{Agent: c.Agent, Session: c.Session, Turn: c.Turn, Hops: c.Hops, Scope: c.Scope})
			return tool.Result{Output: "ok"}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		scope string
		want  string
	}{
		{"own scope", "", "a"},
		{"swarm instance", "ck1", "ck1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, p.calls = nil, 0
			tr := turn(&agent.Definition{ID: "a", Scope: tc.scope})
			tr.Item.Hops = 3
			end, err := h.run(t.Context(), tr)
			if err != nil || end.Status != event.StatusDone {
				t.Fatalf("end %+v, err %v", end, err)
			}
			want := []tool.Call{{Agent: "a", Session: "a/k", Turn: 7, Hops: 3, Scope: tc.want}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

// A swarm instance recalls from its own scope, not its template's.
func TestRecallInScope(t *testing.T) {
	p := &script{resps: []func(*model.Request) (*model.Response, error){text("ok")}}
	h := newHarness(t, models{"m": p})
	h.eng.o.Recall = recaller{}
	def := &agent.Definition{ID: "ck1", Template: "support", Scope: "ck1", Memory: agent.Memory{Recall: 3}}
	if _, err := h.run(t.Context(), turn(def)); err != nil {
		t.Fatal(err)
	}
	def = &agent.Definition{ID: "ck2", Template: "assistant", Scope: "assistant", Memory: agent.Memory{Recall: 3}}
	if _, err := h.run(t.Context(), turn(def)); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"ck1 likes green tea", "assistant likes green tea"} {
		if sys := p.reqs[i].System; !strings.Contains(sys, want) {
			t.Errorf("turn %d's system prompt lacks %q:\n%s", i, want, sys)
		}
	}
}

// keyOwners records the agents whose keys a Signer was asked to use.
type keyOwners struct {
	fakeSigner
	mu  sync.Mutex
	ids map[string]bool
}

func (k *keyOwners) used(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ids[id] = true
}

func (k *keyOwners) SignMessage(agentID string, m approval.Message) (string, string, error) {
	k.used(agentID)
	return k.fakeSigner.SignMessage(agentID, m)
}

func (k *keyOwners) ApproveCall(agentID string, m approval.Message, at time.Time, audience, tool string, args json.RawMessage) (json.RawMessage, error) {
	k.used(agentID)
	return k.fakeSigner.ApproveCall(agentID, m, at, audience, tool, args)
}

func (k *keyOwners) SignPayload(agentID, payload string) (string, string, error) {
	k.used(agentID)
	return k.fakeSigner.SignPayload(agentID, payload)
}

// An instance signs its approvals and hook payloads with its template's
// key: a thousand instances make no thousand keys.
func TestInstanceSignsWithTemplateKey(t *testing.T) {
	p := &script{resps: []func(*model.Request) (*model.Response, error){text("buy 1 tea")}}
	h := newPhaseHarness(t, p)
	signer := &keyOwners{ids: map[string]bool{}}
	h.eng.o.Signer = signer
	tr := turn(&agent.Definition{ID: "ck1", Template: "seller", KeyOwner: "seller", SystemPrompt: "You sell tea."})
	tr.Item.Options = json.RawMessage(`{"channelId":"room1","toolArgs":{"demo-quote":{"limit":5}}}`)
	end, err := h.run(t.Context(), tr)
	if err != nil || end.Status != event.StatusDone {
		t.Fatalf("end %+v err %v", end, err)
	}
	if diff := cmp.Diff(map[string]bool{"seller": true}, signer.ids); diff != "" {
		t.Errorf("keys used (-want +got):\n%s", diff)
	}
	if a := h.args["demo__notes"]; a["daemonPubkey"] != "PUB-seller" {
		t.Errorf("the approval shown to a lifecycle tool is signed by %v, want the template's key", a["daemonPubkey"])
	}
	if !strings.Contains(h.meta["demo__quote"], `"daemonPubkey":"PUB-seller"`) {
		t.Errorf("the approval a tool server received: %q", h.meta["demo__quote"])
	}
	if o := h.eng.Object(tr.Agent, tr.Item, nil, ""); o.Approval == nil || o.Approval.DaemonPubkey != "PUB-seller" {
		t.Errorf("the lifecycle object's approval: %+v", o.Approval)
	}
}
