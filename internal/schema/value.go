package schema

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// toFloat reads a number of a decoded schema or document.
func toFloat(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil && !isRange(err) {
			return 0, false
		}
		return f, true // out of range: ±Inf (or 0 for a tiny number)
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	case int32:
		return float64(v), true
	}
	return 0, false
}

// toFloatValue is toFloat for a value known to be a number.
func toFloatValue(v any) float64 {
	f, _ := toFloat(v)
	return f
}

// equal reports whether two JSON values are equal, numbers by value.
func equal(a, b any) bool {
	if fa, ok := toFloat(a); ok {
		fb, ok := toFloat(b)
		return ok && fa == fb
	}
	switch a := a.(type) {
	case nil:
		return b == nil
	case bool:
		bb, ok := b.(bool)
		return ok && a == bb
	case string:
		bs, ok := b.(string)
		return ok && a == bs
	case []any:
		bl, ok := b.([]any)
		return ok && slices.EqualFunc(a, bl, equal)
	case map[string]any:
		bm, ok := b.(map[string]any)
		return ok && maps.EqualFunc(a, bm, equal)
	}
	return false
}

// literal writes a JSON value for a message: JSON with sorted keys and
// numbers as formatNumber writes them; a string alone (top) is unquoted.
func literal(v any, top bool) string {
	if f, ok := toFloat(v); ok {
		return formatNumber(f)
	}
	switch v := v.(type) {
	case string:
		if top {
			return v
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(v)
		return strings.TrimSuffix(b.String(), "\n")
	case []any:
		items := make([]string, len(v))
		for i, x := range v {
			items[i] = literal(x, false)
		}
		return "[" + strings.Join(items, ",") + "]"
	case map[string]any:
		items := make([]string, 0, len(v))
		for _, k := range sortedKeys(v) {
			items = append(items, literal(k, false)+":"+literal(v[k], false))
		}
		return "{" + strings.Join(items, ",") + "}"
	case bool:
		return strconv.FormatBool(v)
	}
	return "null"
}

// formatNumber writes f as JavaScript's String(f) does, so that the
// console's messages are the server's.
func formatNumber(f float64) string {
	if math.IsInf(f, 0) {
		if f > 0 {
			return "Infinity"
		}
		return "-Infinity"
	}
	if f == 0 {
		return "0" // JavaScript writes -0 as 0
	}
	if a := math.Abs(f); a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // 1e-07, 1.5e+21
	mant, exp, _ := strings.Cut(s, "e")
	sign := exp[:1]
	exp = strings.TrimLeft(exp[1:], "0")
	return mant + "e" + sign + exp
}

// sortedKeys lists a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
