// Package identity keeps the ed25519 keypairs that identify agentd's agents
// and signs with them: approvals of tool calls, and messages.
//
// Each agent's key lives in <data dir>/keys/<agent id>.json in the Solana
// keypair format (a JSON array of the 32-byte seed followed by the 32-byte
// public key), so `solana-keygen pubkey` prints the same public key agentd
// shows. Key files are written atomically with mode 0600; a key file that
// group or others may read or write is refused, as ssh does.
package identity

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"agentd/approval"
	"agentd/internal/agent"
)

// Errors returned by a Keyring. Errors about agent ids wrap
// agent.ErrInvalidID.
var (
	// ErrExists means an agent already has a key and overwriting it was
	// not asked for.
	ErrExists = errors.New("key exists")
	// ErrKeyFile means a key file, or a keypair being imported, is not a
	// valid Solana keypair.
	ErrKeyFile = errors.New("invalid keypair")
	// ErrInsecure means a key file or the key directory is open to group
	// or others.
	ErrInsecure = errors.New("insecure permissions")
)

// maxKeyFile bounds the size of a key file or imported keypair; a Solana
// keypair file is about 250 bytes.
const maxKeyFile = 64 << 10

// Options configures a Keyring. A nil *Options means the defaults.
type Options struct {
	// Logger receives a line when a key is created, generated or imported
	// (agent id and public key only). Default: discard.
	Logger *slog.Logger
}

// A Keyring holds the agents' keys in one directory. It caches each key in
// memory after first use and is safe for concurrent use. It expects to be
// the only writer of its directory while it runs: a key file replaced by
// another process is seen by the next Keyring opened on the directory.
type Keyring struct {
	dir string
	log *slog.Logger

	// fileMu serialises reading and writing key files, so that concurrent
	// first uses of an agent's key create one key.
	fileMu sync.Mutex
	mu     sync.RWMutex
	keys   map[string]ed25519.PrivateKey
}

// Open opens the key directory dir (normally <data dir>/keys), creating it
// with mode 0700 if needed. A directory that group or others may write is
// refused with an error wrapping ErrInsecure.
func Open(dir string, o *Options) (*Keyring, error) {
	if dir == "" {
		return nil, errors.New("identity: open: empty directory name")
	}
	if o == nil {
		o = &Options{}
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("identity: open: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("identity: open: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("identity: open: %s is not a directory", dir)
	}
	if checkPerms && fi.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("identity: open %s: %w: mode %#o lets group or others write; run chmod 700 on it",
			dir, ErrInsecure, fi.Mode().Perm())
	}
	return &Keyring{dir: dir, log: log, keys: make(map[string]ed25519.PrivateKey)}, nil
}

// checkPerms is whether file modes mean anything on this system.
const checkPerms = runtime.GOOS != "windows"

// Dir returns the key directory.
func (k *Keyring) Dir() string { return k.dir }

// Key returns the agent's private key, creating and saving a new one on
// first use. The caller gets its own copy.
func (k *Keyring) Key(agentID string) (ed25519.PrivateKey, error) {
	key, err := k.key(agentID)
	if err != nil {
		return nil, err
	}
	return slices.Clone(key), nil
}

// key is Key without the copy, for use inside the package.
func (k *Keyring) key(agentID string) (ed25519.PrivateKey, error) {
	if key := k.cached(agentID); key != nil {
		return key, nil
	}
	if err := checkID(agentID); err != nil {
		return nil, err
	}
	k.fileMu.Lock()
	defer k.fileMu.Unlock()
	if key := k.cached(agentID); key != nil {
		return key, nil
	}
	key, err := k.load(agentID)
	if err == nil {
		return key, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	_, key, err = ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("identity: key %q: %w", agentID, err)
	}
	err = k.write(agentID, key, false)
	if errors.Is(err, ErrExists) {
		// Another process created it first: use that one.
		return k.load(agentID)
	}
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	k.keys[agentID] = key
	k.mu.Unlock()
	k.log.Info("created agent key", "agent", agentID, "pubkey", pubkeyOf(key))
	return key, nil
}

// Public returns the agent's base58 public key and true, or "" and false if
// the agent has no key yet. It never creates a key.
func (k *Keyring) Public(agentID string) (string, bool, error) {
	if key := k.cached(agentID); key != nil {
		return pubkeyOf(key), true, nil
	}
	if err := checkID(agentID); err != nil {
		return "", false, err
	}
	k.fileMu.Lock()
	defer k.fileMu.Unlock()
	if key := k.cached(agentID); key != nil {
		return pubkeyOf(key), true, nil
	}
	key, err := k.load(agentID)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return pubkeyOf(key), true, nil
}

