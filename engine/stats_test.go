package engine

import (
	"database/sql"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/genderize-kong/genderize/schema"
)

func TestCacheStats(t *testing.T) {
	e := openTest(t, Options{})
	defer CountCache(false)
	// predict answers names and waits until the cache holds them, so that
	// the next call's hits do not depend on ristretto's buffers.
	predict := func(names ...string) {
		t.Helper()
		if _, err := e.Predict(names, ""); err != nil {
			t.Fatal(err)
		}
		e.cache.Wait()
	}
	steps := []struct {
		name                 string
		count                bool
		names                []string
		wantHits, wantMisses uint64
	}{
		{"off counts nothing", false, []string{"anna", "peter"}, 0, 0},
		{"first sight misses", true, []string{"maria", "john"}, 0, 2},
		{"second sight hits", true, []string{"maria", "john", "luca"}, 2, 1},
		{"no key is no lookup", true, []string{"", "  ", "maria"}, 1, 0},
		{"off again", false, []string{"zoe", "maria"}, 0, 0},
	}
	for _, s := range steps {
		CountCache(s.count)
		h0, m0 := CacheStats()
		predict(s.names...)
		h1, m1 := CacheStats()
		if h1-h0 != s.wantHits || m1-m0 != s.wantMisses {
			t.Errorf("%s: %q: hits +%d misses +%d, want +%d +%d", s.name, s.names, h1-h0, m1-m0, s.wantHits, s.wantMisses)
		}
	}

	// An engine without a cache has nothing to count.
	CountCache(true)
	nocache := openTest(t, Options{CacheEntries: -1})
	h0, m0 := CacheStats()
	if _, err := nocache.Predict([]string{"anna"}, ""); err != nil {
		t.Fatal(err)
	}
	if h1, m1 := CacheStats(); h1 != h0 || m1 != m0 {
		t.Errorf("no cache: hits +%d misses +%d, want nothing", h1-h0, m1-m0)
	}
}

// TestInfo describes a small database written here with known contents.
func TestInfo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "small.db")
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	stmts := []string{
		schema.SQL,
		"INSERT INTO meta VALUES ('schema_version', '" + schema.VersionString + "'), ('built_at', '2026-01-02T03:04:05Z'), ('global_model', 'test')",
		"INSERT INTO countries VALUES ('DE', 2, 30, 1), ('FR', 1, 5, 1), ('US', 1, 7, 1)",
		// Three keys in the global model, one with a folded form too, and
		// rows of countries: only the global exact rows are keys.
		`INSERT INTO names VALUES
			('anna', '', 0, 20, 0, 1, NULL), ('anna', 'DE', 0, 10, 0, 1, NULL), ('anna', 'US', 0, 7, 0, 1, NULL),
			('jose', '', 0, 0, 5, 0, 'FR'), ('jose', '', 1, 0, 6, 0, 'FR'),
			('jurgen', '', 0, 0, 10, 0, 'DE')`,
	}
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	db.Close()

	before := time.Now()
	e, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	got, err := e.Info()
	if err != nil {
		t.Fatal(err)
	}
	if got.Loaded.Before(before) || got.Loaded.After(time.Now()) {
		t.Errorf("Loaded %v, want the time of Open (after %v)", got.Loaded, before)
	}
	got.Loaded = time.Time{}
	want := Info{Path: path, SchemaVersion: schema.VersionString, Built: "2026-01-02T03:04:05Z", Keys: 3, Countries: 3}
	if got != want {
		t.Errorf("Info() = %+v, want %+v", got, want)
	}
	again, err := e.Info()
	if err != nil || again.Keys != 3 {
		t.Errorf("second Info() = %+v, %v", again, err)
	}
}

func TestSharedInfo(t *testing.T) {
	path, err := filepath.Abs(dbPath(t))
	if err != nil {
		t.Fatal(err)
	}
	e, err := Shared(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := e.Info()
	if err != nil {
		t.Fatal(err)
	}
	infos, err := SharedInfo()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, i := range infos {
		found = found || i == want
	}
	if !found {
		t.Errorf("SharedInfo() = %+v, want it to hold %+v", infos, want)
	}
	if want.Keys < 100_000 || want.Countries < 50 || want.SchemaVersion != schema.VersionString {
		t.Errorf("the default database described as %+v", want)
	}
}

// BenchmarkCacheCounting is what counting hits and misses costs the
// cheapest path, cached names in batches of 100 from every core: not
// counted, counted (CountCache), and, for comparison, ristretto's own
// metrics instead. Compare ns/name within one run.
func BenchmarkCacheCounting(b *testing.B) {
	hot := realNames(b, 10_000)
	for _, c := range []struct {
		name             string
		count, ristretto bool
	}{{"off", false, false}, {"counted", true, false}, {"ristretto-metrics", false, true}} {
		b.Run(c.name, func(b *testing.B) {
			cacheMetrics = c.ristretto
			e := openTest(b, Options{})
			cacheMetrics = false
			warm(b, e, hot)
			CountCache(c.count)
			defer CountCache(false)
			var next atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					start := int(next.Add(100)) % len(hot)
					if _, err := e.Predict(hot[start:min(start+100, len(hot))], ""); err != nil {
						b.Error(err)
						return
					}
				}
			})
			perName(b, 100)
		})
	}
}
