package approval

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mr-tron/base58"
)

// vectorFile is testdata/vectors.json, written by testdata/vectors.py with
// an ed25519 implementation independent of Go's.
type vectorFile struct {
	Seed      string   `json:"seed"`
	Pubkey    string   `json:"pubkey"`
	PubkeyHex string   `json:"pubkeyHex"`
	Approvals []vector `json:"approvals"`
}

type vector struct {
	Name            string `json:"name"`
	Message         string `json:"message"`
	CreatedAt       string `json:"createdAt"`
	CreatedAtMillis int64  `json:"createdAtMillis"`
	MessageID       string `json:"messageId"`
	ChannelID       string `json:"channelId"`
	PayloadHex      string `json:"payloadHex"`
	Signature       string `json:"signature"`
}

func loadVectors(t testing.TB) (ed25519.PrivateKey, vectorFile) {
	t.Helper()
	data, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vf vectorFile
	if err := json.Unmarshal(data, &vf); err != nil {
		t.Fatal(err)
	}
	seed, err := hex.DecodeString(vf.Seed)
	if err != nil || len(seed) != ed25519.SeedSize {
		t.Fatalf("bad seed in vectors.json: %v", err)
	}
	if len(vf.Approvals) == 0 {
		t.Fatal("vectors.json holds no approvals")
	}
	return ed25519.NewKeyFromSeed(seed), vf
}

func (v vector) approval(t testing.TB, pubkey string) *Approval {
	t.Helper()
	created, err := time.Parse(time.RFC3339Nano, v.CreatedAt)
	if err != nil {
		t.Fatal(err)
	}
	return &Approval{
		Version:   1,
		Pubkey:    pubkey,
		Message:   v.Message,
		CreatedAt: created,
		MessageID: v.MessageID,
		ChannelID: v.ChannelID,
		Signature: v.Signature,
	}
}

func TestVectors(t *testing.T) {
	key, vf := loadVectors(t)
	pubHex := hex.EncodeToString(key.Public().(ed25519.PublicKey))
	if pubHex != vf.PubkeyHex {
		t.Fatalf("public key of seed = %s, want %s", pubHex, vf.PubkeyHex)
	}
	if got := EncodePublicKey(key.Public().(ed25519.PublicKey)); got != vf.Pubkey {
		t.Fatalf("EncodePublicKey = %s, want %s", got, vf.Pubkey)
	}
	for _, v := range vf.Approvals {
		t.Run(v.Name, func(t *testing.T) {
			want := v.approval(t, vf.Pubkey)
			if got := want.CreatedAt.UnixMilli(); got != v.CreatedAtMillis {
				t.Fatalf("createdAt %s is %d ms, want %d", v.CreatedAt, got, v.CreatedAtMillis)
			}
			got := Sign(key, v.Message, want.CreatedAt, v.MessageID, v.ChannelID)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Sign (-want +got):\n%s", diff)
			}
			if p := hex.EncodeToString(got.Payload()); p != v.PayloadHex {
				t.Errorf("Payload = %s\nwant      %s", p, v.PayloadHex)
			}
			if err := want.Check(); err != nil {
				t.Errorf("Check: %v", err)
			}

			data, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var wire map[string]any
			if err := json.Unmarshal(data, &wire); err != nil {
				t.Fatal(err)
			}
			if wire["createdAt"] != v.CreatedAt {
				t.Errorf("JSON createdAt = %v, want %s", wire["createdAt"], v.CreatedAt)
			}
			back, err := Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, back); diff != "" {
				t.Errorf("JSON round trip (-want +got):\n%s", diff)
			}
			if err := back.Check(); err != nil {
				t.Errorf("Check after JSON round trip: %v", err)
			}
		})
	}
}

