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
// an ed25519 implementation and a JSON canonicalization independent of
// Go's.
type vectorFile struct {
	Seed      string          `json:"seed"`
	Pubkey    string          `json:"pubkey"`
	PubkeyHex string          `json:"pubkeyHex"`
	Approvals []vector        `json:"approvals"`
	Messages  []messageVector `json:"messages"`
	Canonical []struct {
		Input  string `json:"input"`
		Output string `json:"output"`
	} `json:"canonical"`
}

type vector struct {
	Name               string `json:"name"`
	Message            string `json:"message"`
	CreatedAt          string `json:"createdAt"`
	CreatedAtMillis    int64  `json:"createdAtMillis"`
	SignedAt           string `json:"signedAt"`
	SignedAtMillis     int64  `json:"signedAtMillis"`
	MessageID          string `json:"messageId"`
	ChannelID          string `json:"channelId"`
	Audience           string `json:"audience"`
	Tool               string `json:"tool"`
	Arguments          string `json:"arguments"`
	CanonicalArguments string `json:"canonicalArguments"`
	ArgumentsHash      string `json:"argumentsHash"`
	PayloadHex         string `json:"payloadHex"`
	Signature          string `json:"signature"`
}

type messageVector struct {
	Name        string `json:"name"`
	PayloadHex  string `json:"payloadHex"`
	Signature   string `json:"signature"`
	Fingerprint string `json:"fingerprint"`
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
	if len(vf.Approvals) == 0 || len(vf.Messages) != len(vf.Approvals) || len(vf.Canonical) == 0 {
		t.Fatal("vectors.json is incomplete")
	}
	return ed25519.NewKeyFromSeed(seed), vf
}

func (v vector) message(t testing.TB) Message {
	t.Helper()
	created, err := time.Parse(time.RFC3339Nano, v.CreatedAt)
	if err != nil {
		t.Fatal(err)
	}
	return Message{Text: v.Message, CreatedAt: created, ID: v.MessageID, ChannelID: v.ChannelID}
}

// signed is when the vector's approval was signed.
func (v vector) signed(t testing.TB) time.Time {
	t.Helper()
	signed, err := time.Parse(time.RFC3339Nano, v.SignedAt)
	if err != nil {
		t.Fatal(err)
	}
	return signed
}

func (v vector) approval(t testing.TB, pubkey string) *Approval {
	t.Helper()
	m := v.message(t)
	return &Approval{
		Version:       3,
		Pubkey:        pubkey,
		Message:       m.Text,
		CreatedAt:     m.CreatedAt,
		MessageID:     m.ID,
		ChannelID:     m.ChannelID,
		Audience:      v.Audience,
		Tool:          v.Tool,
		ArgumentsHash: v.ArgumentsHash,
		SignedAt:      v.signed(t),
		Signature:     v.Signature,
	}
}

// args is the vector's arguments as a server receives them.
func (v vector) args() json.RawMessage { return json.RawMessage(v.Arguments) }

