package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"agentd/internal/event"
	"agentd/internal/store"
)

// iid is the i-th instance id of a test: cuid2-shaped.
func iid(i int) string { return fmt.Sprintf("k%023d", i) }

// task is a sub-agent instance i of parent, reporting to parent's main
// session.
func task(i int, parent string) store.Instance {
	return store.Instance{ID: iid(i), Type: store.InstanceSubagent, Descriptor: fmt.Sprintf("task:%s/main:call-%d", parent, i),
		Template: "researcher", Name: fmt.Sprintf("r%d", i), Parent: parent, Payer: "assistant", Account: "7:42",
		TurnLimit: 0.5, Report: store.ReportLoud, ReportTo: parent + "/main", OriginTurn: 42, OriginCall: fmt.Sprintf("call-%d", i),
		Task: "find out", Hops: 1, State: store.AgentStarting}
}

func mustCreate(t testing.TB, s Store, a store.Instance, l store.InstanceLimits) store.Instance {
	t.Helper()
	got, created, err := s.CreateInstance(t.Context(), a, l)
	if err != nil || !created {
		t.Fatalf("CreateInstance(%s) = created %v, %v; want a new instance", a.ID, created, err)
	}
	return got
}

// An instance is created once per descriptor: a second CreateInstance of
// it returns the first, whatever it is given, before and after the store
// is opened again; each read returns it as it was written; its lineage
// comes from its parent.
func testInstanceCreate(t *testing.T, x *suite) {
	name := x.name()
	s := x.open(t, name)
	ctx := t.Context()
	before := time.Now()
	top := mustCreate(t, s, store.Instance{ID: iid(1), Type: store.InstanceUser, Descriptor: "user:cli:term:ann",
		Template: "assistant", State: store.AgentIdle}, store.InstanceLimits{})
	if top.Agent != top.ID || top.Root != top.ID || top.Depth != 0 {
		t.Errorf("a top instance: agent %q, root %q, depth %d; want its id, its id, 0", top.Agent, top.Root, top.Depth)
	}
	if top.CreatedAt.Before(before.Add(-time.Second)) || top.CreatedAt.Location() != time.UTC || !top.UpdatedAt.Equal(top.CreatedAt) {
		t.Errorf("CreatedAt %v, UpdatedAt %v; want about now in UTC, the same", top.CreatedAt, top.UpdatedAt)
	}
	child := task(2, top.Agent)
	got := mustCreate(t, s, child, store.InstanceLimits{})
	want := child
	want.Agent, want.Root, want.Depth = child.ID, top.ID, 1
	if d := cmp.Diff(want, got, cmpopts.IgnoreFields(store.Instance{}, "CreatedAt", "UpdatedAt")); d != "" {
		t.Errorf("the instance created (-want +got):\n%s", d)
	}
	grand := mustCreate(t, s, task(3, child.ID), store.InstanceLimits{})
	ofDef := mustCreate(t, s, task(4, "assistant"), store.InstanceLimits{})
	perm := mustCreate(t, s, store.Instance{ID: iid(5), Type: store.InstancePermanent, Descriptor: "permanent:librarian",
		Agent: "librarian", Parent: grand.ID, State: store.AgentIdle}, store.InstanceLimits{})
	underPerm := mustCreate(t, s, task(6, "librarian"), store.InstanceLimits{})
	for _, c := range []struct {
		a     store.Instance
		root  string
		depth int
	}{{grand, top.ID, 2}, {ofDef, "assistant", 1}, {perm, top.ID, 3}, {underPerm, top.ID, 4}} {
		if c.a.Root != c.root || c.a.Depth != c.depth {
			t.Errorf("%s (parent %s): root %q, depth %d; want %q, %d", c.a.ID, c.a.Parent, c.a.Root, c.a.Depth, c.root, c.depth)
		}
	}
	again := task(7, top.Agent)
	again.Descriptor = child.Descriptor
	other, created, err := s.CreateInstance(ctx, again, store.InstanceLimits{MaxLive: 1})
	if err != nil || created {
		t.Fatalf("CreateInstance of a descriptor again = created %v, %v; want the first, unchecked", created, err)
	}
	if d := cmp.Diff(got, other); d != "" {
		t.Errorf("CreateInstance again returned (-created +returned):\n%s", d)
	}
	s.Close()
	s = x.open(t, name)
	reads := map[string]func() (store.Instance, error){
		"Instance":             func() (store.Instance, error) { return s.Instance(ctx, child.ID) },
		"InstanceByDescriptor": func() (store.Instance, error) { return s.InstanceByDescriptor(ctx, child.Descriptor) },
		"InstanceByAgent":      func() (store.Instance, error) { return s.InstanceByAgent(ctx, child.ID) },
	}
	for what, read := range reads {
		r, err := read()
		if err != nil {
			t.Fatalf("%s after reopening: %v", what, err)
		}
		if d := cmp.Diff(got, r); d != "" {
			t.Errorf("%s after reopening (-created +read):\n%s", what, d)
		}
	}
	if r, err := s.InstanceByAgent(ctx, "librarian"); err != nil || r.ID != perm.ID {
		t.Errorf("InstanceByAgent(librarian) = %s, %v; want %s", r.ID, err, perm.ID)
	}
	for what, err := range map[string]error{
		"Instance":             errOf(s.Instance(ctx, iid(99))),
		"InstanceByDescriptor": errOf(s.InstanceByDescriptor(ctx, "task:none")),
		"InstanceByAgent":      errOf(s.InstanceByAgent(ctx, "nobody")),
	} {
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s of nothing: %v, want ErrNotFound", what, err)
		}
	}
	dup := task(8, top.Agent)
	dup.ID = child.ID
	if _, _, err := s.CreateInstance(ctx, dup, store.InstanceLimits{}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateInstance of a taken id under another descriptor: %v, want ErrConflict", err)
	}
	p2 := store.Instance{ID: iid(9), Type: store.InstancePermanent, Descriptor: "permanent:librarian2", Agent: "librarian", State: store.AgentIdle}
	if _, _, err := s.CreateInstance(ctx, p2, store.InstanceLimits{}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateInstance of a second instance of agent librarian: %v, want ErrConflict", err)
	}
}

