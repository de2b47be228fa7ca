package bench

import (
	"strings"
	"testing"
)

// agentd bench xml at a tiny size through agentd serve: both kinds of
// turn complete their three steps, the table is written. It builds the
// agentd binary. No figure's size is checked, only that each was
// measured.
func TestXMLBench(t *testing.T) {
	exe := agentdBinary(t)
	res, err := runXML(t.Context(), t.TempDir(), &XMLOptions{Quick: true, Turns: 5, Synchronous: "normal", Executable: exe})
	if err != nil {
		t.Fatal(err)
	}
	if res.NativeP50ms <= 0 || res.XMLP50ms <= 0 {
		t.Errorf("not measured: %+v", res)
	}
	var b strings.Builder
	if err := res.WriteTable(&b); err != nil || !strings.Contains(b.String(), "XML overhead p50 / p99") {
		t.Errorf("table: %v\n%s", err, b.String())
	}
}
