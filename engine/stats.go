package engine

import "sync/atomic"

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
