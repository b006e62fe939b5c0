package engine

import (
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/dgraph-io/ristretto/v2"
	"github.com/genderize-kong/genderize/schema"
	"github.com/genderize-kong/genderize/schema/namekey"
	"github.com/mattn/go-sqlite3"
)

// driverName is go-sqlite3 with every connection memory-mapping the
// database: pages are then read from the OS page cache shared by all
// connections (and processes), with no copy and no system call, instead of
// each connection keeping its own copy in SQLite's page cache.
const driverName = "sqlite3-genderize-mmap"

// mmapSize bounds the mapping; the default database is well below it.
const mmapSize = 1 << 30

func init() {
	sql.Register(driverName, &sqlite3.SQLiteDriver{
		ConnectHook: func(c *sqlite3.SQLiteConn) error {
			_, err := c.Exec(fmt.Sprintf("PRAGMA mmap_size = %d", mmapSize), nil)
			return err
		},
	})
}

// DefaultCacheEntries is the cache size when Options.CacheEntries is 0.
const DefaultCacheEntries = 100_000

// Options tune an Engine.
type Options struct {
	// CacheEntries is how many answers, per (country, name as sent), the
	// cache keeps; 0 means DefaultCacheEntries, a negative value disables
	// it. A front layer of at most frontSlots hot answers comes with it.
	CacheEntries int64
}

// Engine answers predictions from a name database. It is safe for
// concurrent use.
type Engine struct {
	path  string
	db    *sql.DB
	cache *ristretto.Cache[string, answer] // nil when disabled
	front *front                           // before cache; nil when it is
	stmts []*sql.Stmt                      // stmts[i] looks up batchSizes[i] keys
}

// batchSizes are the sizes of the prepared IN (...) lists; a lookup of n
// keys uses the smallest that fits, padded by repeating its last key.
var batchSizes = []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}

// answer is what the cache keeps: a Prediction without the parts that
// come from the request.
type answer struct {
	gender      string
	probability float64
	count       int64
}

// Open opens the name database at path read-only. It fails when the file
// is missing, is not a genderize name database or has another schema
// version.
//
// The file is memory-mapped and must not change while open: replace it by
// renaming a new file over it, as genderize-db build does (open engines
// keep reading the old one), never by copying or writing into it, which
// truncates a mapped file under the process.
func Open(path string, opts Options) (*Engine, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open names db %s: %w", path, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("open names db %s: %w (build it with `genderize-db build` or `make db`)", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("open names db %s: not a regular file", path)
	}
	// immutable: the database never changes while open, so SQLite takes
	// no locks and keeps no journal.
	dsn, err := schema.DSN(abs, "mode=ro&immutable=1&_query_only=1")
	if err != nil {
		return nil, fmt.Errorf("open names db %s: %w", path, err)
	}
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		return nil, fmt.Errorf("open names db %s: %w", path, err)
	}
	conns := 2 * runtime.GOMAXPROCS(0)
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	e := &Engine{path: path, db: db}
	if err := e.init(opts); err != nil {
		db.Close()
		return nil, fmt.Errorf("open names db %s: %w", path, err)
	}
	return e, nil
}

func (e *Engine) init(opts Options) error {
	var version string
	err := e.db.QueryRow("SELECT value FROM meta WHERE key = ?", schema.MetaVersion).Scan(&version)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return errors.New("no schema version: not a genderize names database")
	case err != nil && strings.Contains(err.Error(), "no such table"):
		return errors.New("no meta table: not a genderize names database")
	case err != nil:
		return err
	case version != schema.VersionString:
		return fmt.Errorf("schema version %s, this build reads version %d: rebuild it with `make db`", version, schema.Version)
	}
	for _, n := range batchSizes {
		stmt, err := e.db.Prepare(lookupQuery(n))
		if err != nil {
			return fmt.Errorf("prepare lookup: %w", err)
		}
		e.stmts = append(e.stmts, stmt)
	}
	entries := opts.CacheEntries
	if entries == 0 {
		entries = DefaultCacheEntries
	}
	if entries > 0 {
		cache, err := ristretto.NewCache(&ristretto.Config[string, answer]{
			NumCounters:        10 * entries,
			MaxCost:            entries,
			BufferItems:        64,
			IgnoreInternalCost: true, // MaxCost counts entries, not bytes
			Metrics:            cacheMetrics,
		})
		if err != nil {
			return fmt.Errorf("create cache: %w", err)
		}
		e.cache = cache
		e.front = newFront(cacheMetrics)
	}
	return nil
}

// cacheMetrics makes new caches count hits and misses; benchmarks set it.
var cacheMetrics = false

// lookupQuery reads the rows of n keys in one country. The global rows
// come too: for a key found in one country only, the global row is the
// country's row (see schema.sql).
func lookupQuery(n int) string {
	return "SELECT key, country, form, female, male, female_share, sole, evidence FROM names WHERE country IN ('', ?) AND key IN (?" +
		strings.Repeat(",?", n-1) + ")"
}

// Close releases the database and the cache.
func (e *Engine) Close() error {
	for _, s := range e.stmts {
		s.Close()
	}
	if e.cache != nil {
		e.cache.Close()
	}
	if err := e.db.Close(); err != nil {
		return fmt.Errorf("close names db %s: %w", e.path, err)
	}
	return nil
}

// pending is a name of a batch that missed the cache.
type pending struct {
	index    int
	cacheKey string
	cands    []candidate
}

