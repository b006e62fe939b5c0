package engine

import (
	"database/sql"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/genderize-kong/genderize/schema"
)

// dbPath is the real name database the tests run on: $GENDERIZE_DB (set by
// `make test`), else names.db at the module root.
func dbPath(tb testing.TB) string {
	tb.Helper()
	path := os.Getenv("GENDERIZE_DB")
	if path == "" {
		path = filepath.Join("..", "names.db")
	}
	if _, err := os.Stat(path); err != nil {
		tb.Fatalf("name database %s: %v: run `make db` first (or set GENDERIZE_DB)", path, err)
	}
	return path
}

func openTest(tb testing.TB, opts Options) *Engine {
	tb.Helper()
	e, err := Open(dbPath(tb), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close() })
	// Open starts the spelling index in the background: wait for it, so
	// that no benchmark measures it.
	e.spellings()
	return e
}

func predictOne(t *testing.T, e *Engine, name, country string) Prediction {
	t.Helper()
	ps, err := e.Predict([]string{name}, country)
	if err != nil {
		t.Fatalf("Predict(%q, %q): %v", name, country, err)
	}
	if len(ps) != 1 {
		t.Fatalf("Predict(%q, %q) returned %d results", name, country, len(ps))
	}
	return ps[0]
}

// rawCounts reads the exact row of key in country straight from the
// database, to check the engine's arithmetic against the data.
func rawCounts(t *testing.T, key, country string) (female, male int64, share, evidence float64) {
	t.Helper()
	db, err := openRO(t, dbPath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// A key found in one country only has its counts in its global row.
	err = db.QueryRow(`SELECT female, male, female_share, coalesce(evidence, female + male) FROM names WHERE key = ? AND form = ?
		AND (country = ? OR (country = '' AND sole = ?))`,
		key, schema.FormExact, country, country).Scan(&female, &male, &share, &evidence)
	if err != nil {
		t.Fatalf("read %q in %q: %v", key, country, err)
	}
	return female, male, share, evidence
}

func TestPredictKnownNames(t *testing.T) {
	e := openTest(t, Options{})
	tests := []struct {
		name, country, gender string
		minProbability        float64
		minCount              int64
	}{
		{"Maria", "FR", Female, 0.95, 1000},
		{"Maria", "", Female, 0.95, 1000},
		{"Jordan", "US", Male, 0.6, 1000},
		{"Jean", "FR", Male, 0.95, 1000},
		{"Andrea", "US", Female, 0.9, 1000},
		{"Andrea", "IT", Male, 0.6, 10},
		{"אבי", "IL", Male, 0.9, 1000},
		{"Николай", "RU", Male, 0.95, 1000},
		{"Mette", "DK", Female, 0.95, 1000},
		{"Hans", "DE", Male, 0.95, 10},
		{"João", "BR", Male, 0.95, 1000},
		{"Marie-Claire Dubois", "FR", Female, 0.95, 100},
		{"J. Robert Oppenheimer", "US", Male, 0.95, 1000},
		{"  emma  ", "GB", Female, 0.95, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/"+tt.country, func(t *testing.T) {
			p := predictOne(t, e, tt.name, tt.country)
			if p.Name != tt.name || p.CountryID != tt.country {
				t.Fatalf("echo: got name %q country %q", p.Name, p.CountryID)
			}
			if p.Gender != tt.gender || p.Probability < tt.minProbability || p.Count < tt.minCount {
				t.Fatalf("got %+v, want %s with probability >= %v and count >= %d", p, tt.gender, tt.minProbability, tt.minCount)
			}
		})
	}
}

// TestPredictArithmetic checks gender, probability and count against the
// stored counts: majority share calibrated by the stored evidence
// (calibrate.go) and rounded to two decimals, count the total.
func TestPredictArithmetic(t *testing.T) {
	e := openTest(t, Options{})
	for _, tt := range []struct{ key, country string }{{"jordan", "US"}, {"andrea", "FR"}, {"kim", ""}, {"alexis", ""}} {
		female, male, share, evidence := rawCounts(t, tt.key, tt.country)
		// The Beta posterior mean of calibrate.go, written out.
		posterior := func(s float64) float64 { return math.Round((s*evidence+0.15)/(evidence+0.3)*100) / 100 }
		p := predictOne(t, e, tt.key, tt.country)
		want := Prediction{Name: tt.key, CountryID: tt.country, Count: female + male}
		switch {
		case share > 0.5:
			want.Gender, want.Probability = Female, posterior(share)
		case share < 0.5:
			want.Gender, want.Probability = Male, posterior(1-share)
		default:
			want.Probability = 0.5
		}
		if tt.country != "" && share != float64(female)/float64(female+male) {
			t.Errorf("%s in %s: stored share %v, counts %d/%d", tt.key, tt.country, share, female, male)
		}
		if p != want {
			t.Errorf("%s in %q: got %+v, want %+v", tt.key, tt.country, p, want)
		}
	}
}