// An instance's budgets are what CreateInstance was given, in every read
// and after the store is opened again; an instance given none has "".
func testInstanceBudgets(t *testing.T, x *suite) {
	name := x.name()
	s := x.open(t, name)
	ctx := t.Context()
	kept := store.Instance{ID: iid(1), Type: store.InstanceBackground, Descriptor: "api:ann-1", Template: "researcher",
		Payer: "researcher", Report: store.ReportLoud, ReportTo: "ann/main", Task: "find out", State: store.AgentStarting, Budgets: `{"max_steps":3,"max_usd_per_turn":0.25}`}
	none := kept
	none.ID, none.Descriptor, none.Budgets = iid(2), "api:ann-2", ""
	mustCreate(t, s, kept, store.InstanceLimits{})
	mustCreate(t, s, none, store.InstanceLimits{})
	s.Close()
	s = x.open(t, name)
	budgets := func(rows ...store.Instance) []string {
		var b []string
		for _, r := range rows {
			b = append(b, r.ID+" "+r.Budgets)
		}
		return b
	}
	want := budgets(kept, none)
	listed, _, err := s.Instances(ctx, store.AgentFilter{})
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(listed) // newest first
	open, err := s.OpenInstances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	one := func(read func(store.Instance) (store.Instance, error)) []store.Instance {
		var rows []store.Instance
		for _, a := range []store.Instance{kept, none} {
			r, err := read(a)
			if err != nil {
				t.Fatal(err)
			}
			rows = append(rows, r)
		}
		return rows
	}
	for what, rows := range map[string][]store.Instance{
		"Instances":     listed,
		"OpenInstances": open,
		"Instance":      one(func(a store.Instance) (store.Instance, error) { return s.Instance(ctx, a.ID) }),
		"InstanceByDescriptor": one(func(a store.Instance) (store.Instance, error) {
			return s.InstanceByDescriptor(ctx, a.Descriptor)
		}),
		"InstanceByAgent": one(func(a store.Instance) (store.Instance, error) { return s.InstanceByAgent(ctx, a.ID) }),
	} {
		if d := cmp.Diff(want, budgets(rows...)); d != "" {
			t.Errorf("%s: the budgets (-created +read):\n%s", what, d)
		}
	}
	for _, a := range []store.Instance{kept, none} {
		if _, err := s.SetInstanceState(ctx, a.ID, store.AgentFailed, "lost", 0); err != nil {
			t.Fatal(err)
		}
	}
	unreported, err := s.UnreportedInstances(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, budgets(unreported...)); d != "" {
		t.Errorf("UnreportedInstances: the budgets (-created +read):\n%s", d)
	}
}

