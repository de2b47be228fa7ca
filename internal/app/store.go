package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"agentd/internal/agent"
	"agentd/internal/memory"
	"agentd/internal/store"
	"agentd/internal/store/postgres"
	"agentd/internal/store/sqlite"
)

// Store is what agentd's parts need of its store: store/sqlite's (the
// default, a file in the data directory) or store/postgres's, which
// several nodes may share.
type Store interface {
	store.Store
	store.HistoryStore
	store.OpsStore
	store.ClusterStore
	store.ExtensionStore
	store.JobRunStore
	store.OnceStore
	store.GrantStore
	// SetTitle sets a session's title (see sqlite.Store.SetTitle).
	SetTitle(ctx context.Context, id int64, title, by string) (bool, error)
	// Writable reports whether the store can take writes; store.ErrFull
	// when it is out of space.
	Writable(ctx context.Context) error
}

// Store kinds, as readiness reports them.
const (
	StoreSQLite   = "sqlite"
	StorePostgres = "postgres"
)

// StoreEnv is the environment variable that selects the store for one
// command, as --store does, over agentd.yaml's store.url.
const StoreEnv = "AGENTD_STORE"

// storeURL is the store the node opens: the override (--store, or
// $AGENTD_STORE), else agentd.yaml's.
func storeURL(override string, c agent.StoreConfig) string {
	if override != "" {
		return override
	}
	return c.URL
}

// memoryOpener makes long-term memory where the store keeps it: with
// SQLite a memory.Store that opens memory.db when first used (memory.New,
// no I/O); with PostgreSQL one opened now in the store's database.
type memoryOpener func(ctx context.Context, o *memory.Options) (*memory.Store, error)

// openStore opens the store u names with c's settings, and says how to
// open long-term memory beside it: in the data directory's memory.db
// with SQLite, in the same database with PostgreSQL.
func openStore(ctx context.Context, dir, u string, c agent.StoreConfig, node nodeInfo, log *slog.Logger) (Store, string, memoryOpener, error) {
	if u == "" || u == agent.StoreSQLite {
		st, err := sqlite.Open(ctx, filepath.Join(dir, DBFile), &sqlite.Options{Synchronous: c.Synchronous, Logger: log})
		if err != nil {
			return nil, "", nil, err // not a nil *sqlite.Store in a Store
		}
		mem := func(_ context.Context, o *memory.Options) (*memory.Store, error) {
			return memory.New(filepath.Join(dir, MemoryFile), o)
		}
		return st, StoreSQLite, mem, nil
	}
	if !agent.IsPostgresURL(u) && !strings.Contains(u, "=") {
		return nil, "", nil, fmt.Errorf("app: store %q: want sqlite or a postgres:// URL", postgres.Redact(u))
	}
	u, o, err := postgresConfig(u, c)
	if err != nil {
		return nil, "", nil, err
	}
	// The node that ran on this data directory before is dead (its lock
	// is ours): its sessions resume at once, not after the lease TTL.
	prev, _ := os.ReadFile(filepath.Join(dir, NodeFile))
	o.Logger, o.LeaseTTL, o.NodeAddr, o.Version, o.Succeeds = log, c.LeaseTTL.D(), node.addr, node.version, strings.TrimSpace(string(prev))
	st, err := postgres.Open(ctx, u, o)
	if err != nil {
		return nil, "", nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, NodeFile), []byte(st.NodeID()+"\n"), 0o600); err != nil {
		st.Close()
		return nil, "", nil, fmt.Errorf("app: %w", err)
	}
	log.Info("store", "kind", StorePostgres, "url", postgres.Redact(u), "node", st.NodeID())
	mem := func(ctx context.Context, mo *memory.Options) (*memory.Store, error) {
		cfg, err := postgres.ConnConfig(u, o)
		if err != nil {
			return nil, err
		}
		return memory.OpenPostgres(ctx, cfg, 0, mo)
	}
	return st, StorePostgres, mem, nil
}

// postgresConfig is the connection string and options store c gives a
// PostgreSQL store at u: its pool, statement timeout, password and sslmode.
func postgresConfig(u string, c agent.StoreConfig) (string, *postgres.Options, error) {
	o := &postgres.Options{PoolSize: c.PoolSize, StatementTimeout: c.StatementTimeout.D()}
	if c.PasswordEnv != "" {
		if o.Password = os.Getenv(c.PasswordEnv); o.Password == "" {
			return "", nil, fmt.Errorf("app: store: store.password_env names %s, which is not set", c.PasswordEnv)
		}
	}
	return withSSLMode(u, c.SSLMode), o, nil
}

// StoreSchema reads the schema version of the PostgreSQL database a node
// would open (override, else c's url) beside the version this agentd
// writes, without changing it; postgres is false, and nothing is read,
// when the store is SQLite. where names the database, password hidden.
func StoreSchema(ctx context.Context, override string, c agent.StoreConfig) (where string, have, want int, postgresStore bool, err error) {
	u := storeURL(override, c)
	if u == "" || u == agent.StoreSQLite {
		return "", 0, 0, false, nil
	}
	u, o, err := postgresConfig(u, c)
	if err != nil {
		return postgres.Redact(u), 0, 0, true, err
	}
	have, err = postgres.DatabaseSchemaVersion(ctx, u, o)
	return postgres.Redact(u), have, postgres.SchemaVersion(), true, err
}

// NodeFile, in the data directory, holds the id of the node that runs on
// it (PostgreSQL): the next node on the directory succeeds it.
const NodeFile = "node-id"

// nodeInfo describes the node in a shared store's registry.
type nodeInfo struct {
	addr    string // where its API listens on TCP ("" if it does not)
	version string
}

// claimEvery is how often a node on a shared store looks for sessions
// whose owner died: a dead node's sessions resume within the lease TTL
// and this.
const claimEvery = time.Second

// withSSLMode sets a connection string's sslmode, if mode is set.
func withSSLMode(u, mode string) string {
	if mode == "" {
		return u
	}
	if !agent.IsPostgresURL(u) {
		return u + " sslmode=" + mode
	}
	p, err := url.Parse(u)
	if err != nil {
		return u // postgres.Open says what is wrong with it
	}
	q := p.Query()
	q.Set("sslmode", mode)
	p.RawQuery = q.Encode()
	return p.String()
}
