package agentsys

import (
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDescriptorStrings(t *testing.T) {
	for _, c := range []struct {
		d    Descriptor
		want string
	}{
		{UserDescriptor("telegram", "chat 42", "ann"), "user:telegram:chat%2042:ann"},
		{SwarmDescriptor("support", "slack", "C1:x", "u/1"), "swarm:support:slack:C1%3Ax:u%2F1"},
		{PermanentDescriptor("researcher"), "permanent:researcher"},
		{TaskDescriptor("assistant/main", "call_1"), "task:assistant%2Fmain:call_1"},
		{APIDescriptor("k-1"), "task:api:k-1"},
		{CronDescriptor("nightly"), "cron:nightly"},
		{SystemDescriptor("memory-keeper"), "system:memory-keeper"},
	} {
		if got := c.d.String(); got != c.want {
			t.Errorf("%v: %q, want %q", c.d, got, c.want)
		}
		back, err := ParseDescriptor(c.want)
		if err != nil {
			t.Errorf("parse %q: %v", c.want, err)
		} else if diff := cmp.Diff(c.d, back); diff != "" {
			t.Errorf("parse %q (-want +got):\n%s", c.want, diff)
		}
	}
}

func TestParseDescriptorRefuses(t *testing.T) {
	for _, s := range []string{"", "user", "user:a:b", "user:a:b:c:d", "robot:x", "permanent:", "permanent:%41",
		"permanent:a%2", "user:a::c", "task:a%3ab:c", "cron:a b"} {
		if d, err := ParseDescriptor(s); err == nil {
			t.Errorf("%q parsed as %v", s, d)
		}
	}
}

// FuzzDescriptor holds the descriptor's escaping to the standard library's
// URL unescaping: every part comes back as it went in, and a string that
// parses is the canonical form of what it parses to.
func FuzzDescriptor(f *testing.F) {
	f.Add("user", "telegram", "chat:1", "ann/b")
	f.Add("swarm", "support%", "a b", "")
	f.Add("task", "assistant/main", "call_1", "x")
	f.Fuzz(func(t *testing.T, kind, a, b, c string) {
		parts := []string{a, b, c}[:min(descParts[kind], 3)]
		if kind == DescSwarm {
			parts = []string{a, b, c, a + b}
		}
		d := Descriptor{Kind: kind, Parts: parts}
		s := d.String()
		if d.valid() == nil {
			back, err := ParseDescriptor(s)
			if err != nil {
				t.Fatalf("%q from %#v: %v", s, d, err)
			}
			if diff := cmp.Diff(d, back); diff != "" {
				t.Fatalf("%q (-sent +parsed):\n%s", s, diff)
			}
			for i, r := range strings.Split(s, ":")[1:] {
				if u, err := url.PathUnescape(r); err != nil || u != parts[i] {
					t.Fatalf("part %q unescapes to %q, %v; want %q", r, u, err, parts[i])
				}
			}
		}
		// Any string that parses is canonical.
		for _, in := range []string{kind + ":" + a, kind + ":" + a + ":" + b, kind + ":" + a + ":" + b + ":" + c} {
			if p, err := ParseDescriptor(in); err == nil && p.String() != in {
				t.Fatalf("%q parses as %#v, whose string is %q", in, p, p.String())
			}
		}
	})
}
