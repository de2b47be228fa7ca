package approval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// nodeOrSkip returns node, skipping the test without it unless
// AGENTD_INTEROP=1 asks for every interop test.
func nodeOrSkip(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("AGENTD_INTEROP") == "1" {
			t.Fatal("interop test needs node")
		}
		t.Skip("skipping: no node")
	}
	return node
}

// runNode runs an ES module with stdin and returns its stdout.
func runNode(t *testing.T, node, module, stdin string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "check.mjs")
	if err := os.WriteFile(file, []byte(module), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, file)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("node: %v\n%s", err, errb.String())
	}
	return out.String()
}

// The JavaScript verifier of docs/approval.md, run by node, accepts the
// approvals this package signs for their own call, and no other call; its
// freshness check goes by signedAt, as the Go Verifier's does.
func TestDocsJavaScriptVerifier(t *testing.T) {
	node := nodeOrSkip(t)
	doc, err := os.ReadFile("../docs/approval.md")
	if err != nil {
		t.Fatal(err)
	}
	_, js, ok := strings.Cut(string(doc), "## Verifying in JavaScript")
	if ok {
		_, js, ok = strings.Cut(js, "```js\n")
	}
	if ok {
		js, _, ok = strings.Cut(js, "```")
	}
	if !ok {
		t.Fatal("docs/approval.md has no JavaScript verifier")
	}
	type check struct {
		Approval  *Approval       `json:"approval"`
		Audience  string          `json:"audience"`
		Tool      string          `json:"tool"`
		Arguments json.RawMessage `json:"arguments,omitempty"`
		Want      bool            `json:"want"`
		// Now, if set, is the time the freshness check is made at (Unix
		// milliseconds); Fresh its expected answer with the default age.
		Now   int64 `json:"now,omitempty"`
		Fresh bool  `json:"fresh"`
	}
	key := testKey(9)
	m := Message{Text: "Grüße 🚀 \"x\"", CreatedAt: time.Date(2025, 6, 1, 12, 0, 0, 123e6, time.UTC), ID: "m-1", ChannelID: "web:1"}
	signed := m.CreatedAt.Add(time.Hour) // a call a person approved an hour later
	args := json.RawMessage(`{"b": [1.50, 1e21, -0, "é\u2028"], "a": {"\ue000": 1, "😀": 2}}`)
	a, err := Sign(key, m, signed, "https://srv.example/mcp", "post", args)
	if err != nil {
		t.Fatal(err)
	}
	none, err := Sign(key, Message{Text: "", CreatedAt: m.CreatedAt, ID: "m-2"}, m.CreatedAt, "files", "list", nil)
	if err != nil {
		t.Fatal(err)
	}
	tampered := *a
	tampered.Message = "other"
	resigned := *a
	resigned.SignedAt = resigned.SignedAt.Add(time.Hour)
	at := func(d time.Duration) int64 { return signed.Add(d).UnixMilli() }
	checks := []check{
		{a, "https://srv.example/mcp", "post", args, true, 0, false},
		{a, "https://srv.example/mcp", "post", args, true, at(2 * time.Second), true},
		{a, "https://srv.example/mcp", "post", args, true, at(DefaultMaxAge), true},
		{a, "https://srv.example/mcp", "post", args, true, at(DefaultMaxAge + time.Millisecond), false},
		{a, "https://srv.example/mcp", "post", args, true, at(-DefaultMaxSkew - time.Millisecond), false},
		{&resigned, "https://srv.example/mcp", "post", args, false, at(time.Hour), true},
		{a, "https://srv.example/mcp", "post", json.RawMessage(`{"a":{"😀":2,"\ue000":1.0},"b":[1.5,1000000000000000000000,0,"é\u2028"]}`), true, 0, false},
		{none, "files", "list", nil, true, 0, false},
		{none, "files", "list", json.RawMessage(`{}`), true, 0, false},
		{a, "https://other.example/mcp", "post", args, false, 0, false},
		{a, "https://srv.example/mcp", "delete", args, false, 0, false},
		{a, "https://srv.example/mcp", "post", json.RawMessage(`{"b":[]}`), false, 0, false},
		{&tampered, "https://srv.example/mcp", "post", args, false, 0, false},
	}
	var in bytes.Buffer
	for _, c := range checks {
		if err := c.Approval.Check(c.Audience, c.Tool, c.Arguments); (err == nil) != c.Want {
			t.Fatalf("Go: Check = %v, want ok %v", err, c.Want)
		}
		if c.Now != 0 {
			v := NewVerifier(&VerifierOptions{Now: func() time.Time { return time.UnixMilli(c.Now) }, Audience: []string{c.Audience}})
			if err := v.Verify(c.Approval, c.Tool, c.Arguments); (err == nil) != (c.Want && c.Fresh) {
				t.Fatalf("Go: Verify at %d = %v, want ok %v", c.Now, err, c.Want && c.Fresh)
			}
		}
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		in.Write(append(b, '\n'))
	}
	out := runNode(t, node, js+`
import fs from "node:fs";
for (const line of fs.readFileSync(0, "utf8").split("\n").filter(Boolean)) {
  const c = JSON.parse(line);
  const ok = checkApproval(c.approval, c.audience, c.tool, c.arguments);
  console.log(ok + " " + (c.now ? isFresh(c.approval, undefined, c.now) : false));
}
`, in.String())
	got := strings.Split(strings.TrimSpace(out), "\n")
	if len(got) != len(checks) {
		t.Fatalf("node printed %q", out)
	}
	for i, c := range checks {
		if want := fmt.Sprint(c.Want, c.Fresh); got[i] != want {
			t.Errorf("check %d (%s %s %s at %d): the documented JavaScript says %s, want %s", i, c.Audience, c.Tool, c.Arguments, c.Now, got[i], want)
		}
	}
}

