package builtin_test

import (
	"encoding/json"
	"net/netip"
	"testing"
	"time"
	_ "time/tzdata" // the tests must not depend on the machine's zoneinfo

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"agentd/internal/tool"
	"agentd/internal/tool/builtin"
)

var ignoreDuration = cmpopts.IgnoreFields(tool.Outcome{}, "Duration")

func newRegistry(t testing.TB, opts *builtin.Options) *tool.Registry {
	t.Helper()
	r := tool.NewRegistry(nil)
	for _, tl := range builtin.Tools(opts) {
		if err := r.Register(tl); err != nil {
			t.Fatalf("Register(%s): %v", tl.Spec().Name, err)
		}
	}
	return r
}

func run(t *testing.T, r *tool.Registry, name, args string) tool.Outcome {
	t.Helper()
	return r.Run(t.Context(), &tool.Call{ID: "call_1", Name: name, Args: json.RawMessage(args)}, nil)
}

func ok(out string) tool.Outcome { return tool.Outcome{Result: tool.Result{Output: out}} }
func fail(msg string) tool.Outcome {
	return tool.Outcome{Result: tool.Result{Output: msg, IsError: true}}
}

func TestSpecs(t *testing.T) {
	type flags struct {
		Name                        string
		ReadOnly, Idempotent, Risky bool
	}
	var got []flags
	for _, s := range newRegistry(t, nil).Specs() {
		if s.Description == "" {
			t.Errorf("%s has no description", s.Name)
		}
		got = append(got, flags{s.Name, s.ReadOnly, s.Idempotent, s.Risky})
	}
	want := []flags{
		{Name: "calculator", ReadOnly: true, Idempotent: true},
		{Name: "clock", ReadOnly: true},
		{Name: "http_fetch", Risky: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("specs (-want +got):\n%s", diff)
	}
	// An agent with the default policy sees the safe tools only.
	var visible []string
	for _, s := range newRegistry(t, nil).Visible(tool.Policy{}) {
		visible = append(visible, s.Name)
	}
	if diff := cmp.Diff([]string{"calculator", "clock"}, visible); diff != "" {
		t.Errorf("visible with the default policy (-want +got):\n%s", diff)
	}
}

func TestClock(t *testing.T) {
	now := time.Date(2024, 7, 14, 10, 0, 0, 0, time.UTC)
	r := newRegistry(t, &builtin.Options{Now: func() time.Time { return now }})
	tests := []struct {
		name, args string
		want       tool.Outcome
	}{
		{"default is UTC", `{}`,
			ok(`{"time":"2024-07-14T10:00:00Z","timezone":"UTC","utc_offset":"+00:00","weekday":"Sunday","unix":1720951200}`)},
		{"no arguments", ``,
			ok(`{"time":"2024-07-14T10:00:00Z","timezone":"UTC","utc_offset":"+00:00","weekday":"Sunday","unix":1720951200}`)},
		{"Paris in summer", `{"timezone":"Europe/Paris"}`,
			ok(`{"time":"2024-07-14T12:00:00+02:00","timezone":"Europe/Paris","utc_offset":"+02:00","weekday":"Sunday","unix":1720951200}`)},
		{"half-hour offset", `{"timezone":"Asia/Kolkata","format":"rfc3339"}`,
			ok(`{"time":"2024-07-14T15:30:00+05:30","timezone":"Asia/Kolkata","utc_offset":"+05:30","weekday":"Sunday","unix":1720951200}`)},
		{"previous day", `{"timezone":"Pacific/Honolulu"}`,
			ok(`{"time":"2024-07-14T00:00:00-10:00","timezone":"Pacific/Honolulu","utc_offset":"-10:00","weekday":"Sunday","unix":1720951200}`)},
		{"across midnight", `{"timezone":"Pacific/Kiritimati"}`,
			ok(`{"time":"2024-07-15T00:00:00+14:00","timezone":"Pacific/Kiritimati","utc_offset":"+14:00","weekday":"Monday","unix":1720951200}`)},
		{"unix format", `{"timezone":"America/New_York","format":"unix"}`,
			ok(`{"time":"1720951200","timezone":"America/New_York","utc_offset":"-04:00","weekday":"Sunday","unix":1720951200}`)},
		{"explicit UTC", `{"timezone":"UTC"}`,
			ok(`{"time":"2024-07-14T10:00:00Z","timezone":"UTC","utc_offset":"+00:00","weekday":"Sunday","unix":1720951200}`)},
		{"unknown zone", `{"timezone":"Mars/Olympus_Mons"}`,
			fail(`unknown time zone "Mars/Olympus_Mons": use an IANA name such as "Europe/Paris" or "America/New_York"`)},
		{"path in zone", `{"timezone":"../../etc/passwd"}`,
			fail(`unknown time zone "../../etc/passwd": use an IANA name such as "Europe/Paris" or "America/New_York"`)},
		{"zone of the wrong type", `{"timezone":5}`,
			fail(`invalid arguments for clock: property "timezone": type: 5 has type "integer", want "string"`)},
		{"unknown format", `{"format":"iso"}`,
			fail(`invalid arguments for clock: property "format": enum: iso does not equal any of: [rfc3339 unix]`)},
		{"unknown argument", `{"tz":"UTC"}`,
			fail(`invalid arguments for clock: unexpected additional properties ["tz"]`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, run(t, r, "clock", tt.args), ignoreDuration); diff != "" {
				t.Errorf("clock %s (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

func TestClockDefaultsToTimeNow(t *testing.T) {
	r := newRegistry(t, nil)
	before := time.Now().Unix()
	out := run(t, r, "clock", `{"format":"unix"}`)
	after := time.Now().Unix()
	var got struct{ Unix int64 }
	if err := json.Unmarshal([]byte(out.Result.Output), &got); err != nil {
		t.Fatalf("clock output %q: %v", out.Result.Output, err)
	}
	if got.Unix < before || got.Unix > after {
		t.Errorf("clock says %d, not between %d and %d", got.Unix, before, after)
	}
}

func TestCalculator(t *testing.T) {
	r := newRegistry(t, nil)
	tests := []struct {
		expr string
		want tool.Outcome
	}{
		{"1 + 2", ok("3")},
		{"(2 + 3) * 4", ok("20")},
		{"2 + 3 * 4", ok("14")},
		{"10 - 4 - 3", ok("3")},
		{"100 / 10 / 5", ok("2")},
		{"7 % 3", ok("1")},
		{"-7 % 3", ok("-1")},
		{"5.5 % 2", ok("1.5")},
		{"2 ^ 10", ok("1024")},
		{"2 ** 10", ok("1024")},
		{"2 ^ 3 ^ 2", ok("512")},
		{"-2 ^ 2", ok("-4")},
		{"(-2) ^ 2", ok("4")},
		{"2 ^ -1", ok("0.5")},
		{"--3", ok("3")},
		{"-+-3", ok("3")},
		{"0.1 + 0.2", ok("0.3")},
		{"1 / 3", ok("0.333333333333333")},
		{"2 / 3", ok("0.666666666666667")},
		{".5 + 1.", ok("1.5")},
		{"6.02e23", ok("6.02e+23")},
		{"1.5E-3 * 2", ok("0.003")},
		{"1e15", ok("1e+15")},
		{"999999999999999", ok("999999999999999")},
		{"-12345678", ok("-12345678")},
		{"1e-7", ok("1e-07")},
		{"0 * -1", ok("0")},
		{"pi", ok("3.14159265358979")},
		{"E", ok("2.71828182845905")},
		{"sqrt(16)", ok("4")},
		{"SQRT(2) ^ 2", ok("2")},
		{"abs(-3.5)", ok("3.5")},
		{"min(3, 1, 2)", ok("1")},
		{"max(3, 1, 2)", ok("3")},
		{"max(-1)", ok("-1")},
		{"round(2.5)", ok("3")},
		{"round(-2.5)", ok("-3")},
		{"floor(-2.5)", ok("-3")},
		{"ceil(2.1)", ok("3")},
		{"log(1000)", ok("3")},
		{"ln(e ^ 2)", ok("2")},
		{"exp(0)", ok("1")},
		{"sin(pi / 2)", ok("1")},
		{"cos(pi)", ok("-1")},
		{"tan(pi / 4)", ok("1")},
		{"sin(pi)", ok("1.22464679914735e-16")},
		{"pow(2, 0.5) * pow(2, 0.5)", ok("2")},
		{"max(1, min(5, 3) * 2, sqrt(49))", ok("7")},
		{"  ( 1 )\t+\n( 2 ) ", ok("3")},

		{"1 / 0", fail("division by zero at position 3")},
		{"5 % (2 - 2)", fail("division by zero at position 3")},
		{"0 ^ -1", fail("division by zero (zero to a negative power) at position 3")},
		{"(-8) ^ (1/3)", fail("a negative number to a fractional power is not a real number at position 6")},
		{"10 ^ 400", fail("the result is too large")},
		{"exp(1000)", fail("the result is too large")},
		{"1e308 * 10", fail("the result is too large")},
		{"1e999", fail("number '1e999' is too large at position 1")},
		{"sqrt(-1)", fail("sqrt: square root of a negative number at position 1")},
		{"log(0)", fail("log: logarithm of a number that is not positive at position 1")},
		{"ln(-1)", fail("ln: logarithm of a number that is not positive at position 1")},
		{"pow(-8, 0.5)", fail("pow: a negative number to a fractional power is not a real number at position 1")},
		{"foo(1)", fail("unknown function foo at position 1")},
		{"2 * foo", fail("unknown name 'foo' (the constants are pi and e) at position 5")},
		{"sqrt 4", fail("function sqrt needs its arguments in parentheses, as in sqrt(x) at position 1")},
		{"sqrt(1, 2)", fail("sqrt takes 1 argument, got 2 at position 1")},
		{"pow(2)", fail("pow takes 2 arguments, got 1 at position 1")},
		{"min()", fail("min takes at least 1 argument, got 0 at position 1")},
		{"(1 + 2))", fail("unexpected ')' at position 8")},
		{"(1 + 2", fail("missing ')' for the '(' at position 1")},
		{"max(1, 2", fail("missing ')' for the '(' at position 4")},
		{"(1 + 2 3)", fail("unexpected '3', expected ')' at position 8")},
		{"1 +", fail("unexpected end of expression")},
		{"* 2", fail("unexpected '*' at position 1")},
		{"2 pi", fail("unexpected 'pi' at position 3")},
		{"1,2", fail("unexpected ',' at position 2")},
		{"()", fail("unexpected ')' at position 2")},
		{"1.2.3", fail("malformed number '1.2.3' at position 1")},
		{"2x", fail("malformed number '2x' at position 1")},
		{"1e", fail("malformed number '1e' at position 1")},
		{"1e+", fail("malformed number '1e+' at position 1")},
		{".", fail("malformed number '.' at position 1")},
		{"0x1F", fail("malformed number '0x1F' at position 1")},
		{"2 $ 3", fail("unexpected character '$' at position 3")},
		{"é + 1", fail("unexpected character 'é' at position 1")},
		{"1 + é", fail("unexpected character 'é' at position 5")},
		{"π", fail("unexpected character 'π' at position 1")},
		{"", fail("empty expression")},
		{"   ", fail("empty expression")},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			args, _ := json.Marshal(map[string]string{"expression": tt.expr})
			if diff := cmp.Diff(tt.want, run(t, r, "calculator", string(args)), ignoreDuration); diff != "" {
				t.Errorf("calculator %q (-want +got):\n%s", tt.expr, diff)
			}
		})
	}
}

func TestCalculatorArguments(t *testing.T) {
	r := newRegistry(t, nil)
	tests := []struct {
		args string
		want tool.Outcome
	}{
		{`{}`, fail(`invalid arguments for calculator: required: missing properties: ["expression"]`)},
		{`{"expression":42}`, fail(`invalid arguments for calculator: property "expression": type: 42 has type "integer", want "string"`)},
		{`{"expression":"1","precision":3}`, fail(`invalid arguments for calculator: unexpected additional properties ["precision"]`)},
		{`["1+1"]`, fail(`invalid arguments for calculator: arguments must be a JSON object, got an array`)},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, run(t, r, "calculator", tt.args), ignoreDuration); diff != "" {
			t.Errorf("calculator %s (-want +got):\n%s", tt.args, diff)
		}
	}
}

func BenchmarkRunCalculator(b *testing.B) {
	r := newRegistry(b, nil)
	c := &tool.Call{ID: "call_1", Name: "calculator", Args: json.RawMessage(`{"expression":"(1 + 2.5) * sqrt(16) - 2 ^ 3 / max(1, 2, 4)"}`)}
	b.ReportAllocs()
	for b.Loop() {
		out := r.Run(b.Context(), c, nil)
		if out.Result.IsError || out.Result.Output != "12" {
			b.Fatalf("calculator = %+v", out.Result)
		}
	}
}

// loopbackOnly lets http_fetch reach the tests' servers on 127.0.0.1 only.
func loopbackOnly() []netip.Prefix { return []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")} }
