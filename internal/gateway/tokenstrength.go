package gateway

import (
	"fmt"
	"math"
	"strings"
)

// How strong a token must be.
const (
	// MinTokenLen is the shortest token accepted.
	MinTokenLen = 24
	// minTokenDistinct is the fewest different characters a token may have.
	minTokenDistinct = 10
	// maxTokenLen bounds a token (and so what is read of the file).
	maxTokenLen = 512
	// MinRemoteTokenBits is the estimated entropy a token needs when the
	// API is served where other machines can reach it.
	MinRemoteTokenBits = 128
)

// CheckToken reports why s cannot be a gateway token: it must be at least
// MinTokenLen printable ASCII characters without spaces, with at least 10
// different ones.
func CheckToken(s string) error {
	if len(s) < MinTokenLen {
		return fmt.Errorf("%w: %d characters, want at least %d random ones", ErrWeakToken, len(s), MinTokenLen)
	}
	if len(s) > maxTokenLen {
		return fmt.Errorf("%w: longer than %d characters", ErrWeakToken, maxTokenLen)
	}
	var seen [128]bool
	distinct := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c > '~' {
			return fmt.Errorf("%w: only printable ASCII characters without spaces are allowed", ErrWeakToken)
		}
		if !seen[c] {
			seen[c] = true
			distinct++
		}
	}
	if distinct < minTokenDistinct {
		return fmt.Errorf("%w: only %d different characters, want at least %d (a random string)", ErrWeakToken, distinct, minTokenDistinct)
	}
	return nil
}

// maxWordLen bounds the letter runs taken for words.
const maxWordLen = 20

// keyboardRows are runs of neighbouring keys, read either way.
var keyboardRows = []string{"`1234567890-=", "qwertyuiop[]\\", "asdfghjkl;'", "zxcvbnm,./", "1qaz2wsx3edc4rfv5tgb6yhn7ujm8ik9ol0p"}

// CheckRemoteToken reports why s cannot be the token of an API other
// machines can reach: besides CheckToken's rules, its estimated entropy
// (TokenBits) must be at least MinRemoteTokenBits. NewToken's tokens
// always pass.
func CheckRemoteToken(s string) error {
	if err := CheckToken(s); err != nil {
		return fmt.Errorf("%w; %s", err, tokenRemedy)
	}
	if bits := TokenBits(s); bits < MinRemoteTokenBits {
		return fmt.Errorf("%w: about %.0f bits of entropy, and an address other machines reach needs %d "+
			"(sequences, repeats, keyboard runs and words count for little); %s", ErrWeakToken, bits, MinRemoteTokenBits, tokenRemedy)
	}
	return nil
}

// tokenRemedy says how to make a token CheckRemoteToken accepts.
const tokenRemedy = "generate one with `agentd token rotate`, or `openssl rand -base64 32` for " + TokenEnv

// TokenBits estimates the entropy of s in bits the way a guesser who tries
// structured strings first would count it: s is split into pieces, each a
// character drawn from the alphabet s uses, a run with a constant step
// ("abcdef", "97531", "aaaa"), a run of neighbouring keys ("qwerty"), a
// word-like run of letters ("Password"), or a repeat of an earlier part
// ("abcabc"); the estimate is the cheapest split's cost.
func TokenBits(s string) float64 {
	n := len(s)
	if n == 0 {
		return 0
	}
	perChar := math.Log2(float64(alphabetSize(s)))
	// cost[i] is the fewest bits that describe s[i:]; match[j] is how far
	// s[j:] and s[i:] agree (j < i), computed from the row for i+1.
	cost := make([]float64, n+1)
	match, next := make([]int, n+1), make([]int, n+1)
	for i := n - 1; i >= 0; i-- {
		longest := 0
		for j := 0; j < i; j++ {
			match[j] = 0
			if s[j] == s[i] {
				match[j] = 1 + next[j+1]
			}
			longest = max(longest, match[j])
		}
		match, next = next, match
		best := perChar + cost[i+1]
		try := func(l int, bits float64) {
			if l >= 3 && bits+cost[i+l] < best {
				best = bits + cost[i+l]
			}
		}
		for l := 3; l <= longest; l++ {
			try(l, math.Log2(float64(i)*float64(l))) // where the earlier copy is, and its length
		}
		for l := 3; l <= stepRun(s[i:]); l++ {
			try(l, perChar+math.Log2(float64(l))+2) // first character, length, step
		}
		for l := 3; l <= keyboardRun(s[i:]); l++ {
			try(l, 7+math.Log2(float64(l))) // start key and direction, length
		}
		for l := 4; l <= min(maxWordLen, letterRun(s[i:])); l++ {
			if bits, ok := wordBits(s[i : i+l]); ok {
				try(l, bits)
			}
		}
		for _, w := range commonWords {
			if len(w) <= n-i && strings.EqualFold(s[i:i+len(w)], w) {
				try(len(w), 8) // one of the first few hundred guesses
			}
		}
		cost[i] = best
	}
	return cost[0]
}

