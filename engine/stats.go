package engine

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/genderize-kong/genderize/schema"
)

// cacheStats counts the answers every engine of the process found, or did
// not find, in its cache. The counters are process-wide so that they only
// grow, whatever engines come and go; each sits on its own cache line so
// that cores counting hits and misses at once do not contend.
var cacheStats struct {
	on     atomic.Bool
	_      [56]byte
	hits   atomic.Uint64
	_      [56]byte
	misses atomic.Uint64
	_      [56]byte
}

// CountCache turns the counting of cache hits and misses on or off for
// every engine of the process. Off (the default), a Predict call costs one
// load more than an uncounted one.
func CountCache(on bool) { cacheStats.on.Store(on) }

// CacheStats returns how many lookups of names found their answer in an
// engine's cache, and how many did not, since counting was turned on.
// Names without a key (empty, not a name) are not looked up and not
// counted; an engine without a cache counts nothing.
func CacheStats() (hits, misses uint64) {
	return cacheStats.hits.Load(), cacheStats.misses.Load()
}

// countCache adds one Predict call's cache hits and misses, when counting
// is on: two atomic additions per call, whatever the batch size.
func (e *Engine) countCache(hits, misses int) {
	if e.cache == nil || !cacheStats.on.Load() {
		return
	}
	if hits > 0 {
		cacheStats.hits.Add(uint64(hits))
	}
	if misses > 0 {
		cacheStats.misses.Add(uint64(misses))
	}
}

// Info describes the name database an engine answers from.
type Info struct {
	Path          string    // as given to Open
	SchemaVersion string    // meta.schema_version
	Built         string    // meta.built_at, RFC 3339 UTC as the builder wrote it
	Keys          int64     // distinct name keys (exact form, global model)
	Countries     int64     // countries with data
	Loaded        time.Time // when this process opened the database
}

// infos keeps the Info of each database described: counting the keys reads
// the whole names table (a tenth of a second), once per database, not per
// call. The key is the *sql.DB, which a reopened file does not share.
var infos sync.Map // *sql.DB -> *Info

// Info describes the engine's database. The first call reads the database
// (a tenth of a second for the default one); later calls return that.
func (e *Engine) Info() (Info, error) {
	if i, ok := infos.Load(e.db); ok {
		return *i.(*Info), nil
	}
	i := Info{Path: e.path, Loaded: e.loaded}
	q := func(dst any, query string, args ...any) error {
		if err := e.db.QueryRow(query, args...).Scan(dst); err != nil {
			return fmt.Errorf("names db %s: info: %w", e.path, err)
		}
		return nil
	}
	if err := q(&i.SchemaVersion, "SELECT value FROM meta WHERE key = ?", schema.MetaVersion); err != nil {
		return Info{}, err
	}
	if err := q(&i.Built, "SELECT value FROM meta WHERE key = ?", schema.MetaBuiltAt); err != nil {
		return Info{}, err
	}
	if err := q(&i.Keys, "SELECT count(*) FROM names WHERE country = '' AND form = ?", schema.FormExact); err != nil {
		return Info{}, err
	}
	if err := q(&i.Countries, "SELECT count(*) FROM countries"); err != nil {
		return Info{}, err
	}
	stored, _ := infos.LoadOrStore(e.db, &i)
	return *stored.(*Info), nil
}

// SharedInfo describes the databases of every engine Shared has opened,
// ordered by path: what the process answers from right now.
func SharedInfo() ([]Info, error) {
	shared.Lock()
	engines := make([]*Engine, 0, len(shared.engines))
	for _, e := range shared.engines {
		engines = append(engines, e)
	}
	shared.Unlock()
	out := make([]Info, 0, len(engines))
	for _, e := range engines {
		i, err := e.Info()
		if err != nil {
			return nil, err
		}
		out = append(out, i)
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}