// Generate creates a new key for the agent and returns its base58 public
// key. If the agent has a key, Generate replaces it when force is set and
// otherwise returns an error wrapping ErrExists.
func (k *Keyring) Generate(agentID string, force bool) (string, error) {
	if err := checkID(agentID); err != nil {
		return "", err
	}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", fmt.Errorf("identity: generate %q: %w", agentID, err)
	}
	if err := k.store(agentID, key, force, "generated agent key"); err != nil {
		return "", err
	}
	return pubkeyOf(key), nil
}

// Import reads a Solana keypair file (a JSON array of 64 numbers: the
// 32-byte seed, then the 32-byte public key) from r, checks that the public
// key belongs to the seed, and saves it as the agent's key. It returns the
// base58 public key. An existing key is replaced only when force is set;
// otherwise the error wraps ErrExists.
func (k *Keyring) Import(agentID string, r io.Reader, force bool) (string, error) {
	if err := checkID(agentID); err != nil {
		return "", err
	}
	data, err := io.ReadAll(io.LimitReader(r, maxKeyFile+1))
	if err != nil {
		return "", fmt.Errorf("identity: import %q: %w", agentID, err)
	}
	defer clear(data)
	if len(data) > maxKeyFile {
		return "", fmt.Errorf("identity: import %q: %w: more than %d bytes", agentID, ErrKeyFile, maxKeyFile)
	}
	key, err := parseKeypair(data)
	if err != nil {
		return "", fmt.Errorf("identity: import %q: %w", agentID, err)
	}
	if err := k.store(agentID, key, force, "imported agent key"); err != nil {
		return "", err
	}
	return pubkeyOf(key), nil
}

// Approve signs at signedAt, with the agent's key (created on first use),
// the approval of message m for one call: the tool tool of the server
// audience with arguments (see approval.Sign).
func (k *Keyring) Approve(agentID string, m approval.Message, signedAt time.Time, audience, tool string, arguments any) (*approval.Approval, error) {
	key, err := k.key(agentID)
	if err != nil {
		return nil, err
	}
	a, err := approval.Sign(key, m, signedAt, audience, tool, arguments)
	if err != nil {
		return nil, fmt.Errorf("identity: approve for %q: %w", agentID, err)
	}
	return a, nil
}

// SignMessage signs message m alone with the agent's key (created on first
// use), as every message lifecycle starts (see approval.SignMessage). It
// returns the agent's public key and the signature's fingerprint; the
// signature itself never leaves the keyring.
func (k *Keyring) SignMessage(agentID string, m approval.Message) (pubkey, fingerprint string, err error) {
	key, err := k.key(agentID)
	if err != nil {
		return "", "", err
	}
	sig, err := approval.SignMessage(key, m)
	if err != nil {
		return "", "", fmt.Errorf("identity: sign message for %q: %w", agentID, err)
	}
	return pubkeyOf(key), approval.Fingerprint(sig), nil
}

// store writes key as the agent's key and caches it.
func (k *Keyring) store(agentID string, key ed25519.PrivateKey, force bool, what string) error {
	k.fileMu.Lock()
	defer k.fileMu.Unlock()
	_, statErr := os.Lstat(k.path(agentID))
	replaced := statErr == nil
	if err := k.write(agentID, key, force); err != nil {
		return err
	}
	k.mu.Lock()
	k.keys[agentID] = key
	k.mu.Unlock()
	if replaced {
		k.log.Warn(what+", replacing the previous key", "agent", agentID, "pubkey", pubkeyOf(key))
	} else {
		k.log.Info(what, "agent", agentID, "pubkey", pubkeyOf(key))
	}
	return nil
}

func (k *Keyring) cached(agentID string) ed25519.PrivateKey {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.keys[agentID]
}

func (k *Keyring) path(agentID string) string {
	return filepath.Join(k.dir, agentID+".json")
}

// load reads the agent's key file and caches the key. The error wraps
// fs.ErrNotExist if there is no key file. k.fileMu must be held.
func (k *Keyring) load(agentID string) (ed25519.PrivateKey, error) {
	path := k.path(agentID)
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("identity: key %q: %w", agentID, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("identity: key file %s: %w: not a regular file", path, ErrKeyFile)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("identity: key %q: %w", agentID, err)
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("identity: key %q: %w", agentID, err)
	}
	if checkPerms && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("identity: key file %s: %w: mode %#o lets group or others in; run chmod 600 on it",
			path, ErrInsecure, fi.Mode().Perm())
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("identity: key %q: %w", agentID, err)
	}
	defer clear(data)
	if len(data) > maxKeyFile {
		return nil, fmt.Errorf("identity: key file %s: %w: more than %d bytes", path, ErrKeyFile, maxKeyFile)
	}
	key, err := parseKeypair(data)
	if err != nil {
		return nil, fmt.Errorf("identity: key file %s: %w", path, err)
	}
	k.mu.Lock()
	k.keys[agentID] = key
	k.mu.Unlock()
	return key, nil
}

