package identity

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"os"
	"testing"
)

// FuzzParseKeypair checks that ParseKeypair never panics, that its errors
// wrap ErrKeyFile, and that a key it accepts is consistent and survives
// EncodeKeypair.
func FuzzParseKeypair(f *testing.F) {
	golden, err := os.ReadFile(rfcFile)
	if err != nil {
		f.Fatal(err)
	}
	pretty, _ := solanaFile(7)
	for _, s := range [][]byte{golden, pretty, []byte("[]"), []byte("[1,2,3]"), []byte("null"), []byte(`{"a":1}`), []byte("[1e2]"), []byte("[-0]")} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		key, err := ParseKeypair(data)
		if err != nil {
			if !errors.Is(err, ErrKeyFile) {
				t.Fatalf("error %v does not wrap ErrKeyFile", err)
			}
			return
		}
		if len(key) != ed25519.PrivateKeySize {
			t.Fatalf("key of %d bytes", len(key))
		}
		if !bytes.Equal(ed25519.NewKeyFromSeed(key.Seed()), key) {
			t.Fatal("public half does not belong to the seed")
		}
		again, err := ParseKeypair(EncodeKeypair(key))
		if err != nil || !again.Equal(key) {
			t.Fatalf("round trip: %v", err)
		}
	})
}
