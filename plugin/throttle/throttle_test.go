package throttle

import (
	"hash/maphash"
	"testing"
	"time"

	"github.com/genderize-kong/genderize/plugin/quota"
)

// allow is Allow as (ok, retry after), the two facts most tests check.
func allow(l *Limiter, key string, now time.Time) (bool, time.Duration) {
	r := l.Allow(key, now)
	return r.Allowed == 1, r.RetryAfter
}

var t0 = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

func TestBurstThenRate(t *testing.T) {
	l := New(10, 5) // a token every 100ms, 5 at most
	for i := range 5 {
		if ok, _ := allow(l, "a", t0); !ok {
			t.Fatalf("request %d of the burst refused", i)
		}
	}
	ok, retry := allow(l, "a", t0)
	if ok || retry != 100*time.Millisecond {
		t.Fatalf("6th request: ok=%v retry=%s, want refused, 100ms", ok, retry)
	}
	// A refused request takes no token: 40ms later 60ms are still missing.
	if ok, retry := allow(l, "a", t0.Add(40*time.Millisecond)); ok || retry != 60*time.Millisecond {
		t.Fatalf("at +40ms: ok=%v retry=%s, want refused, 60ms", ok, retry)
	}
	if ok, _ := allow(l, "a", t0.Add(100*time.Millisecond)); !ok {
		t.Fatal("refilled token refused")
	}
	// Other keys have their own bucket.
	if ok, _ := allow(l, "b", t0); !ok {
		t.Fatal("key b throttled by key a")
	}
}

func TestSlowRateRetryAfter(t *testing.T) {
	l := New(0.5, 1) // one request every 2s
	if ok, _ := allow(l, "a", t0); !ok {
		t.Fatal("first request refused")
	}
	if ok, retry := allow(l, "a", t0.Add(500*time.Millisecond)); ok || retry != 1500*time.Millisecond {
		t.Fatalf("ok=%v retry=%s, want refused, 1.5s", ok, retry)
	}
}

func TestSweepForgetsFullBuckets(t *testing.T) {
	l := New(10, 5) // full again 500ms after the last use
	for i := range 100 {
		l.Allow(string(rune('a'+i%26))+string(rune('0'+i/26)), t0)
	}
	if l.Len() != 100 {
		t.Fatalf("%d buckets, want 100", l.Len())
	}
	// Drain one key, then sweep a minute later: a bucket refilled by then
	// is forgotten, and a fresh bucket behaves the same.
	for range 5 {
		l.Allow("busy", t0.Add(sweepEvery))
	}
	later := t0.Add(sweepEvery + 200*time.Millisecond)
	for i := range shardCount {
		l.shards[i].lastSweep = t0
	}
	if ok, _ := allow(l, "busy", later); !ok {
		// 200ms refilled two tokens.
		t.Fatal("busy key refused after refill")
	}
	for i := range shardCount {
		sh := &l.shards[i]
		sh.mu.Lock()
		for k, b := range sh.buckets {
			if k != "busy" && later.Sub(b.last) < l.refill {
				t.Errorf("bucket %q not swept", k)
			}
		}
		sh.mu.Unlock()
	}
	// Only the busy key's shard swept at later (the others did at t0 +
	// sweepEvery or not at all, depending on where the keys hash): it
	// holds the busy key alone.
	sh := &l.shards[maphash.String(l.seed, "busy")%shardCount]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if _, ok := sh.buckets["busy"]; !ok || len(sh.buckets) != 1 {
		t.Fatalf("busy key's shard holds %d buckets after its sweep, want the busy one only", len(sh.buckets))
	}
}

func TestShared(t *testing.T) {
	if Shared(10, 50) != Shared(10, 50) {
		t.Fatal("same settings, different limiters")
	}
	if Shared(10, 50) == Shared(10, 51) {
		t.Fatal("different settings share a limiter")
	}
}

// The throttle answers in the quota's shape: the burst as the limit, the
// whole tokens left, and when the bucket is full again.
func TestResult(t *testing.T) {
	l := New(10, 5) // a token every 100ms, 5 at most
	tests := []struct {
		at   time.Duration
		want quota.Result
	}{
		{0, quota.Result{Limit: 5, Allowed: 1, Remaining: 4, ResetAfter: 100 * time.Millisecond}},
		{0, quota.Result{Limit: 5, Allowed: 1, Remaining: 3, ResetAfter: 200 * time.Millisecond}},
		{0, quota.Result{Limit: 5, Allowed: 1, Remaining: 2, ResetAfter: 300 * time.Millisecond}},
		{0, quota.Result{Limit: 5, Allowed: 1, Remaining: 1, ResetAfter: 400 * time.Millisecond}},
		{0, quota.Result{Limit: 5, Allowed: 1, Remaining: 0, ResetAfter: 500 * time.Millisecond}},
		{50 * time.Millisecond, quota.Result{Limit: 5, Remaining: 0, RetryAfter: 50 * time.Millisecond, ResetAfter: 450 * time.Millisecond}},
		{250 * time.Millisecond, quota.Result{Limit: 5, Allowed: 1, Remaining: 1, ResetAfter: 350 * time.Millisecond}},
	}
	for i, tt := range tests {
		if got := l.Allow("a", t0.Add(tt.at)); got != tt.want {
			t.Errorf("request %d at +%s: %+v, want %+v", i, tt.at, got, tt.want)
		}
	}
}