func TestVectors(t *testing.T) {
	key, vf := loadVectors(t)
	pubHex := hex.EncodeToString(key.Public().(ed25519.PublicKey))
	if pubHex != vf.PubkeyHex {
		t.Fatalf("public key of seed = %s, want %s", pubHex, vf.PubkeyHex)
	}
	if got := EncodePublicKey(key.Public().(ed25519.PublicKey)); got != vf.Pubkey {
		t.Fatalf("EncodePublicKey = %s, want %s", got, vf.Pubkey)
	}
	for i, v := range vf.Approvals {
		t.Run(v.Name, func(t *testing.T) {
			want := v.approval(t, vf.Pubkey)
			if got := want.CreatedAt.UnixMilli(); got != v.CreatedAtMillis {
				t.Fatalf("createdAt %s is %d ms, want %d", v.CreatedAt, got, v.CreatedAtMillis)
			}
			if got := want.SignedAt.UnixMilli(); got != v.SignedAtMillis {
				t.Fatalf("signedAt %s is %d ms, want %d", v.SignedAt, got, v.SignedAtMillis)
			}
			if v.Arguments != "" {
				if c, err := CanonicalJSON([]byte(v.Arguments)); err != nil || string(c) != v.CanonicalArguments {
					t.Errorf("CanonicalJSON = %s, %v\nwant           %s", c, err, v.CanonicalArguments)
				}
			}
			if h, err := HashArguments(v.args()); err != nil || h != v.ArgumentsHash {
				t.Errorf("HashArguments = %s, %v; want %s", h, err, v.ArgumentsHash)
			}
			got, err := Sign(key, v.message(t), v.signed(t), v.Audience, v.Tool, v.args())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Sign (-want +got):\n%s", diff)
			}
			if p := hex.EncodeToString(got.Payload()); p != v.PayloadHex {
				t.Errorf("Payload = %s\nwant      %s", p, v.PayloadHex)
			}
			if err := want.Check(v.Audience, v.Tool, v.args()); err != nil {
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
			if wire["createdAt"] != v.CreatedAt || wire["signedAt"] != v.SignedAt {
				t.Errorf("JSON createdAt = %v, signedAt = %v; want %s, %s", wire["createdAt"], wire["signedAt"], v.CreatedAt, v.SignedAt)
			}
			back, err := Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, back); diff != "" {
				t.Errorf("JSON round trip (-want +got):\n%s", diff)
			}
			// The server may have the arguments decoded, as an SDK hands them over.
			var decoded any
			if v.Arguments != "" {
				if err := json.Unmarshal([]byte(v.Arguments), &decoded); err != nil {
					t.Fatal(err)
				}
			}
			if err := back.Check(v.Audience, v.Tool, decoded); err != nil {
				t.Errorf("Check after JSON round trip, decoded arguments: %v", err)
			}

			m := vf.Messages[i]
			if p := hex.EncodeToString(MessagePayload(v.message(t))); p != m.PayloadHex {
				t.Errorf("MessagePayload = %s\nwant             %s", p, m.PayloadHex)
			}
			sig, err := SignMessage(key, v.message(t))
			if err != nil || sig != m.Signature {
				t.Errorf("SignMessage = %s, %v; want %s", sig, err, m.Signature)
			}
			if fp := Fingerprint(sig); fp != m.Fingerprint {
				t.Errorf("Fingerprint = %s, want %s", fp, m.Fingerprint)
			}
			// A message signature is no approval, whatever the call.
			a := *want
			a.Signature = sig
			if err := a.Check(v.Audience, v.Tool, v.args()); !errors.Is(err, ErrSignature) {
				t.Errorf("a message signature as an approval: Check = %v, want ErrSignature", err)
			}
		})
	}
	for _, c := range vf.Canonical {
		if got, err := CanonicalJSON([]byte(c.Input)); err != nil || string(got) != c.Output {
			t.Errorf("CanonicalJSON(%s) = %s, %v\nwant %s", c.Input, got, err, c.Output)
		}
	}
}