// CanonicalJSON writes what JavaScript's JSON.stringify, with keys sorted,
// writes for random JSON values: doubles of every magnitude, integers,
// strings with control characters and characters beyond U+FFFF.
func TestCanonicalJSONMatchesJavaScript(t *testing.T) {
	node := nodeOrSkip(t)
	rng := rand.New(rand.NewPCG(1, 2))
	var in bytes.Buffer
	var want []string
	for range 2000 {
		v := randomJSON(rng, 0)
		b, err := json.Marshal(v)
		if err != nil {
			continue // a NaN or infinity
		}
		c, err := CanonicalJSON(b)
		if err != nil {
			t.Fatalf("CanonicalJSON(%s): %v", b, err)
		}
		in.Write(append(b, '\n'))
		want = append(want, string(c))
	}
	out := runNode(t, node, `
import fs from "node:fs";
function canon(v) {
  if (Array.isArray(v)) return "[" + v.map(canon).join(",") + "]";
  if (v !== null && typeof v === "object") return "{" + Object.keys(v).sort().map((k) => JSON.stringify(k) + ":" + canon(v[k])).join(",") + "}";
  return JSON.stringify(v);
}
for (const line of fs.readFileSync(0, "utf8").split("\n").filter(Boolean)) console.log(canon(JSON.parse(line)));
`, in.String())
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	i := 0
	for ; sc.Scan(); i++ {
		if i < len(want) && sc.Text() != want[i] {
			t.Errorf("value %d: Go %s\nJavaScript    %s", i, want[i], sc.Text())
		}
	}
	if i != len(want) {
		t.Fatalf("node printed %d lines, want %d", i, len(want))
	}
}

func randomJSON(rng *rand.Rand, depth int) any {
	switch k := rng.IntN(10); {
	case depth < 3 && k == 0:
		m := map[string]any{}
		for range rng.IntN(5) {
			m[randomString(rng)] = randomJSON(rng, depth+1)
		}
		return m
	case depth < 3 && k == 1:
		a := make([]any, rng.IntN(5))
		for i := range a {
			a[i] = randomJSON(rng, depth+1)
		}
		return a
	case k <= 3:
		return randomString(rng)
	case k == 4:
		return rng.IntN(3) == 0
	case k == 5:
		return rng.Int64N(1<<62) - 1<<61
	case k == 6:
		return math.Float64frombits(rng.Uint64()) // any double; NaN and infinities are skipped
	case k == 7:
		return (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(60)-30))
	case k == 8:
		return nil
	}
	return float64(rng.IntN(1000)) / 8
}

func randomString(rng *rand.Rand) string {
	pool := []rune{'a', 'Z', '0', ' ', '"', '\\', '/', '\n', '\t', 0, 0x1f, 0x7f, 'é', '€', 0x2028, 0xe000, 0xffff, 0x1f600, 0x10ffff}
	var b strings.Builder
	for range rng.IntN(8) {
		r := pool[rng.IntN(len(pool))]
		if utf8.ValidRune(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}
