package webext

import (
	"context"
	_ "embed"
	"regexp"
	"sort"
	"strings"
	"sync"

	"agentd/internal/extension"
	"agentd/internal/schema"
)

//go:embed theme.schema.json
var themeSchema []byte

// ThemeType is the `theme` type: the console's colours and fonts as CSS
// custom properties, light and dark. The console reads the rows (GET
// /v1/extensions?type=theme) and sets the chosen one's properties on its
// root element; a value can only be a colour, a length, a shadow or a
// font-family list, so a theme cannot load a resource or end its
// declaration.
func ThemeType() extension.Type {
	return extension.Type{Name: "theme", Summary: "the console's colours and fonts, light and dark",
		Schema: themeSchema, Handler: checker(checkTheme)}
}

// Theme is a theme row's spec.
type Theme struct {
	Title string            `json:"title,omitempty"`
	Light map[string]string `json:"light"`
	Dark  map[string]string `json:"dark,omitempty"`
}

// The regular expressions of the checks, compiled when first used (a
// command that never checks a theme does not pay for them):
var (
	// cssName is a custom property's name.
	cssName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^--[a-z0-9-]+$`) })
	// cssValue is what a value may be made of: no ; { } < > \ @ * or
	// other characters that end a declaration, start a rule or a
	// comment, or escape.
	cssValue = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9#%.,()/'" _+-]+$`) })
	// cssFunc finds the functions a value calls.
	cssFunc = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`([A-Za-z_-][A-Za-z0-9_-]*)?\(`) })
)

// cssFuncAllowed reports whether a value may call the function f: colours,
// arithmetic and other custom properties; url(), image-set(),
// expression() and the rest are refused.
func cssFuncAllowed(f string) bool {
	switch f {
	case "rgb", "rgba", "hsl", "hsla", "hwb", "lab", "lch", "oklab", "oklch", "color", "color-mix", "light-dark",
		"calc", "min", "max", "clamp", "var":
		return true
	}
	return false
}

// maxCSSValue bounds a value's length.
const maxCSSValue = 300

func checkTheme(_ context.Context, d *extension.Doc) []schema.Error {
	var t Theme
	if !decodeSpec(d, &t) {
		return nil
	}
	errs := checkVars("/light", t.Light)
	return append(errs, checkVars("/dark", t.Dark)...)
}

// checkVars checks a set of custom properties, in name order.
func checkVars(at string, vars map[string]string) []schema.Error {
	names := make([]string, 0, len(vars))
	for n := range vars {
		names = append(names, n)
	}
	sort.Strings(names)
	var errs []schema.Error
	for _, n := range names {
		ptr := at + "/" + schema.Escape(n)
		if !cssName().MatchString(n) || len(n) > 64 {
			errs = append(errs, problem(ptr, "a custom property's name is -- then lowercase letters, digits and '-'"))
			continue
		}
		if msg := CheckCSSValue(vars[n]); msg != "" {
			errs = append(errs, problem(ptr, "%s", msg))
		}
	}
	return errs
}

// CheckCSSValue says what is wrong with a custom property's value, ""
// when nothing is: a value is a colour, a length, a shadow or a
// font-family list — letters, digits, # % . , ( ) / quotes, spaces, _ +
// -, with balanced parentheses and quotes, calling only colour and
// arithmetic functions.
func CheckCSSValue(v string) string {
	switch {
	case v == "" || len(v) > maxCSSValue:
		return "a value is 1 to 300 characters"
	case !cssValue().MatchString(v):
		return "a value may hold letters, digits, spaces and # % . , ( ) / ' \" _ + - only"
	}
	for _, m := range cssFunc().FindAllStringSubmatch(v, -1) {
		if f := strings.ToLower(m[1]); !cssFuncAllowed(f) {
			if f == "" {
				return "a parenthesis must follow a function's name"
			}
			return "the function " + f + "() is not allowed (colours, calc, min, max, clamp and var are)"
		}
	}
	depth, quote := 0, rune(0)
	for _, c := range v {
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			if depth--; depth < 0 {
				return "unbalanced parentheses"
			}
		}
	}
	if quote != 0 {
		return "unbalanced quotes"
	}
	if depth != 0 {
		return "unbalanced parentheses"
	}
	return ""
}
