package store

// Rows is a result set as both drivers give it (database/sql's *sql.Rows,
// pgx's Rows).
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// Collect reads every row of rows with scan, then the set's own error;
// the slice is never nil. The caller closes rows.
func Collect[T any](rows Rows, scan func(Rows) (T, error)) ([]T, error) {
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
