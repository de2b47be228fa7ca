package identity

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mr-tron/base58"

	"agentd/approval"
	"agentd/internal/agent"
)

// The keypair of RFC 8032 section 7.1, TEST 1, as solana-keygen writes it
// (testdata/rfc8032-keypair.json), and its public key in base58.
const (
	rfcFile   = "testdata/rfc8032-keypair.json"
	rfcPubkey = "FVen3X669xLzsi6N2V91DoiyzHzg1uAgqiT8jZ9nS96Z"
)

func openKeyring(t *testing.T) (*Keyring, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "keys")
	k, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return k, dir
}

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// solanaFile returns a keypair file made from a fixed seed, pretty-printed
// the way a person might have saved it.
func solanaFile(seedByte byte) (data []byte, pub string) {
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seedByte}, ed25519.SeedSize))
	nums := make([]int, len(key))
	for i, b := range key {
		nums[i] = int(b)
	}
	data, _ = json.MarshalIndent(nums, "", "  ")
	return append(data, '\n'), base58.Encode(key[32:])
}

func TestKeyCreatedOnFirstUse(t *testing.T) {
	k, dir := openKeyring(t)
	if checkPerms {
		if m := mode(t, dir); m != 0o700 {
			t.Errorf("key directory mode = %#o, want 0700", m)
		}
	}
	if pub, ok, err := k.Public("alice"); err != nil || ok || pub != "" {
		t.Fatalf("Public before first use = %q, %v, %v; want no key", pub, ok, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "alice.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Public created a key file: %v", err)
	}
	key, err := k.Key("alice")
	if err != nil {
		t.Fatal(err)
	}
	if len(key) != ed25519.PrivateKeySize {
		t.Fatalf("key is %d bytes", len(key))
	}
	path := filepath.Join(dir, "alice.json")
	if checkPerms {
		if m := mode(t, path); m != 0o600 {
			t.Errorf("key file mode = %#o, want 0600", m)
		}
	}
	// The file is the Solana keypair format.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var nums []int
	if err := json.Unmarshal(data, &nums); err != nil || len(nums) != 64 {
		t.Fatalf("key file is not a JSON array of 64 numbers: %v", err)
	}
	for i, n := range nums {
		if byte(n) != key[i] {
			t.Fatalf("key file byte %d differs from the key", i)
		}
	}
	pub, ok, err := k.Public("alice")
	if err != nil || !ok {
		t.Fatalf("Public = %q, %v, %v", pub, ok, err)
	}
	if want := base58.Encode(key[32:]); pub != want {
		t.Errorf("Public = %s, want %s", pub, want)
	}
	again, err := k.Key("alice")
	if err != nil || !again.Equal(key) {
		t.Errorf("second Key = %v, differs: %v", err, !again.Equal(key))
	}
	// Another keyring on the same directory loads the same key.
	k2, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pub2, ok, err := k2.Public("alice"); err != nil || !ok || pub2 != pub {
		t.Errorf("reopened Public = %q, %v, %v; want %s", pub2, ok, err, pub)
	}
	loaded, err := k2.Key("alice")
	if err != nil || !loaded.Equal(key) {
		t.Errorf("reopened Key = %v, same key: %v", err, loaded.Equal(key))
	}
	// Other agents get other keys.
	bob, err := k.Key("bob")
	if err != nil {
		t.Fatal(err)
	}
	if bob.Equal(key) {
		t.Error("two agents share a key")
	}
	assertNoTempFiles(t, dir)
}

func TestKeyReturnsCopy(t *testing.T) {
	k, _ := openKeyring(t)
	key, err := k.Key("a")
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Clone(key)
	clear(key)
	got, err := k.Key("a")
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("changing a returned key changed the keyring's key (err %v)", err)
	}
}

