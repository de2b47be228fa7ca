package approval

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"reflect"
	"strconv"
	"testing"
	"time"
)

func addSeeds(f *testing.F) {
	f.Helper()
	data, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		f.Fatal(err)
	}
	var vf vectorFile
	if err := json.Unmarshal(data, &vf); err != nil {
		f.Fatal(err)
	}
	for _, v := range vf.Approvals {
		a := v.approval(f, vf.Pubkey)
		wire, err := json.Marshal(a)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(wire)
	}
	for _, s := range []string{
		``, `null`, `{}`, `[]`, `"x"`, `{"version":2}`, `{"version":3}`,
		`{"version":2,"daemonPubkey":"11111111111111111111111111111111","createdAt":"2025-01-01T00:00:00Z","messageId":"m","audience":"a","tool":"t","signature":"1"}`,
		`{"version":3,"daemonPubkey":"11111111111111111111111111111111","createdAt":"2025-01-01T00:00:00Z","messageId":"m","audience":"a","tool":"t","signedAt":"2025-01-01T01:00:00Z","signature":"1"}`,
		`{"createdAt":"2025-01-01T00:00:00.123456789+05:00"}`,
		`{"signedAt":"2025-01-01T00:00:00.123456789+05:00","version":3}`,
		`{"createdAt":"0000-01-01T00:00:00Z","version":1}`,
		`{"Version":1,"VERSION":2,"message":"a","Message":"b"}`,
	} {
		f.Add([]byte(s))
	}
}

// FuzzDecode checks that decoding any input never panics, that checking a
// decoded approval never panics, and that an approval that encodes survives
// a round trip with the same signed payload and the same Check result.
func FuzzDecode(f *testing.F) {
	addSeeds(f)
	now := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Decode error %v does not wrap ErrMalformed", err)
			}
			return
		}
		checkErr := a.Check(a.Audience, a.Tool, nil)
		if checkErr != nil && !errors.Is(checkErr, ErrMalformed) && !errors.Is(checkErr, ErrMismatch) && !errors.Is(checkErr, ErrSignature) {
			t.Fatalf("Check error %v wraps no sentinel", checkErr)
		}
		_ = NewVerifier(&VerifierOptions{Now: func() time.Time { return now }, Audience: []string{a.Audience}}).Verify(a, a.Tool, nil)
		wire, err := json.Marshal(a)
		if err != nil {
			return // createdAt or signedAt outside years 0-9999
		}
		b, err := Decode(wire)
		if err != nil {
			t.Fatalf("Decode(Marshal(a)) = %v; wire %s", err, wire)
		}
		if !bytes.Equal(a.Payload(), b.Payload()) {
			t.Fatalf("payload changed in a round trip: %q vs %q", a.Payload(), b.Payload())
		}
		if again := b.Check(b.Audience, b.Tool, nil); (checkErr == nil) != (again == nil) {
			t.Fatalf("Check changed in a round trip: %v vs %v", checkErr, again)
		}
	})
}

// FuzzFromMeta feeds FromMeta a _meta object decoded from JSON, and the
// same bytes as a JSON string value.
func FuzzFromMeta(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var value any
		if json.Unmarshal(data, &value) == nil {
			_, err := FromMeta(map[string]any{MetaKey: value})
			if err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrMissing) {
				t.Fatalf("FromMeta(decoded) error %v wraps no sentinel", err)
			}
		}
		_, err := FromMeta(map[string]any{MetaKey: string(data)})
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("FromMeta(string) error %v does not wrap ErrMalformed", err)
		}
	})
}

// FuzzCanonicalJSON checks the canonical form against the standard
// library: it is valid JSON that decodes to the same value as the input
// (numbers as doubles), every number in it reads back as the same double,
// and canonicalizing it again changes nothing.
func FuzzCanonicalJSON(f *testing.F) {
	_, vf := loadVectors(f)
	for _, c := range vf.Canonical {
		f.Add([]byte(c.Input))
	}
	for _, v := range vf.Approvals {
		f.Add([]byte(v.Arguments))
	}
	for _, s := range []string{`1e400`, `-0.0`, `"\ud800"`, `{"a":{"a":{"a":[]}}}`, `1.5e-323`, `"\u00e9\u2028"`, `[1,]`, `{"\u0000":0}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := CanonicalJSON(data)
		var want any
		if json.Unmarshal(data, &want) != nil {
			if err == nil {
				t.Fatalf("CanonicalJSON accepted %q, which is not JSON", data)
			}
			return
		}
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return // a number beyond the double range, or too deep
		}
		var got any
		if err := json.Unmarshal(c, &got); err != nil {
			t.Fatalf("CanonicalJSON(%q) = %q, not JSON: %v", data, c, err)
		}
		if !reflect.DeepEqual(normalize(want), normalize(got)) {
			t.Fatalf("CanonicalJSON(%q) = %q, another value", data, c)
		}
		again, err := CanonicalJSON(c)
		if err != nil || !bytes.Equal(again, c) {
			t.Fatalf("CanonicalJSON is not idempotent: %q then %q (%v)", c, again, err)
		}
		dec := json.NewDecoder(bytes.NewReader(c))
		dec.UseNumber()
		for {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			if n, ok := tok.(json.Number); ok {
				f, err := strconv.ParseFloat(string(n), 64)
				if err != nil || math.IsInf(f, 0) {
					t.Fatalf("number %s in %q does not read back: %v", n, c, err)
				}
				if string(appendES6Number(nil, f)) != string(n) {
					t.Fatalf("number %s in %q is not in its shortest ECMAScript form", n, c)
				}
			}
		}
	})
}

// normalize makes -0 and 0 alike, as JSON text does not tell them apart
// in the canonical form.
func normalize(v any) any {
	switch x := v.(type) {
	case float64:
		if x == 0 {
			return 0.0
		}
	case []any:
		for i := range x {
			x[i] = normalize(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = normalize(x[k])
		}
	}
	return v
}
