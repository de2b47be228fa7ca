package bench

import (
	"strings"
	"testing"

	"agentd/internal/store/postgres/pgtest"
)

// TestCluster runs the PostgreSQL bench (quick, one node) and checks that
// it measured every figure it says it did, and says why it skipped the
// others.
func TestCluster(t *testing.T) {
	db := pgtest.NewDB(t)
	res, err := Cluster(t.Context(), &ClusterOptions{Store: db, Quick: true, Nodes: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]float64{
		"turns/s": res.TurnsPerS[1], "sqlite p50": res.SQLiteTurnP50ms, "postgres p50": res.PostgresTurnP50ms,
		"postgres p99": res.PostgresTurnP99ms, "extension put to active p50": res.ExtPutToActiveP50ms,
	} {
		if v <= 0 {
			t.Errorf("%s not measured: %+v", name, res)
		}
	}
	if res.DeliveryP99ms < res.DeliveryP50ms {
		t.Errorf("delivery p99 %v below p50 %v", res.DeliveryP99ms, res.DeliveryP50ms)
	}
	if res.ExtPutToActiveP99ms < res.ExtPutToActiveP50ms || res.ExtPuts != 10 {
		t.Errorf("extension put to active: %d puts, p99 %v, p50 %v", res.ExtPuts, res.ExtPutToActiveP99ms, res.ExtPutToActiveP50ms)
	}
	var b strings.Builder
	if err := res.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"durable turns/s, 1 node(s)", "cross-node delivery", "extension put → active on another node", "not measured: failover"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "agentd:agentd@") {
		t.Errorf("table shows the password:\n%s", b.String())
	}
}
