package postgres

import (
	"fmt"
	"strings"
	"testing"

	"agentd/internal/store"
)

// FuzzNotifyPayloads feeds arbitrary text to the readers of the
// notification payloads: what they accept is two positive integers that
// strconv reads the same from the text's halves (an extension's: the text
// cut at its first '/', both halves holding something), and what the
// payloads' writers make of them they read back.
func FuzzNotifyPayloads(f *testing.F) {
	for _, s := range []string{"1:2", "cancel 7:9", "0:1", "-1:2", "1:", ":", "9223372036854775807:1", "9223372036854775808:1", "+1:2", "1:2:3", "cancel  1:2", "release 5", "release 0", "release 5:1", "action/weather", "a/b/c", "/x", "x/", "action:weather"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if a, b, err := parseEventsPayload(p); err == nil {
			var x, y int64
			var rest string
			if n, _ := fmt.Sscanf(strings.Replace(p, ":", " ", 1)+" end", "%d %d %s", &x, &y, &rest); n != 3 || x != a || y != b || rest != "end" || a <= 0 || b <= 0 {
				t.Errorf("%q read as %d:%d", p, a, b)
			}
			if a2, b2, err := parseEventsPayload(fmt.Sprintf("%d:%d", a, b)); err != nil || a2 != a || b2 != b {
				t.Errorf("%d:%d read back as %d:%d, %v", a, b, a2, b2, err)
			}
		}
		if verb, s, turn, err := parseControl(p); err == nil {
			back := fmt.Sprintf("release %d", s)
			if verb == "cancel" {
				back = fmt.Sprintf("cancel %d:%d", s, turn)
			}
			if v2, s2, t2, err := parseControl(back); err != nil || v2 != verb || s2 != s || t2 != turn {
				t.Errorf("%s read back as %s %d:%d, %v", back, v2, s2, t2, err)
			}
		} else if a, b, err := parseEventsPayload(strings.TrimPrefix(p, "cancel ")); err == nil && strings.HasPrefix(p, "cancel ") {
			t.Errorf("%q refused, but its ids %d:%d read", p, a, b)
		}
		typ, name, err := parseExtensionPayload(p)
		switch {
		case err == nil && (typ+"/"+name != p || typ == "" || name == "" || strings.Contains(typ, "/")):
			t.Errorf("%q read as extension %q / %q", p, typ, name)
		case err != nil && strings.Contains(p, "/") && !strings.HasPrefix(p, "/") && !strings.HasSuffix(p, "/"):
			t.Errorf("%q refused as an extension's: %v", p, err)
		}
		// What a change sends of a row the store accepts reads back as it.
		if x, y, ok := strings.Cut(p, ":"); ok && store.CheckExtensionKey(x, y) == nil {
			if typ, name, err := parseExtensionPayload(x + "/" + y); err != nil || typ != x || name != y {
				t.Errorf("%s/%s read back as %q / %q, %v", x, y, typ, name, err)
			}
		}
	})
}
