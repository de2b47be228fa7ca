package main

import (
	"bufio"
	"bytes"
	"os/exec"
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
