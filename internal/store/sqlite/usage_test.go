package sqlite

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentd/internal/store"
)

func TestUsageQueryPlans(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "agentd.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	day := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		q     store.UsageQuery
		index string
	}{
		{store.UsageQuery{Group: store.UsageByDay, Since: day}, "usage_ts"},
		{store.UsageQuery{Group: store.UsageByAgent, Since: day, Until: day.Add(time.Hour)}, "usage_ts"},
		{store.UsageQuery{Group: store.UsageByDay, Agent: "ada", Since: day}, "usage_agent_ts"},
		{store.UsageQuery{Group: store.UsageBySession, Session: "ada/one"}, "usage_agent_ts"},
	} {
		grouped, total, args, err := usageSQL(tc.q)
		if err != nil {
			t.Fatal(err)
		}
		for _, query := range []string{grouped, total} {
			a := args
			if query == grouped {
				a = append(a, 10)
			}
			if plan := queryPlan(t, s, query, a...); !strings.Contains(plan, tc.index) {
				t.Errorf("%+v: plan does not use %s:\n%s\n%s", tc.q, tc.index, query, plan)
			}
		}
	}
	if plan := queryPlan(t, s, qQueueDepth); !strings.Contains(plan, "inbox_pending") {
		t.Errorf("queue depth does not use inbox_pending:\n%s", plan)
	}
}

func queryPlan(t *testing.T, s *Store, query string, args ...any) string {
	t.Helper()
	rows, err := s.rdb.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	plan := ""
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan += detail + "\n"
	}
	return plan
}

// The instances' reads, and the usage they sum, each use the index made
// for them.
func TestAgentQueryPlans(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "agentd.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, tc := range []struct {
		query   string
		args    []any
		indexes []string
	}{
		{qUsageAgent, []any{"ada", 0}, []string{"usage_payer_ts", "usage_agent_ts"}},
		{qUsageAccount, []any{"1:2"}, []string{"usage_account"}},
		{qInstByDesc, []any{"d"}, []string{"agentd_instances_descriptor"}},
		{qInstByAgent, []any{"a"}, []string{"agentd_instances_agent"}},
		{qInstChildren, []any{"a", "a/main"}, []string{"agentd_instances_parent"}},
		{qInstLiveTasks, nil, []string{"agentd_instances_live"}},
		{qInstOpen, nil, []string{"agentd_instances_live"}},
		{qInstUnreported, []any{10}, []string{"agentd_instances_unreported"}},
	} {
		plan := queryPlan(t, s, tc.query, tc.args...)
		for _, index := range tc.indexes {
			if !strings.Contains(plan, index) {
				t.Errorf("plan does not use %s:\n%s\n%s", index, tc.query, plan)
			}
		}
	}
	q, args := instancesSQL(store.AgentFilter{Type: store.InstanceUser}, 0, "")
	if plan := queryPlan(t, s, q, append(args, 10)...); !strings.Contains(plan, "agentd_instances_type") {
		t.Errorf("a listing by type does not use agentd_instances_type:\n%s", plan)
	}
}
