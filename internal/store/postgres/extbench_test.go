package postgres_test

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"agentd/internal/store"
	"agentd/internal/store/postgres/pgtest"
)

// benchSpec is an extension's spec of a typical size: an HTTP action of
// about 400 bytes.
var benchSpec = json.RawMessage(`{"description":"Current weather for a city","method":"GET",
	"url":"https://api.weather.example/v1/current?city={{city}}&units=metric",
	"headers":{"Accept":"application/json","Authorization":"Bearer {{secret \"WEATHER_TOKEN\"}}"},
	"input":{"type":"object","properties":{"city":{"type":"string","description":"the city's name"}},"required":["city"]},
	"extract":"$.current","timeout":"10s","max_bytes":65536,"read_only":true,"hosts":["api.weather.example"]}`)

func benchExtension(name string) store.Extension {
	return store.Extension{Type: "action", Name: name, Spec: benchSpec, Enabled: true, Provenance: store.ProvenanceUser, UpdatedBy: "user:bench"}
}

// BenchmarkPutExtension measures a change of one extension row (the row
// and its history entry in one transaction, durable; on PostgreSQL with
// its notification) from one goroutine, each expecting the version the
// last left.
func BenchmarkPutExtension(b *testing.B) {
	pgtest.URL(b)
	for _, kind := range []string{"sqlite", "postgres"} {
		open := benchStores(b)[kind]
		b.Run(kind, func(b *testing.B) {
			s := open(b).(store.ExtensionStore)
			ctx := context.Background()
			e := benchExtension("weather")
			v := int64(store.NoVersion)
			b.ReportAllocs()
			for b.Loop() {
				got, err := s.PutExtension(ctx, e, store.ExtPut, v)
				if err != nil {
					b.Fatal(err)
				}
				v = got.Version
			}
		})
	}
}

// BenchmarkListExtensions measures listing 10,000 extension rows of one
// type, as a node does at its start.
func BenchmarkListExtensions(b *testing.B) {
	pgtest.URL(b)
	const rows = 10000
	for _, kind := range []string{"sqlite", "postgres"} {
		open := benchStores(b)[kind]
		b.Run(kind, func(b *testing.B) {
			s := open(b).(store.ExtensionStore)
			ctx := context.Background()
			var next atomic.Int64
			var wg sync.WaitGroup
			for range 32 {
				wg.Go(func() {
					for i := next.Add(1); i <= rows; i = next.Add(1) {
						if _, err := s.PutExtension(ctx, benchExtension("a"+strconv.FormatInt(i, 10)), store.ExtPut, store.NoVersion); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			if b.Failed() {
				b.FailNow()
			}
			b.ReportAllocs()
			for b.Loop() {
				list, err := s.Extensions(ctx, "action")
				if err != nil || len(list) != rows {
					b.Fatalf("Extensions: %d rows, %v", len(list), err)
				}
			}
		})
	}
}