func errOf[T any](_ T, err error) error { return err }

// What CreateInstance refuses before writing anything.
func testInstanceInvalid(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	for what, change := range map[string]func(*store.Instance){
		"an id not cuid2-shaped":       func(a *store.Instance) { a.ID = "Not-A-Cuid" },
		"an unknown type":              func(a *store.Instance) { a.Type = store.InstanceSubagent + "x" },
		"a cron type":                  func(a *store.Instance) { a.Type = "cron" },
		"no descriptor":                func(a *store.Instance) { a.Descriptor = "" },
		"an agent not its id":          func(a *store.Instance) { a.Agent = "someone" },
		"a NUL in the task":            func(a *store.Instance) { a.Task = "a\x00b" },
		"a descriptor not UTF-8":       func(a *store.Instance) { a.Descriptor = "task:\xff" },
		"a report to no session":       func(a *store.Instance) { a.ReportTo = "" },
		"an unknown report":            func(a *store.Instance) { a.Report = "loudly" },
		"an end as its state":          func(a *store.Instance) { a.State = store.AgentDone },
		"negative hops":                func(a *store.Instance) { a.Hops = -1 },
		"a parent with a slash":        func(a *store.Instance) { a.Parent = "a/b" },
		"a descriptor over the limits": func(a *store.Instance) { a.Descriptor = strings.Repeat("d", store.MaxInstanceText+1) },
		"budgets over the limits":      func(a *store.Instance) { a.Budgets = strings.Repeat("b", store.MaxInstanceText+1) },
	} {
		a := task(1, "assistant")
		change(&a)
		if _, _, err := s.CreateInstance(ctx, a, store.InstanceLimits{}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CreateInstance with %s: %v, want ErrInvalid", what, err)
		}
	}
	if rows, _, err := s.Instances(ctx, store.AgentFilter{}); err != nil || len(rows) != 0 {
		t.Errorf("Instances after refusals = %d rows, %v; want none", len(rows), err)
	}
	for what, f := range map[string]store.AgentFilter{
		"an unknown type":  {Type: "cron"},
		"an unknown state": {State: "asleep"},
		"a negative limit": {Limit: -1},
	} {
		if _, _, err := s.Instances(ctx, f); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Instances with %s: %v, want ErrInvalid", what, err)
		}
	}
	if _, _, err := s.Instances(ctx, store.AgentFilter{Before: "i1.nonsense!"}); !errors.Is(err, store.ErrBadCursor) {
		t.Errorf("Instances with a bad cursor: %v, want ErrBadCursor", err)
	}
	if _, err := s.SetInstanceState(ctx, iid(1), "asleep", "", 0); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("SetInstanceState to an unknown state: %v, want ErrInvalid", err)
	}
	if _, _, err := s.Enqueue(ctx, store.InboxItem{Session: mustSession(t, s, "a", "k").ID, Kind: "input", Text: "x", Hops: -1}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Enqueue with negative hops: %v, want ErrInvalid", err)
	}
}

