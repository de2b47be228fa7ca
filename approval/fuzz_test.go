package approval

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
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
		``, `null`, `{}`, `[]`, `"x"`, `{"version":1}`,
		`{"version":1,"daemonPubkey":"11111111111111111111111111111111","createdAt":"2025-01-01T00:00:00Z","messageId":"m","signature":"1"}`,
		`{"createdAt":"2025-01-01T00:00:00.123456789+05:00"}`,
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
		checkErr := a.Check()
		if checkErr != nil && !errors.Is(checkErr, ErrMalformed) && !errors.Is(checkErr, ErrSignature) {
			t.Fatalf("Check error %v wraps no sentinel", checkErr)
		}
		_ = NewVerifier(&VerifierOptions{Now: func() time.Time { return now }}).Verify(a)
		wire, err := json.Marshal(a)
		if err != nil {
			return // createdAt outside years 0-9999
		}
		b, err := Decode(wire)
		if err != nil {
			t.Fatalf("Decode(Marshal(a)) = %v; wire %s", err, wire)
		}
		if !bytes.Equal(a.Payload(), b.Payload()) {
			t.Fatalf("payload changed in a round trip: %q vs %q", a.Payload(), b.Payload())
		}
		if (checkErr == nil) != (b.Check() == nil) {
			t.Fatalf("Check changed in a round trip: %v vs %v", checkErr, b.Check())
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
