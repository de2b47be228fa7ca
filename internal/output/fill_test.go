package output

import (
	"encoding/json"
	"fmt"
	"testing"
)

func ExampleFill() {
	args := json.RawMessage(`{"title": "{{content.title}}", "tags": "{{content.tags}}", "note": "filed: {{content.title}}"}`)
	content := json.RawMessage(`{"title": "Printer jam", "tags": ["hw", "floor-2"]}`)
	out, err := Fill(args, content)
	fmt.Println(string(out), err)
	// Output: {"note":"filed: Printer jam","tags":["hw","floor-2"],"title":"Printer jam"} <nil>
}

// FuzzFill: whatever the template and the content, Fill never panics and
// what it returns is valid JSON, and a template without references comes
// back as encoding/json reads it.
func FuzzFill(f *testing.F) {
	f.Add(`{"a":"{{content.x}}","b":["{{content}}","x {{ content.y.z }} y"]}`, `{"x":1,"y":{"z":"w"}}`)
	f.Add(`{"a":"{{content.}}{{{content}}}"}`, `"s"`)
	f.Add(`{"a":1}`, `null`)
	f.Fuzz(func(t *testing.T, args, content string) {
		out, err := Fill(json.RawMessage(args), json.RawMessage(content))
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("Fill(%q, %q) = %q: not JSON", args, content, out)
		}
		if len(argRefs(json.RawMessage(args))) == 0 {
			var want, got any
			if json.Unmarshal([]byte(args), &want) == nil && json.Unmarshal(out, &got) == nil && fmt.Sprint(want) != fmt.Sprint(got) {
				t.Fatalf("Fill(%q) without references = %s", args, out)
			}
		}
	})
}