func TestTampered(t *testing.T) {
	_, vf := loadVectors(t)
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	otherPub := EncodePublicKey(other.Public().(ed25519.PublicKey))
	tampers := []struct {
		name    string
		change  func(a *Approval)
		wantErr error
	}{
		{"message", func(a *Approval) { a.Message += "!" }, ErrSignature},
		{"message-case", func(a *Approval) { a.Message = strings.ToUpper(a.Message) + "X" }, ErrSignature},
		{"createdAt+1ms", func(a *Approval) { a.CreatedAt = a.CreatedAt.Add(time.Millisecond) }, ErrSignature},
		{"createdAt-1ms", func(a *Approval) { a.CreatedAt = a.CreatedAt.Add(-time.Millisecond) }, ErrSignature},
		{"messageId", func(a *Approval) { a.MessageID += "0" }, ErrSignature},
		{"channelId", func(a *Approval) { a.ChannelID += "x" }, ErrSignature},
		{"fields-swapped", func(a *Approval) { a.MessageID, a.ChannelID = a.ChannelID, a.MessageID }, ErrSignature},
		{"boundary-moved", func(a *Approval) { a.Message, a.MessageID = a.Message+a.MessageID[:1], a.MessageID[1:] }, ErrSignature},
		{"pubkey", func(a *Approval) { a.Pubkey = otherPub }, ErrSignature},
		{"signature-bit", func(a *Approval) {
			sig, _ := base58.Decode(a.Signature)
			sig[10] ^= 1
			a.Signature = base58.Encode(sig)
		}, ErrSignature},
		{"version", func(a *Approval) { a.Version = 2 }, ErrMalformed},
	}
	for _, v := range vf.Approvals {
		for _, tc := range tampers {
			t.Run(v.Name+"/"+tc.name, func(t *testing.T) {
				a := v.approval(t, vf.Pubkey)
				tc.change(a)
				if err := a.Check(); !errors.Is(err, tc.wantErr) {
					t.Errorf("Check = %v, want %v", err, tc.wantErr)
				}
			})
		}
	}
	// A signature from one vector does not fit another.
	for i, v := range vf.Approvals {
		a := v.approval(t, vf.Pubkey)
		a.Signature = vf.Approvals[(i+1)%len(vf.Approvals)].Signature
		if err := a.Check(); !errors.Is(err, ErrSignature) {
			t.Errorf("%s with the next vector's signature: Check = %v, want ErrSignature", v.Name, err)
		}
	}
}

func TestCheckMalformed(t *testing.T) {
	key := testKey(1)
	good := Sign(key, "hi", time.Unix(1700000000, 0), "m1", "")
	b58 := func(n int) string { return base58.Encode(bytes.Repeat([]byte{0xab}, n)) }
	tests := []struct {
		name   string
		change func(a *Approval)
	}{
		{"version 0", func(a *Approval) { a.Version = 0 }},
		{"no pubkey", func(a *Approval) { a.Pubkey = "" }},
		{"pubkey not base58", func(a *Approval) { a.Pubkey = "0OIl" + a.Pubkey[4:] }},
		{"pubkey with space", func(a *Approval) { a.Pubkey = " " + a.Pubkey }},
		{"pubkey 31 bytes", func(a *Approval) { a.Pubkey = b58(31) }},
		{"pubkey 33 bytes", func(a *Approval) { a.Pubkey = b58(33) }},
		{"pubkey huge", func(a *Approval) { a.Pubkey = strings.Repeat("z", 10000) }},
		{"pubkey non-ASCII", func(a *Approval) { a.Pubkey = "é" + a.Pubkey[2:] }},
		{"no signature", func(a *Approval) { a.Signature = "" }},
		{"signature not base58", func(a *Approval) { a.Signature = a.Signature[:10] + "_" + a.Signature[11:] }},
		{"signature 63 bytes", func(a *Approval) { a.Signature = b58(63) }},
		{"signature 65 bytes", func(a *Approval) { a.Signature = b58(65) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := *good
			tc.change(&a)
			if err := a.Check(); !errors.Is(err, ErrMalformed) {
				t.Errorf("Check = %v, want ErrMalformed", err)
			}
		})
	}
	var nilApproval *Approval
	if err := nilApproval.Check(); !errors.Is(err, ErrMalformed) {
		t.Errorf("nil Check = %v, want ErrMalformed", err)
	}
	if err := good.Check(); err != nil {
		t.Errorf("untouched approval: Check = %v", err)
	}
}

