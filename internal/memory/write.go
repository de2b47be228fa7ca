package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits on what one memory may hold.
const (
	MaxNameLen = 200  // bytes in an entity name, type or relation type
	MaxTextLen = 4000 // bytes in an observation or insight
	MaxBatch   = 100  // entities, observations per entity, or relations in one call
)

// Provenance says where a memory came from.
type Provenance struct {
	Session string // the session's address
	Turn    int64  // the turn's id within agentd
}

// Remember is what to remember: entities with observations, an insight, or
// both.
type Remember struct {
	Entities []EntityInput
	Insight  string   // free-form text; "" for none
	Tags     []string // the insight's tags
}

// EntityInput names an entity and facts about it. An entity that exists in
// the scope (compared case-insensitively) gets the observations appended; a
// new one is created. Type is kept from the first time it is given.
type EntityInput struct {
	Name         string
	Type         string
	Observations []string
}

// Result reports what Remember stored.
type Result struct {
	Created      []string // names of entities created
	Observations []int64  // ids of observations added
	Duplicates   int      // observations already known, not added again
	Insight      int64    // the insight's id, 0 if none
}

// Relation is a directed, typed link between two entities, as in
// "Alice works_at Acme".
type Relation struct {
	From string
	To   string
	Type string
}

// Forget names what to delete.
type Forget struct {
	Entities     []string   // names: each entity with its observations and relations
	Observations []int64    // observation ids
	Relations    []int64    // relation ids
	Links        []Relation // relations named by their ends and type
	Insights     []int64    // insight ids
}

func validScope(scope string) error {
	if strings.TrimSpace(scope) == "" {
		return fmt.Errorf("%w: empty scope", ErrInvalid)
	}
	return nil
}

func cleanName(what, s string) (string, error) {
	s = strings.Join(strings.Fields(s), " ")
	switch {
	case s == "":
		return "", fmt.Errorf("%w: empty %s", ErrInvalid, what)
	case len(s) > MaxNameLen:
		return "", fmt.Errorf("%w: %s longer than %d bytes", ErrInvalid, what, MaxNameLen)
	case !utf8.ValidString(s):
		return "", fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalid, what)
	}
	return s, nil
}

func cleanText(what, s string) (string, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return "", fmt.Errorf("%w: empty %s", ErrInvalid, what)
	case len(s) > MaxTextLen:
		return "", fmt.Errorf("%w: %s longer than %d bytes", ErrInvalid, what, MaxTextLen)
	case !utf8.ValidString(s):
		return "", fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalid, what)
	}
	return s, nil
}

func normName(name string) string { return strings.ToLower(name) }

// scopeTag is the single FTS token that confines a search to a scope.
func scopeTag(scope string) string {
	h := fnv.New64a()
	h.Write([]byte(scope))
	return "s" + strconv.FormatUint(h.Sum64(), 16)
}

var kindTags = map[int64]string{keyEntity: "kent", keyObservation: "kobs", keyInsight: "kins"}

func tagFor(scope string, kind int64) string { return scopeTag(scope) + " " + kindTags[kind] }

// Remember stores entities with their observations (creating entities or
// appending to them; an observation identical to one the entity has is not
// added twice) and/or a free-form insight, in one transaction. It returns
// before the new memories are embedded.
func (s *Store) Remember(ctx context.Context, scope string, in Remember, p Provenance) (Result, error) {
	if err := validScope(scope); err != nil {
		return Result{}, fmt.Errorf("memory: remember: %w", err)
	}
	if err := checkRemember(&in); err != nil {
		return Result{}, fmt.Errorf("memory: remember: %w", err)
	}
	var res Result
	err := s.write(ctx, "remember", func(tx *sql.Tx) error {
		var err error
		res, err = s.rememberTx(ctx, tx, scope, in, p, s.now().UnixNano())
		return err
	})
	if err != nil {
		return Result{}, err
	}
	s.backlog.Add(int64(len(res.Created) + len(res.Observations) + min(1, int(res.Insight))))
	s.poke()
	return res, nil
}