func TestImportSolanaFile(t *testing.T) {
	k, dir := openKeyring(t)
	golden, err := os.ReadFile(rfcFile)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := k.Import("rfc", bytes.NewReader(golden), false)
	if err != nil {
		t.Fatal(err)
	}
	if pub != rfcPubkey {
		t.Errorf("Import = %s, want %s", pub, rfcPubkey)
	}
	// The saved file is byte for byte what solana-keygen writes.
	saved, err := os.ReadFile(filepath.Join(dir, "rfc.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(saved, golden) {
		t.Errorf("saved key file:\n%s\nwant\n%s", saved, golden)
	}
	if checkPerms {
		if m := mode(t, filepath.Join(dir, "rfc.json")); m != 0o600 {
			t.Errorf("imported key file mode = %#o, want 0600", m)
		}
	}

	// A file made in the test from a fixed seed, with whitespace.
	data, wantPub := solanaFile(9)
	pub, err = k.Import("fixed", bytes.NewReader(data), false)
	if err != nil {
		t.Fatal(err)
	}
	if pub != wantPub {
		t.Errorf("Import = %s, want %s", pub, wantPub)
	}
	got, ok, err := k.Public("fixed")
	if err != nil || !ok || got != wantPub {
		t.Errorf("Public after Import = %q, %v, %v", got, ok, err)
	}
	k2, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _, err := k2.Public("fixed"); err != nil || got != wantPub {
		t.Errorf("reopened Public = %q, %v; want %s", got, err, wantPub)
	}
}

func TestImportRejects(t *testing.T) {
	golden, err := os.ReadFile(rfcFile)
	if err != nil {
		t.Fatal(err)
	}
	var nums []int
	if err := json.Unmarshal(golden, &nums); err != nil {
		t.Fatal(err)
	}
	variant := func(change func([]int) []int) string {
		b, _ := json.Marshal(change(append([]int(nil), nums...)))
		return string(b)
	}
	tests := []struct {
		name string
		data string
	}{
		{"mismatched public key", variant(func(n []int) []int { n[40] ^= 1; return n })},
		{"public key of another seed", variant(func(n []int) []int { n[0] ^= 1; return n })},
		{"short", variant(func(n []int) []int { return n[:63] })},
		{"seed only", variant(func(n []int) []int { return n[:32] })},
		{"long", variant(func(n []int) []int { return append(n, 0) })},
		{"byte over 255", variant(func(n []int) []int { n[3] = 256; return n })},
		{"negative byte", variant(func(n []int) []int { n[3] = -1; return n })},
		{"fraction", strings.Replace(string(golden), "157,", "157.5,", 1)},
		{"strings", strings.NewReplacer(",", `","`, "[", `["`, "]", `"]`).Replace(string(golden))},
		{"not JSON", "this is not a key"},
		{"empty", ""},
		{"object", `{"secretKey":` + string(golden) + `}`},
		{"base58 string", `"` + base58.Encode(bytes.Repeat([]byte{1}, 64)) + `"`},
		{"trailing data", string(golden) + "]"},
		{"two arrays", string(golden) + string(golden)},
		{"too large", "[" + strings.Repeat(" ", maxKeyFile) + "]"},
	}
	seedHex := hex.EncodeToString(mustParse(t, golden)[:32])
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, dir := openKeyring(t)
			pub, err := k.Import("x", strings.NewReader(tc.data), false)
			if !errors.Is(err, ErrKeyFile) {
				t.Fatalf("Import = %q, %v; want ErrKeyFile", pub, err)
			}
			msg := err.Error()
			if strings.Contains(msg, "157,97") || strings.Contains(msg, seedHex) || strings.Contains(msg, "157.5") {
				t.Errorf("error quotes key bytes: %s", msg)
			}
			if _, ok, err := k.Public("x"); ok || err != nil {
				t.Errorf("a rejected import left a key (%v)", err)
			}
			assertNoTempFiles(t, dir)
		})
	}
}

