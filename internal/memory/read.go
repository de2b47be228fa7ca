package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Entity is an entity with everything known about it.
type Entity struct {
	ID           int64
	Scope        string
	Name         string
	Type         string
	Created      time.Time
	Updated      time.Time
	Provenance   Provenance
	Observations []Observation
	Relations    []RelationInfo // both directions
}

// Observation is one fact about an entity.
type Observation struct {
	ID         int64
	Text       string
	Created    time.Time
	Provenance Provenance
}

// RelationInfo is a stored relation.
type RelationInfo struct {
	ID         int64
	From       string
	To         string
	Type       string
	Created    time.Time
	Provenance Provenance
}

// Item is one memory, as Recall and List return it.
type Item struct {
	Kind       string // KindEntity, KindObservation or KindInsight
	ID         int64  // the entity's, observation's or insight's id
	Scope      string
	Entity     string // the entity's name (entities and observations)
	Text       string // the observation or insight; an entity's name and type
	Snippet    string // Text cut around the query's words, matches in «»; Text when short
	Tags       []string
	Score      float64 // relevance after fusion and recency weighting
	Created    time.Time
	Provenance Provenance
}

func ns(t int64) time.Time { return time.Unix(0, t).UTC() }

// Get returns the entity named entity in scope (compared
// case-insensitively) with its observations, oldest first, and its
// relations. ErrNotFound if there is none.
func (s *Store) Get(ctx context.Context, scope, entity string) (Entity, error) {
	if err := validScope(scope); err != nil {
		return Entity{}, fmt.Errorf("memory: get: %w", err)
	}
	name := strings.Join(strings.Fields(entity), " ")
	if err := s.use(ctx, false); errors.Is(err, errEmpty) {
		return Entity{}, fmt.Errorf("memory: get: entity %q: %w", name, ErrNotFound)
	} else if err != nil {
		return Entity{}, fmt.Errorf("memory: get: %w", err)
	}
	var e Entity
	var created, updated int64
	err := s.rdb.QueryRowContext(ctx, `SELECT id, scope, name, type, session, turn, created, updated
		FROM entities WHERE scope = ? AND norm = ?`, scope, normName(name)).
		Scan(&e.ID, &e.Scope, &e.Name, &e.Type, &e.Provenance.Session, &e.Provenance.Turn, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return Entity{}, fmt.Errorf("memory: get: entity %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return Entity{}, s.dbErr("get", err)
	}
	e.Created, e.Updated = ns(created), ns(updated)
	rows, err := s.rdb.QueryContext(ctx, `SELECT id, text, session, turn, created FROM observations
		WHERE entity_id = ? ORDER BY id`, e.ID)
	if err != nil {
		return Entity{}, s.dbErr("get", err)
	}
	defer rows.Close()
	for rows.Next() {
		var o Observation
		var c int64
		if err := rows.Scan(&o.ID, &o.Text, &o.Provenance.Session, &o.Provenance.Turn, &c); err != nil {
			return Entity{}, s.dbErr("get", err)
		}
		o.Created = ns(c)
		e.Observations = append(e.Observations, o)
	}
	if err := rows.Err(); err != nil {
		return Entity{}, s.dbErr("get", err)
	}
	rels, err := s.relations(ctx, []int64{e.ID})
	if err != nil {
		return Entity{}, s.dbErr("get", err)
	}
	e.Relations = rels
	return e, nil
}

// relations returns the relations touching any of the entities, by id.
func (s *Store) relations(ctx context.Context, ids []int64) ([]RelationInfo, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	in, args := inList(ids)
	args = append(args, args...)
	rows, err := s.rdb.QueryContext(ctx, `SELECT r.id, f.name, t.name, r.type, r.session, r.turn, r.created
		FROM relations r JOIN entities f ON f.id = r.from_entity JOIN entities t ON t.id = r.to_entity
		WHERE r.from_entity IN (`+in+`) OR r.to_entity IN (`+in+`) ORDER BY r.id`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []RelationInfo
	for rows.Next() {
		var r RelationInfo
		var c int64
		if err := rows.Scan(&r.ID, &r.From, &r.To, &r.Type, &r.Provenance.Session, &r.Provenance.Turn, &c); err != nil {
			return nil, err
		}
		r.Created = ns(c)
		out = append(out, r)
	}
	return out, rows.Err()
}

func inList(ids []int64) (string, []any) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return strings.TrimSuffix(strings.Repeat("?,", len(ids)), ","), args
}

// List returns the most recent memories of scope (entities, observations
// and insights), newest first; limit <= 0 means DefaultK.
func (s *Store) List(ctx context.Context, scope string, limit int) ([]Item, error) {
	if err := validScope(scope); err != nil {
		return nil, fmt.Errorf("memory: list: %w", err)
	}
	if err := s.use(ctx, false); errors.Is(err, errEmpty) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("memory: list: %w", err)
	}
	if limit <= 0 {
		limit = DefaultK
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT k, c FROM (
		SELECT id * 4 + 1 AS k, created AS c FROM entities WHERE scope = ?1
		UNION ALL SELECT o.id * 4 + 2, o.created FROM observations o JOIN entities e ON e.id = o.entity_id WHERE e.scope = ?1
		UNION ALL SELECT id * 4 + 3, created FROM insights WHERE scope = ?1) AS items
		ORDER BY c DESC, k DESC LIMIT ?2`, scope, limit)
	if err != nil {
		return nil, s.dbErr("list", err)
	}
	var keys []int64
	for rows.Next() {
		var k, c int64
		if err := rows.Scan(&k, &c); err != nil {
			rows.Close()
			return nil, s.dbErr("list", err)
		}
		keys = append(keys, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, s.dbErr("list", err)
	}
	got, err := s.items(ctx, keys, []string{scope})
	if err != nil {
		return nil, s.dbErr("list", err)
	}
	out := make([]Item, 0, len(keys))
	for _, k := range keys {
		if it, ok := got[k]; ok {
			out = append(out, it)
		}
	}
	return out, nil
}

// items loads the memories with the given keys that belong to one of
// scopes.
func (s *Store) items(ctx context.Context, keys []int64, scopes []string) (map[int64]Item, error) {
	out := make(map[int64]Item, len(keys))
	var ents, obs, ins []int64
	for _, k := range keys {
		switch keyKind(k) {
		case keyEntity:
			ents = append(ents, keyID(k))
		case keyObservation:
			obs = append(obs, keyID(k))
		case keyInsight:
			ins = append(ins, keyID(k))
		}
	}
	ok := func(scope string) bool {
		for _, sc := range scopes {
			if sc == scope {
				return true
			}
		}
		return false
	}
	load := func(kind int64, ids []int64, q string) error {
		if len(ids) == 0 {
			return nil
		}
		in, args := inList(ids)
		rows, err := s.rdb.QueryContext(ctx, strings.Replace(q, "$IN", in, 1), args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var it Item
			var c int64
			var tags string
			if err := rows.Scan(&it.ID, &it.Scope, &it.Entity, &it.Text, &tags, &it.Provenance.Session, &it.Provenance.Turn, &c); err != nil {
				return err
			}
			if !ok(it.Scope) {
				continue
			}
			it.Created = ns(c)
			if tags != "" {
				it.Tags = strings.Split(tags, ", ")
			}
			switch kind {
			case keyEntity:
				it.Kind = KindEntity
				if tags != "" { // the type, for an entity
					it.Text = it.Entity + " (" + tags + ")"
				}
				it.Tags = nil
			case keyObservation:
				it.Kind = KindObservation
			case keyInsight:
				it.Kind = KindInsight
			}
			it.Snippet = it.Text
			out[itemKey(kind, it.ID)] = it
		}
		return rows.Err()
	}
	if err := load(keyEntity, ents, `SELECT id, scope, name, name, type, session, turn, created FROM entities WHERE id IN ($IN)`); err != nil {
		return nil, err
	}
	if err := load(keyObservation, obs, `SELECT o.id, e.scope, e.name, o.text, '', o.session, o.turn, o.created
		FROM observations o JOIN entities e ON e.id = o.entity_id WHERE o.id IN ($IN)`); err != nil {
		return nil, err
	}
	if err := load(keyInsight, ins, `SELECT id, scope, '', text, tags, session, turn, created FROM insights WHERE id IN ($IN)`); err != nil {
		return nil, err
	}
	return out, nil
}
