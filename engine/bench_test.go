package engine

import (
	"bufio"
	"database/sql"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/genderize-kong/genderize/schema"
	"github.com/genderize-kong/genderize/schema/namekey"
)

// rssChildEnv makes the test binary measure its memory and exit (see
// BenchmarkRSS): a fresh process, so nothing else it ran is counted.
const rssChildEnv = "GENDERIZE_RSS_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(rssChildEnv) != "" {
		os.Exit(rssChild())
	}
	os.Exit(m.Run())
}

var corpus struct {
	sync.Once
	names []string // real names, most frequent first, as a client writes them
	err   error
}

// realNames returns up to n names of the database, most frequent first,
// capitalised as clients send them.
func realNames(tb testing.TB, n int) []string {
	tb.Helper()
	corpus.Do(func() {
		db, err := openRO(tb, dbPath(tb))
		if err != nil {
			corpus.err = err
			return
		}
		defer db.Close()
		rows, err := db.Query("SELECT key FROM names WHERE country = '' AND form = 0 ORDER BY female + male DESC")
		if err != nil {
			corpus.err = err
			return
		}
		defer rows.Close()
		for rows.Next() {
			var key string
			if err := rows.Scan(&key); err != nil {
				corpus.err = err
				return
			}
			r, size := utf8.DecodeRuneInString(key)
			corpus.names = append(corpus.names, string(unicode.ToUpper(r))+key[size:])
		}
		corpus.err = rows.Err()
	})
	if corpus.err != nil {
		tb.Fatal(corpus.err)
	}
	return corpus.names[:min(n, len(corpus.names))]
}

func warm(b *testing.B, e *Engine, names []string) {
	b.Helper()
	for i := 0; i < len(names); i += 100 {
		if _, err := e.Predict(names[i:min(i+100, len(names))], ""); err != nil {
			b.Fatal(err)
		}
	}
	e.cache.Wait()
}

func perName(b *testing.B, namesPerOp int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*namesPerOp), "ns/name")
}

// The engine's four cases and, in the same run, the same keys looked up in
// a plain Go map: the floor any cache could reach. Compare ns/name.
func BenchmarkPredict(b *testing.B) {
	names := realNames(b, 50_000)

	b.Run("cached-1", func(b *testing.B) {
		e := openTest(b, Options{})
		hot := names[:1000]
		warm(b, e, hot)
		i := 0
		for b.Loop() {
			if _, err := e.Predict(hot[i%len(hot):i%len(hot)+1], ""); err != nil {
				b.Fatal(err)
			}
			i++
		}
		perName(b, 1)
	})
	b.Run("uncached-1", func(b *testing.B) {
		e := openTest(b, Options{CacheEntries: -1})
		i := 0
		for b.Loop() {
			if _, err := e.Predict(names[i%len(names):i%len(names)+1], ""); err != nil {
				b.Fatal(err)
			}
			i++
		}
		perName(b, 1)
	})
	b.Run("cached-1-ristretto-only", func(b *testing.B) {
		e := openTest(b, Options{})
		e.front = nil
		hot := names[:1000]
		warm(b, e, hot)
		i := 0
		for b.Loop() {
			if _, err := e.Predict(hot[i%len(hot):i%len(hot)+1], ""); err != nil {
				b.Fatal(err)
			}
			i++
		}
		perName(b, 1)
	})
	b.Run("cached-batch100-ristretto-only", func(b *testing.B) {
		e := openTest(b, Options{})
		e.front = nil
		hot := names[:10_000]
		warm(b, e, hot)
		i := 0
		for b.Loop() {
			start := (i * 100) % len(hot)
			if _, err := e.Predict(hot[start:start+100], ""); err != nil {
				b.Fatal(err)
			}
			i++
		}
		perName(b, 100)
	})
	b.Run("cached-batch100", func(b *testing.B) {
		e := openTest(b, Options{})
		hot := names[:10_000]
		warm(b, e, hot)
		i := 0
		for b.Loop() {
			start := (i * 100) % len(hot)
			if _, err := e.Predict(hot[start:start+100], ""); err != nil {
				b.Fatal(err)
			}
			i++
		}
		perName(b, 100)
	})
	b.Run("uncached-batch100", func(b *testing.B) {
		e := openTest(b, Options{CacheEntries: -1})
		i := 0
		for b.Loop() {
			start := (i * 100) % len(names)
			if _, err := e.Predict(names[start:start+100], ""); err != nil {
				b.Fatal(err)
			}
			i++
		}
		perName(b, 100)
	})

	// Baselines: the answers in a map[string]answer. map-baseline looks
	// them up as the cache did until it was keyed by the name as sent
	// (normalised key, country prefix); map-rawname as the cache does now
	// (country prefix, name as sent), the floor for it.
	e := openTest(b, Options{CacheEntries: -1})
	base := make(map[string]answer, 10_000)
	raw := make(map[string]answer, 10_000)
	for i := 0; i < 10_000; i += 100 {
		ps, err := e.Predict(names[i:i+100], "")
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range ps {
			base["\x00"+namekey.Key(p.Name)] = answer{p.Gender, p.Probability, p.Count}
			raw["\x00"+p.Name] = answer{p.Gender, p.Probability, p.Count}
		}
	}
	mapPredict := func(names []string) []Prediction {
		out := make([]Prediction, len(names))
		for i, name := range names {
			out[i] = Prediction{Name: name}
			if a, ok := base["\x00"+namekey.Key(name)]; ok {
				a.fill(&out[i])
			}
		}
		return out
	}
	rawPredict := func(names []string) []Prediction {
		out := make([]Prediction, len(names))
		for i, name := range names {
			out[i] = Prediction{Name: name}
			if a, ok := raw["\x00"+name]; ok {
				a.fill(&out[i])
			}
		}
		return out
	}
	for _, m := range []struct {
		name    string
		predict func([]string) []Prediction
	}{{"map-baseline", mapPredict}, {"map-rawname", rawPredict}} {
		b.Run(m.name+"-1", func(b *testing.B) {
			i := 0
			for b.Loop() {
				m.predict(names[i%1000 : i%1000+1])
				i++
			}
			perName(b, 1)
		})
		b.Run(m.name+"-batch100", func(b *testing.B) {
			i := 0
			for b.Loop() {
				start := (i * 100) % 10_000
				m.predict(names[start : start+100])
				i++
			}
			perName(b, 100)
		})
	}
}

