// Package throttle limits how fast each caller may send requests: one token
// bucket per caller, in this process (a Kong node), refilled at a steady rate.
// The throttle stays per node whatever the quota policy: a cluster of N
// nodes lets a caller burst N times, which bounds speed, not spending.
package throttle

import (
	"hash/maphash"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/genderize-kong/genderize/plugin/quota"
)

const (
	shardCount = 32
	sweepEvery = time.Minute
)

// Limiter holds one token bucket per key. It is safe for concurrent use.
type Limiter struct {
	limit rate.Limit
	burst int
	// refill is how long an untouched bucket takes to be full again. A full
	// bucket is the same as no bucket, so forgetting it then loses nothing:
	// memory stays bounded by the callers of the last few seconds.
	refill time.Duration
	seed   maphash.Seed
	shards [shardCount]shard
}

type shard struct {
	mu        sync.Mutex
	buckets   map[string]*bucket
	lastSweep time.Time
}

type bucket struct {
	tokens *rate.Limiter
	last   time.Time
}

// New returns a Limiter allowing each key perSecond requests per second on
// average and bursts of up to burst requests. perSecond must be positive and
// burst at least 1.
func New(perSecond float64, burst int) *Limiter {
	l := &Limiter{
		limit:  rate.Limit(perSecond),
		burst:  burst,
		refill: time.Duration(float64(burst) / perSecond * float64(time.Second)),
		seed:   maphash.MakeSeed(),
	}
	for i := range l.shards {
		l.shards[i].buckets = make(map[string]*bucket)
	}
	return l
}

// Allow takes one token from key's bucket at now. It answers in the
// quota's shape, so that one function makes every header from either:
// Limit is the burst, Allowed 1 or 0, Remaining the whole tokens left,
// RetryAfter how long until a token is there when refused, ResetAfter how
// long until the bucket is full again. A refused request takes nothing.
func (l *Limiter) Allow(key string, now time.Time) quota.Result {
	sh := &l.shards[maphash.String(l.seed, key)%shardCount]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if now.Sub(sh.lastSweep) >= sweepEvery {
		for k, b := range sh.buckets {
			if now.Sub(b.last) >= l.refill {
				delete(sh.buckets, k)
			}
		}
		sh.lastSweep = now
	}
	b := sh.buckets[key]
	if b == nil {
		b = &bucket{tokens: rate.NewLimiter(l.limit, l.burst)}
		sh.buckets[key] = b
	}
	if now.After(b.last) {
		b.last = now
	}
	r := quota.Result{Limit: l.burst}
	if b.tokens.AllowN(now, 1) {
		r.Allowed = 1
	}
	tokens := b.tokens.TokensAt(now)
	r.Remaining = max(int(math.Floor(tokens)), 0)
	r.ResetAfter = l.wait(float64(l.burst) - tokens)
	if r.Allowed == 0 {
		r.RetryAfter = l.wait(1 - tokens)
	}
	return r
}

// wait is how long the bucket takes to gain tokens, rounded up to the
// nanosecond.
func (l *Limiter) wait(tokens float64) time.Duration {
	if tokens <= 0 {
		return 0
	}
	return time.Duration(math.Ceil(tokens / float64(l.limit) * float64(time.Second)))
}

// Len is the number of buckets held, for tests and metrics.
func (l *Limiter) Len() int {
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		n += len(sh.buckets)
		sh.mu.Unlock()
	}
	return n
}

type settings struct {
	perSecond float64
	burst     int
}

var (
	sharedMu sync.Mutex
	shared   = map[settings]*Limiter{}
)

// Shared returns the process-wide Limiter for these settings. Kong starts a
// plugin instance per worker and per configuration change; sharing the
// buckets keeps the limit per node rather than per instance.
func Shared(perSecond float64, burst int) *Limiter {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	key := settings{perSecond, burst}
	l := shared[key]
	if l == nil {
		l = New(perSecond, burst)
		shared[key] = l
	}
	return l
}
