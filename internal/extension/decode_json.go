package extension

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// decodeJSON reads documents from data, which is valid JSON: an object,
// or (when many) an array of objects.
func decodeJSON(data []byte, many, named bool) ([]Doc, error) {
	var ps problems
	var docs []Doc
	lines := newLineIndex(data)
	t := bytes.TrimLeft(data, " \t\r\n")
	start := len(data) - len(t)
	if t[0] == '{' {
		docs = append(docs, decodeJSONDoc(data, lines, start, named, &ps))
		return docs, ps.err()
	}
	if !many {
		ps.add(lines.at(start), "", "must be one document (an object with type, name and spec), not a list")
		return nil, ps.err()
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	_, _ = dec.Token() // '['; data is valid JSON
	for dec.More() {
		var raw json.RawMessage
		off := skipSpace(data, int(dec.InputOffset()))
		_ = dec.Decode(&raw)
		if raw[0] != '{' {
			ps.add(lines.at(off), "", "each document must be an object with type, name and spec")
			continue
		}
		docs = append(docs, decodeJSONDoc(data, lines, off, named, &ps))
	}
	if len(docs) == 0 && len(ps) == 0 {
		ps.add(lines.at(start), "", "no documents")
	}
	if len(ps) > 0 {
		return nil, ps.err()
	}
	return docs, nil
}

// decodeJSONDoc reads the object at data[off:].
func decodeJSONDoc(data []byte, lines lineIndex, off int, named bool, ps *problems) Doc {
	d := Doc{Line: lines.at(off)}
	dec := json.NewDecoder(bytes.NewReader(data[off:]))
	dec.UseNumber()
	_, _ = dec.Token() // '{'
	seen := map[string]int{}
	for dec.More() {
		tok, _ := dec.Token()
		key, _ := tok.(string)
		line := lines.at(off + int(dec.InputOffset()))
		var raw json.RawMessage
		_ = dec.Decode(&raw) // data is valid JSON
		if first, dup := seen[key]; dup {
			ps.add(line, key, "set twice (first on line %d)", first)
			continue
		}
		seen[key] = line
		switch key {
		case "type", "name":
			var s string
			if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
				ps.add(line, key, "must be a string")
			} else if key == "type" {
				d.Type = s
			} else {
				d.Name = s
			}
		case "enabled":
			switch string(raw) {
			case "true", "false":
				b := string(raw) == "true"
				d.Enabled = &b
			case "null":
			default:
				ps.add(line, key, "must be true or false")
			}
		case "spec":
			if raw[0] != '{' {
				ps.add(line, key, "must be a mapping")
				continue
			}
			before := len(*ps)
			checkJSONKeys(data, lines, off+int(dec.InputOffset())-len(raw), ps)
			if len(*ps) == before {
				var b bytes.Buffer
				_ = json.Compact(&b, raw)
				d.Spec = b.Bytes()
			}
		default:
			ps.add(line, key, "unknown field (a document has %s)", orList(docKeys))
		}
	}
	checkDoc(&d, seen, named, ps)
	return d
}

// checkJSONKeys reports keys written twice in any object of the value at
// data[off:] (encoding/json would keep the last one silently).
func checkJSONKeys(data []byte, lines lineIndex, off int, ps *problems) {
	dec := json.NewDecoder(bytes.NewReader(data[off:]))
	dec.UseNumber()
	walkJSON(dec, lines, off, "spec", 0, ps)
}

// walkJSON reads one value from dec, which reads data from off, and
// reports whether to go on (false: too deep, or the text ended).
func walkJSON(dec *json.Decoder, lines lineIndex, off int, path string, depth int, ps *problems) bool {
	tok, err := dec.Token()
	if err != nil {
		return false
	}
	if depth >= maxDepth {
		ps.add(lines.at(off+int(dec.InputOffset())), path, "nested more than %d deep", maxDepth)
		return false
	}
	switch tok {
	case json.Delim('{'):
		keys := map[string]int{}
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return false
			}
			key, _ := t.(string)
			line := lines.at(off + int(dec.InputOffset()))
			if first, dup := keys[key]; dup {
				ps.add(line, joinField(path, key), "set twice (first on line %d)", first)
			} else {
				keys[key] = line
			}
			if !walkJSON(dec, lines, off, joinField(path, key), depth+1, ps) {
				return false
			}
		}
		_, _ = dec.Token() // '}'
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if !walkJSON(dec, lines, off, path+"["+strconv.Itoa(i)+"]", depth+1, ps) {
				return false
			}
		}
		_, _ = dec.Token() // ']'
	default:
		// Numbers are kept as written; one a float64 cannot hold would be
		// read differently by every reader of the spec.
		if n, ok := tok.(json.Number); ok {
			if f, err := strconv.ParseFloat(string(n), 64); err != nil || math.IsInf(f, 0) {
				ps.add(lines.at(off+int(dec.InputOffset())), path, "must be a finite number, not %s", n)
			}
		}
	}
	return true
}
