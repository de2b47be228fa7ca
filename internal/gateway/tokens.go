package gateway

// The gateway token: where it is kept (the token file in the data
// directory, or AGENTD_TOKEN), how it is made, rotated and re-read when the
// file changes. How strong a token must be is tokenstrength.go's; how a
// request presents it is auth.go's.

import (
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mr-tron/base58"
)

// Token settings.
const (
	// TokenFile is the file in the data directory holding the token.
	TokenFile = "gateway.token"
	// TokenEnv is the environment variable that may hold the token
	// instead (agentd serve), or the token of a remote gateway (the CLI's
	// --remote).
	TokenEnv = "AGENTD_TOKEN"
)

// Errors about tokens.
var (
	// ErrWeakToken: a token is too short or too uniform.
	ErrWeakToken = errors.New("token too weak")
	// ErrNoToken: the token file is missing or unreadable.
	ErrNoToken = errors.New("no token")
	// ErrFixedToken: the token comes from AGENTD_TOKEN and so cannot be
	// rotated here.
	ErrFixedToken = errors.New("the token comes from " + TokenEnv)
)

// NewToken returns a new random token: 32 bytes from crypto/rand in
// base58 (about 44 characters), which CheckRemoteToken accepts.
func NewToken() string {
	for {
		var b [32]byte
		rand.Read(b[:])
		if t := base58.Encode(b[:]); CheckRemoteToken(t) == nil {
			return t
		}
	}
}

// TokenOptions configure OpenTokens.
type TokenOptions struct {
	// Fixed, if not "", is the token (from AGENTD_TOKEN); the file is then
	// neither read nor written.
	Fixed string
	// Create makes the token file with a new token when it is missing.
	Create bool
	// OffLoopback says the API is served where other machines can reach
	// it: the token, fixed or read from the file whenever it changes,
	// must then pass CheckRemoteToken rather than CheckToken alone.
	OffLoopback bool
	Logger      *slog.Logger
}

// Tokens is the gateway token. It re-reads the token file when the file
// changes (a cheap stat per request), so a rotated or replaced token takes
// effect at the next request, without a restart. A file that is missing,
// unreadable, readable by others or holds a weak token lets no request in.
type Tokens struct {
	path   string
	fixed  bool
	remote bool // the token must pass CheckRemoteToken (TokenOptions.OffLoopback)
	log    *slog.Logger
	cur    atomic.Pointer[tokenState]
	mu     sync.Mutex // serializes reloads
}

// tokenState is one version of the token.
type tokenState struct {
	token string
	sum   [sha256.Size]byte // of token, for comparisons that do not leak its length
	fi    fs.FileInfo       // the file this was read from; nil for a fixed token
	err   error             // not nil: no valid token, every request is refused
}

func newTokenState(token string, fi fs.FileInfo) *tokenState {
	return &tokenState{token: token, sum: sha256.Sum256([]byte(token)), fi: fi}
}

// OpenTokens returns the token of the data directory dataDir: o.Fixed, or
// the content of dataDir/gateway.token, made with a new token when missing
// if o.Create is set. A weak fixed token is an error (ErrWeakToken).
func OpenTokens(dataDir string, o *TokenOptions) (*Tokens, error) {
	var opts TokenOptions
	if o != nil {
		opts = *o
	}
	t := &Tokens{path: filepath.Join(dataDir, TokenFile), log: opts.Logger, remote: opts.OffLoopback}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	if opts.Fixed != "" {
		if err := t.checkToken(opts.Fixed); err != nil {
			return nil, fmt.Errorf("gateway: %s: %w", TokenEnv, err)
		}
		t.fixed = true
		t.cur.Store(newTokenState(opts.Fixed, nil))
		return t, nil
	}
	if opts.Create {
		if err := createTokenFile(t.path); err != nil {
			return nil, err
		}
	}
	if st := t.state(); st.err != nil {
		return nil, fmt.Errorf("gateway: %w", st.err)
	}
	return t, nil
}

// Path is the token file.
func (t *Tokens) Path() string { return t.path }

// Fixed reports whether the token comes from AGENTD_TOKEN.
func (t *Tokens) Fixed() bool { return t.fixed }

// Token returns the current token, or why there is none.
func (t *Tokens) Token() (string, error) {
	st := t.state()
	if st.err != nil {
		return "", fmt.Errorf("gateway: %w", st.err)
	}
	return st.token, nil
}

