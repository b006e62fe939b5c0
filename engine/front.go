package engine

import (
	"hash/maphash"
	"math/rand/v2"
	"strings"
	"sync/atomic"
)

// frontSlots is the size of the front layer, in sets of frontWays slots:
// powers of two. Hot names are few (a Zipf law puts most requests on the
// first thousands of names), and a slot costs 8 bytes empty and about 100
// bytes filled, so the layer stays under 4 MB whatever the traffic.
const (
	frontSlots = 1 << 15
	frontWays  = 4
)

// front is a small set-associative layer in front of the ristretto cache:
// a hash of the cache key picks a set of frontWays slots. A hit costs a
// hash, a few atomic loads and a string compare, about what a plain Go map
// costs, where ristretto's Get also feeds its admission policy (a
// sync.Pool round trip, a ring buffer, a goroutine counting keys) and
// costs about twice as much (BenchmarkPredict: cached against
// cached-ristretto-only and map-rawname).
//
// It never holds an answer the ristretto cache did not give or was not
// given: it is filled on a ristretto hit and on a miss answered from the
// database, so it answers exactly what ristretto or the database would. A
// full set gives a slot to a new name only one time in frontReplace, so
// that names competing for a set cost an allocation rarely while the set
// still follows the traffic. The names it serves are not counted by
// ristretto's policy; a hot name that ristretto evicts for that is
// answered once more from the database when it leaves the front layer.
type front struct {
	seed  maphash.Seed
	slots [frontSlots]atomic.Pointer[frontEntry]
	// hits counts the answers the layer gave, only when metrics is set
	// (the benchmarks' hit ratio): an atomic add per name is not free.
	metrics bool
	hits    atomic.Int64
}

// frontReplace is the odds (one in frontReplace) that a name takes a slot
// of a full set.
const frontReplace = 8

type frontEntry struct {
	key string // the cache key, see appendCacheKey
	a   answer
}

func newFront(metrics bool) *front {
	return &front{seed: maphash.MakeSeed(), metrics: metrics}
}

// set returns the slots key may occupy.
func (f *front) set(key string) []atomic.Pointer[frontEntry] {
	i := maphash.String(f.seed, key) & (frontSlots - frontWays)
	return f.slots[i : i+frontWays]
}

// get returns the answer kept for key, if its set holds key.
func (f *front) get(key string) (answer, bool) {
	set := f.set(key)
	for i := range set {
		if e := set[i].Load(); e != nil && e.key == key {
			if f.metrics {
				f.hits.Add(1)
			}
			return e.a, true
		}
	}
	return answer{}, false
}

// put keeps a for key in an empty slot of its set, else, one time in
// frontReplace, in a random one. key is copied: it may be a view of a
// reused buffer.
func (f *front) put(key string, a answer) {
	f.putOwned(strings.Clone(key), a)
}

// putOwned is put for a key that is the caller's own copy.
func (f *front) putOwned(key string, a answer) {
	set := f.set(key)
	slot := -1
	for i := range set {
		if set[i].Load() == nil {
			slot = i
			break
		}
	}
	if slot < 0 {
		if rand.N(frontReplace) != 0 {
			return
		}
		slot = rand.N(frontWays)
	}
	set[slot].Store(&frontEntry{key: key, a: a})
}

// cached returns the cached answer for key (see appendCacheKey): from the front
// layer, else from ristretto, which then fills the front layer. The front
// layer is nil only in the benchmark that measures ristretto alone.
func (e *Engine) cached(key string) (answer, bool) {
	// key may be a view of a buffer on Predict's stack: it reaches
	// ristretto, whose Get the compiler must assume keeps it, as a copy
	// (which the ristretto-only benchmark pays for every name).
	if e.front == nil {
		return e.cache.Get(strings.Clone(key))
	}
	if a, ok := e.front.get(key); ok {
		return a, true
	}
	owned := strings.Clone(key)
	a, ok := e.cache.Get(owned)
	if ok {
		e.front.putOwned(owned, a)
	}
	return a, ok
}

// remember caches a, the database's answer for key, in both layers.
func (e *Engine) remember(key string, a answer) {
	if e.cache == nil {
		return
	}
	e.cache.Set(key, a, 1)
	if e.front != nil {
		e.front.put(key, a)
	}
}
