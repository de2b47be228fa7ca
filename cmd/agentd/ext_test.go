package main

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"agentd/internal/extension"
	"agentd/internal/gateway"
)

// controls.yaml: two documents, both valid.
const extControls = `# the operator's switches
type: control
name: quiet-hours
spec:
  kind: bool
  value: false
  description: no pings at night
---
type: control
name: tier
spec:
  kind: enum
  value: small
  options: [small, large]
`

// bad.yaml: a valid document, then one with two problems its type finds.
const extBad = `type: control
name: fresh
spec: {kind: bool, value: true}
---
type: control
name: volume
spec:
  kind: enum
  value: loud
  options: [quiet, normal]
  agent: nobody
`

// extDataDir is a data directory with an agent, and files.
func extDataDir(t *testing.T, files map[string]string) string {
	t.Helper()
	all := map[string]string{"agents/helper.yaml": "name: Helper\nmodel:\n  provider: echo\n"}
	maps.Copy(all, files)
	return dataDir(t, all)
}

// The extension commands, in process and through the daemon: put (two
// documents) → list → show → disable → history → revert → rm, and a put
// of a file with one invalid document writes nothing and lists every
// problem with where it is.
func TestExtCommands(t *testing.T) {
	check := func(t *testing.T, dir string) {
		files := t.TempDir()
		good := filepath.Join(files, "controls.yaml")
		bad := filepath.Join(files, "bad.yaml")
		os.WriteFile(good, []byte(extControls), 0o600)
		os.WriteFile(bad, []byte(extBad), 0o600)

		out := okRun(t, dir, "ext", "put", good)
		if want := "control/quiet-hours: version 1, enabled, active\ncontrol/tier: version 1, enabled, active\n"; out != want {
			t.Errorf("ext put: %q, want %q", out, want)
		}

		out = okRun(t, dir, "ext", "list", "--type", "control")
		if row := tableRow(t, out, "control"); !slices.Equal(row, []string{"control", "quiet-hours", "1", "true", "user", "active", "-"}) {
			t.Errorf("ext list: row %q in\n%s", row, out)
		}
		var list []extension.Status
		decodeOut(t, okRun(t, dir, "ext", "list", "--json", "--type", "control"), &list)
		if len(list) != 2 || list[0].Name != "quiet-hours" || list[1].Name != "tier" || list[0].UpdatedBy != "user:socket" {
			t.Errorf("ext list --json: %+v", list)
		}

		out = okRun(t, dir, "ext", "show", "control/quiet-hours")
		for _, want := range []string{"# control/quiet-hours: version 1, enabled, active\n", "# provenance user; created ",
			"type: control\nname: quiet-hours\nenabled: true\nspec:\n", "    kind: bool\n", "    value: false\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("ext show: no %q in\n%s", want, out)
			}
		}
		// What show prints, put takes back: nothing changes.
		if got := runInput(t, dir, nil, out, "ext", "put", "-"); got.code != 0 || got.stdout != "control/quiet-hours: version 1, enabled, active\n" {
			t.Errorf("ext put - of ext show: %+v", got)
		}

		// A change, and back to the version before it.
		on := "type: control\nname: quiet-hours\nspec: {kind: bool, value: true}\n"
		if got := runInput(t, dir, nil, on, "ext", "put", "-"); got.code != 0 || got.stdout != "control/quiet-hours: version 2, enabled, active\n" {
			t.Errorf("ext put - of a change: %+v", got)
		}
		if out = okRun(t, dir, "ext", "revert", "control/quiet-hours"); out != "control/quiet-hours: version 3, enabled, active\n" {
			t.Errorf("ext revert: %q", out)
		}
		var st extension.Status
		decodeOut(t, okRun(t, dir, "ext", "show", "--json", "control/quiet-hours"), &st)
		if want := `{"description":"no pings at night","kind":"bool","value":false}`; string(st.Spec) != want {
			t.Errorf("after ext revert: spec %s, want %s", st.Spec, want)
		}

		if out = okRun(t, dir, "ext", "disable", "control/quiet-hours"); out != "control/quiet-hours: version 4, disabled\n" {
			t.Errorf("ext disable: %q", out)
		}
		out = okRun(t, dir, "ext", "history", "control/quiet-hours")
		if row := tableRow(t, out, "4"); row[1] != "disable" || row[2] != "false" || row[3] != "user:socket" {
			t.Errorf("ext history: row %q in\n%s", row, out)
		}
		if out = okRun(t, dir, "ext", "enable", "control/quiet-hours"); out != "control/quiet-hours: version 5, enabled, active\n" {
			t.Errorf("ext enable: %q", out)
		}
		if out = okRun(t, dir, "ext", "revert", "control/quiet-hours", "--version", "2"); out != "control/quiet-hours: version 6, enabled, active\n" {
			t.Errorf("ext revert --version 2: %q", out)
		}
		var hist []gateway.ExtensionChange
		decodeOut(t, okRun(t, dir, "ext", "history", "--json", "control/quiet-hours"), &hist)
		var ops []string
		for _, c := range hist {
			ops = append(ops, c.Op)
		}
		if !slices.Equal(ops, []string{"put", "put", "revert", "disable", "enable", "revert"}) || string(hist[5].Spec) != `{"kind":"bool","value":true}` {
			t.Errorf("ext history --json: ops %q, last %+v", ops, hist[len(hist)-1])
		}

		if out = okRun(t, dir, "ext", "rm", "control/tier"); !strings.HasPrefix(out, "control/tier: removed") {
			t.Errorf("ext rm: %q", out)
		}
		if r := run(t, dir, "ext", "show", "control/tier"); r.code != 3 || !strings.Contains(r.stderr, "control/tier") {
			t.Errorf("ext show of a removed row: %+v, want exit 3 naming it", r)
		}
		if r := run(t, dir, "ext", "show", "nosuchtype/x"); r.code != 3 || !strings.Contains(r.stderr, "the types are") {
			t.Errorf("ext show of an unknown type: %+v, want exit 3 naming the types", r)
		}

		// One invalid document: every problem, where it is; nothing written.
		r := run(t, dir, "ext", "put", bad)
		if r.code != 1 {
			t.Errorf("ext put of an invalid file: exit %d, want 1\n%s", r.code, r.stderr)
		}
		for _, want := range []string{bad + ": nothing written:",
			bad + `:5 (control/volume): /spec/value: must be one of its options ["quiet" "normal"]`,
			bad + `:5 (control/volume): /spec/agent: no agent "nobody" exists`} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("ext put of an invalid file: no %q in\n%s", want, r.stderr)
			}
		}
		if r := run(t, dir, "ext", "show", "control/fresh"); r.code != 3 {
			t.Errorf("the valid document of an invalid file was written: %+v", r)
		}

		// A file that is not documents, a document without its type, a
		// name that is a path: every problem, nothing written.
		r = runInput(t, dir, nil, "type: control\nname: a\nspec: {kind: bool, value: true}\nmore: 1\n---\nname: y\nspec: {kind: bool, value: true}\n", "ext", "put", "-")
		for _, want := range []string{"stdin:4: more: unknown field", "stdin:6: type: is required"} {
			if r.code != 1 || !strings.Contains(r.stderr, want) {
				t.Errorf("ext put of bad documents: exit %d, no %q in\n%s", r.code, want, r.stderr)
			}
		}
		r = runInput(t, dir, nil, "type: control\nname: ../x\nspec: {kind: bool, value: true}\n", "ext", "put", "-")
		if r.code != 1 || !strings.Contains(r.stderr, `stdin:1 (control/../x): /name: "../x" is not a valid name`) {
			t.Errorf("ext put of a path for a name: %+v", r)
		}
		if out := okRun(t, dir, "ext", "list", "--type", "control"); strings.Count(out, "\n") != 2 {
			t.Errorf("after invalid puts, ext list:\n%s\nwant quiet-hours alone", out)
		}
		if r := run(t, dir, "ext", "show", "control"); r.code != 2 {
			t.Errorf("ext show control: %+v, want a usage error", r)
		}
	}
	t.Run("in process", func(t *testing.T) { check(t, extDataDir(t, nil)) })
	t.Run("daemon", func(t *testing.T) {
		dir := extDataDir(t, nil)
		// While it runs, it holds the data directory: every command goes
		// through its socket.
		d := serve(t, dir)
		check(t, dir)
		d.stop(t)
	})
}