type rowKey struct {
	key     string
	folded  bool
	country string // "" for the global row
}

type row struct {
	female, male int64
	share        float64
	sole         string
	evidence     float64 // see calibrate.go
}

// find returns the row of key in country: its own, else the global row of
// a key found in that country only.
func find(rows map[rowKey]row, key string, folded bool, country string) (row, bool) {
	if r, ok := rows[rowKey{key, folded, country}]; ok {
		return r, true
	}
	if country == "" {
		return row{}, false
	}
	r, ok := rows[rowKey{key, folded, ""}]
	return r, ok && r.sole == country
}

// Predict answers names in the scope of country: "" for all countries
// pooled, else an upper-case ISO 3166-1 alpha-2 code (see CountryCode).
// The result has one Prediction per name, in order, with Name exactly as
// given and CountryID set to country. A name that is unknown, empty or not
// a name at all gets Gender "", Probability 0, Count 0. The error is only
// for a failing database. All names missing from the cache are looked up
// together, in one query for up to 1024 keys.
func (e *Engine) Predict(names []string, country string) ([]Prediction, error) {
	out := make([]Prediction, len(names))
	var misses []pending
	var keys []string
	var keyBuf [keyBufferSize]byte
	ck := keyBuf[:0]
	for i, name := range names {
		out[i] = Prediction{Name: name, CountryID: country}
		if e.cache != nil {
			ck = appendCacheKey(ck[:0], country, name)
			if a, ok := e.cached(keyView(ck)); ok {
				a.fill(&out[i])
				continue
			}
		}
		key := namekey.Key(name)
		if key == "" {
			continue
		}
		p := pending{index: i, cacheKey: string(ck), cands: candidates(name, key, make([]candidate, 0, 4))}
		for _, c := range p.cands {
			keys = append(keys, c.key)
		}
		misses = append(misses, p)
	}
	if len(misses) == 0 {
		return out, nil
	}
	rows, err := e.lookup(country, dedupe(keys))
	if err != nil {
		return nil, err
	}
	for _, p := range misses {
		a := decide(p.cands, rows, country)
		a.fill(&out[p.index])
		e.remember(p.cacheKey, a)
	}
	return out, nil
}

// minCompoundRecords is the support a multi-word key needs to answer
// before the shorter keys after it are tried. Registers such as Québec's
// list first and middle names together ("Riley Breanna", once): a full
// name that matches such a pair by chance would otherwise be answered from
// one record instead of the given name's thousands.
const minCompoundRecords = 10

// decide answers from the first candidate with data; a multi-word key with
// less than minCompoundRecords records answers only when no later
// candidate has data.
func decide(cands []candidate, rows map[rowKey]row, country string) answer {
	var weak answer
	for _, c := range cands {
		r, ok := find(rows, c.key, c.folded, country)
		if !ok && c.folded {
			r, ok = find(rows, c.key, false, country)
		}
		if !ok || r.female+r.male <= 0 {
			continue
		}
		a := answer{count: r.female + r.male}
		switch {
		case r.share > 0.5:
			a.gender, a.probability = Female, calibrated(r.share, r.evidence)
		case r.share < 0.5:
			a.gender, a.probability = Male, calibrated(1-r.share, r.evidence)
		default:
			a.probability = 0.5
		}
		if a.count < minCompoundRecords && strings.Contains(c.key, " ") {
			if weak.count == 0 {
				weak = a
			}
			continue
		}
		return a
	}
	return weak
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

func (a answer) fill(p *Prediction) {
	p.Gender, p.Probability, p.Count = a.gender, a.probability, a.count
}

func dedupe(keys []string) []string {
	if len(keys) < 2 {
		return keys
	}
	seen := make(map[string]struct{}, len(keys))
	out := keys[:0]
	for _, k := range keys {
		if _, ok := seen[k]; !ok {
			seen[k] = struct{}{}
			out = append(out, k)
		}
	}
	return out
}

// lookup reads every row of keys in country and in the global model, both
// forms, in as few queries as the prepared sizes allow.
func (e *Engine) lookup(country string, keys []string) (map[rowKey]row, error) {
	rows := make(map[rowKey]row, len(keys))
	maxBatch := batchSizes[len(batchSizes)-1]
	args := make([]any, 0, 1+min(len(keys), maxBatch))
	for len(keys) > 0 {
		chunk := keys[:min(len(keys), maxBatch)]
		keys = keys[len(chunk):]
		size := 0
		for size < len(batchSizes)-1 && batchSizes[size] < len(chunk) {
			size++
		}
		args = append(args[:0], country)
		for i := 0; i < batchSizes[size]; i++ {
			args = append(args, chunk[min(i, len(chunk)-1)])
		}
		if err := e.query(e.stmts[size], args, rows); err != nil {
			return nil, fmt.Errorf("names db %s: lookup: %w", e.path, err)
		}
	}
	return rows, nil
}

func (e *Engine) query(stmt *sql.Stmt, args []any, into map[rowKey]row) error {
	rs, err := stmt.Query(args...)
	if err != nil {
		return err
	}
	defer rs.Close()
	for rs.Next() {
		var (
			key, country string
			form         int
			sole         sql.NullString
			r            row
		)
		if err := rs.Scan(&key, &country, &form, &r.female, &r.male, &r.share, &sole, &r.evidence); err != nil {
			return err
		}
		r.sole = sole.String
		into[rowKey{key, form == schema.FormFolded, country}] = r
	}
	return rs.Err()
}
