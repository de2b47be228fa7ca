package schema_test

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
)

// TestJavaScript runs the console's validator (static/schema.js) over the
// cases of testdata, which must give the same errors as this package.
func TestJavaScript(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("AGENTD_INTEROP") == "1" {
			t.Fatal("node is needed for the console's JavaScript tests")
		}
		t.Skip("skipping: no node")
	}
	out, err := exec.Command(node, "--test", "../gateway/console/testdata/schema.test.mjs").CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("# fail 0")) {
		t.Fatalf("node --test:\n%s", out)
	}
}