// Each limit refuses a task past it with ErrLimit naming it, and writes
// nothing; a sub-agent counts against its parent's children in its
// session only, an ended one against nothing; a background agent is no
// child; a user instance is never held to them.
func testInstanceLimits(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	l := store.InstanceLimits{MaxDepth: 2, MaxChildren: 2, MaxLive: 4}
	refused := func(a store.Instance, limit string) {
		t.Helper()
		_, _, err := s.CreateInstance(ctx, a, l)
		if !errors.Is(err, store.ErrLimit) || !strings.Contains(err.Error(), limit) {
			t.Errorf("CreateInstance(%s) = %v; want ErrLimit %s", a.ID, err, limit)
		}
		if _, err := s.Instance(ctx, a.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a refused instance was written: %v", err)
		}
	}
	a := mustCreate(t, s, task(1, "assistant"), l)
	mustCreate(t, s, task(2, "assistant"), l)
	refused(task(3, "assistant"), "max_children 2")
	elsewhere := task(3, "assistant")
	elsewhere.ReportTo = "assistant/chat:bob"
	mustCreate(t, s, elsewhere, l)
	deep := mustCreate(t, s, task(4, a.ID), l)
	refused(task(5, deep.ID), "max_depth 2")
	refused(store.Instance{ID: iid(6), Type: store.InstanceBackground, Descriptor: "task:api:6", Template: "researcher",
		State: store.AgentStarting}, "max_live 4")
	mustCreate(t, s, store.Instance{ID: iid(7), Type: store.InstanceUser, Descriptor: "user:cli:t:ann", Template: "assistant",
		State: store.AgentIdle}, l)
	if ok, err := s.SetInstanceState(ctx, a.ID, store.AgentDone, "found", 0); err != nil || !ok {
		t.Fatalf("SetInstanceState(done) = %v, %v", ok, err)
	}
	mustCreate(t, s, task(8, "assistant"), l)
	refused(task(9, "other"), "max_live 4")
	l.MaxLive = 0
	bg := store.Instance{ID: iid(10), Type: store.InstanceBackground, Descriptor: "task:assistant/main:call-10", Template: "researcher",
		Parent: "assistant", Report: store.ReportSilent, ReportTo: "assistant/main", State: store.AgentStarting}
	mustCreate(t, s, bg, l)
}

// Concurrent creators cannot pass a limit together: of 8 sub-agents of
// one parent under a live-children limit of 3 exactly 3 are created, of
// 16 tasks under a live limit of 5 exactly 5.
func testInstanceConcurrentLimits(t *testing.T, x *suite) {
	s := x.newStore(t)
	race := func(n int, l store.InstanceLimits, mk func(i int) store.Instance) (created int) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				_, ok, err := s.CreateInstance(t.Context(), mk(i), l)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case ok:
					created++
				case !errors.Is(err, store.ErrLimit):
					t.Errorf("CreateInstance %d = %v, %v; want a new instance or ErrLimit", i, ok, err)
				}
			})
		}
		close(start)
		wg.Wait()
		return created
	}
	if n := race(8, store.InstanceLimits{MaxChildren: 3}, func(i int) store.Instance { return task(100+i, "assistant") }); n != 3 {
		t.Errorf("8 concurrent sub-agents under max_children 3: %d created, want 3", n)
	}
	if n := race(16, store.InstanceLimits{MaxLive: 5}, func(i int) store.Instance { return task(200+i, fmt.Sprintf("p%d", i)) }); n != 2 {
		t.Errorf("16 concurrent tasks under max_live 5 (3 live before): %d created, want 2", n)
	}
}

// max_contacts refuses a new person's instance (user or swarm) when that
// many live, with ErrLimit naming it, and writes nothing; a person who
// has one finds it; a stopped one is not counted; tasks and contacts are
// not counted against each other's limit.
func testContactLimit(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	l := store.InstanceLimits{MaxLive: 1, MaxContacts: 2}
	contact := func(n int, typ, user string) store.Instance {
		return store.Instance{ID: iid(n), Type: typ, Descriptor: typ + ":tg:public:" + user, Template: "desk", State: store.AgentIdle}
	}
	ann := mustCreate(t, s, contact(1, store.InstanceUser, "ann"), l)
	mustCreate(t, s, contact(2, store.InstanceSwarm, "bob"), l)
	mustCreate(t, s, task(3, "assistant"), l) // the one live task
	carl := contact(4, store.InstanceSwarm, "carl")
	if _, _, err := s.CreateInstance(ctx, carl, l); !errors.Is(err, store.ErrLimit) || !strings.Contains(err.Error(), "max_contacts 2") {
		t.Errorf("a third contact under max_contacts 2: %v; want ErrLimit max_contacts 2", err)
	}
	if _, err := s.Instance(ctx, carl.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused contact was written: %v", err)
	}
	if got, created, err := s.CreateInstance(ctx, contact(5, store.InstanceUser, "ann"), l); err != nil || created || got.ID != ann.ID {
		t.Errorf("ann again: %s, created %v, %v; want her instance %s", got.ID, created, err, ann.ID)
	}
	if ok, err := s.SetInstanceState(ctx, ann.ID, store.AgentStopped, "closed", 0); err != nil || !ok {
		t.Fatalf("SetInstanceState(stopped) = %v, %v", ok, err)
	}
	mustCreate(t, s, carl, l)
	l.MaxContacts = 0
	mustCreate(t, s, contact(6, store.InstanceUser, "dora"), l)
}

