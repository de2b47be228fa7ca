package builtin

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of the calculator's input.
const (
	maxExprLen   = 1000 // bytes
	maxExprDepth = 64   // nested parentheses, signs and powers
)

var (
	errEmpty    = errors.New("empty expression")
	errOverflow = errors.New("the result is too large")
)

// evaluate computes an arithmetic expression:
//
//	expr    = term { ("+" | "-") term }
//	term    = unary { ("*" | "/" | "%") unary }
//	unary   = ("-" | "+") unary | power
//	power   = primary [ ("^" | "**") unary ]       right-associative
//	primary = number | name | name "(" [ expr { "," expr } ] ")" | "(" expr ")"
//
// So -2^2 is -4 and 2^3^2 is 512. Errors name the position (counted in
// characters from 1) of the token at fault.
func evaluate(src string) (float64, error) {
	if len(src) > maxExprLen {
		return 0, fmt.Errorf("the expression is too long (%d bytes; the limit is %d)", len(src), maxExprLen)
	}
	if strings.TrimSpace(src) == "" {
		return 0, errEmpty
	}
	p := &parser{src: src}
	if err := p.next(); err != nil {
		return 0, err
	}
	v, err := p.expr()
	if err != nil {
		return 0, err
	}
	if p.tok.kind != tokEOF {
		return 0, p.unexpected()
	}
	return v, nil
}

type tokenKind uint8

const (
	tokEOF tokenKind = iota
	tokNum
	tokName
	tokOp // one of + - * / % ^ ( ) , ("**" is read as "^")
)

type token struct {
	kind tokenKind
	text string // as written
	pos  int    // byte offset in src
	num  float64
}

type parser struct {
	src   string
	off   int // byte offset of the next unread character
	tok   token
	depth int
}

// position converts a byte offset to a 1-based character position.
func (p *parser) position(off int) int {
	return utf8.RuneCountInString(p.src[:off]) + 1
}

func (p *parser) errorf(off int, format string, args ...any) error {
	return fmt.Errorf("%s at position %d", fmt.Sprintf(format, args...), p.position(off))
}

// unexpected reports the current token as out of place.
func (p *parser) unexpected() error {
	if p.tok.kind == tokEOF {
		return errors.New("unexpected end of expression")
	}
	return p.errorf(p.tok.pos, "unexpected '%s'", p.tok.text)
}

// next reads the next token into p.tok.
func (p *parser) next() error {
	for p.off < len(p.src) && isSpace(p.src[p.off]) {
		p.off++
	}
	start := p.off
	if start == len(p.src) {
		p.tok = token{kind: tokEOF, pos: start}
		return nil
	}
	c := p.src[start]
	switch {
	case isDigit(c) || c == '.':
		return p.number()
	case isLetter(c):
		for p.off < len(p.src) && (isLetter(p.src[p.off]) || isDigit(p.src[p.off])) {
			p.off++
		}
		p.tok = token{kind: tokName, text: p.src[start:p.off], pos: start}
		return nil
	case strings.IndexByte("+-*/%^(),", c) >= 0:
		p.off++
		text := p.src[start:p.off]
		if c == '*' && p.off < len(p.src) && p.src[p.off] == '*' {
			p.off++
			text = "^"
		}
		p.tok = token{kind: tokOp, text: text, pos: start}
		return nil
	}
	r, _ := utf8.DecodeRuneInString(p.src[start:])
	return p.errorf(start, "unexpected character %q", r)
}

// number reads digits [. digits] [e [+-] digits].
func (p *parser) number() error {
	start := p.off
	digits := p.digits()
	if p.off < len(p.src) && p.src[p.off] == '.' {
		p.off++
		digits += p.digits()
	}
	malformed := digits == 0
	if !malformed && p.off < len(p.src) && (p.src[p.off] == 'e' || p.src[p.off] == 'E') {
		p.off++
		if p.off < len(p.src) && (p.src[p.off] == '+' || p.src[p.off] == '-') {
			p.off++
		}
		malformed = p.digits() == 0
	}
	// A number running straight into a letter, digit or dot ("1.2.3",
	// "2x", "1e5e") is one malformed token, not two.
	for p.off < len(p.src) && (isLetter(p.src[p.off]) || isDigit(p.src[p.off]) || p.src[p.off] == '.') {
		p.off++
		malformed = true
	}
	text := p.src[start:p.off]
	if malformed {
		return p.errorf(start, "malformed number '%s'", text)
	}
	v, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return p.errorf(start, "number '%s' is too large", text)
	}
	p.tok = token{kind: tokNum, text: text, pos: start, num: v}
	return nil
}

