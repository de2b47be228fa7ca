package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"agentd/internal/event"
)

// A long scripted conversation in a small context window crosses the
// warning and the compaction thresholds again and again. Every command runs
// agentd in process, so each turn also rebuilds its context from the log
// (the restart path). The test checks that the log keeps every event, that
// the latest summary still holds every identifier of the turns it folds
// although the model's summaries never mention them, that the context
// sent to the model stays small, and that `agentd compact` works on demand.
func TestCompactionLongConversation(t *testing.T) {
	addr := fake(t, `
match ^The part of the conversation about to leave
call remember {"insight": "{{last_user}}"}

match ^User:
say The user filed several orders with the team.

match *
say Noted. ({{n_messages}} messages in context)
`)
	agentFile := openaiAgent(addr, "memory:\n  context_window: 2500\n  recent_turns: 2\n")
	dir := dataDir(t, map[string]string{"agents/a.yaml": agentFile})
	const turns = 24
	idsOf := func(i int) []string {
		return []string{fmt.Sprintf("#%d", 4000+i), fmt.Sprintf("/srv/orders/batch-%d.csv", i), fmt.Sprintf("https://shop.example.com/o/%d", 7000+i),
			fmt.Sprintf("Project-X%d", 40+i)}
	}
	nRE := regexp.MustCompile(`\((\d+) messages in context\)`)
	maxN := 0
	// The first third in process (each command a fresh start), the second
	// against a daemon that is then SIGKILLed, the last against a new one.
	var d *daemon
	for i := 1; i <= turns; i++ {
		switch i {
		case turns/3 + 1:
			d = serve(t, dir)
		case 2*turns/3 + 1:
			d.kill()
			d = serve(t, dir)
		}
		ids := idsOf(i)
		msg := fmt.Sprintf("Please file order %s for Grace Hopper; the data is in %s and the receipt at %s, for %s. %s", ids[0], ids[1], ids[2], ids[3],
			strings.Repeat("Some more words to make this turn take room in the context window. ", 6))
		r := run(t, dir, "send", "a/s", msg)
		if r.code != 0 {
			t.Fatalf("turn %d: exit %d\n%s%s", i, r.code, r.stdout, r.stderr)
		}
		m := nRE.FindStringSubmatch(r.stdout)
		if m == nil {
			t.Fatalf("turn %d: reply %q", i, r.stdout)
		}
		n, _ := strconv.Atoi(m[1])
		maxN = max(maxN, n)
	}
	// Two recent turns, a summary, the input: never the whole conversation.
	if maxN > 24 {
		t.Errorf("up to %d messages sent to the model; the context was not kept small", maxN)
	}

	r := run(t, dir, "log", "a/s", "--json")
	evs, _ := jsonEvents(t, r.stdout)
	var inputs, warnings int
	var last *event.SummaryData
	var lastSeq int64
	for _, e := range evs {
		switch e.Kind {
		case event.Input:
			inputs++
		case event.ContextWarning:
			warnings++
		case event.Summary:
			var d event.SummaryData
			json.Unmarshal(e.Data, &d)
			last, lastSeq = &d, e.Seq
		}
	}
	if inputs != turns || warnings == 0 || last == nil {
		t.Fatalf("log: %d inputs, %d warnings, summary %v", inputs, warnings, last != nil)
	}
	// Every identifier of the turns the latest summary folds is in it.
	folded := 0
	for _, e := range evs {
		if e.Kind != event.Input || e.Seq > last.Through {
			continue
		}
		var d event.InputData
		json.Unmarshal(e.Data, &d)
		folded++
		for _, id := range regexp.MustCompile(`#\d+|/srv/\S+\.csv|https://\S+\d|Project-X\d+`).FindAllString(d.Text, -1) {
			if !strings.Contains(last.Text, id) {
				t.Errorf("summary (seq %d) lost %s", lastSeq, id)
			}
		}
	}
	if folded < turns/2 || !strings.Contains(last.Text, "Grace Hopper") {
		t.Errorf("the latest summary folds %d turns; text:\n%s", folded, last.Text)
	}

	// The memory flush stored the folded turns: their identifiers are
	// found by recall too.
	for _, i := range []int{1, turns / 3, turns/2 + 1} {
		ids := idsOf(i)
		r := run(t, dir, "memory", "search", ids[0], "--agent", "a")
		if r.code != 0 || !strings.Contains(r.stdout, strings.TrimPrefix(ids[0], "#")) {
			t.Errorf("recall of %s: %+v", ids[0], r)
		}
	}
	d.stop(t)

	// On demand, with a focus.
	r = run(t, dir, "compact", "a/s", "the", "receipts")
	if r.code != 0 || !strings.Contains(r.stdout, "compacted") && !strings.Contains(r.stdout, "nothing to compact") {
		t.Fatalf("compact: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, dir, "send", "a/s", "one more")
	if m := nRE.FindStringSubmatch(r.stdout); r.code != 0 || m == nil {
		t.Fatalf("after compact: %+v", r)
	}
}