// An instance's state moves forward only; an end records its result and
// time, once; a turn is set once.
func testInstanceStates(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	for i, from := range store.AgentStates() {
		for j, to := range store.AgentStates() {
			n := 1000 + i*10 + j
			a := mustCreate(t, s, task(n, "assistant"), store.InstanceLimits{})
			if from != store.AgentStarting {
				// Bring it to from along an allowed path.
				if from != store.AgentRunning {
					if ok, err := s.SetInstanceState(ctx, a.ID, store.AgentRunning, "", 0); err != nil || !ok {
						t.Fatalf("SetInstanceState(%s, running) = %v, %v", a.ID, ok, err)
					}
				}
				if ok, err := s.SetInstanceState(ctx, a.ID, from, "why", 0); err != nil || !ok {
					t.Fatalf("SetInstanceState(%s, %s) = %v, %v", a.ID, from, ok, err)
				}
			}
			want := store.InstanceTransition(from, to)
			ok, err := s.SetInstanceState(ctx, a.ID, to, "answer", 0)
			if err != nil || ok != want {
				t.Errorf("%s → %s = %v, %v; want %v", from, to, ok, err, want)
			}
			got, err := s.Instance(ctx, a.ID)
			if err != nil {
				t.Fatal(err)
			}
			wantState := from
			if want {
				wantState = to
			}
			if got.State != wantState || got.EndedAt.IsZero() != !store.AgentEnded(wantState) {
				t.Errorf("%s → %s: state %s, ended at %v", from, to, got.State, got.EndedAt)
			}
			if want && store.AgentEnded(to) && got.Result != "answer" {
				t.Errorf("%s → %s: result %q, want answer", from, to, got.Result)
			}
		}
	}
	a := mustCreate(t, s, task(1, "assistant"), store.InstanceLimits{})
	if ok, err := s.SetInstanceState(ctx, a.ID, store.AgentRunning, "ignored", 17); err != nil || !ok {
		t.Fatalf("SetInstanceState(running, 17) = %v, %v", ok, err)
	}
	s.SetInstanceState(ctx, a.ID, store.AgentIdle, "", 18)
	got, _ := s.Instance(ctx, a.ID)
	if got.Turn != 17 || got.Result != "" || !got.UpdatedAt.After(a.UpdatedAt) {
		t.Errorf("after running at turn 17 then idle at 18: turn %d, result %q, updated %v (created %v); want 17, none, later",
			got.Turn, got.Result, got.UpdatedAt, a.UpdatedAt)
	}
	long := strings.Repeat("é", store.MaxInstanceResult)
	if ok, err := s.SetInstanceState(ctx, a.ID, store.AgentFailed, long, 0); err != nil || !ok {
		t.Fatal(ok, err)
	}
	got, _ = s.Instance(ctx, a.ID)
	if len(got.Result) > store.MaxInstanceResult || !strings.Contains(got.Result, "cut") {
		t.Errorf("a long result is kept as %d bytes, want it cut to %d", len(got.Result), store.MaxInstanceResult)
	}
	if _, err := s.SetInstanceState(ctx, iid(99), store.AgentDone, "", 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetInstanceState of no instance: %v, want ErrNotFound", err)
	}
}