// write saves key as the agent's key file: a temporary file, synced, then
// renamed over the key file (force) or linked to its name, which fails if
// the key file exists (!force). k.fileMu must be held.
func (k *Keyring) write(agentID string, key ed25519.PrivateKey, force bool) error {
	data := EncodeKeypair(key)
	defer clear(data)
	tmp, err := os.CreateTemp(k.dir, "."+agentID+".json.tmp-*")
	if err != nil {
		return fmt.Errorf("identity: save key %q: %w", agentID, err)
	}
	tmpName := tmp.Name()
	defer func() {
		// After a rename the temporary file is gone; after a link or a
		// failure it must not stay behind.
		if err := os.Remove(tmpName); err != nil && !errors.Is(err, fs.ErrNotExist) {
			k.log.Warn("cannot remove temporary key file", "file", tmpName, "err", err)
		}
	}()
	if err := tmp.Chmod(0o600); err != nil && checkPerms {
		tmp.Close()
		return fmt.Errorf("identity: save key %q: %w", agentID, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("identity: save key %q: %w", agentID, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("identity: save key %q: %w", agentID, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("identity: save key %q: %w", agentID, err)
	}
	path := k.path(agentID)
	if force {
		err = os.Rename(tmpName, path)
	} else {
		err = os.Link(tmpName, path)
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("identity: agent %q: %w: %s", agentID, ErrExists, path)
		}
	}
	if err != nil {
		return fmt.Errorf("identity: save key %q: %w", agentID, err)
	}
	if err := syncDir(k.dir); err != nil {
		return fmt.Errorf("identity: save key %q: %w", agentID, err)
	}
	return nil
}

// syncDir makes a rename or link in dir durable.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func checkID(agentID string) error {
	if !agent.ValidID(agentID) {
		return fmt.Errorf("identity: %q: %w", agentID, agent.ErrInvalidID)
	}
	return nil
}

func pubkeyOf(key ed25519.PrivateKey) string {
	return approval.EncodePublicKey(key.Public().(ed25519.PublicKey))
}

// ParseKeypair decodes a Solana keypair file: a JSON array of 64 numbers
// from 0 to 255, the 32-byte seed followed by the 32-byte public key. It
// checks that the public key belongs to the seed. Errors wrap ErrKeyFile
// and never quote the key bytes.
func ParseKeypair(data []byte) (ed25519.PrivateKey, error) {
	key, err := parseKeypair(data)
	if err != nil {
		return nil, fmt.Errorf("identity: %w", err)
	}
	return key, nil
}

// parseKeypair is ParseKeypair with errors that name no package.
func parseKeypair(data []byte) (ed25519.PrivateKey, error) {
	var nums []int
	if err := json.Unmarshal(data, &nums); err != nil {
		return nil, fmt.Errorf("%w: want a JSON array of %d numbers from 0 to 255", ErrKeyFile, ed25519.PrivateKeySize)
	}
	defer clear(nums)
	if len(nums) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("%w: %d numbers, want %d (a 32-byte seed and a 32-byte public key)", ErrKeyFile, len(nums), ed25519.PrivateKeySize)
	}
	raw := make([]byte, ed25519.PrivateKeySize)
	defer clear(raw)
	for i, n := range nums {
		if n < 0 || n > 255 {
			return nil, fmt.Errorf("%w: number %d is not a byte (0 to 255)", ErrKeyFile, i+1)
		}
		raw[i] = byte(n)
	}
	key := ed25519.NewKeyFromSeed(raw[:ed25519.SeedSize])
	if !bytes.Equal(key[ed25519.SeedSize:], raw[ed25519.SeedSize:]) {
		clear(key)
		return nil, fmt.Errorf("%w: the public key does not belong to the seed", ErrKeyFile)
	}
	return key, nil
}

// EncodeKeypair encodes key in the Solana keypair file format, as
// solana-keygen writes it: "[n,n,…]" with no spaces.
func EncodeKeypair(key ed25519.PrivateKey) []byte {
	b := make([]byte, 0, 4*len(key)+2)
	b = append(b, '[')
	for i, c := range key {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(c), 10)
	}
	return append(b, ']')
}