// alphabetSize is the size of the alphabet s seems drawn from: hex digits,
// or the union of the classes it uses (lower case, upper case, digits, other
// printable ASCII).
func alphabetSize(s string) int {
	if strings.Trim(s, "0123456789abcdef") == "" || strings.Trim(s, "0123456789ABCDEF") == "" {
		return 16
	}
	var lower, upper, digit, other bool
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z':
			lower = true
		case 'A' <= c && c <= 'Z':
			upper = true
		case '0' <= c && c <= '9':
			digit = true
		default:
			other = true
		}
	}
	size := 0
	for _, c := range []struct {
		used bool
		n    int
	}{{lower, 26}, {upper, 26}, {digit, 10}, {other, 33}} {
		if c.used {
			size += c.n
		}
	}
	return size
}

// stepRun is the length of the run at the start of s whose characters
// differ by one constant step of at most 2 ("abc", "ACEG", "9876", "zzz").
func stepRun(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	d := int(s[1]) - int(s[0])
	if d < -2 || d > 2 {
		return 1
	}
	l := 2
	for l < len(s) && int(s[l])-int(s[l-1]) == d {
		l++
	}
	return l
}

// keyboardRun is the length of the longest run of neighbouring keys of one
// keyboard row at the start of s, either way, ignoring case.
func keyboardRun(s string) int {
	low := strings.ToLower(s)
	best := 0
	for _, row := range keyboardRows {
		for _, r := range []string{row, reverse(row)} {
			for k := 0; k < len(r); k++ {
				l := 0
				for l < len(low) && k+l < len(r) && low[l] == r[k+l] {
					l++
				}
				best = max(best, l)
			}
		}
	}
	return best
}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

// letterRun is the length of the run of ASCII letters at the start of s.
func letterRun(s string) int {
	l := 0
	for l < len(s) && isLetter(s[l]) {
		l++
	}
	return l
}

func isLetter(c byte) bool { return 'A' <= c&^0x20 && c&^0x20 <= 'Z' }

// commonWords are words that tokens and passwords are commonly made of;
// each is one of a guesser's first tries.
var commonWords = strings.Fields(`password passwd pass admin administrator root secret letmein welcome login master
	dragon monkey shadow sunshine princess football baseball iloveyou trustno superman batman access default changeme
	token agentd test guest user hello love freedom whatever computer internet server api key example demo sample
	secure private temp foobar foo bar baz lorem ipsum qwerty azerty`)

// commonBigrams are the letter pairs that make up most English text, most
// frequent first; a run of letters made of them alone reads as a word.
const commonBigrams = "th he in er an re on at en nd ti es or te of ed is it al ar st to nt ng se ha as ou io le ve co me de " +
	"hi ri ro ic ne ea ra ce li ch ll be ma si om ur ca el ta la ns di fo ho pe ec pr no ct us ac ot il tr ly nc et ut ss " +
	"so rs un lo wa ge ie wh ee wi em ad ol rt po we na ul ni ts mo ow pa im mi ai sh ir su id os iv ia am fi ci vi pl ig " +
	"tu ev ld ry mp fe bl ab gh ty op wo sa ay ex ke fr oo av ag if ap gr od bo sp rd do uc bu ei ov by rm ep tt oc fa ef " +
	"cu rn sc gi da yo cr cl du ga qu ue ff ba ey ls va um pp ua up lu go ht ru ug ds lt pi rc rr eg au ck ew mu br bi"

// wordBits reports whether the letters w look like a word — written in
// lower case, upper case or capitalized, every pair of neighbours a common
// English pair (one may be another in six letters or more), a vowel in
// every four letters — and if so what guessing it from a list of some
// 30 000 words costs.
func wordBits(w string) (float64, bool) {
	low := strings.ToLower(w)
	switch w {
	case low:
	case strings.ToUpper(w), strings.ToUpper(w[:1]) + low[1:]:
	default:
		return 0, false
	}
	vowels, rare := 0, 0
	for i := 0; i < len(low); i++ {
		if strings.IndexByte("aeiouy", low[i]) >= 0 {
			vowels++
		}
		if i > 0 && !strings.Contains(commonBigrams, low[i-1:i+1]) {
			rare++
		}
	}
	if 4*vowels < len(low) || rare > 1 || rare == 1 && len(low) < 6 {
		return 0, false
	}
	bits := 15.0 + 4*float64(rare)
	if w != low {
		bits++
	}
	return bits, true
}

// checkToken checks a token with the rule t is held to: CheckRemoteToken
// off loopback, else CheckToken.
func (t *Tokens) checkToken(s string) error {
	if t.remote {
		return CheckRemoteToken(s)
	}
	return CheckToken(s)
}
