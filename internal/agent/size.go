package agent

import (
	"fmt"
	"strconv"
	"strings"
)

// Size is a number of bytes written as "512MiB", "1GiB", "64KB" or a
// plain number of bytes in YAML and JSON. K, M, G and T are powers of
// 1000; Ki, Mi, Gi and Ti powers of 1024; a trailing B is optional.
type Size int64

// sizeUnits are the suffixes Size accepts, longest first.
var sizeUnits = []struct {
	suffix string
	mul    int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"B", 1},
}

// MarshalText writes s in the largest binary unit that divides it.
func (s Size) MarshalText() ([]byte, error) {
	for _, u := range []struct {
		suffix string
		mul    int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if s != 0 && int64(s)%u.mul == 0 {
			return []byte(strconv.FormatInt(int64(s)/u.mul, 10) + u.suffix), nil
		}
	}
	return []byte(strconv.FormatInt(int64(s), 10)), nil
}

// UnmarshalText parses "512MiB", "1.5GB" or "1048576".
func (s *Size) UnmarshalText(b []byte) error {
	text := strings.TrimSpace(string(b))
	num, mul := text, int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(text, u.suffix) {
			num, mul = strings.TrimSpace(strings.TrimSuffix(text, u.suffix)), u.mul
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || v*float64(mul) > 1<<62 {
		return fmt.Errorf("size %q: want a number of bytes such as 1048576, 512MiB or 1GiB", text)
	}
	*s = Size(v * float64(mul))
	return nil
}

// UnmarshalJSON takes a number of bytes or a string UnmarshalText takes.
func (s *Size) UnmarshalJSON(b []byte) error {
	if t := strings.TrimSpace(string(b)); t != "" && t[0] == '"' {
		u, err := strconv.Unquote(t)
		if err != nil {
			return fmt.Errorf("size %s: %w", t, err)
		}
		return s.UnmarshalText([]byte(u))
	}
	return s.UnmarshalText(b)
}
