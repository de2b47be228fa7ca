package metrics

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// A small parser of the text exposition format 0.0.4, strict enough to
// catch what a Prometheus server would refuse or misread: every sample
// under its family's HELP and TYPE lines, names and label names of the
// allowed characters, only the three escapes in label values, no
// duplicate series, counters named _total and never negative, histogram
// buckets cumulative with +Inf equal to the count.

type sample struct {
	name   string
	labels map[string]string
	value  float64
}

type parsedFamily struct {
	name, help, typ string
	samples         []sample
}

var (
	metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelNameRE  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

func parseExposition(text string) ([]parsedFamily, error) {
	if text != "" && !strings.HasSuffix(text, "\n") {
		return nil, fmt.Errorf("does not end with a line feed")
	}
	var fams []parsedFamily
	seen := map[string]bool{}
	series := map[string]bool{}
	for n, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		n++
		switch {
		case strings.HasPrefix(line, "# HELP "):
			name, help, ok := strings.Cut(strings.TrimPrefix(line, "# HELP "), " ")
			if !ok || !metricNameRE.MatchString(name) {
				return nil, fmt.Errorf("line %d: bad HELP line %q", n, line)
			}
			if seen[name] {
				return nil, fmt.Errorf("line %d: second HELP for %s", n, name)
			}
			h, err := unescape(help, false)
			if err != nil {
				return nil, fmt.Errorf("line %d: HELP: %v", n, err)
			}
			seen[name] = true
			fams = append(fams, parsedFamily{name: name, help: h})
		case strings.HasPrefix(line, "# TYPE "):
			f := strings.Fields(strings.TrimPrefix(line, "# TYPE "))
			if len(f) != 2 || len(fams) == 0 || fams[len(fams)-1].name != f[0] || fams[len(fams)-1].typ != "" {
				return nil, fmt.Errorf("line %d: TYPE line %q not right after its HELP", n, line)
			}
			if !slices.Contains([]string{"counter", "gauge", "histogram", "summary", "untyped"}, f[1]) {
				return nil, fmt.Errorf("line %d: type %q", n, f[1])
			}
			fams[len(fams)-1].typ = f[1]
		case strings.HasPrefix(line, "#"):
		case line == "":
			return nil, fmt.Errorf("line %d: empty", n)
		default:
			s, err := parseSample(line)
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", n, err)
			}
			if len(fams) == 0 || fams[len(fams)-1].typ == "" {
				return nil, fmt.Errorf("line %d: sample before HELP and TYPE", n)
			}
			f := &fams[len(fams)-1]
			names := []string{f.name}
			if f.typ == "histogram" {
				names = []string{f.name + "_bucket", f.name + "_sum", f.name + "_count"}
			}
			if !slices.Contains(names, s.name) {
				return nil, fmt.Errorf("line %d: sample %s under family %s", n, s.name, f.name)
			}
			if f.typ == "counter" && (!strings.HasSuffix(f.name, "_total") || s.value < 0) {
				return nil, fmt.Errorf("line %d: counter %s = %v", n, f.name, s.value)
			}
			key := s.name + labelKey(s.labels, "")
			if series[key] {
				return nil, fmt.Errorf("line %d: duplicate series %s", n, key)
			}
			series[key] = true
			f.samples = append(f.samples, s)
		}
	}
	for _, f := range fams {
		if f.typ == "" {
			return nil, fmt.Errorf("%s: no TYPE", f.name)
		}
		if f.typ == "histogram" {
			if err := checkHistogram(f); err != nil {
				return nil, err
			}
		}
	}
	return fams, nil
}