func TestTampered(t *testing.T) {
	_, vf := loadVectors(t)
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	otherPub := EncodePublicKey(other.Public().(ed25519.PublicKey))
	otherHash, _ := HashArguments(`{"env":"production"}`)
	// Each change is checked with the call the approval now names, so only
	// the signature can tell.
	tampers := []struct {
		name    string
		change  func(a *Approval)
		wantErr error
	}{
		{"message", func(a *Approval) { a.Message += "!" }, ErrSignature},
		{"message-case", func(a *Approval) { a.Message = strings.ToUpper(a.Message) + "X" }, ErrSignature},
		{"createdAt+1ms", func(a *Approval) { a.CreatedAt = a.CreatedAt.Add(time.Millisecond) }, ErrSignature},
		{"createdAt-1ms", func(a *Approval) { a.CreatedAt = a.CreatedAt.Add(-time.Millisecond) }, ErrSignature},
		{"signedAt+1ms", func(a *Approval) { a.SignedAt = a.SignedAt.Add(time.Millisecond) }, ErrSignature},
		{"signedAt+1h", func(a *Approval) { a.SignedAt = a.SignedAt.Add(time.Hour) }, ErrSignature},
		{"signedAt-1ms", func(a *Approval) { a.SignedAt = a.SignedAt.Add(-time.Millisecond) }, ErrSignature},
		{"messageId", func(a *Approval) { a.MessageID += "0" }, ErrSignature},
		{"channelId", func(a *Approval) { a.ChannelID += "x" }, ErrSignature},
		{"audience", func(a *Approval) { a.Audience = "https://evil.example/mcp" }, ErrSignature},
		{"tool", func(a *Approval) { a.Tool = "delete_everything" }, ErrSignature},
		{"argumentsHash", func(a *Approval) { a.ArgumentsHash = otherHash }, ErrSignature},
		{"fields-swapped", func(a *Approval) { a.MessageID, a.ChannelID = a.ChannelID, a.MessageID }, ErrSignature},
		{"boundary-moved", func(a *Approval) { a.Message, a.MessageID = a.Message+a.MessageID[:1], a.MessageID[1:] }, ErrSignature},
		{"pubkey", func(a *Approval) { a.Pubkey = otherPub }, ErrSignature},
		{"signature-bit", func(a *Approval) {
			sig, _ := base58.Decode(a.Signature)
			sig[10] ^= 1
			a.Signature = base58.Encode(sig)
		}, ErrSignature},
		{"version 1", func(a *Approval) { a.Version = 1 }, ErrMalformed},
		{"version 2", func(a *Approval) { a.Version = 2 }, ErrMalformed},
		{"version 4", func(a *Approval) { a.Version = 4 }, ErrMalformed},
	}
	for _, v := range vf.Approvals {
		for _, tc := range tampers {
			t.Run(v.Name+"/"+tc.name, func(t *testing.T) {
				a := v.approval(t, vf.Pubkey)
				tc.change(a)
				args := any(v.args())
				if a.ArgumentsHash == otherHash {
					args = `{"env":"production"}`
				}
				want := tc.wantErr
				if a.MessageID == "" {
					want = ErrMalformed // the channel id moved into an empty one's place
				}
				if err := a.Check(a.Audience, a.Tool, args); !errors.Is(err, want) {
					t.Errorf("Check = %v, want %v", err, want)
				}
			})
		}
		// The untouched approval, presented with another call.
		t.Run(v.Name+"/another-call", func(t *testing.T) {
			a := v.approval(t, vf.Pubkey)
			for _, c := range []struct {
				audience, tool string
				args           any
			}{
				{"https://evil.example/mcp", v.Tool, v.args()},
				{v.Audience + "/", v.Tool, v.args()},
				{"", v.Tool, v.args()},
				{v.Audience, v.Tool + "s", v.args()},
				{v.Audience, "", v.args()},
				{v.Audience, v.Tool, `{"env":"production"}`},
				{v.Audience, v.Tool, `{"extra":1}`},
			} {
				if err := a.Check(c.audience, c.tool, c.args); !errors.Is(err, ErrMismatch) {
					t.Errorf("Check(%q, %q, %v) = %v, want ErrMismatch", c.audience, c.tool, c.args, err)
				}
			}
		})
	}
	// A signature from one vector does not fit another.
	for i, v := range vf.Approvals {
		a := v.approval(t, vf.Pubkey)
		a.Signature = vf.Approvals[(i+1)%len(vf.Approvals)].Signature
		if err := a.Check(v.Audience, v.Tool, v.args()); !errors.Is(err, ErrSignature) {
			t.Errorf("%s with the next vector's signature: Check = %v, want ErrSignature", v.Name, err)
		}
	}
}

