package engine

import (
	"sync/atomic"
	"testing"
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