// agentd ext reseed syncs extensions/<type>/<name>.yaml into rows, keeps a
// row a person changed unless --force, and shows the drift.
func TestExtReseed(t *testing.T) {
	dir := extDataDir(t, map[string]string{
		"extensions/control/night.yaml": "type: control\nname: night\nspec: {kind: bool, value: false}\n",
	})
	var st extension.Status
	decodeOut(t, okRun(t, dir, "ext", "show", "--json", "control/night"), &st)
	if st.Provenance != "file" || st.Seed != "file" || st.Drift {
		t.Fatalf("the file's row: %+v", st)
	}
	runInput(t, dir, nil, "type: control\nname: night\nspec: {kind: bool, value: true}\n", "ext", "put", "-")
	if out := okRun(t, dir, "ext", "list", "--type", "control"); tableRow(t, out, "control")[6] != "drift" {
		t.Errorf("ext list after a change: no drift in\n%s", out)
	}
	if out := okRun(t, dir, "ext", "reseed"); !strings.Contains(out, "kept (changed by a person or an agent; --force overwrites): control/night") {
		t.Errorf("ext reseed: %q", out)
	}
	if out := okRun(t, dir, "ext", "reseed", "--force"); !strings.Contains(out, "updated: control/night") {
		t.Errorf("ext reseed --force: %q", out)
	}
	decodeOut(t, okRun(t, dir, "ext", "show", "--json", "control/night"), &st)
	if st.Provenance != "file" || st.Drift || string(st.Spec) != `{"kind":"bool","value":false}` {
		t.Errorf("after reseed --force: %+v", st)
	}
}