// sign signs a test approval of message text for the call of tool t on
// the server "srv" with arguments args, made as the message came in.
func sign(tb testing.TB, key ed25519.PrivateKey, text string, created time.Time, id, channel, t string, args any) *Approval {
	tb.Helper()
	a, err := Sign(key, Message{Text: text, CreatedAt: created, ID: id, ChannelID: channel}, created, "srv", t, args)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

func TestCheckMalformed(t *testing.T) {
	key := testKey(1)
	good := sign(t, key, "hi", time.Unix(1700000000, 0), "m1", "", "t", nil)
	b58 := func(n int) string { return base58.Encode(bytes.Repeat([]byte{0xab}, n)) }
	tests := []struct {
		name   string
		change func(a *Approval)
	}{
		{"version 0", func(a *Approval) { a.Version = 0 }},
		{"version 1", func(a *Approval) { a.Version = 1 }},
		{"no pubkey", func(a *Approval) { a.Pubkey = "" }},
		{"pubkey not base58", func(a *Approval) { a.Pubkey = "0OIl" + a.Pubkey[4:] }},
		{"pubkey with space", func(a *Approval) { a.Pubkey = " " + a.Pubkey }},
		{"pubkey 31 bytes", func(a *Approval) { a.Pubkey = b58(31) }},
		{"pubkey 33 bytes", func(a *Approval) { a.Pubkey = b58(33) }},
		{"pubkey huge", func(a *Approval) { a.Pubkey = strings.Repeat("z", 10000) }},
		{"pubkey non-ASCII", func(a *Approval) { a.Pubkey = "é" + a.Pubkey[2:] }},
		{"no message id", func(a *Approval) { a.MessageID = "" }},
		{"no audience", func(a *Approval) { a.Audience = "" }},
		{"no tool", func(a *Approval) { a.Tool = "" }},
		{"no signedAt", func(a *Approval) { a.SignedAt = time.Time{} }},
		{"no signature", func(a *Approval) { a.Signature = "" }},
		{"signature not base58", func(a *Approval) { a.Signature = a.Signature[:10] + "_" + a.Signature[11:] }},
		{"signature 63 bytes", func(a *Approval) { a.Signature = b58(63) }},
		{"signature 65 bytes", func(a *Approval) { a.Signature = b58(65) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := *good
			tc.change(&a)
			if err := a.Check(a.Audience, a.Tool, nil); !errors.Is(err, ErrMalformed) {
				t.Errorf("Check = %v, want ErrMalformed", err)
			}
		})
	}
	var nilApproval *Approval
	if err := nilApproval.Check("srv", "t", nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("nil Check = %v, want ErrMalformed", err)
	}
	for _, args := range []any{`{"a":`, `{} {}`, `[1e400]`, `{"a":1}x`} {
		if err := good.Check("srv", "t", args); !errors.Is(err, ErrMalformed) {
			t.Errorf("Check with arguments %v = %v, want ErrMalformed", args, err)
		}
	}
	if err := good.Check("srv", "t", nil); err != nil {
		t.Errorf("untouched approval: Check = %v", err)
	}
}

// Absent arguments are the empty object, however they are absent.
func TestEmptyArguments(t *testing.T) {
	a := sign(t, testKey(1), "m", time.Unix(1700000000, 0), "id", "", "t", nil)
	for _, args := range []any{nil, "", " ", "null", "{}", " { } ", json.RawMessage(nil), []byte{}, map[string]any{}, struct{}{}} {
		if err := a.Check("srv", "t", args); err != nil {
			t.Errorf("Check(%#v) = %v", args, err)
		}
	}
	for _, args := range []any{"[]", `{"a":null}`, []any{}, 0} {
		if err := a.Check("srv", "t", args); !errors.Is(err, ErrMismatch) {
			t.Errorf("Check(%#v) = %v, want ErrMismatch", args, err)
		}
	}
}

// Arguments hash alike however they are written: key order, whitespace,
// escapes and number forms do not matter; values do.
func TestHashArguments(t *testing.T) {
	base, err := HashArguments(`{"a":1,"b":"x","c":[true,null]}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, same := range []any{
		`{ "c" : [ true , null ] , "b" : "\u0078", "a" : 1.0 }`,
		`{"a":1e0,"b":"x","c":[true,null],"a":1}`,
		map[string]any{"c": []any{true, nil}, "a": 1, "b": "x"},
		struct {
			A int    `json:"a"`
			B string `json:"b"`
			C []any  `json:"c"`
		}{1, "x", []any{true, nil}},
	} {
		if h, err := HashArguments(same); err != nil || h != base {
			t.Errorf("HashArguments(%v) = %s, %v; want %s", same, h, err, base)
		}
	}
	for _, other := range []any{`{"a":2,"b":"x","c":[true,null]}`, `{"a":1,"b":"X","c":[true,null]}`, `{"a":1,"b":"x","c":[null,true]}`,
		`{"a":"1","b":"x","c":[true,null]}`, `{"a":1,"b":"x","c":[true,null],"d":0}`} {
		if h, _ := HashArguments(other); h == base {
			t.Errorf("HashArguments(%v) equals another call's", other)
		}
	}
	if _, err := HashArguments(func() {}); !errors.Is(err, ErrMalformed) {
		t.Errorf("HashArguments(func) = %v", err)
	}
}

func TestSignNormalisesTime(t *testing.T) {
	key := testKey(2)
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	created := time.Date(2025, 5, 6, 7, 8, 9, 123456789, zone)
	a, err := Sign(key, Message{Text: "m", CreatedAt: created, ID: "id", ChannelID: "ch"}, created.Add(time.Hour+time.Microsecond), "srv", "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2025, 5, 6, 1, 38, 9, 123000000, time.UTC)
	if !a.CreatedAt.Equal(want) || a.CreatedAt.Location() != time.UTC {
		t.Errorf("CreatedAt = %v, want %v", a.CreatedAt, want)
	}
	if want := want.Add(time.Hour); !a.SignedAt.Equal(want) || a.SignedAt.Location() != time.UTC {
		t.Errorf("SignedAt = %v, want %v", a.SignedAt, want)
	}
	data, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"createdAt":"2025-05-06T01:38:09.123Z"`)) || !bytes.Contains(data, []byte(`"signedAt":"2025-05-06T02:38:09.123Z"`)) {
		t.Errorf("JSON = %s, want createdAt 2025-05-06T01:38:09.123Z and signedAt 2025-05-06T02:38:09.123Z", data)
	}
	back, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.Check("srv", "t", nil); err != nil {
		t.Errorf("Check after round trip: %v", err)
	}
	// A wall-clock time with a monotonic reading signs the same way.
	if err := sign(t, key, "m", time.Now(), "id", "", "t", nil).Check("srv", "t", nil); err != nil {
		t.Errorf("Sign(time.Now()): Check = %v", err)
	}
}