func parseSample(line string) (sample, error) {
	s := sample{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return s, fmt.Errorf("no value: %q", line)
	}
	s.name = line[:i]
	if !metricNameRE.MatchString(s.name) {
		return s, fmt.Errorf("metric name %q", s.name)
	}
	rest := line[i:]
	if strings.HasPrefix(rest, "{") {
		rest = rest[1:]
		for !strings.HasPrefix(rest, "}") {
			eq := strings.Index(rest, `="`)
			if eq < 0 {
				return s, fmt.Errorf("label without =\": %q", rest)
			}
			name := rest[:eq]
			if !labelNameRE.MatchString(name) {
				return s, fmt.Errorf("label name %q", name)
			}
			if _, dup := s.labels[name]; dup {
				return s, fmt.Errorf("label %s twice", name)
			}
			rest = rest[eq+2:]
			var raw strings.Builder
			closed := false
			for j := 0; j < len(rest); j++ {
				c := rest[j]
				if c == '\\' && j+1 < len(rest) {
					raw.WriteByte(c)
					raw.WriteByte(rest[j+1])
					j++
					continue
				}
				if c == '"' {
					rest = rest[j+1:]
					closed = true
					break
				}
				raw.WriteByte(c)
			}
			if !closed {
				return s, fmt.Errorf("unterminated label value")
			}
			v, err := unescape(raw.String(), true)
			if err != nil {
				return s, err
			}
			s.labels[name] = v
			if strings.HasPrefix(rest, ",") {
				rest = rest[1:]
			} else if !strings.HasPrefix(rest, "}") {
				return s, fmt.Errorf("after a label: %q", rest)
			}
		}
		rest = rest[1:]
	}
	if !strings.HasPrefix(rest, " ") {
		return s, fmt.Errorf("no space before the value: %q", rest)
	}
	f := strings.Fields(rest)
	if len(f) < 1 || len(f) > 2 {
		return s, fmt.Errorf("value and timestamp: %q", rest)
	}
	v, err := parseValue(f[0])
	if err != nil {
		return s, err
	}
	s.value = v
	return s, nil
}

func parseValue(v string) (float64, error) {
	switch v {
	case "+Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	case "NaN":
		return math.NaN(), nil
	}
	return strconv.ParseFloat(v, 64)
}

// unescape undoes the escapes of a label value (\\, \", \n) or of a HELP
// text (\\, \n); any other backslash is an error.
func unescape(s string, label bool) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '"' && label {
			return "", fmt.Errorf("unescaped quote in %q", s)
		}
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		if i+1 == len(s) {
			return "", fmt.Errorf("trailing backslash in %q", s)
		}
		i++
		switch s[i] {
		case '\\':
			b.WriteByte('\\')
		case 'n':
			b.WriteByte('\n')
		case '"':
			if !label {
				return "", fmt.Errorf(`\" in HELP %q`, s)
			}
			b.WriteByte('"')
		default:
			return "", fmt.Errorf("unknown escape \\%c in %q", s[i], s)
		}
	}
	return b.String(), nil
}

// labelKey is a sample's labels in a canonical form, without the label drop.
func labelKey(labels map[string]string, drop string) string {
	var keys []string
	for k := range labels {
		if k != drop {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "{%s=%q}", k, labels[k])
	}
	return b.String()
}

func checkHistogram(f parsedFamily) error {
	type hist struct {
		les     []float64
		counts  []float64
		count   float64
		hasSum  bool
		hasCnt  bool
		hasBuck bool
	}
	hs := map[string]*hist{}
	get := func(s sample) *hist {
		k := labelKey(s.labels, "le")
		if hs[k] == nil {
			hs[k] = &hist{}
		}
		return hs[k]
	}
	for _, s := range f.samples {
		h := get(s)
		switch s.name {
		case f.name + "_bucket":
			le, err := parseValue(s.labels["le"])
			if err != nil {
				return fmt.Errorf("%s: le %q", f.name, s.labels["le"])
			}
			h.les = append(h.les, le)
			h.counts = append(h.counts, s.value)
			h.hasBuck = true
		case f.name + "_sum":
			h.hasSum = true
		case f.name + "_count":
			h.count, h.hasCnt = s.value, true
		}
	}
	for k, h := range hs {
		if !h.hasBuck || !h.hasSum || !h.hasCnt {
			return fmt.Errorf("%s%s: buckets, sum and count are not all there", f.name, k)
		}
		if !slices.IsSorted(h.les) || !math.IsInf(h.les[len(h.les)-1], 1) {
			return fmt.Errorf("%s%s: le not ascending to +Inf: %v", f.name, k, h.les)
		}
		if !slices.IsSorted(h.counts) || h.counts[len(h.counts)-1] != h.count {
			return fmt.Errorf("%s%s: buckets not cumulative up to the count: %v, count %v", f.name, k, h.counts, h.count)
		}
	}
	return nil
}