func (p *parser) digits() int {
	n := 0
	for p.off < len(p.src) && isDigit(p.src[p.off]) {
		p.off++
		n++
	}
	return n
}

func (p *parser) isOp(op string) bool { return p.tok.kind == tokOp && p.tok.text == op }

func (p *parser) expr() (float64, error) {
	v, err := p.term()
	if err != nil {
		return 0, err
	}
	for p.isOp("+") || p.isOp("-") {
		op := p.tok
		if err := p.next(); err != nil {
			return 0, err
		}
		w, err := p.term()
		if err != nil {
			return 0, err
		}
		if op.text == "+" {
			v += w
		} else {
			v -= w
		}
		if math.IsInf(v, 0) {
			return 0, errOverflow
		}
	}
	return v, nil
}

func (p *parser) term() (float64, error) {
	v, err := p.unary()
	if err != nil {
		return 0, err
	}
	for p.isOp("*") || p.isOp("/") || p.isOp("%") {
		op := p.tok
		if err := p.next(); err != nil {
			return 0, err
		}
		w, err := p.unary()
		if err != nil {
			return 0, err
		}
		switch op.text {
		case "*":
			v *= w
		case "/":
			if w == 0 {
				return 0, p.errorf(op.pos, "division by zero")
			}
			v /= w
		case "%":
			if w == 0 {
				return 0, p.errorf(op.pos, "division by zero")
			}
			v = math.Mod(v, w)
		}
		if math.IsInf(v, 0) {
			return 0, errOverflow
		}
	}
	return v, nil
}

func (p *parser) unary() (float64, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxExprDepth {
		return 0, p.errorf(p.tok.pos, "the expression is nested too deeply (the limit is %d levels)", maxExprDepth)
	}
	if p.isOp("-") || p.isOp("+") {
		neg := p.tok.text == "-"
		if err := p.next(); err != nil {
			return 0, err
		}
		v, err := p.unary()
		if neg {
			v = -v
		}
		return v, err
	}
	return p.power()
}

func (p *parser) power() (float64, error) {
	base, err := p.primary()
	if err != nil || !p.isOp("^") {
		return base, err
	}
	op := p.tok
	if err := p.next(); err != nil {
		return 0, err
	}
	exp, err := p.unary()
	if err != nil {
		return 0, err
	}
	return pow(base, exp, func(format string, args ...any) error { return p.errorf(op.pos, format, args...) })
}

func pow(base, exp float64, errorf func(string, ...any) error) (float64, error) {
	if base == 0 && exp < 0 {
		return 0, errorf("division by zero (zero to a negative power)")
	}
	v := math.Pow(base, exp)
	switch {
	case math.IsNaN(v):
		return 0, errorf("a negative number to a fractional power is not a real number")
	case math.IsInf(v, 0):
		return 0, errOverflow
	}
	return v, nil
}

func (p *parser) primary() (float64, error) {
	switch tok := p.tok; {
	case tok.kind == tokNum:
		return tok.num, p.next()
	case p.isOp("("):
		if err := p.next(); err != nil {
			return 0, err
		}
		v, err := p.expr()
		if err != nil {
			return 0, err
		}
		if !p.isOp(")") {
			return 0, p.missing(")", tok)
		}
		return v, p.next()
	case tok.kind == tokName:
		if err := p.next(); err != nil {
			return 0, err
		}
		name := strings.ToLower(tok.text)
		if p.isOp("(") {
			return p.call(name, tok)
		}
		switch name {
		case "pi":
			return math.Pi, nil
		case "e":
			return math.E, nil
		}
		if _, ok := lookup(name); ok {
			return 0, p.errorf(tok.pos, "function %s needs its arguments in parentheses, as in %s(x)", name, name)
		}
		return 0, p.errorf(tok.pos, "unknown name '%s' (the constants are pi and e)", tok.text)
	}
	return 0, p.unexpected()
}

