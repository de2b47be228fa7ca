package contexts

import (
	"encoding/json"
	"errors"
	"testing"

	"agentd/internal/runtime"
)

// FuzzResolve: any args either resolve to an instance whose session is a
// valid session address of the type's agent and whose args are the same
// JSON object as encoding/json reads them, or are refused as ErrBadArgs;
// nothing panics.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{`{"userId":"alice"}`, `{"userId":"a/b"}`, `{"userId":"\u0000"}`, `{}`, `null`, `[1]`, `{"userId":"` + "\xff" + `"}`, `{"userId":"{{userId}}"}`} {
		f.Add(s)
	}
	st := newMemStore()
	c := New(st, agents{"assistant": true}, nil)
	spec := `{"agent": "assistant", "key": "k:{{userId}}", "args_schema": {"type": "object", "properties": {"userId": {"type": "string"}}, "required": ["userId"]}}`
	typ, errs := compile("chat", mustDecode(f, spec))
	if len(errs) > 0 {
		f.Fatal(errs)
	}
	c.types["chat"] = typ
	f.Fuzz(func(t *testing.T, args string) {
		in, err := c.Resolve("chat", json.RawMessage(args))
		if err != nil {
			if !errors.Is(err, ErrBadArgs) {
				t.Fatalf("%q: %v, want ErrBadArgs", args, err)
			}
			return
		}
		a, k, err := runtime.ParseAddress(in.Session)
		if err != nil || a != "assistant" || k != "ctx:chat:"+in.Key {
			t.Fatalf("%q: session %q: %v", args, in.Session, err)
		}
		var want, got map[string]any
		if json.Unmarshal([]byte(args), &want) != nil {
			t.Fatalf("%q resolved, but encoding/json does not read it as an object", args)
		}
		if err := json.Unmarshal(in.Args, &got); err != nil || want["userId"] != got["userId"] {
			t.Fatalf("%q: args %s", args, in.Args)
		}
	})
}

func mustDecode(f *testing.F, spec string) *Spec {
	s, err := Decode(json.RawMessage(spec))
	if err != nil {
		f.Fatal(err)
	}
	return s
}