// Over TCP (--remote), the token reads the rows and flips controls; any
// other change needs gateway.remote_admin, and is then recorded as by the
// token.
func TestExtRemote(t *testing.T) {
	doc := "type: capability\nname: quiet\nspec: {prompt: Be brief.}\n"
	for _, admin := range []bool{false, true} {
		files := map[string]string{}
		if admin {
			files["agentd.yaml"] = "gateway:\n  remote_admin: true\n"
		}
		dir := extDataDir(t, files)
		_, base := serveListen(t, dir, "127.0.0.1:0")
		env := []string{"AGENTD_TOKEN=" + strings.TrimSpace(okRun(t, dir, "token"))}
		other := t.TempDir() // the commands name no data directory of the daemon's
		if r := runInput(t, other, env, "", "ext", "list", "--remote", base); r.code != 0 || tableRow(t, r.stdout, "agent")[1] != "helper" {
			t.Errorf("ext list --remote: %+v", r)
		}
		control := "type: control\nname: hush\nspec: {kind: bool, value: true}\n"
		if r := runInput(t, other, env, control, "ext", "put", "-", "--remote", base); r.code != 0 {
			t.Errorf("a control flipped with the token alone: %+v", r)
		}
		r := runInput(t, other, env, doc, "ext", "put", "-", "--remote", base)
		if !admin {
			if r.code != 1 || !strings.Contains(r.stderr, "remote_admin") || strings.Contains(r.stderr, "allowed_hosts") {
				t.Errorf("ext put --remote without remote_admin: %+v, want exit 1 naming remote_admin alone", r)
			}
			continue
		}
		if r.code != 0 || r.stdout != "capability/quiet: version 1, enabled, active\n" {
			t.Errorf("ext put --remote with remote_admin: %+v", r)
		}
		var st extension.Status
		decodeOut(t, okRun(t, dir, "ext", "show", "--json", "capability/quiet"), &st)
		if st.UpdatedBy != "user:token" {
			t.Errorf("a change over TCP: updated by %q, want user:token", st.UpdatedBy)
		}
	}
}