// BenchmarkZipfStream sends one million real names, drawn with a Zipf law
// (s = 1.05) over the names ranked by frequency, through an engine with
// the default cache, in batches of 100, and reports the cache hit ratio.
func BenchmarkZipfStream(b *testing.B) {
	names := realNames(b, 1<<30)
	const streamLen, batch = 1_000_000, 100
	cacheMetrics = true
	defer func() { cacheMetrics = false }()
	for b.Loop() {
		e, err := Open(dbPath(b), Options{})
		if err != nil {
			b.Fatal(err)
		}
		zipf := rand.NewZipf(rand.New(rand.NewSource(1)), 1.05, 1, uint64(len(names)-1))
		buf := make([]string, batch)
		for sent := 0; sent < streamLen; sent += batch {
			for i := range buf {
				buf[i] = names[zipf.Uint64()]
			}
			if _, err := e.Predict(buf, ""); err != nil {
				b.Fatal(err)
			}
		}
		// Answers come from the front layer or from ristretto, which
		// sees only what the front layer missed.
		hits := float64(e.front.hits.Load() + int64(e.cache.Metrics.Hits()))
		b.ReportMetric(hits/(hits+float64(e.cache.Metrics.Misses())), "hit-ratio")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(streamLen), "ns/name")
		e.Close()
	}
}

// BenchmarkRSS reports the resident memory of a fresh process that opened
// the default database and filled the default cache with 100,000 names.
func BenchmarkRSS(b *testing.B) {
	path := dbPath(b)
	for b.Loop() {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), rssChildEnv+"=1", "GENDERIZE_DB="+path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		var rssKB, anonKB, fileKB, entries int64
		if _, err := fmt.Sscanf(string(out), "rss_kb %d anon_kb %d file_kb %d entries %d", &rssKB, &anonKB, &fileKB, &entries); err != nil {
			b.Fatalf("child said %q: %v", out, err)
		}
		b.ReportMetric(float64(rssKB)/1024, "MB-RSS")
		b.ReportMetric(float64(anonKB)/1024, "MB-anon")
		b.ReportMetric(float64(fileKB)/1024, "MB-file")
		b.ReportMetric(float64(entries), "cached")
	}
}

func rssChild() int {
	fail := func(err error) int { fmt.Fprintln(os.Stderr, err); return 1 }
	path := os.Getenv("GENDERIZE_DB")
	cacheMetrics = true
	e, err := Open(path, Options{})
	if err != nil {
		return fail(err)
	}
	dsn, err := schema.DSN(path, "mode=ro")
	if err != nil {
		return fail(err)
	}
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return fail(err)
	}
	rows, err := db.Query("SELECT key FROM names WHERE country = '' AND form = 0 ORDER BY female + male DESC LIMIT ?", DefaultCacheEntries)
	if err != nil {
		return fail(err)
	}
	var names []string
	for rows.Next() {
		var k string
		rows.Scan(&k)
		names = append(names, k)
	}
	rows.Close()
	db.Close()
	for i := 0; i < len(names); i += 100 {
		if _, err := e.Predict(names[i:min(i+100, len(names))], ""); err != nil {
			return fail(err)
		}
		if i%10_000 == 0 {
			e.cache.Wait()
		}
	}
	e.cache.Wait()
	names = nil
	runtime.GC()
	rss, anon, file, err := memStatus()
	if err != nil {
		return fail(err)
	}
	m := e.cache.Metrics
	fmt.Printf("rss_kb %d anon_kb %d file_kb %d entries %d\n", rss, anon, file, m.KeysAdded()-m.KeysEvicted())
	return 0
}

// memStatus reads the resident set size of this process and its anonymous
// and file-backed parts (the memory-mapped database), in kB.
func memStatus() (rss, anon, file int64, err error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, 0, 0, err
	}
	defer f.Close()
	fields := map[string]*int64{"VmRSS:": &rss, "RssAnon:": &anon, "RssFile:": &file}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, _ := strings.Cut(sc.Text(), "\t")
		if dst, ok := fields[name]; ok {
			v, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(value), "kB")), 10, 64)
			if err != nil {
				return 0, 0, 0, fmt.Errorf("/proc/self/status %s %q: %w", name, value, err)
			}
			*dst = v
		}
	}
	if rss == 0 {
		return 0, 0, 0, fmt.Errorf("no VmRSS in /proc/self/status")
	}
	return rss, anon, file, sc.Err()
}
