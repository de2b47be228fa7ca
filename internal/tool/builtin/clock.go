package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"agentd/internal/tool"
)

type clock struct {
	now func() time.Time
}

func newClock(now func() time.Time) clock {
	if now == nil {
		now = time.Now
	}
	return clock{now: now}
}

const clockSchema = `{
	"type": "object",
	"properties": {
		"timezone": {"type": "string", "description": "IANA time zone name, such as \"Europe/Paris\" or \"America/New_York\". Default: UTC."},
		"format": {"type": "string", "enum": ["rfc3339", "unix"], "description": "How to write \"time\": \"rfc3339\" (default) or \"unix\" (seconds since 1970-01-01 UTC)."}
	},
	"additionalProperties": false
}`

func (clock) Spec() tool.Spec {
	return tool.Spec{
		Name:        "clock",
		Description: "Returns the current date and time, in UTC or in a given IANA time zone, with the UTC offset, the weekday and the Unix time.",
		InputSchema: json.RawMessage(clockSchema),
		ReadOnly:    true,
	}
}

type clockArgs struct {
	Timezone string `json:"timezone"`
	Format   string `json:"format"`
}

type clockResult struct {
	Time      string `json:"time"`
	Timezone  string `json:"timezone"`
	UTCOffset string `json:"utc_offset"`
	Weekday   string `json:"weekday"`
	Unix      int64  `json:"unix"`
}

func (c clock) Call(_ context.Context, call *tool.Call) (tool.Result, error) {
	var args clockArgs
	if err := json.Unmarshal(call.Args, &args); err != nil {
		return tool.Result{}, fmt.Errorf("clock: %w", err)
	}
	loc := time.UTC
	if args.Timezone != "" {
		var err error
		if loc, err = time.LoadLocation(args.Timezone); err != nil {
			return tool.Result{}, fmt.Errorf("unknown time zone %q: use an IANA name such as \"Europe/Paris\" or \"America/New_York\"", args.Timezone)
		}
	}
	now := c.now().In(loc)
	res := clockResult{
		Time:      now.Format(time.RFC3339),
		Timezone:  loc.String(),
		UTCOffset: now.Format("-07:00"),
		Weekday:   now.Weekday().String(),
		Unix:      now.Unix(),
	}
	switch args.Format {
	case "", "rfc3339":
	case "unix":
		res.Time = strconv.FormatInt(res.Unix, 10)
	default: // the schema's enum keeps other values out
		return tool.Result{}, fmt.Errorf("unknown format %q: use \"rfc3339\" or \"unix\"", args.Format)
	}
	out, err := json.Marshal(res)
	if err != nil {
		return tool.Result{}, fmt.Errorf("clock: %w", err)
	}
	return tool.Result{Output: string(out)}, nil
}
