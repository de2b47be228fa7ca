package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// checkJSONLogs fails unless every line of out is a JSON object with the
// time, level and msg of a log record, and there is at least one.
func checkJSONLogs(t *testing.T, what, out string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if out == "" {
		t.Fatalf("%s: no log lines", what)
	}
	for _, line := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("%s: log line is not a JSON object: %q", what, line)
			continue
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := rec[k].(string); !ok {
				t.Errorf("%s: log line without %s: %q", what, k, line)
			}
		}
	}
}

// With log.format: json, agentd serve writes its logs as JSON objects, one
// a line, and what it tells a person on stdout stays text.
func TestServeLogFormatJSON(t *testing.T) {
	dir := dataDir(t, map[string]string{
		"agentd.yaml":   "log:\n  level: debug\n  format: json\n",
		"agents/a.yaml": "name: A\nmodel:\n  provider: echo\n",
	})
	d := serve(t, dir)
	if r := run(t, dir, "send", "a", "hello"); r.code != 0 {
		t.Fatalf("send: %d %s", r.code, r.stderr)
	}
	d.stop(t)
	// The daemon's stdout and stderr are one stream here: its log lines are
	// the ones that are not the banner's.
	var logs []string
	for line := range strings.Lines(d.out.String()) {
		if strings.HasPrefix(line, "{") || strings.Contains(line, "level=") {
			logs = append(logs, line)
		}
	}
	checkJSONLogs(t, "agentd serve", strings.Join(logs, ""))
	mustContain(t, d.out.String(), "listening on ")
	mustContain(t, d.out.String(), "agentd stopped\n")
}

// Commands that run agentd in process log in the same format, and text
// stays the default.
func TestInProcessLogFormat(t *testing.T) {
	dir := dataDir(t, map[string]string{
		"agentd.yaml":   "log:\n  format: json\n",
		"agents/a.yaml": "name: A\nmodel:\n  provider: echo\n",
	})
	r := run(t, dir, "--log-level", "debug", "send", "a", "hello")
	if r.code != 0 || r.stdout != "hello\n" {
		t.Fatalf("send: %d %q %s", r.code, r.stdout, r.stderr)
	}
	checkJSONLogs(t, "agentd send in process", r.stderr)

	text := dataDir(t, map[string]string{"agents/a.yaml": "name: A\nmodel:\n  provider: echo\n"})
	r = run(t, text, "--log-level", "debug", "send", "a", "hello")
	if r.code != 0 {
		t.Fatalf("send: %d %s", r.code, r.stderr)
	}
	for line := range strings.Lines(r.stderr) {
		if !strings.HasPrefix(line, "time=") || !strings.Contains(line, " level=") {
			t.Errorf("text log line %q", line)
		}
	}
	if r.stderr == "" {
		t.Error("no text log lines at --log-level debug")
	}
}