// checkRemember validates and normalises in place.
func checkRemember(in *Remember) error {
	if len(in.Entities) == 0 && strings.TrimSpace(in.Insight) == "" {
		return fmt.Errorf("%w: nothing to remember: give entities with observations, or an insight", ErrInvalid)
	}
	if len(in.Entities) > MaxBatch {
		return fmt.Errorf("%w: more than %d entities", ErrInvalid, MaxBatch)
	}
	ents := make([]EntityInput, len(in.Entities))
	for i, e := range in.Entities {
		name, err := cleanName("entity name", e.Name)
		if err != nil {
			return err
		}
		typ := strings.Join(strings.Fields(e.Type), " ")
		if len(typ) > MaxNameLen || !utf8.ValidString(typ) {
			return fmt.Errorf("%w: entity %q: bad type", ErrInvalid, name)
		}
		if len(e.Observations) > MaxBatch {
			return fmt.Errorf("%w: entity %q: more than %d observations", ErrInvalid, name, MaxBatch)
		}
		obs := make([]string, len(e.Observations))
		for j, o := range e.Observations {
			if obs[j], err = cleanText("observation", o); err != nil {
				return fmt.Errorf("entity %q: %w", name, err)
			}
		}
		ents[i] = EntityInput{Name: name, Type: typ, Observations: obs}
	}
	in.Entities = ents
	if strings.TrimSpace(in.Insight) != "" {
		text, err := cleanText("insight", in.Insight)
		if err != nil {
			return err
		}
		in.Insight = text
	}
	if len(in.Tags) > 0 && in.Insight == "" {
		return fmt.Errorf("%w: tags without an insight", ErrInvalid)
	}
	tags := make([]string, 0, len(in.Tags))
	for _, t := range in.Tags {
		t, err := cleanName("tag", t)
		if err != nil {
			return err
		}
		tags = append(tags, t)
	}
	in.Tags = tags
	return nil
}

func (s *Store) rememberTx(ctx context.Context, tx *sql.Tx, scope string, in Remember, p Provenance, now int64) (Result, error) {
	var res Result
	for _, e := range in.Entities {
		id, created, err := s.entityTx(ctx, tx, scope, e.Name, e.Type, p, now)
		if err != nil {
			return Result{}, err
		}
		if created {
			res.Created = append(res.Created, e.Name)
		}
		for _, o := range e.Observations {
			var oid int64
			// A duplicate is found before the insert rather than by it, so
			// that it takes no id from PostgreSQL's sequence.
			err := tx.QueryRowContext(ctx, `INSERT INTO observations (entity_id, text, session, turn, created)
				SELECT CAST(?1 AS BIGINT), CAST(?2 AS TEXT), CAST(?3 AS TEXT), CAST(?4 AS BIGINT), CAST(?5 AS BIGINT)
				WHERE NOT EXISTS (SELECT 1 FROM observations WHERE entity_id = ?1 AND text = ?2)
				ON CONFLICT DO NOTHING RETURNING id`, id, o, p.Session, p.Turn, now).Scan(&oid)
			if errors.Is(err, sql.ErrNoRows) {
				res.Duplicates++
				continue
			}
			if err != nil {
				return Result{}, err
			}
			if err := s.indexTx(ctx, tx, itemKey(keyObservation, oid), scope, keyObservation, e.Name, o); err != nil {
				return Result{}, err
			}
			res.Observations = append(res.Observations, oid)
		}
		if len(e.Observations) > 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE entities SET updated = ? WHERE id = ?`, now, id); err != nil {
				return Result{}, err
			}
		}
	}
	if in.Insight != "" {
		tags := strings.Join(in.Tags, ", ")
		err := tx.QueryRowContext(ctx, `INSERT INTO insights (scope, text, tags, session, turn, created) VALUES (?, ?, ?, ?, ?, ?)
			RETURNING id`, scope, in.Insight, tags, p.Session, p.Turn, now).Scan(&res.Insight)
		if err != nil {
			return Result{}, err
		}
		if err := s.indexTx(ctx, tx, itemKey(keyInsight, res.Insight), scope, keyInsight, tags, in.Insight); err != nil {
			return Result{}, err
		}
	}
	return res, nil
}

// entityTx finds the entity named name in scope, creating it if needed.
func (s *Store) entityTx(ctx context.Context, tx *sql.Tx, scope, name, typ string, p Provenance, now int64) (id int64, created bool, err error) {
	var oldType string
	err = tx.QueryRowContext(ctx, `SELECT id, type FROM entities WHERE scope = ? AND norm = ?`, scope, normName(name)).Scan(&id, &oldType)
	if err == nil {
		if oldType == "" && typ != "" {
			if _, err := tx.ExecContext(ctx, `UPDATE entities SET type = ?, updated = ? WHERE id = ?`, typ, now, id); err != nil {
				return 0, false, err
			}
			// Reindex the entity with its type; its vector is redone.
			key := itemKey(keyEntity, id)
			if err := s.idx.remove(ctx, tx, key); err != nil {
				return 0, false, err
			}
			var stored string
			if err := tx.QueryRowContext(ctx, `SELECT name FROM entities WHERE id = ?`, id).Scan(&stored); err != nil {
				return 0, false, err
			}
			if err := s.indexTx(ctx, tx, key, scope, keyEntity, stored, typ); err != nil {
				return 0, false, err
			}
		}
		return id, false, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, false, err
	}
	err = tx.QueryRowContext(ctx, `INSERT INTO entities (scope, name, norm, type, session, turn, created, updated)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`, scope, name, normName(name), typ, p.Session, p.Turn, now, now).Scan(&id)
	if err != nil {
		return 0, false, err
	}
	if err := s.indexTx(ctx, tx, itemKey(keyEntity, id), scope, keyEntity, name, typ); err != nil {
		return 0, false, err
	}
	return id, true, nil
}

// indexTx adds an item to the keyword index and marks it for embedding.
func (s *Store) indexTx(ctx context.Context, tx *sql.Tx, key int64, scope string, kind int64, name, body string) error {
	if err := s.idx.add(ctx, tx, key, scope, kind, name, body); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO pending (key) VALUES (?) ON CONFLICT DO NOTHING`, key)
	return err
}

