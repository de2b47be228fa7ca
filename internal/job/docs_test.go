package job_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"agentd/internal/extension"
	"agentd/internal/job"
	"agentd/internal/schema"
	"agentd/internal/testkit"
)

// yamlBlock is a fenced YAML block of a Markdown file.
var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// TestDocsExamples: every job row in docs/jobs.md (a YAML block with
// "type: job") is valid against the job schema and passes the checks a
// save makes, and so is every trigger snippet (a block that starts with
// "triggers:") in a row around it; there are at least the five examples.
func TestDocsExamples(t *testing.T) {
	md, err := os.ReadFile("../../docs/jobs.md")
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	if err := os.MkdirAll(filepath.Join(data, "workspace", "notes"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(data, "workspace", "assistant"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "workspace", "assistant", "HEARTBEAT.md"), []byte("anything?"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := job.New(nil, nil, testkit.Agents{"assistant": testkit.Agent("assistant")}, &job.Options{Dir: data})
	defer r.Close()
	sch, err := schema.Compile(job.Schema())
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for i, m := range yamlBlock.FindAllStringSubmatch(string(md), -1) {
		text := m[1]
		switch {
		case strings.Contains(text, "\ntype: job\n") || strings.HasPrefix(text, "type: job\n"):
			rows++
		case strings.HasPrefix(text, "triggers:"):
			text = "type: job\nname: snippet\nspec:\n  agent: assistant\n  prompt: p\n  " + strings.ReplaceAll(strings.TrimSpace(text), "\n", "\n  ") + "\n"
		default:
			continue
		}
		docs, err := extension.DecodeDocs([]byte(text))
		if err != nil || len(docs) != 1 {
			t.Errorf("block %d does not decode: %v\n%s", i, err, text)
			continue
		}
		d := docs[0]
		var v any
		json.Unmarshal(d.Spec, &v)
		errs := sch.Validate(v)
		if len(errs) == 0 {
			errs = r.Check(context.Background(), &d)
		}
		if len(errs) > 0 {
			t.Errorf("block %d (%s) is refused: %v\n%s", i, d.Name, errs, text)
		}
	}
	if rows < 5 {
		t.Errorf("%d job rows in docs/jobs.md, want the five examples at least", rows)
	}
}