// A report is recorded once, of an ended instance only; the ended
// instances whose report is pending are listed until it is.
func testInstanceReport(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	a := mustCreate(t, s, task(1, "assistant"), store.InstanceLimits{})
	b := mustCreate(t, s, task(2, "assistant"), store.InstanceLimits{})
	quiet := task(3, "assistant")
	quiet.Report, quiet.ReportTo = "", ""
	mustCreate(t, s, quiet, store.InstanceLimits{})
	if _, err := s.RecordReport(ctx, a.ID, ""); !errors.Is(err, store.ErrConflict) {
		t.Errorf("RecordReport of a live instance: %v, want ErrConflict", err)
	}
	if _, err := s.RecordReport(ctx, iid(99), ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RecordReport of no instance: %v, want ErrNotFound", err)
	}
	for _, id := range []string{b.ID, a.ID, quiet.ID} {
		if ok, err := s.SetInstanceState(ctx, id, store.AgentDone, "ok", 0); err != nil || !ok {
			t.Fatal(ok, err)
		}
	}
	ids := func() []string {
		t.Helper()
		rows, err := s.UnreportedInstances(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rows {
			out = append(out, r.ID)
		}
		return out
	}
	if got, want := ids(), []string{b.ID, a.ID}; !slices.Equal(got, want) {
		t.Errorf("UnreportedInstances = %v, want %v (oldest end first, none without a report)", got, want)
	}
	if first, err := s.RecordReport(ctx, b.ID, ""); err != nil || !first {
		t.Errorf("RecordReport = %v, %v; want the first", first, err)
	}
	if first, err := s.RecordReport(ctx, b.ID, "again"); err != nil || first {
		t.Errorf("RecordReport again = %v, %v; want not the first", first, err)
	}
	if first, err := s.RecordReport(ctx, a.ID, "report refused: the session is closed"); err != nil || !first {
		t.Errorf("RecordReport of a failure = %v, %v", first, err)
	}
	if got := ids(); len(got) != 0 {
		t.Errorf("UnreportedInstances after the reports = %v, want none", got)
	}
	got, _ := s.Instance(ctx, a.ID)
	if got.ReportedAt.IsZero() || got.ReportError != "report refused: the session is closed" {
		t.Errorf("a given-up report: reported at %v, error %q", got.ReportedAt, got.ReportError)
	}
	got, _ = s.Instance(ctx, b.ID)
	if got.ReportedAt.IsZero() || got.ReportError != "" {
		t.Errorf("a report recorded twice: reported at %v, error %q; want the first's", got.ReportedAt, got.ReportError)
	}
	testInstanceRefusal(t, s, a, b)
}

// A report recorded as delivered but refused after all (at its turn's
// start) gets its refusal, once; one recorded as given up keeps its
// reason; a live instance has no report to refuse.
func testInstanceRefusal(t *testing.T, s Store, givenUp, delivered store.Instance) {
	ctx := t.Context()
	live := mustCreate(t, s, task(4, "assistant"), store.InstanceLimits{})
	if _, err := s.RecordRefusal(ctx, live.ID, "report refused: stopped"); !errors.Is(err, store.ErrConflict) {
		t.Errorf("RecordRefusal of a live instance: %v, want ErrConflict", err)
	}
	if _, err := s.RecordRefusal(ctx, iid(99), "report refused: stopped"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RecordRefusal of no instance: %v, want ErrNotFound", err)
	}
	before, _ := s.Instance(ctx, delivered.ID)
	for i, want := range []bool{true, false} {
		if changed, err := s.RecordRefusal(ctx, delivered.ID, fmt.Sprint("report refused: stopped ", i)); err != nil || changed != want {
			t.Errorf("RecordRefusal %d of a delivered report = %v, %v; want %v", i, changed, err, want)
		}
	}
	got, _ := s.Instance(ctx, delivered.ID)
	if !got.ReportedAt.Equal(before.ReportedAt) || got.ReportError != "report refused: stopped 0" {
		t.Errorf("a delivered report refused: reported at %v (was %v), error %q", got.ReportedAt, before.ReportedAt, got.ReportError)
	}
	if changed, err := s.RecordRefusal(ctx, givenUp.ID, "report refused: stopped"); err != nil || changed {
		t.Errorf("RecordRefusal of a given-up report = %v, %v; want no change", changed, err)
	}
	if got, _ := s.Instance(ctx, givenUp.ID); got.ReportError != "report refused: the session is closed" {
		t.Errorf("a given-up report's reason became %q", got.ReportError)
	}
}

// Instances filters by type, parent, root, state and liveness, newest
// first, and pages through all of them with its cursor; OpenInstances
// lists the starting and running ones, oldest first.
func testInstancesList(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	var all []store.Instance
	for i := range 7 {
		parent := "assistant"
		if i >= 4 {
			parent = all[0].ID
		}
		all = append(all, mustCreate(t, s, task(i+1, parent), store.InstanceLimits{}))
	}
	all = append(all, mustCreate(t, s, store.Instance{ID: iid(20), Type: store.InstanceUser, Descriptor: "user:cli:t:ann",
		Template: "assistant", State: store.AgentIdle}, store.InstanceLimits{}))
	s.SetInstanceState(ctx, all[1].ID, store.AgentRunning, "", 0)
	s.SetInstanceState(ctx, all[2].ID, store.AgentStopped, "by a person", 0)
	s.SetInstanceState(ctx, all[5].ID, store.AgentRunning, "", 0)
	for i := range all {
		all[i], _ = s.Instance(ctx, all[i].ID)
	}
	newest := slices.Clone(all)
	slices.SortFunc(newest, func(a, b store.Instance) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	sel := func(keep func(store.Instance) bool) []store.Instance {
		var out []store.Instance
		for _, a := range newest {
			if keep(a) {
				out = append(out, a)
			}
		}
		return out
	}
	for what, c := range map[string]struct {
		f    store.AgentFilter
		want []store.Instance
	}{
		"all":        {store.AgentFilter{}, newest},
		"users":      {store.AgentFilter{Type: store.InstanceUser}, sel(func(a store.Instance) bool { return a.Type == store.InstanceUser })},
		"of a1":      {store.AgentFilter{Parent: all[0].ID}, sel(func(a store.Instance) bool { return a.Parent == all[0].ID })},
		"root":       {store.AgentFilter{Root: "assistant"}, sel(func(a store.Instance) bool { return a.Root == "assistant" })},
		"running":    {store.AgentFilter{State: store.AgentRunning}, sel(func(a store.Instance) bool { return a.State == store.AgentRunning })},
		"live tasks": {store.AgentFilter{Type: store.InstanceSubagent, Live: true}, sel(func(a store.Instance) bool { return a.Type == store.InstanceSubagent && a.State != store.AgentStopped })},
		"none":       {store.AgentFilter{Parent: "nobody"}, nil},
	} {
		got, next, err := s.Instances(ctx, c.f)
		if err != nil || next != "" {
			t.Fatalf("%s: Instances = next %q, %v", what, next, err)
		}
		if d := cmp.Diff(c.want, got, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("%s (-want +got):\n%s", what, d)
		}
	}
	var paged []store.Instance
	f := store.AgentFilter{Limit: 3}
	for range 10 {
		page, next, err := s.Instances(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, page...)
		if next == "" {
			break
		}
		f.Before = next
	}
	if d := cmp.Diff(newest, paged); d != "" {
		t.Errorf("pages of 3 (-all +paged):\n%s", d)
	}
	open, err := s.OpenInstances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var wantOpen []store.Instance
	for _, a := range all {
		if a.State == store.AgentStarting || a.State == store.AgentRunning {
			wantOpen = append(wantOpen, a)
		}
	}
	if d := cmp.Diff(wantOpen, open); d != "" {
		t.Errorf("OpenInstances (-want +got):\n%s", d)
	}
}

// Usage names its payer (its agent unless given) and account: a day's
// spending sums by payer, a turn's account by account, an instance's
// costs by agent; the most recent user instance is the one whose
// session was updated last.
func testInstanceUsage(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	day := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	parent := mustSession(t, s, "assistant", "main")
	child := task(1, "assistant")
	mustCreate(t, s, child, store.InstanceLimits{})
	csess := mustSession(t, s, child.ID, "main")
	mustCommit(t, s, &store.Batch{Session: parent.ID, Usage: []store.Usage{
		{Model: "m", InputTokens: 10, OutputTokens: 1, CostUSD: 0.25, Time: day.Add(time.Hour), Account: "1:2"}}})
	mustCommit(t, s, &store.Batch{Session: csess.ID, Usage: []store.Usage{
		{Model: "m", InputTokens: 20, OutputTokens: 2, CostUSD: 0.5, Time: day.Add(2 * time.Hour), Payer: "assistant", Account: "1:2"},
		{Model: "m", InputTokens: 40, OutputTokens: 4, CostUSD: 1, Time: day.Add(3 * time.Hour), Payer: "assistant", Account: "1:3"}}})
	u, err := s.UsageSince(ctx, "assistant", day)
	if err != nil {
		t.Fatal(err)
	}
	if u.InputTokens != 70 || u.CostUSD != 1.75 {
		t.Errorf("UsageSince(assistant) = %d tokens in, $%v; want 70, $1.75 (its own and what it pays for)", u.InputTokens, u.CostUSD)
	}
	if u, err := s.UsageSince(ctx, child.ID, day); err != nil || u.CostUSD != 0 {
		t.Errorf("UsageSince(the child) = $%v, %v; want 0: its parent pays", u.CostUSD, err)
	}
	if u, err := s.UsageSince(ctx, "", day); err != nil || u.CostUSD != 1.75 {
		t.Errorf("UsageSince(all) = $%v, %v; want $1.75", u.CostUSD, err)
	}
	if c, err := s.UsageOfAccount(ctx, "1:2"); err != nil || c != 0.75 {
		t.Errorf("UsageOfAccount(1:2) = %v, %v; want 0.75", c, err)
	}
	if c, err := s.UsageOfAccount(ctx, "9:9"); err != nil || c != 0 {
		t.Errorf("UsageOfAccount of no usage = %v, %v; want 0", c, err)
	}
	costs, err := s.InstanceCosts(ctx, []string{child.ID, "assistant", "nobody"})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]float64{child.ID: 1.5, "assistant": 0.25}, costs); d != "" {
		t.Errorf("InstanceCosts (-want +got):\n%s", d)
	}
	if _, err := s.MostRecent(ctx, store.InstanceUser); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("MostRecent with no user instance: %v, want ErrNotFound", err)
	}
	var users []store.Instance
	for i := range 3 {
		u := mustCreate(t, s, store.Instance{ID: iid(10 + i), Type: store.InstanceUser, Descriptor: fmt.Sprintf("user:cli:t:u%d", i),
			Template: "assistant", State: store.AgentIdle}, store.InstanceLimits{})
		users = append(users, u)
		mustSession(t, s, u.ID, "main")
	}
	sess := mustSession(t, s, users[1].ID, "main")
	mustCommit(t, s, &store.Batch{Session: sess.ID, Events: []event.Event{input(sess.ID, 0, "hello")}})
	if got, err := s.MostRecent(ctx, store.InstanceUser); err != nil || got.ID != users[1].ID {
		t.Errorf("MostRecent(user) = %s, %v; want %s, whose session was written last", got.ID, err, users[1].ID)
	}
	s.SetInstanceState(ctx, users[1].ID, store.AgentStopped, "", 0)
	if got, err := s.MostRecent(ctx, store.InstanceUser); err != nil || got.ID == users[1].ID {
		t.Errorf("MostRecent(user) = %s, %v; want a live one", got.ID, err)
	}
}

// An inbox item's hops are kept.
func testInboxHops(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	sess := mustSession(t, s, "assistant", "main")
	it := mustEnqueue(t, s, store.InboxItem{Session: sess.ID, Kind: "system_message", Text: "hop", Origin: iid(1), Hops: 3})
	if it.Hops != 3 {
		t.Errorf("Enqueue returned hops %d, want 3", it.Hops)
	}
	got, err := s.InboxItem(ctx, it.ID)
	if err != nil || got.Hops != 3 {
		t.Errorf("InboxItem = hops %d, %v; want 3", got.Hops, err)
	}
	pending, err := s.Pending(ctx, sess.ID)
	if err != nil || len(pending) != 1 || pending[0].Hops != 3 {
		t.Errorf("Pending = %+v, %v; want the item with hops 3", pending, err)
	}
}