func TestSignBadKey(t *testing.T) {
	for _, key := range []ed25519.PrivateKey{nil, make(ed25519.PrivateKey, 32), make(ed25519.PrivateKey, 65)} {
		if a, err := Sign(key, Message{ID: "id"}, time.Now(), "srv", "t", nil); !errors.Is(err, ErrMalformed) || a != nil {
			t.Errorf("Sign with a %d-byte key = %+v, %v; want ErrMalformed", len(key), a, err)
		}
		if _, err := SignMessage(key, Message{ID: "id"}); !errors.Is(err, ErrMalformed) {
			t.Errorf("SignMessage with a %d-byte key = %v, want ErrMalformed", len(key), err)
		}
	}
	if _, err := Sign(testKey(1), Message{ID: "id"}, time.Now(), "srv", "t", `{"a":`); !errors.Is(err, ErrMalformed) {
		t.Errorf("Sign with bad arguments = %v, want ErrMalformed", err)
	}
	if _, err := Sign(testKey(1), Message{ID: "id", CreatedAt: time.Now()}, time.Time{}, "srv", "t", nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("Sign with no signedAt = %v, want ErrMalformed", err)
	}
}

func TestPayloadLayout(t *testing.T) {
	long := strings.Repeat("x", 70000)
	a := &Approval{Message: long, CreatedAt: time.UnixMilli(-1), MessageID: "", ChannelID: "c", Audience: "s", Tool: "tt", ArgumentsHash: "h",
		SignedAt: time.UnixMilli(12345)}
	var want []byte
	want = append(want, "agentd-approval-v3"...)
	want = append(want, 0x00, 0x01, 0x11, 0x70)
	want = append(want, long...)
	want = append(want, 0, 0, 0, 2, '-', '1')
	want = append(want, 0, 0, 0, 0)
	want = append(want, 0, 0, 0, 1, 'c')
	want = append(want, 0, 0, 0, 1, 's')
	want = append(want, 0, 0, 0, 2, 't', 't')
	want = append(want, 0, 0, 0, 1, 'h')
	want = append(want, 0, 0, 0, 5, '1', '2', '3', '4', '5')
	if got := a.Payload(); !bytes.Equal(got, want) {
		t.Errorf("Payload differs: len %d, want %d", len(got), len(want))
	}
	if err := sign(t, testKey(3), long, time.Now(), "m", "", "t", nil).Check("srv", "t", nil); err != nil {
		t.Errorf("long message: Check = %v", err)
	}
}

