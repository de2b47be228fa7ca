package metrics

import (
	"bufio"
	"math"
	"strconv"
	"strings"
)

// ContentType is the content type of the exposition WriteMetrics writes: the
// Prometheus text format, version 0.0.4.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

// escapeLabel escapes a label value for the text format: backslash, double
// quote and line feed.
func escapeLabel(v string) string { return labelEscaper.Replace(v) }

// escapeHelp escapes a HELP text: backslash and line feed.
func escapeHelp(v string) string { return helpEscaper.Replace(v) }

// formatValue writes a sample value: integers without an exponent up to
// 2^53, other numbers in the shortest form that reads back the same, and
// +Inf, -Inf, NaN as Prometheus spells them.
func formatValue(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	case v == math.Trunc(v) && math.Abs(v) < 1<<53:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// writeHeader writes a metric's HELP and TYPE lines.
func writeHeader(w *bufio.Writer, name, typ, help string) {
	w.WriteString("# HELP ")
	w.WriteString(name)
	w.WriteByte(' ')
	w.WriteString(escapeHelp(help))
	w.WriteString("\n# TYPE ")
	w.WriteString(name)
	w.WriteByte(' ')
	w.WriteString(typ)
	w.WriteByte('\n')
}

// writeSample writes one sample line; le, if not empty, is added as the
// last label (a histogram bucket's).
func writeSample(w *bufio.Writer, name string, labels, values []string, le string, v float64) {
	w.WriteString(name)
	if len(labels) > 0 || le != "" {
		w.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				w.WriteByte(',')
			}
			w.WriteString(l)
			w.WriteString(`="`)
			w.WriteString(escapeLabel(values[i]))
			w.WriteByte('"')
		}
		if le != "" {
			if len(labels) > 0 {
				w.WriteByte(',')
			}
			w.WriteString(`le="`)
			w.WriteString(le)
			w.WriteByte('"')
		}
		w.WriteByte('}')
	}
	w.WriteByte(' ')
	w.WriteString(formatValue(v))
	w.WriteByte('\n')
}

// writeFamily writes a metric and its series, in label-value order.
func writeFamily(w *bufio.Writer, f *family) {
	writeHeader(w, f.name, f.typ, f.help)
	for _, s := range f.sorted() {
		if f.typ != typeHistogram {
			writeSample(w, f.name, f.labels, s.values, "", s.value)
			continue
		}
		var cum uint64
		for i, b := range f.buckets {
			cum += s.counts[i]
			writeSample(w, f.name+"_bucket", f.labels, s.values, formatValue(b), float64(cum))
		}
		writeSample(w, f.name+"_bucket", f.labels, s.values, "+Inf", float64(s.count))
		writeSample(w, f.name+"_sum", f.labels, s.values, "", s.sum)
		writeSample(w, f.name+"_count", f.labels, s.values, "", float64(s.count))
	}
}