// write runs fn in a write transaction.
func (s *Store) write(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	if err := s.use(ctx, true); err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.writeLocked(ctx, op, fn)
}

func (s *Store) writeLocked(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	defer s.empty.wrote() // once committed (or not): recall asks the database again
	if err := s.check(); err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return s.dbErr(op, err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		if errors.Is(err, ErrInvalid) || errors.Is(err, ErrNotFound) {
			return fmt.Errorf("memory: %s: %w", op, err)
		}
		return s.dbErr(op, err)
	}
	if err := tx.Commit(); err != nil {
		return s.dbErr(op, err)
	}
	return nil
}

// Relate stores relations between entities of scope, creating entities
// that do not exist yet (with no type). A relation that exists already is
// not stored twice. It returns how many relations are new.
func (s *Store) Relate(ctx context.Context, scope string, rels []Relation, p Provenance) (int, error) {
	if err := validScope(scope); err != nil {
		return 0, fmt.Errorf("memory: relate: %w", err)
	}
	if len(rels) == 0 {
		return 0, fmt.Errorf("memory: relate: %w: no relations", ErrInvalid)
	}
	if len(rels) > MaxBatch {
		return 0, fmt.Errorf("memory: relate: %w: more than %d relations", ErrInvalid, MaxBatch)
	}
	clean := make([]Relation, len(rels))
	for i, r := range rels {
		var err error
		if clean[i].From, err = cleanName("relation source", r.From); err != nil {
			return 0, fmt.Errorf("memory: relate: %w", err)
		}
		if clean[i].To, err = cleanName("relation target", r.To); err != nil {
			return 0, fmt.Errorf("memory: relate: %w", err)
		}
		if clean[i].Type, err = cleanName("relation type", r.Type); err != nil {
			return 0, fmt.Errorf("memory: relate: %w", err)
		}
	}
	n, created := 0, 0
	err := s.write(ctx, "relate", func(tx *sql.Tx) error {
		n, created = 0, 0
		now := s.now().UnixNano()
		for _, r := range clean {
			from, c1, err := s.entityTx(ctx, tx, scope, r.From, "", p, now)
			if err != nil {
				return err
			}
			to, c2, err := s.entityTx(ctx, tx, scope, r.To, "", p, now)
			if err != nil {
				return err
			}
			created += btoi(c1) + btoi(c2)
			res, err := tx.ExecContext(ctx, `INSERT INTO relations (scope, from_entity, to_entity, type, session, turn, created)
				SELECT CAST(?1 AS TEXT), CAST(?2 AS BIGINT), CAST(?3 AS BIGINT), CAST(?4 AS TEXT), CAST(?5 AS TEXT),
					CAST(?6 AS BIGINT), CAST(?7 AS BIGINT)
				WHERE NOT EXISTS (SELECT 1 FROM relations WHERE from_entity = ?2 AND to_entity = ?3 AND type = ?4)
				ON CONFLICT DO NOTHING`, scope, from, to, r.Type, p.Session, p.Turn, now)
			if err != nil {
				return err
			}
			k, _ := res.RowsAffected()
			n += int(k)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if created > 0 {
		s.backlog.Add(int64(created))
		s.poke()
	}
	return n, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Forget deletes what f names from scope: entities with all their
// observations and relations, single observations, relations and insights.
// Names and ids that do not exist in scope are ignored. It returns how many
// memories (entities, observations, relations, insights) were deleted.
func (s *Store) Forget(ctx context.Context, scope string, f Forget) (int, error) {
	if err := validScope(scope); err != nil {
		return 0, fmt.Errorf("memory: forget: %w", err)
	}
	if len(f.Entities)+len(f.Observations)+len(f.Relations)+len(f.Links)+len(f.Insights) == 0 {
		return 0, fmt.Errorf("memory: forget: %w: nothing named", ErrInvalid)
	}
	if err := s.use(ctx, false); errors.Is(err, errEmpty) {
		return 0, nil
	} else if err != nil {
		return 0, fmt.Errorf("memory: forget: %w", err)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	var gone []int64 // item keys to drop from the vector index
	n := 0
	err := s.writeLocked(ctx, "forget", func(tx *sql.Tx) error {
		gone, n = gone[:0], 0
		del := func(q string, args ...any) error {
			r, err := tx.ExecContext(ctx, q, args...)
			if err != nil {
				return err
			}
			k, _ := r.RowsAffected()
			n += int(k)
			return nil
		}
		for _, name := range f.Entities {
			var id int64
			err := tx.QueryRowContext(ctx, `SELECT id FROM entities WHERE scope = ? AND norm = ?`, scope, normName(strings.Join(strings.Fields(name), " "))).Scan(&id)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return err
			}
			rows, err := tx.QueryContext(ctx, `SELECT id FROM observations WHERE entity_id = ?`, id)
			if err != nil {
				return err
			}
			for rows.Next() {
				var oid int64
				if err := rows.Scan(&oid); err != nil {
					rows.Close()
					return err
				}
				gone = append(gone, itemKey(keyObservation, oid))
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			// Count what the cascade removes.
			var k int
			if err := tx.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM observations WHERE entity_id = ?1)
				+ (SELECT count(*) FROM relations WHERE from_entity = ?1 OR to_entity = ?1)`, id).Scan(&k); err != nil {
				return err
			}
			n += k
			gone = append(gone, itemKey(keyEntity, id))
			if err := del(`DELETE FROM entities WHERE id = ?`, id); err != nil {
				return err
			}
		}
		for _, id := range f.Observations {
			r, err := tx.ExecContext(ctx, `DELETE FROM observations WHERE id = ?
				AND entity_id IN (SELECT id FROM entities WHERE scope = ?)`, id, scope)
			if err != nil {
				return err
			}
			if k, _ := r.RowsAffected(); k > 0 {
				n++
				gone = append(gone, itemKey(keyObservation, id))
			}
		}
		for _, id := range f.Relations {
			if err := del(`DELETE FROM relations WHERE id = ? AND scope = ?`, id, scope); err != nil {
				return err
			}
		}
		for _, l := range f.Links {
			if err := del(`DELETE FROM relations WHERE scope = ?1 AND type = ?4
				AND from_entity = (SELECT id FROM entities WHERE scope = ?1 AND norm = ?2)
				AND to_entity = (SELECT id FROM entities WHERE scope = ?1 AND norm = ?3)`,
				scope, normName(strings.Join(strings.Fields(l.From), " ")), normName(strings.Join(strings.Fields(l.To), " ")),
				strings.Join(strings.Fields(l.Type), " ")); err != nil {
				return err
			}
		}
		for _, id := range f.Insights {
			r, err := tx.ExecContext(ctx, `DELETE FROM insights WHERE id = ? AND scope = ?`, id, scope)
			if err != nil {
				return err
			}
			if k, _ := r.RowsAffected(); k > 0 {
				n++
				gone = append(gone, itemKey(keyInsight, id))
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	s.removeVectors(scope, gone)
	s.countBacklog(ctx)
	return n, nil
}