func mustParse(t *testing.T, data []byte) ed25519.PrivateKey {
	t.Helper()
	key, err := ParseKeypair(data)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func TestRefuseOverwrite(t *testing.T) {
	k, dir := openKeyring(t)
	first, err := k.Key("a")
	if err != nil {
		t.Fatal(err)
	}
	firstPub := base58.Encode(first[32:])
	data, importedPub := solanaFile(3)

	if _, err := k.Import("a", bytes.NewReader(data), false); !errors.Is(err, ErrExists) {
		t.Errorf("Import over a key = %v, want ErrExists", err)
	}
	if _, err := k.Generate("a", false); !errors.Is(err, ErrExists) {
		t.Errorf("Generate over a key = %v, want ErrExists", err)
	}
	if pub, _, _ := k.Public("a"); pub != firstPub {
		t.Errorf("a refused overwrite changed the key: %s, want %s", pub, firstPub)
	}
	if k2, _ := Open(dir, nil); k2 != nil {
		if pub, _, _ := k2.Public("a"); pub != firstPub {
			t.Errorf("a refused overwrite changed the key file: %s, want %s", pub, firstPub)
		}
	}

	pub, err := k.Import("a", bytes.NewReader(data), true)
	if err != nil || pub != importedPub {
		t.Fatalf("forced Import = %q, %v; want %s", pub, err, importedPub)
	}
	if got, _, _ := k.Public("a"); got != importedPub {
		t.Errorf("Public after forced Import = %s, want %s", got, importedPub)
	}
	generated, err := k.Generate("a", true)
	if err != nil {
		t.Fatal(err)
	}
	if generated == importedPub {
		t.Error("forced Generate kept the old key")
	}
	key, err := k.Key("a")
	if err != nil || base58.Encode(key[32:]) != generated {
		t.Errorf("Key after forced Generate = %v, does not match %s", err, generated)
	}
	k3, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := k3.Public("a"); got != generated {
		t.Errorf("reopened Public = %s, want %s", got, generated)
	}
	// Generate for a new agent needs no force.
	if _, err := k.Generate("new", false); err != nil {
		t.Errorf("Generate for a new agent = %v", err)
	}
	assertNoTempFiles(t, dir)
}

func TestInvalidAgentID(t *testing.T) {
	k, dir := openKeyring(t)
	data, _ := solanaFile(1)
	for _, id := range []string{"", "../escape", "a/b", `a\b`, ".hidden", "-dash", "a.json", "x y", strings.Repeat("a", 65), "a\x00"} {
		calls := map[string]error{}
		_, calls["Key"] = k.Key(id)
		_, _, calls["Public"] = k.Public(id)
		_, calls["Generate"] = k.Generate(id, true)
		_, calls["Import"] = k.Import(id, bytes.NewReader(data), true)
		_, calls["Approve"] = k.Approve(id, approval.Message{Text: "m", CreatedAt: time.Now(), ID: "1"}, time.Now(), "srv", "t", nil)
		_, _, calls["SignMessage"] = k.SignMessage(id, approval.Message{Text: "m", CreatedAt: time.Now(), ID: "1"})
		for name, err := range calls {
			if !errors.Is(err, agent.ErrInvalidID) {
				t.Errorf("%s(%q) = %v, want agent.ErrInvalidID", name, id, err)
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("invalid ids left files: %v", entries)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape.json")); err == nil {
		t.Error("a key was written outside the key directory")
	}
}

func TestLoosePermissions(t *testing.T) {
	if !checkPerms {
		t.Skip("no file modes on this system")
	}
	for _, m := range []fs.FileMode{0o644, 0o640, 0o604, 0o660, 0o606, 0o610, 0o601} {
		t.Run(fmt.Sprintf("%#o", m), func(t *testing.T) {
			k, dir := openKeyring(t)
			if _, err := k.Key("a"); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "a.json")
			before, _ := os.ReadFile(path)
			if err := os.Chmod(path, m); err != nil {
				t.Fatal(err)
			}
			k2, err := Open(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := k2.Key("a"); !errors.Is(err, ErrInsecure) {
				t.Errorf("Key = %v, want ErrInsecure", err)
			}
			if _, _, err := k2.Public("a"); !errors.Is(err, ErrInsecure) {
				t.Errorf("Public = %v, want ErrInsecure", err)
			}
			if _, err := k2.Approve("a", approval.Message{Text: "m", CreatedAt: time.Now(), ID: "1"}, time.Now(), "srv", "t", nil); !errors.Is(err, ErrInsecure) {
				t.Errorf("Approve = %v, want ErrInsecure", err)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Error("the refused key file was rewritten")
			}
			if err := os.Chmod(path, 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := k2.Key("a"); err != nil {
				t.Errorf("Key after chmod 600 = %v", err)
			}
		})
	}
}

func TestInsecureDirectory(t *testing.T) {
	if !checkPerms {
		t.Skip("no file modes on this system")
	}
	dir := filepath.Join(t.TempDir(), "keys")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, nil); !errors.Is(err, ErrInsecure) {
		t.Errorf("Open(0777 directory) = %v, want ErrInsecure", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, nil); err != nil {
		t.Errorf("Open(0755 directory) = %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open("", nil); err == nil {
		t.Error("Open(\"\"): no error")
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(file, nil); err == nil {
		t.Error("Open(a file): no error")
	}
}

func TestCorruptKeyFile(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
	}{
		{"garbage", func(t *testing.T, path string) { writeFile(t, path, "garbage") }},
		{"empty", func(t *testing.T, path string) { writeFile(t, path, "") }},
		{"mismatched", func(t *testing.T, path string) {
			data, _ := os.ReadFile(rfcFile)
			writeFile(t, path, strings.Replace(string(data), ",26]", ",27]", 1))
		}},
		{"directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, dir := openKeyring(t)
			path := filepath.Join(dir, "a.json")
			tc.setup(t, path)
			before, _ := os.ReadFile(path)
			if _, err := k.Key("a"); !errors.Is(err, ErrKeyFile) {
				t.Errorf("Key = %v, want ErrKeyFile", err)
			}
			if _, ok, err := k.Public("a"); !errors.Is(err, ErrKeyFile) || ok {
				t.Errorf("Public = %v, %v; want ErrKeyFile", ok, err)
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(before, after) {
				t.Error("Key replaced a corrupt key file instead of failing")
			}
		})
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentFirstUse(t *testing.T) {
	k, dir := openKeyring(t)
	// A second keyring on the same directory stands for another process.
	other, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 16
	keys := make([]ed25519.PrivateKey, 2*n)
	errs := make([]error, 2*n)
	var wg sync.WaitGroup
	for i := range 2 * n {
		ring := k
		if i%2 == 1 {
			ring = other
		}
		wg.Go(func() {
			if i%4 == 0 {
				var a *approval.Approval
				a, errs[i] = ring.Approve("shared", approval.Message{Text: "m", CreatedAt: time.Now(), ID: "1"}, time.Now(), "srv", "t", nil)
				if errs[i] == nil {
					keys[i] = mustKeyFromPub(t, ring, a.Pubkey)
				}
				return
			}
			keys[i], errs[i] = ring.Key("shared")
		})
	}
	wg.Wait()
	for i := range keys {
		if errs[i] != nil {
			t.Fatalf("goroutine %d: %v", i, errs[i])
		}
		if !keys[i].Equal(keys[0]) {
			t.Fatalf("goroutine %d got a different key", i)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("key directory holds %d entries, want 1", len(entries))
	}
}

// mustKeyFromPub returns the keyring's key for "shared" after checking that
// pub is its public key.
func mustKeyFromPub(t *testing.T, k *Keyring, pub string) ed25519.PrivateKey {
	key, err := k.Key("shared")
	if err != nil {
		t.Error(err)
		return nil
	}
	if base58.Encode(key[32:]) != pub {
		t.Errorf("Sign used public key %s, Key has %s", pub, base58.Encode(key[32:]))
	}
	return key
}

func TestSign(t *testing.T) {
	k, _ := openKeyring(t)
	golden, err := os.ReadFile(rfcFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Import("rfc", bytes.NewReader(golden), false); err != nil {
		t.Fatal(err)
	}
	created := time.Date(2025, 1, 2, 3, 4, 5, 678999999, time.UTC)
	m := approval.Message{Text: "Deploy the staging build", CreatedAt: created, ID: "msg-0001", ChannelID: "telegram:12345"}
	args := `{"env": "staging", "replicas": 3}`
	signed := time.Date(2025, 1, 2, 4, 5, 6, 789999999, time.UTC) // the call came an hour after the message
	a, err := k.Approve("rfc", m, signed, "https://deploy.example.com/mcp", "deploy", args)
	if err != nil {
		t.Fatal(err)
	}
	// The same approval as the first vector of the approval package.
	want := &approval.Approval{
		Version:       3,
		Pubkey:        rfcPubkey,
		Message:       "Deploy the staging build",
		CreatedAt:     time.Date(2025, 1, 2, 3, 4, 5, 678000000, time.UTC),
		MessageID:     "msg-0001",
		ChannelID:     "telegram:12345",
		Audience:      "https://deploy.example.com/mcp",
		Tool:          "deploy",
		ArgumentsHash: "06d6c2c18211cdbe1876231a5f0136356840257de8ee2c5ef4120408315f8031",
		SignedAt:      time.Date(2025, 1, 2, 4, 5, 6, 789000000, time.UTC),
		Signature:     "4xR8YN6bCfPoJYBP2odT4L5JiFAjWPLfpFY9m5KsdLFhXFaXhNFoYJm2WnAfs2v6gKmhgZvGgXiqThLZvxARNCkK",
	}
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("Approve (-want +got):\n%s", diff)
	}
	if err := a.Check("https://deploy.example.com/mcp", "deploy", args); err != nil {
		t.Errorf("Check = %v", err)
	}
	// The message alone: the public key and the vector's fingerprint.
	pub, fp, err := k.SignMessage("rfc", m)
	if err != nil || pub != rfcPubkey || fp != "52bfc178fda61ba7" {
		t.Errorf("SignMessage = %s, %s, %v", pub, fp, err)
	}

	// A new agent's key is created by SignMessage, and a verifier trusting
	// its public key accepts the approvals it signs.
	fresh := approval.Message{Text: "hello", CreatedAt: time.Now(), ID: "m1"}
	signedBy, _, err := k.SignMessage("fresh", fresh)
	if err != nil {
		t.Fatal(err)
	}
	pub, ok, err := k.Public("fresh")
	if err != nil || !ok || pub != signedBy {
		t.Fatalf("Public = %q, %v, %v; the message was signed by %s", pub, ok, err, signedBy)
	}
	b, err := k.Approve("fresh", fresh, time.Now(), "files", "read", map[string]any{"path": "a"})
	if err != nil {
		t.Fatal(err)
	}
	v := approval.NewVerifier(&approval.VerifierOptions{Trusted: []string{pub}, Audience: []string{"files"}})
	if err := v.Verify(b, "read", `{"path":"a"}`); err != nil {
		t.Errorf("Verify = %v", err)
	}
}

func TestLogsHoldNoKeyBytes(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(&lockedWriter{w: &buf, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	dir := filepath.Join(t.TempDir(), "keys")
	k, err := Open(dir, &Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	golden, _ := os.ReadFile(rfcFile)
	if _, err := k.Import("rfc", bytes.NewReader(golden), false); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Import("rfc", bytes.NewReader(golden), true); err != nil {
		t.Fatal(err)
	}
	created, err := k.Key("created")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Generate("gen", false); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	if !strings.Contains(out, rfcPubkey) || !strings.Contains(out, "created agent key") {
		t.Errorf("log lacks the expected lines:\n%s", out)
	}
	rfc := mustParse(t, golden)
	for _, key := range []ed25519.PrivateKey{rfc, created} {
		seed := key[:32]
		for _, secret := range []string{hex.EncodeToString(seed), base58.Encode(seed), base58.Encode(key), string(EncodeKeypair(key)[:20])} {
			if strings.Contains(out, secret) {
				t.Errorf("log holds key bytes %q:\n%s", secret, out)
			}
		}
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestEncodeParseKeypair(t *testing.T) {
	golden, err := os.ReadFile(rfcFile)
	if err != nil {
		t.Fatal(err)
	}
	key := mustParse(t, golden)
	if got := EncodeKeypair(key); !bytes.Equal(got, golden) {
		t.Errorf("EncodeKeypair =\n%s\nwant\n%s", got, golden)
	}
	if _, err := ParseKeypair([]byte("[1,2]")); !errors.Is(err, ErrKeyFile) || !strings.HasPrefix(err.Error(), "identity: ") {
		t.Errorf("ParseKeypair(short) = %v", err)
	}
}

func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func BenchmarkSign(b *testing.B) {
	k, err := Open(filepath.Join(b.TempDir(), "keys"), nil)
	if err != nil {
		b.Fatal(err)
	}
	created := time.Now()
	if _, err := k.Key("a"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Approve("a", approval.Message{Text: "deploy the staging build", CreatedAt: created, ID: "msg-1", ChannelID: "telegram:1"}, created, "srv", "deploy", `{"env":"staging"}`); err != nil {
			b.Fatal(err)
		}
	}
}
