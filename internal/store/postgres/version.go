package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DatabaseSchemaVersion reads the schema version of the database
// connString names, without migrating it or taking any lock: 0 when agentd
// has not made its tables there yet. It is for checks (agentd doctor) that
// must not change what they look at.
func DatabaseSchemaVersion(ctx context.Context, connString string, o *Options) (int, error) {
	cfg, err := ConnConfig(connString, o)
	if err != nil {
		return 0, err
	}
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return 0, fmt.Errorf("postgres: connect to %s: %w", Redact(connString), err)
	}
	defer c.Close(context.WithoutCancel(ctx))
	var v int
	err = c.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM agentd_schema`).Scan(&v)
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "42P01" { // undefined_table
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("postgres: schema version: %w", err)
	}
	return v, nil
}