// missing reports that close was expected to match open.
func (p *parser) missing(close string, open token) error {
	if p.tok.kind == tokEOF {
		return p.errorf(open.pos, "missing '%s' for the '%s'", close, open.text)
	}
	return p.errorf(p.tok.pos, "unexpected '%s', expected '%s'", p.tok.text, close)
}

// call parses the arguments of name( and applies the function.
func (p *parser) call(name string, nameTok token) (float64, error) {
	open := p.tok
	f, ok := lookup(name)
	if !ok {
		return 0, p.errorf(nameTok.pos, "unknown function %s", nameTok.text)
	}
	if err := p.next(); err != nil {
		return 0, err
	}
	var buf [4]float64
	args := buf[:0]
	if !p.isOp(")") {
		for {
			v, err := p.expr()
			if err != nil {
				return 0, err
			}
			args = append(args, v)
			if !p.isOp(",") {
				break
			}
			if err := p.next(); err != nil {
				return 0, err
			}
		}
	}
	if !p.isOp(")") {
		return 0, p.missing(")", open)
	}
	if err := p.next(); err != nil {
		return 0, err
	}
	switch {
	case f.arity >= 0 && len(args) != f.arity:
		return 0, p.errorf(nameTok.pos, "%s takes %d argument%s, got %d", name, f.arity, plural(f.arity), len(args))
	case f.arity < 0 && len(args) == 0:
		return 0, p.errorf(nameTok.pos, "%s takes at least 1 argument, got 0", name)
	}
	v, err := f.fn(args)
	if err != nil {
		return 0, p.errorf(nameTok.pos, "%s: %v", name, err)
	}
	if math.IsInf(v, 0) {
		return 0, errOverflow
	}
	if math.IsNaN(v) {
		return 0, p.errorf(nameTok.pos, "%s: the result is not a real number", name)
	}
	return v, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

type function struct {
	arity int // -1: one or more
	fn    func(args []float64) (float64, error)
}

func unary(f func(float64) float64) function {
	return function{1, func(a []float64) (float64, error) { return f(a[0]), nil }}
}

// lookup returns the calculator's function called name. Angles are in
// radians.
func lookup(name string) (function, bool) {
	switch name {
	case "sqrt":
		return function{1, func(a []float64) (float64, error) {
			if a[0] < 0 {
				return 0, errors.New("square root of a negative number")
			}
			return math.Sqrt(a[0]), nil
		}}, true
	case "log", "ln":
		f := math.Log10
		if name == "ln" {
			f = math.Log
		}
		return function{1, func(a []float64) (float64, error) {
			if a[0] <= 0 {
				return 0, errors.New("logarithm of a number that is not positive")
			}
			return f(a[0]), nil
		}}, true
	case "pow":
		return function{2, func(a []float64) (float64, error) {
			return pow(a[0], a[1], func(format string, args ...any) error { return fmt.Errorf(format, args...) })
		}}, true
	case "min":
		return function{-1, func(a []float64) (float64, error) { return minOf(a), nil }}, true
	case "max":
		return function{-1, func(a []float64) (float64, error) { return maxOf(a), nil }}, true
	case "abs":
		return unary(math.Abs), true
	case "round":
		return unary(math.Round), true
	case "floor":
		return unary(math.Floor), true
	case "ceil":
		return unary(math.Ceil), true
	case "exp":
		return unary(math.Exp), true
	case "sin":
		return unary(math.Sin), true
	case "cos":
		return unary(math.Cos), true
	case "tan":
		return unary(math.Tan), true
	}
	return function{}, false
}

func minOf(a []float64) float64 {
	m := a[0]
	for _, v := range a[1:] {
		m = math.Min(m, v)
	}
	return m
}

func maxOf(a []float64) float64 {
	m := a[0]
	for _, v := range a[1:] {
		m = math.Max(m, v)
	}
	return m
}

func isSpace(c byte) bool  { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' }

// formatNumber writes v without float noise: integers as integers (up to
// 1e15, where float64 still counts in ones) and other values with 15
// significant digits, so 0.1+0.2 shows as 0.3.
func formatNumber(v float64) string {
	if v == 0 {
		return "0" // also -0
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 15, 64)
}