func TestMarshalJSON(t *testing.T) {
	a := Approval{
		Version:       3,
		Pubkey:        "pk",
		Message:       "a <b> & \"c\"",
		CreatedAt:     time.Date(2025, 1, 2, 3, 4, 5, 6000000, time.UTC),
		MessageID:     "m",
		ChannelID:     "",
		Audience:      "https://x/mcp",
		Tool:          "t",
		ArgumentsHash: "ab",
		SignedAt:      time.Date(2025, 1, 2, 4, 5, 6, 7000000, time.FixedZone("CET", 3600)),
		Signature:     "sig",
	}
	got, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"version":3,"daemonPubkey":"pk","message":"a \u003cb\u003e \u0026 \"c\"","createdAt":"2025-01-02T03:04:05.006Z","messageId":"m","channelId":"","audience":"https://x/mcp","tool":"t","argumentsHash":"ab","signedAt":"2025-01-02T03:05:06.007Z","signature":"sig"}`
	if string(got) != want {
		t.Errorf("Marshal =\n%s\nwant\n%s", got, want)
	}
	b := a
	a.CreatedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := json.Marshal(a); err == nil {
		t.Error("Marshal of createdAt in year 10000: no error")
	}
	b.SignedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := json.Marshal(b); err == nil {
		t.Error("Marshal of signedAt in year 10000: no error")
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

var benchArgs = json.RawMessage(`{"env":"staging","replicas":3,"tags":["a","b"]}`)

func BenchmarkSign(b *testing.B) {
	key := testKey(1)
	m := Message{Text: "deploy the staging build", CreatedAt: time.Unix(1700000000, 0), ID: "msg-1", ChannelID: "telegram:1"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Sign(key, m, m.CreatedAt, "https://deploy.example/mcp", "deploy", benchArgs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheck(b *testing.B) {
	a := sign(b, testKey(1), "deploy the staging build", time.Unix(1700000000, 0), "msg-1", "telegram:1", "deploy", benchArgs)
	b.ReportAllocs()
	for b.Loop() {
		if err := a.Check("srv", "deploy", benchArgs); err != nil {
			b.Fatal(err)
		}
	}
}

// A hook signature verifies as a hook and can never pass as an approval,
// even when the payload imitates an approval's signed bytes.
func TestHookSignatureIsNotAnApproval(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	pub := EncodePublicKey(key.Public().(ed25519.PublicKey))
	a := sign(t, key, "wire all funds to mallory", time.Unix(1700000000, 0), "m1", "c1", "transfer", `{"to":"mallory"}`)
	forged := string(a.Payload()) // what a hostile server would ask to sign
	sig, err := SignHook(key, forged)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckHook(pub, forged, sig); err != nil {
		t.Fatalf("CheckHook: %v", err)
	}
	a.Signature = sig
	if err := a.Check("srv", "transfer", `{"to":"mallory"}`); err == nil {
		t.Fatal("a hook signature passed as an approval")
	}
	if err := CheckHook(pub, forged+"x", sig); err == nil {
		t.Fatal("CheckHook accepted a changed payload")
	}
}
