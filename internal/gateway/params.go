package gateway

// The query parameters the routes read, each refused with a 400 that says
// what it wants.

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

func intParam(v string, def int64) (int64, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("want a non-negative integer, got %q", v)
	}
	return n, nil
}

// enumParam returns the query parameter name, which is "" or one of
// valid; any other value is a bad request that lists them.
func enumParam(q url.Values, name string, valid []string) (string, error) {
	v := q.Get(name)
	if v != "" && !slices.Contains(valid, v) {
		return "", badRequest("%s: %.100q is not one of %s", name, v, strings.Join(valid, ", "))
	}
	return v, nil
}

// boolParam returns the query parameter name: true for true or 1, false
// for false, 0 or none; any other value is a bad request.
func boolParam(q url.Values, name string) (bool, error) {
	switch v := q.Get(name); v {
	case "true", "1":
		return true, nil
	case "", "false", "0":
		return false, nil
	default:
		return false, badRequest("%s: want true or false, got %.100q", name, v)
	}
}

func durParam(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > 10*time.Minute {
		return 0, badRequest("wait must be a duration up to 10m, such as 30s")
	}
	return d, nil
}

func timeParam(v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return time.Time{}, badRequest("want an RFC 3339 time or a duration such as 72h, got %q", v)
	}
	return time.Now().Add(-d), nil
}