// Rotate writes a new token to the file, replacing the old one at once
// (atomically: a reader sees the old token or the new one), and returns it.
func (t *Tokens) Rotate() (string, error) {
	if t.fixed {
		return "", fmt.Errorf("gateway: rotate: %w: set the variable to a new value and restart agentd", ErrFixedToken)
	}
	tok := NewToken()
	if err := writeTokenFile(t.path, tok, true); err != nil {
		return "", err
	}
	if st := t.state(); st.err != nil || st.token != tok {
		if st.err != nil {
			return "", fmt.Errorf("gateway: rotate: %w", st.err)
		}
		return "", fmt.Errorf("gateway: rotate: %s changed while it was written", t.path)
	}
	return tok, nil
}

// RotateToken writes a new token to dataDir/gateway.token, whatever the
// file held (nothing, a weak token, the wrong mode), and returns it. A
// running agentd uses it from its next request.
func RotateToken(dataDir string) (string, error) {
	t := &Tokens{path: filepath.Join(dataDir, TokenFile), log: slog.New(slog.DiscardHandler)}
	return t.Rotate()
}

// state returns the current token, reloading the file if it changed.
func (t *Tokens) state() *tokenState {
	cur := t.cur.Load()
	if t.fixed {
		return cur
	}
	fi, err := os.Stat(t.path)
	if unchanged(cur, fi, err) {
		return cur
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.cur.Load(); c != cur && unchanged(c, fi, err) {
		return c // another request reloaded it
	}
	st := t.load()
	t.cur.Store(st)
	switch {
	case cur == nil: // the first load: its error goes to the caller
	case st.err != nil:
		t.log.Error("gateway: no valid token: every request on TCP is refused", "err", st.err)
	default:
		t.log.Info("gateway: token file changed; using the new token", "file", t.path)
	}
	return st
}

// unchanged reports whether st was loaded from the file that a stat now
// finds (fi, or err): the same file, or still no file.
func unchanged(st *tokenState, fi fs.FileInfo, err error) bool {
	switch {
	case st == nil:
		return false
	case err != nil:
		return st.fi == nil && st.err != nil
	}
	return st.fi != nil && sameFile(st.fi, fi)
}

func sameFile(a, b fs.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime()) && a.Mode() == b.Mode()
}

// load reads the token file. A failed load keeps the file's FileInfo when
// it has one, so the file is read again only once it changes.
func (t *Tokens) load() *tokenState {
	var fi fs.FileInfo
	fail := func(err error) *tokenState { return &tokenState{err: err, fi: fi} }
	f, err := os.Open(t.path)
	if errors.Is(err, fs.ErrNotExist) {
		return fail(fmt.Errorf("%w: %s is missing (agentd token makes one)", ErrNoToken, t.path))
	}
	if err != nil {
		return fail(fmt.Errorf("%w: %v", ErrNoToken, err))
	}
	defer f.Close()
	fi, err = f.Stat()
	if err != nil {
		return fail(fmt.Errorf("%w: %v", ErrNoToken, err))
	}
	if !fi.Mode().IsRegular() {
		return fail(fmt.Errorf("%w: %s is not a regular file", ErrNoToken, t.path))
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fail(fmt.Errorf("%w: %s is readable by others (mode %04o); chmod 600 it, or agentd token rotate", ErrNoToken, t.path, fi.Mode().Perm()))
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenLen+16))
	if err != nil {
		return fail(fmt.Errorf("%w: %v", ErrNoToken, err))
	}
	tok := strings.TrimSpace(string(b))
	if err := t.checkToken(tok); err != nil {
		return fail(fmt.Errorf("%s: %w", t.path, err))
	}
	return newTokenState(tok, fi)
}

// createTokenFile writes a new token to path unless the file exists. An
// existing file is not written to at all (so serve starts on a full disk).
func createTokenFile(path string) error {
	if _, err := os.Lstat(path); err == nil {
		return nil
	}
	err := writeTokenFile(path, NewToken(), false)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	return err
}

// writeTokenFile writes tok to path with mode 0600 through a temporary
// file, replacing an existing file if replace is set (else fs.ErrExist).
func writeTokenFile(path, tok string, replace bool) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("gateway: token: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+TokenFile+".*")
	if err != nil {
		return fmt.Errorf("gateway: token: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	// CreateTemp makes the file 0600; say so in case the umask differs.
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("gateway: token: %w", err)
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		f.Close()
		return fmt.Errorf("gateway: token: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("gateway: token: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("gateway: token: %w", err)
	}
	if replace {
		err = os.Rename(tmp, path)
	} else {
		err = os.Link(tmp, path) // fails if path exists: never overwrite
	}
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return err
		}
		return fmt.Errorf("gateway: token: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
