package metrics

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// Metric types, as the exposition names them.
const (
	typeCounter   = "counter"
	typeGauge     = "gauge"
	typeHistogram = "histogram"
)

// Overflow is the label value of every label of the one series that
// collects what arrives after a metric reached its cap on distinct label
// sets.
const Overflow = "other"

// DefaultMaxSeries is the default cap on distinct label sets per metric.
const DefaultMaxSeries = 1000

// maxLabelBytes bounds a label value; longer ones are cut at a rune boundary.
const maxLabelBytes = 128

// family is one metric: its description and its series by label values.
type family struct {
	name, help, typ string
	labels          []string
	buckets         []float64 // histograms: upper bounds, ascending, without +Inf
	max             int
	series          map[string]*series
}

// series is one label set's value.
type series struct {
	values []string
	value  float64  // counters and gauges
	counts []uint64 // histograms: observations per bucket (not cumulative), the last for +Inf
	sum    float64
	count  uint64
}

func newFamily(name, typ, help string, max int, buckets []float64, labels ...string) *family {
	return &family{name: name, help: help, typ: typ, labels: labels, buckets: buckets, max: max, series: map[string]*series{}}
}

// get returns the series of the label values, creating it; past the cap,
// the overflow series.
func (f *family) get(values ...string) *series {
	for i, v := range values {
		values[i] = labelValue(v)
	}
	key := seriesKey(values)
	if s := f.series[key]; s != nil {
		return s
	}
	if len(f.series) >= f.max {
		for i := range values {
			values[i] = Overflow
		}
		key = seriesKey(values)
		if s := f.series[key]; s != nil {
			return s
		}
	}
	s := &series{values: slices.Clone(values)}
	if f.typ == typeHistogram {
		s.counts = make([]uint64, len(f.buckets)+1)
	}
	f.series[key] = s
	return s
}

func (f *family) add(v float64, values ...string) { f.get(values...).value += v }

func (f *family) observe(v float64, values ...string) {
	s := f.get(values...)
	i, _ := slices.BinarySearch(f.buckets, v) // the first bound >= v: le is inclusive
	s.counts[i]++
	s.sum += v
	s.count++
}

// sorted returns the series in label-value order.
func (f *family) sorted() []*series {
	out := make([]*series, 0, len(f.series))
	for _, s := range f.series {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *series) int { return slices.Compare(a.values, b.values) })
	return out
}

func seriesKey(values []string) string { return strings.Join(values, "\x00") }

// labelValue makes v a label value: valid UTF-8 without NUL (the series
// key's separator), at most maxLabelBytes long.
func labelValue(v string) string {
	v = strings.ToValidUTF8(v, "\uFFFD")
	v = strings.ReplaceAll(v, "\x00", "\uFFFD")
	if len(v) > maxLabelBytes {
		cut := maxLabelBytes
		for cut > 0 && !utf8.RuneStart(v[cut]) {
			cut--
		}
		v = v[:cut]
	}
	return v
}
