package builtin

import (
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEvaluateLimits(t *testing.T) {
	tests := []struct {
		name, expr, want string
	}{
		{"too long", strings.Repeat("1+", 500) + "1", "the expression is too long (1001 bytes; the limit is 1000)"},
		{"nested parentheses", strings.Repeat("(", 70) + "1" + strings.Repeat(")", 70), "the expression is nested too deeply (the limit is 64 levels) at position 65"},
		{"many signs", strings.Repeat("-", 100) + "1", "the expression is nested too deeply (the limit is 64 levels) at position 65"},
		{"power tower", strings.Repeat("1^", 100) + "1", "the expression is nested too deeply (the limit is 64 levels) at position 129"},
		{"nested calls", strings.Repeat("abs(", 80) + "1" + strings.Repeat(")", 80), "the expression is nested too deeply (the limit is 64 levels) at position 257"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := evaluate(tt.expr)
			if err == nil || err.Error() != tt.want {
				t.Errorf("evaluate: got %v, want %q", err, tt.want)
			}
		})
	}
	// Just inside the limits.
	if v, err := evaluate(strings.Repeat("(", 60) + "1" + strings.Repeat(")", 60)); err != nil || v != 1 {
		t.Errorf("60 parentheses: %v, %v", v, err)
	}
	if v, err := evaluate(strings.Repeat("1+", 499) + "1"); err != nil || v != 500 {
		t.Errorf("999 bytes: %v, %v", v, err)
	}
}

func TestFormatNumber(t *testing.T) {
	tests := []struct {
		v    float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "0"},
		{42, "42"},
		{-42, "-42"},
		{0.1 + 0.2, "0.3"},
		{1.0 / 3, "0.333333333333333"},
		{123456.789, "123456.789"},
		{999999999999999, "999999999999999"},
		{1e15, "1e+15"},
		{1.5e20, "1.5e+20"},
		{-2.5e-9, "-2.5e-09"},
		{math.MaxFloat64, "1.79769313486232e+308"},
	}
	for _, tt := range tests {
		if got := formatNumber(tt.v); got != tt.want {
			t.Errorf("formatNumber(%v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

func FuzzEvaluate(f *testing.F) {
	for _, s := range []string{
		"1 + 2", "(2 + 3) * 4", "-2 ^ 2", "2 ** 3 ** 2", "sqrt(16) + abs(-1)",
		"max(1, min(5, 3) * 2, sqrt(49))", "1e308 * 10", "1 / 0", "5 % 0", "(1 + 2))",
		"0x1F", "1.2.3", "é", "pi * e", "log(0)", "round(-2.5)", "(((((1)))))", "--+-1",
		"pow(-8, 1/3)", "1e-400", ".5", "1e",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		v, err := evaluate(expr)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("evaluate(%q): empty error", expr)
			}
			return
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("evaluate(%q) = %v", expr, v)
		}
		// The formatted result reads back as (almost) the same number.
		s := formatNumber(v)
		if !utf8.ValidString(s) {
			t.Fatalf("formatNumber(%v) = %q", v, s)
		}
		w, err := evaluate(s)
		if err != nil {
			t.Fatalf("evaluate(formatNumber(%v) = %q): %v", v, s, err)
		}
		if d := math.Abs(w - v); d > 1e-14*math.Abs(v) && d > 1e-300 {
			t.Fatalf("evaluate(%q) = %v, but its formatted result %q reads back as %v", expr, v, s, w)
		}
	})
}
