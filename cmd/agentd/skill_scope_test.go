package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"agentd/internal/event"
)

// A skill's MCP server is the business of the sessions that loaded the
// skill: in another session of the same agent none of its tools is
// offered to the model, and none of its context, action or post-process
// tools (nor the hook that signs for it) runs. The sessions that loaded
// it keep it across a restart of agentd, which reconnects the server for
// them. Through `agentd serve` and a client, restarted in between, then in
// process.
func TestSkillServerStaysInItsSessions(t *testing.T) {
	rec := fakeRec(t, "match ^load$\ncall skill {\"name\": \"tea\"}\n---\nsay loaded\n\nmatch *\nsay two green teas\n")
	skillMD := fmt.Sprintf("---\nname: tea\ndescription: Sell tea.\nmcp_servers:\n  teashop:\n    command: %q\n    args: [mcp, demo]\n---\n# Tea\nSell tea.\n", agentdBin)
	dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(rec.addr, ""), "skills/tea/SKILL.md": skillMD})

	// turn sends text in a session and returns the teashop tools the model
	// was offered and those the turn ran in its lifecycle phases.
	turn := func(session, text string) (offered, ran []string) {
		t.Helper()
		if r := run(t, dir, "send", "a", text, "--session", session); r.code != 0 {
			t.Fatalf("send %q in %s: %+v", text, session, r)
		}
		for _, name := range rec.lastTools(t) {
			if strings.HasPrefix(name, "teashop__") {
				offered = append(offered, name)
			}
		}
		evs, _ := jsonEvents(t, okRun(t, dir, "log", "a/"+session, "--json"))
		last := evs[len(evs)-1].Turn
		for _, ev := range evs {
			var d event.LifecycleData
			if ev.Turn != last || ev.Kind != event.Lifecycle || json.Unmarshal(ev.Data, &d) != nil {
				continue
			}
			for _, name := range []string{d.Tool, d.Target} {
				if strings.HasPrefix(name, "teashop__") && !slices.Contains(ran, name) {
					ran = append(ran, name)
				}
			}
		}
		slices.Sort(ran)
		return offered, ran
	}
	wantOffered := []string{"teashop__add", "teashop__change_tools", "teashop__counter", "teashop__echo", "teashop__fill", "teashop__whoami"}
	wantRan := []string{"teashop__notes", "teashop__quote", "teashop__quote#1", "teashop__remember", "teashop__submit"} // quote#1: its signing hook
	loaded := func(when string) {
		t.Helper()
		offered, ran := turn("s1", "two green teas please")
		if !slices.Equal(offered, wantOffered) || !slices.Equal(ran, wantRan) {
			t.Errorf("%s, in the session that loaded the skill: offered %q, ran %q; want %q and %q", when, offered, ran, wantOffered, wantRan)
		}
	}
	other := func(when string) {
		t.Helper()
		if offered, ran := turn("s2", "hello"); len(offered) > 0 || len(ran) > 0 {
			t.Errorf("%s, in another session: offered %q, ran %q; want none", when, offered, ran)
		}
	}

	d := serve(t, dir)
	other("before the skill was loaded")
	turn("s1", "load")
	loaded("after loading the skill")
	other("after another session loaded the skill")
	d.stop(t)

	d = serve(t, dir)
	other("after a restart")
	loaded("after a restart")
	other("after a restart and the server's reconnection")
	d.stop(t)

	// In process, without a daemon, the same.
	other("in process")
	loaded("in process")
}
