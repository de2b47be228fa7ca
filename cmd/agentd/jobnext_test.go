package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/app"
	"agentd/internal/gateway"
	"agentd/internal/store/postgres/pgtest"
)

// On two agentd serve nodes sharing a PostgreSQL store one leads the
// scheduling; the other still says when a job fires next — its next and
// its next five fires, computed from the job's row — and both say the
// same.
func TestJobNextFiresOnEveryNode(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	env := []string{app.StoreEnv + "=" + db}
	agentFile := map[string]string{"agents/a.yaml": "name: A\nmodel:\n  provider: echo\n"}
	a, b := dataDir(t, agentFile), dataDir(t, agentFile)
	write(t, a+"/extensions/job/brief.yaml", "type: job\nname: brief\nspec:\n  agent: a\n  prompt: brief\n"+
		"  triggers: [{cron: \"0 8 * * 1-5\", tz: Europe/Berlin}, {at: \"2099-01-01T00:00:00Z\"}]\n")
	nodes := map[string]*daemon{a: serve(t, a, env...), b: serve(t, b, env...)}

	leader, follower := "", ""
	for deadline := time.Now().Add(30 * time.Second); leader == ""; time.Sleep(50 * time.Millisecond) {
		for dir, d := range nodes {
			if strings.Contains(d.out.String(), "job scheduler leads") {
				leader = dir
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no node leads the jobs:\n%s\n%s", nodes[a].out.String(), nodes[b].out.String())
		}
	}
	if follower = a; leader == a {
		follower = b
	}
	show := func(dir string) gateway.JobInfo {
		t.Helper()
		r := runEnv(t, dir, env, "jobs", "show", "brief", "--json")
		var info gateway.JobInfo
		if err := json.Unmarshal([]byte(r.stdout), &info); err != nil || r.code != 0 {
			t.Fatalf("jobs show: %+v (%v)", r, err)
		}
		return info
	}
	led, other := show(leader), show(follower)
	if other.Next.IsZero() || len(other.NextFires) != gateway.NextFires || !other.Next.Equal(other.NextFires[0]) {
		t.Fatalf("the node that does not lead: next %v, next_fires %v", other.Next, other.NextFires)
	}
	if !led.Next.Equal(other.Next) {
		t.Errorf("the leader's next %v, the other node's %v", led.Next, other.Next)
	}
	if diff := cmp.Diff(led.NextFires, other.NextFires); diff != "" {
		t.Errorf("next_fires differ between the nodes (-leader +other):\n%s", diff)
	}
	// In words: the next fire, then the four after it.
	if r := runEnv(t, follower, env, "jobs", "show", "brief"); r.code != 0 || !strings.Contains(r.stdout, "\n  next    2") ||
		strings.Count(r.stdout, "\n  then    2") != gateway.NextFires-1 {
		t.Errorf("jobs show on the node that does not lead: %+v", r)
	}
}
