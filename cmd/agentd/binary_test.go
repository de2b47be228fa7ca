package main

import (
	"bufio"
	"bytes"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// The binary keeps the linker's dead-code elimination whole: nothing
// calls a method by a name known only at run time (reflect.Value.Method,
// MethodByName: a text/template does), which keeps every exported method
// of every type in the binary (~2 MB); and the BPE vocabularies are linked
// compressed, not as Go source with the engine that splits for it.
func TestBinaryLinksLean(t *testing.T) {
	out, err := exec.Command("go", "tool", "nm", agentdBin).Output()
	if err != nil {
		t.Fatalf("go tool nm: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			continue
		}
		sym := f[len(f)-1]
		switch {
		case sym == "reflect.Value.MethodByName" || sym == "reflect.Value.Method":
			t.Errorf("%s is linked: every exported method of every type stays in the binary", sym)
		case strings.HasPrefix(sym, "github.com/tiktoken-go/") || strings.HasPrefix(sym, "github.com/dlclark/regexp2"):
			t.Errorf("%s is linked", sym)
			return
		}
	}
}

// Starting agentd does little before main: no package of agentd's own
// allocates more than 16 KiB when it is initialised (regular expressions,
// templates and tables are made when first needed), which every command,
// agentd version included, would otherwise pay.
func TestInitIsLight(t *testing.T) {
	cmd := exec.Command(agentdBin, "version")
	cmd.Env = append(cmd.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("agentd version: %v\n%s", err, stderr.String())
	}
	// init agentd/internal/agent @3.3 ms, 0.34 ms clock, 147864 bytes, 1917 allocs
	seen := 0
	for line := range strings.Lines(stderr.String()) {
		f := strings.Fields(line)
		if len(f) < 10 || f[0] != "init" || !strings.HasPrefix(f[1], "agentd/") {
			continue
		}
		seen++
		if n, err := strconv.Atoi(f[7]); err != nil || n > 16<<10 {
			t.Errorf("initialising %s allocates %s bytes", f[1], f[7])
		}
	}
	if seen == 0 {
		t.Fatalf("no init trace of agentd's packages:\n%s", stderr.String())
	}
}