// TestPredictTie finds a name whose counts are exactly even in a country
// and checks the documented answer: gender null, probability 0.5, count
// the total.
func TestPredictTie(t *testing.T) {
	db, err := openRO(t, dbPath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var key, country string
	var female int64
	err = db.QueryRow(`SELECT key, coalesce(sole, country), female FROM names WHERE form = 0
		AND (country != '' OR sole IS NOT NULL) AND female = male AND female >= 20
		AND key NOT LIKE '% %' AND key NOT LIKE '%,%' LIMIT 1`).Scan(&key, &country, &female)
	if err != nil {
		t.Fatalf("no tied name in the database: %v", err)
	}
	e := openTest(t, Options{})
	p := predictOne(t, e, key, country)
	want := Prediction{Name: key, Probability: 0.5, Count: 2 * female, CountryID: country}
	if p != want {
		t.Fatalf("tie %q in %s: got %+v, want %+v", key, country, p, want)
	}
}

func TestPredictSameAnswer(t *testing.T) {
	e := openTest(t, Options{})
	tests := []struct{ a, b, country string }{
		{"JOSÉ", "josé", ""},
		{"JOSÉ", "José", "ES"},
		{"Jose\u0301", "José", ""},
		{"Smith, John", "John", ""},
		{"Smith, John", "John", "US"},
		{"John Smith", "john", "GB"},
		{"Maria Carmen Lopez", "maria carmen", "ES"},
		{"MARIE-CLAIRE", "marie-claire", "FR"},
		{"(Юпи)", "юпи", "RU"},
		{"Søren", "Soren", "DK"},
		{"Joao", "João", "BR"}, // the data has João only: plain spelling finds it
		{"Mr. John Smith", "John", "US"},
		{"DUPONT Jean", "Jean", "FR"},
		{"Dr. Maria Lopez", "Maria", "MX"},
	}
	for _, tt := range tests {
		pa, pb := predictOne(t, e, tt.a, tt.country), predictOne(t, e, tt.b, tt.country)
		pa.Name, pb.Name = "", ""
		if pa != pb {
			t.Errorf("%q gives %+v, %q gives %+v in %q", tt.a, pa, tt.b, pb, tt.country)
		}
		if pa.Count == 0 {
			t.Errorf("%q in %q: no data", tt.a, tt.country)
		}
	}
}

// TestPredictAccentFallback: a spelling absent from the data is answered
// from its accent-folded form, which sums every spelling folding to it.
func TestPredictAccentFallback(t *testing.T) {
	e := openTest(t, Options{})
	for _, tt := range []struct{ odd, plain, country string }{
		{"Jéan", "Jean", "FR"},
		{"Mâriä", "Maria", ""},
		{"Frédérïque", "Frederique", "CA"},
	} {
		odd, plain := predictOne(t, e, tt.odd, tt.country), predictOne(t, e, tt.plain, tt.country)
		if plain.Count == 0 || odd.Gender != plain.Gender || odd.Count < plain.Count {
			t.Errorf("%s in %q: %+v; %s: %+v", tt.odd, tt.country, odd, tt.plain, plain)
		}
	}
}

func TestPredictUnknownAndForeign(t *testing.T) {
	e := openTest(t, Options{})
	names := []string{
		"Zzyzxqwv", "李伟", "Γιώργος Παπαδόπουλος", "さくら", "محمد", "ศักดิ์ชัย",
		"", " ", "!!!", "\x00", "\xff\xfe", "a\xffb", "💩", "\u202eevil", "\u0301",
		"Robert'); DROP TABLE names;--", "%", "_", "?", strings.Repeat("a", 10000),
		strings.Repeat("é ", 3000), "j. k.", "..,..",
	}
	for _, country := range []string{"", "US", "ZZ", "xx", "FRA"} {
		ps, err := e.Predict(names, country)
		if err != nil {
			t.Fatalf("country %q: %v", country, err)
		}
		if len(ps) != len(names) {
			t.Fatalf("country %q: %d results for %d names", country, len(ps), len(names))
		}
		for i, p := range ps {
			if p.Name != names[i] || p.CountryID != country {
				t.Fatalf("result %d: echo %q/%q, want %q/%q", i, p.Name, p.CountryID, names[i], country)
			}
			if p.Gender == "" && p.Count == 0 && p.Probability != 0 {
				t.Fatalf("%q: null with probability %v", names[i], p.Probability)
			}
			if p.Probability < 0 || p.Probability > 1 || p.Count < 0 {
				t.Fatalf("%q: out of range %+v", names[i], p)
			}
		}
	}
	for _, name := range []string{"Zzyzxqwv", "", "!!!", "\xff\xfe", "'); DROP TABLE names;--"} {
		p := predictOne(t, e, name, "")
		if p != (Prediction{Name: name}) {
			t.Errorf("%q: got %+v, want null/0/0", name, p)
		}
	}
}

func TestPredictBatch(t *testing.T) {
	e := openTest(t, Options{})
	var names []string
	for i := range 100 {
		names = append(names, []string{"Maria", "Jean", "Zzyzx", "José", "maria", "Smith, John"}[i%6])
	}
	ps, err := e.Predict(names, "FR")
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != len(names) {
		t.Fatalf("%d results for %d names", len(ps), len(names))
	}
	for i, p := range ps {
		single := predictOne(t, e, names[i], "FR")
		if p != single {
			t.Fatalf("batch[%d] = %+v, alone %+v", i, p, single)
		}
	}
	// More keys than one query takes: 600 full names, 4 keys each or more.
	given := realNames(t, 600)
	var full []string
	for i, g := range given {
		full = append(full, g+" "+given[(i+7)%len(given)]+"son")
	}
	ps, err = e.Predict(full, "")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(full); i += 37 {
		if single := predictOne(t, e, full[i], ""); ps[i] != single || single.Count == 0 {
			t.Fatalf("large batch[%d] = %+v, alone %+v", i, ps[i], single)
		}
	}
	if ps, err := e.Predict(nil, ""); err != nil || len(ps) != 0 {
		t.Fatalf("empty batch: %v %v", ps, err)
	}
}

// TestCacheAgrees: answers from the cache equal answers from the database,
// unknown names included, and unknown names are cached too.
func TestCacheAgrees(t *testing.T) {
	cached := openTest(t, Options{CacheEntries: 1000})
	direct := openTest(t, Options{CacheEntries: -1})
	names := []string{"Maria", "Zzyzxqwv", "李伟", "Smith, John", "Andrea", "José"}
	for _, country := range []string{"", "IT"} {
		first, err := cached.Predict(names, country)
		if err != nil {
			t.Fatal(err)
		}
		cached.cache.Wait()
		for _, name := range names[:3] {
			if _, ok := cached.cache.Get(country + "\x00" + name); !ok {
				t.Errorf("%q in %q not cached", name, country)
			}
		}
		again, err := cached.Predict(names, country)
		if err != nil {
			t.Fatal(err)
		}
		want, err := direct.Predict(names, country)
		if err != nil {
			t.Fatal(err)
		}
		for i := range names {
			if first[i] != want[i] || again[i] != want[i] {
				t.Errorf("%q in %q: first %+v, cached %+v, database %+v", names[i], country, first[i], again[i], want[i])
			}
		}
	}
}

// TestCacheKeepsSpellingsApart: the answer depends on the name as sent,
// not only on its key ("DUPONT Marie" is read surname first, "dupont
// marie" is not), so a cached answer for one spelling never answers
// another, whichever came first.
func TestCacheKeepsSpellingsApart(t *testing.T) {
	direct := openTest(t, Options{CacheEntries: -1})
	pairs := [][]string{{"dupont marie", "DUPONT Marie"}, {"DUPONT Marie", "dupont marie"}}
	for _, order := range pairs {
		want, err := direct.Predict(order, "")
		if err != nil {
			t.Fatal(err)
		}
		if want[0] == (Prediction{Name: want[0].Name}) == (want[1] == (Prediction{Name: want[1].Name})) {
			t.Fatalf("the data no longer tells %q from %q: %+v", order[0], order[1], want)
		}
		cached := openTest(t, Options{CacheEntries: 1000})
		for i, name := range order {
			for range 2 { // the second answer comes from the cache
				got, err := cached.Predict([]string{name}, "")
				if err != nil {
					t.Fatal(err)
				}
				cached.cache.Wait()
				if got[0] != want[i] {
					t.Errorf("%q after %q: got %+v, want %+v", name, order[0], got[0], want[i])
				}
			}
		}
	}
}

// TestLookupPlan: each key is a seek on (key, country), never a walk over
// all the countries of a key (Maria has hundreds of rows).
func TestLookupPlan(t *testing.T) {
	db, err := openRO(t, dbPath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	args := []any{"FR"}
	for range 8 {
		args = append(args, "maria")
	}
	var id, parent, unused int
	var detail string
	if err := db.QueryRow("EXPLAIN QUERY PLAN "+lookupQuery(8), args...).Scan(&id, &parent, &unused, &detail); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(detail, "PRIMARY KEY (key=? AND country=?)") {
		t.Fatalf("lookup plan %q, want a seek on (key, country)", detail)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	os.WriteFile(garbage, []byte(strings.Repeat("not a database ", 100)), 0o644)

	other := filepath.Join(dir, "other.db")
	mustExec(t, other, "CREATE TABLE t(x)")

	oldVersion := filepath.Join(dir, "old.db")
	mustExec(t, oldVersion, schema.SQL, "INSERT INTO meta VALUES ('schema_version', '0')")

	noVersion := filepath.Join(dir, "noversion.db")
	mustExec(t, noVersion, schema.SQL)

	tests := []struct{ path, want string }{
		{filepath.Join(dir, "missing.db"), "make db"},
		{dir, "not a regular file"},
		{garbage, "not a database"},
		{other, "not a genderize names database"},
		{noVersion, "not a genderize names database"},
		{oldVersion, "schema version 0"},
	}
	// A valid (empty) database whose path needs escaping in a URI.
	odd := filepath.Join(dir, "a dir #1?", "names%20.db")
	os.MkdirAll(filepath.Dir(odd), 0o755)
	mustExec(t, odd, schema.SQL, "INSERT INTO meta VALUES ('schema_version', '"+schema.VersionString+"')")
	e, err := Open(odd, Options{})
	if err != nil {
		t.Fatalf("Open(%s): %v", odd, err)
	}
	if ps, err := e.Predict([]string{"Maria"}, "FR"); err != nil || ps[0] != (Prediction{Name: "Maria", CountryID: "FR"}) {
		t.Errorf("empty database: %+v, %v", ps, err)
	}
	e.Close()

	for _, tt := range tests {
		e, err := Open(tt.path, Options{})
		if err == nil {
			e.Close()
			t.Errorf("Open(%s) succeeded", tt.path)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.path) {
			t.Errorf("Open(%s) = %v, want an error naming the file and saying %q", tt.path, err, tt.want)
		}
	}
	if _, err := Shared(filepath.Join(dir, "missing.db"), Options{}); err == nil {
		t.Error("Shared on a missing file succeeded")
	}
}

func mustExec(t *testing.T, path string, stmts ...string) {
	t.Helper()
	dsn, err := schema.DSN(path, "")
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
}

func TestShared(t *testing.T) {
	path := dbPath(t)
	abs, _ := filepath.Abs(path)
	a, err := Shared(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Shared(abs, Options{CacheEntries: 5})
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatal("Shared opened the same database twice")
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// Closing a shared engine leaves it working for everyone else.
	if p, err := b.Predict([]string{"Maria"}, ""); err != nil || p[0].Gender != Female {
		t.Fatalf("after Close: %+v, %v", p, err)
	}

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := Shared(path, Options{})
			if err != nil {
				errs <- err
				return
			}
			for i := range 50 {
				name := fmt.Sprintf("Maria%d", (g*50+i)%30)
				ps, err := e.Predict([]string{name, "Jean", "Zzyzx"}, "FR")
				if err != nil {
					errs <- err
					return
				}
				if ps[1].Gender != Male || ps[0].Name != name {
					errs <- fmt.Errorf("goroutine %d: %+v", g, ps)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// openRO opens the database at path read-only for a test's own queries.
func openRO(tb testing.TB, path string) (*sql.DB, error) {
	tb.Helper()
	dsn, err := schema.DSN(path, "mode=ro")
	if err != nil {
		return nil, err
	}
	return sql.Open("sqlite3", dsn)
}