func TestSignNormalisesTime(t *testing.T) {
	key := testKey(2)
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	created := time.Date(2025, 5, 6, 7, 8, 9, 123456789, zone)
	a := Sign(key, "m", created, "id", "ch")
	want := time.Date(2025, 5, 6, 1, 38, 9, 123000000, time.UTC)
	if !a.CreatedAt.Equal(want) || a.CreatedAt.Location() != time.UTC {
		t.Errorf("CreatedAt = %v, want %v", a.CreatedAt, want)
	}
	data, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"createdAt":"2025-05-06T01:38:09.123Z"`)) {
		t.Errorf("JSON = %s, want createdAt 2025-05-06T01:38:09.123Z", data)
	}
	back, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.Check(); err != nil {
		t.Errorf("Check after round trip: %v", err)
	}
	// A wall-clock time with a monotonic reading signs the same way.
	now := time.Now()
	if err := Sign(key, "m", now, "id", "").Check(); err != nil {
		t.Errorf("Sign(time.Now()): Check = %v", err)
	}
}

func TestSignBadKey(t *testing.T) {
	for _, key := range []ed25519.PrivateKey{nil, make(ed25519.PrivateKey, 32), make(ed25519.PrivateKey, 65)} {
		a := Sign(key, "m", time.Unix(0, 0), "id", "")
		if a.Pubkey != "" || a.Signature != "" {
			t.Errorf("Sign with a %d-byte key signed: %+v", len(key), a)
		}
		if err := a.Check(); !errors.Is(err, ErrMalformed) {
			t.Errorf("Sign with a %d-byte key: Check = %v, want ErrMalformed", len(key), err)
		}
	}
}

func TestPayloadLayout(t *testing.T) {
	long := strings.Repeat("x", 70000)
	a := &Approval{Message: long, CreatedAt: time.UnixMilli(-1), MessageID: "", ChannelID: "c"}
	var want []byte
	want = append(want, "agentd-approval-v1"...)
	want = append(want, 0x00, 0x01, 0x11, 0x70)
	want = append(want, long...)
	want = append(want, 0, 0, 0, 2, '-', '1')
	want = append(want, 0, 0, 0, 0)
	want = append(want, 0, 0, 0, 1, 'c')
	if got := a.Payload(); !bytes.Equal(got, want) {
		t.Errorf("Payload differs: len %d, want %d", len(got), len(want))
	}
	if err := Sign(testKey(3), long, time.Now(), "m", "").Check(); err != nil {
		t.Errorf("long message: Check = %v", err)
	}
}

func TestMarshalJSON(t *testing.T) {
	a := Approval{
		Version:   1,
		Pubkey:    "pk",
		Message:   "a <b> & \"c\"",
		CreatedAt: time.Date(2025, 1, 2, 3, 4, 5, 6000000, time.UTC),
		MessageID: "m",
		ChannelID: "",
		Signature: "sig",
	}
	got, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"version":1,"daemonPubkey":"pk","message":"a \u003cb\u003e \u0026 \"c\"","createdAt":"2025-01-02T03:04:05.006Z","messageId":"m","channelId":"","signature":"sig"}`
	if string(got) != want {
		t.Errorf("Marshal =\n%s\nwant\n%s", got, want)
	}
	a.CreatedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := json.Marshal(a); err == nil {
		t.Error("Marshal of year 10000: no error")
	}
}

func TestParsePublicKey(t *testing.T) {
	key := testKey(4)
	pub := key.Public().(ed25519.PublicKey)
	got, err := ParsePublicKey(EncodePublicKey(pub))
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(pub) {
		t.Errorf("ParsePublicKey round trip = %x, want %x", got, pub)
	}
	// Leading zero bytes are leading '1' digits.
	zero := make(ed25519.PublicKey, 32)
	if s := EncodePublicKey(zero); s != strings.Repeat("1", 32) {
		t.Errorf("EncodePublicKey(zeros) = %q", s)
	}
	for _, bad := range []string{"", "1", "abc", "0" + EncodePublicKey(pub)[1:]} {
		if _, err := ParsePublicKey(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParsePublicKey(%q) = %v, want ErrMalformed", bad, err)
		}
	}
}

// testKey returns a fixed key for test n.
func testKey(n byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{n}, ed25519.SeedSize))
}

func BenchmarkSign(b *testing.B) {
	key := testKey(1)
	created := time.Unix(1700000000, 0)
	b.ReportAllocs()
	for b.Loop() {
		Sign(key, "deploy the staging build", created, "msg-1", "telegram:1")
	}
}

func BenchmarkCheck(b *testing.B) {
	a := Sign(testKey(1), "deploy the staging build", time.Unix(1700000000, 0), "msg-1", "telegram:1")
	b.ReportAllocs()
	for b.Loop() {
		if err := a.Check(); err != nil {
			b.Fatal(err)
		}
	}
}

// A hook signature verifies as a hook and can never pass as an approval,
// even when the payload imitates an approval's signed bytes.
func TestHookSignatureIsNotAnApproval(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	pub := EncodePublicKey(key.Public().(ed25519.PublicKey))
	a := Sign(key, "wire all funds to mallory", time.Unix(1700000000, 0), "m1", "c1")
	forged := string(a.Payload()) // what a hostile server would ask to sign
	sig, err := SignHook(key, forged)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckHook(pub, forged, sig); err != nil {
		t.Fatalf("CheckHook: %v", err)
	}
	a.Signature = sig
	if err := a.Check(); err == nil {
		t.Fatal("a hook signature passed as an approval")
	}
	if err := CheckHook(pub, forged+"x", sig); err == nil {
		t.Fatal("CheckHook accepted a changed payload")
	}
}
