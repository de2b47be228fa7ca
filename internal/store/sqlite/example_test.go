package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"agentd/internal/event"
	"agentd/internal/store"
	"agentd/internal/store/sqlite"
)

func Example() {
	dir, err := os.MkdirTemp("", "agentd-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(dir, "agentd.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	sess, created, err := s.Session(ctx, "assistant", "chat:alice")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sess.Address(), "created:", created)

	// A turn: the input, the reply and the turn's end, committed together
	// with the session's new state.
	b := &store.Batch{
		Session: sess.ID,
		State:   store.StateIdle,
		Events: []event.Event{
			event.New(sess.ID, 1, event.Input, event.InputData{Text: "Hello!"}),
			event.New(sess.ID, 1, event.Text, event.TextData{Text: "Hi Alice."}),
			event.New(sess.ID, 1, event.TurnEnd, event.TurnEndData{Status: event.StatusDone, Reply: "Hi Alice."}),
		},
	}
	if err := s.Commit(ctx, b); err != nil {
		log.Fatal(err)
	}
	fmt.Println("assigned seqs:", b.Events[0].Seq, b.Events[1].Seq, b.Events[2].Seq)

	evs, err := s.Events(ctx, sess.ID, 1, 0) // the events after seq 1
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range evs {
		fmt.Println(e.Seq, e.Kind, string(e.Data))
	}
	// Output:
	// assistant/chat:alice created: true
	// assigned seqs: 1 2 3
	// 2 text {"text":"Hi Alice."}
	// 3 turn_end {"status":"done","reply":"Hi Alice.","steps":0,"input_tokens":0,"output_tokens":0,"cost_usd":0,"duration_ms":0}
}

func ExampleStore_PutExtension() {
	dir, err := os.MkdirTemp("", "agentd-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(dir, "agentd.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	// A person makes an action; it must not exist yet (NoVersion).
	e := store.Extension{Type: "action", Name: "weather", Spec: []byte(`{ "url": "https://a.example" }`),
		Enabled: true, Provenance: store.ProvenanceUser, UpdatedBy: "user:cli"}
	e, err = s.PutExtension(ctx, e, store.ExtPut, store.NoVersion)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(e.Version, string(e.Spec))

	// An agent disables it, expecting the version it read.
	e.Enabled, e.Provenance, e.UpdatedBy = false, store.ProvenanceAgent+"researcher", ""
	if _, err := s.PutExtension(ctx, e, store.ExtDisable, e.Version); err != nil {
		log.Fatal(err)
	}
	// A write that expects the version before is refused.
	_, err = s.PutExtension(ctx, e, store.ExtEnable, 1)
	fmt.Println(errors.Is(err, store.ErrConflict))

	if err := s.DeleteExtension(ctx, "action", "weather", "user:cli", store.AnyVersion); err != nil {
		log.Fatal(err)
	}
	history, err := s.ExtensionHistory(ctx, "action", "weather")
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range history {
		fmt.Println(c.Version, c.Op, c.Enabled, c.By)
	}
	// Output:
	// 1 {"url":"https://a.example"}
	// true
	// 1 put true user:cli
	// 2 disable false agent:researcher
	// 3 delete false user:cli
}

// A fire of a job is taken once: the second StartRun of the same run id
// (another node, or this one after a restart) is told the run taken.
func ExampleStore_StartRun() {
	dir, err := os.MkdirTemp("", "agentd-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(dir, "agentd.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	at := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	fire := store.JobRun{Job: "briefing", Run: store.RunID(at, ""), ScheduledAt: at, Trigger: store.TriggerCron,
		Session: "assistant/job:briefing:" + store.RunID(at, ""), Status: store.RunRunning, Node: "n1"}
	_, created, err := s.StartRun(ctx, fire)
	fmt.Println("taken:", created, err)
	fire.Node = "n2"
	run, created, err := s.StartRun(ctx, fire)
	fmt.Println("taken again:", created, "by", run.Node, err)

	run, err = s.FinishRun(ctx, store.JobRun{Job: "briefing", Run: run.Run, Status: store.RunDone, Steps: 2, Output: "Nothing urgent today."})
	fmt.Println(run.Run, run.Status, run.Output, err)
	last, err := s.LastRun(ctx, "briefing", store.TriggerCron)
	fmt.Println("catch up from:", last.ScheduledAt, err)
	// Output:
	// taken: true <nil>
	// taken again: false by n1 <nil>
	// 20261201T080000.000Z done Nothing urgent today. <nil>
	// catch up from: 2026-12-01 08:00:00 +0000 UTC <nil>
}
