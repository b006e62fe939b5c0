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
	extra extraStmts                       // lookups with (key, country) pairs, prepared on first use
	spell spellIndex                       // crossing scripts (see candidates_spell.go), built from Open in the background
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
	go e.spellings()
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
	return "SELECT key, country, form, female, male, female_share, sole, coalesce(evidence, female + male) FROM names WHERE country IN ('', ?) AND key IN (?" +
		strings.Repeat(",?", n-1) + ")"
}

// Close releases the database and the cache.
func (e *Engine) Close() error {
	e.spellings() // the background build reads the database
	for _, s := range e.stmts {
		s.Close()
	}
	e.extra.close()
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
	plan     plan
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
	hits := 0 // for CacheStats
	out := make([]Prediction, len(names))
	var misses []pending
	var keys []string
	var pairs []pair
	var keyBuf [keyBufferSize]byte
	ck := keyBuf[:0]
	for i, name := range names {
		out[i] = Prediction{Name: name, CountryID: country}
		if e.cache != nil {
			ck = appendCacheKey(ck[:0], country, name)
			if a, ok := e.cached(keyView(ck)); ok {
				a.fill(&out[i])
				hits++
				continue
			}
		}
		key := namekey.Key(name)
		if key == "" {
			continue
		}
		p := pending{index: i, cacheKey: string(ck), plan: makePlan(name, key, e.spelling)}
		for _, c := range p.plan.cands {
			keys = append(keys, c.key)
		}
		if country == "" {
			pairs = p.plan.appendPairs(pairs)
		}
		misses = append(misses, p)
	}
	e.countCache(hits, len(misses))
	if len(misses) == 0 {
		return out, nil
	}
	rows, err := e.lookup(country, dedupe(keys), pairs)
	if err != nil {
		return nil, err
	}
	var again []int // misses without an answer that have a fallback
	keys = keys[:0]
	for i := range misses {
		p := &misses[i]
		a := decide(&p.plan, rows, country)
		if a.count == 0 && p.plan.fallback(e.cyrillicSpelling) {
			again = append(again, i)
			for _, c := range p.plan.cands {
				keys = append(keys, c.key)
			}
			continue
		}
		e.settle(p, a, out)
	}
	if len(again) > 0 {
		// A second query, for unanswered names only (see plan.fallback).
		rows, err := e.lookup(country, dedupe(keys), nil)
		if err != nil {
			return nil, err
		}
		for _, i := range again {
			e.settle(&misses[i], decide(&misses[i].plan, rows, country), out)
		}
	}
	return out, nil
}

// settle fills a missed name's prediction and caches it.
func (e *Engine) settle(p *pending, a answer, out []Prediction) {
	a.fill(&out[p.index])
	e.remember(p.cacheKey, a)
}

// minCompoundRecords is the support a multi-word key needs to answer
// before the shorter keys after it are tried. Registers such as Québec's
// list first and middle names together ("Riley Breanna", once): a full
// name that matches such a pair by chance would otherwise be answered from
// one record instead of the given name's thousands.
const minCompoundRecords = 10

// decide answers from the first candidate with data; a multi-word key with
// less than minCompoundRecords records answers only when no later
// candidate has data. Of the candidates of one group (spellings of a name
// in another script), the one with the most records answers. The answer
// then takes in what the rest of the name says (see plan.adjust).
func decide(p *plan, rows map[rowKey]row, country string) answer {
	var weak answer
	cands := p.cands
	for i := 0; i < len(cands); i++ {
		c := cands[i]
		r, ok := findCandidate(rows, c, country)
		if c.group > 0 {
			// The best-supported spelling of the group.
			for i+1 < len(cands) && cands[i+1].group == c.group {
				i++
				if r2, ok2 := findCandidate(rows, cands[i], country); ok2 && (!ok || r2.female+r2.male > r.female+r.male) {
					r, ok, c = r2, true, cands[i]
				}
			}
		}
		if !ok || r.female+r.male <= 0 {
			continue
		}
		a, ok := p.adjust(c, r, rows, country)
		if !ok {
			return answer{}
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

// findCandidate returns the row of a candidate: its folded row, else its
// exact row.
func findCandidate(rows map[rowKey]row, c candidate, country string) (row, bool) {
	r, ok := find(rows, c.key, c.folded, country)
	if !ok && c.folded {
		r, ok = find(rows, c.key, false, country)
	}
	return r, ok
}

// answerOf is the answer a female share, a count and the evidence behind
// the share give (see calibrated).
func answerOf(share float64, count int64, evidence float64) answer {
	a := answer{count: count}
	switch {
	case share > 0.5:
		a.gender, a.probability = Female, calibrated(share, evidence)
	case share < 0.5:
		a.gender, a.probability = Male, calibrated(1-share, evidence)
	default:
		a.probability = 0.5
	}
	return a
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
// forms, and the rows of pairs, in as few queries as the prepared sizes
// allow (one for up to 1024 keys).
func (e *Engine) lookup(country string, keys []string, pairs []pair) (map[rowKey]row, error) {
	rows := make(map[rowKey]row, len(keys))
	maxBatch := batchSizes[len(batchSizes)-1]
	args := make([]any, 0, 1+min(len(keys), maxBatch))
	for len(keys) > 0 || len(pairs) > 0 {
		chunk := keys[:min(len(keys), maxBatch)]
		keys = keys[len(chunk):]
		pchunk := pairs[:min(len(pairs), maxBatch)]
		pairs = pairs[len(pchunk):]
		size := sizeFor(max(len(chunk), 1))
		args = append(args[:0], country)
		for i := 0; i < batchSizes[size]; i++ {
			if len(chunk) == 0 {
				args = append(args, "")
				continue
			}
			args = append(args, chunk[min(i, len(chunk)-1)])
		}
		stmt := e.stmts[size]
		if len(pchunk) > 0 {
			psize := sizeFor(len(pchunk))
			var err error
			if stmt, err = e.pairStmt(size, psize); err != nil {
				return nil, fmt.Errorf("names db %s: prepare lookup: %w", e.path, err)
			}
			for i := 0; i < batchSizes[psize]; i++ {
				p := pchunk[min(i, len(pchunk)-1)]
				args = append(args, p.key, p.country)
			}
		}
		if err := e.query(stmt, args, rows); err != nil {
			return nil, fmt.Errorf("names db %s: lookup: %w", e.path, err)
		}
	}
	return rows, nil
}

// sizeFor returns the index of the smallest prepared size that holds n.
func sizeFor(n int) int {
	size := 0
	for size < len(batchSizes)-1 && batchSizes[size] < n {
		size++
	}
	return size
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
