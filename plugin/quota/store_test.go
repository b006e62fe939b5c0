package quota

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/genderize-kong/genderize/testing/redisserver"
)

// storePolicy opens a fresh, empty store of one policy for a test.
type storePolicy struct {
	name string
	open func(t *testing.T) Store
}

// everyPolicy is every registered policy, plus the redis policy while Redis
// is down (fault tolerant: node-local counting), which must decide exactly
// as the others do.
func everyPolicy() []storePolicy {
	return []storePolicy{
		{"local", func(t *testing.T) Store {
			return openTestStore(t, filepath.Join(t.TempDir(), "quota.db"))
		}},
		{"redis", func(t *testing.T) Store {
			srv := redisserver.Run(t, redisserver.Options{})
			return openTestRedis(t, srv.Addr, true)
		}},
		{"redis-down-fault-tolerant", func(t *testing.T) Store {
			return openTestRedis(t, deadAddr(t), true)
		}},
	}
}

func TestEveryPolicyIsTested(t *testing.T) {
	tested := map[string]bool{}
	for _, p := range everyPolicy() {
		tested[p.name] = true
	}
	for _, name := range Policies() {
		if !tested[name] {
			t.Errorf("policy %q is registered but not in everyPolicy", name)
		}
	}
}

func openTestRedis(t *testing.T, addr string, faultTolerant bool) *Redis {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := net.LookupPort("tcp", port)
	s, err := OpenRedis(Options{
		Redis:         RedisOptions{Host: host, Port: p, Timeout: 500 * time.Millisecond},
		FaultTolerant: faultTolerant,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// deadAddr is a 127.0.0.1 address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// The same sequence of requests gets the same Results from every policy.
func TestAllowNSequences(t *testing.T) {
	// Windows around the real clock: Redis expires a counter at its
	// window's end by its own clock.
	w := Month(time.Now())
	steps := []struct {
		key              string
		n                int
		allowed, remains int
	}{
		{"consumer:a", 0, 0, 10},  // peek on a fresh key
		{"consumer:a", 3, 3, 7},   // consume 3
		{"consumer:a", 0, 0, 7},   // the peek sees it
		{"consumer:a", 8, 0, 7},   // too many: nothing consumed
		{"consumer:a", 7, 7, 0},   // exactly the rest
		{"consumer:a", 1, 0, 0},   // used up
		{"consumer:a", 0, 0, 0},   // a peek of a used-up key
		{"consumer:b", 10, 10, 0}, // keys are independent
		{"consumer:c", 11, 0, 10}, // more than the whole limit
		{"ip:192.0.2.1", 4, 4, 6}, // key-less callers by IP
		{"ip:2001:db8::1", 10, 10, 0},
		{"ip:192.0.2.1", 0, 0, 6},
	}
	for _, p := range everyPolicy() {
		t.Run(p.name, func(t *testing.T) {
			s := p.open(t)
			for i, st := range steps {
				r := allow(t, s, st.key, 10, w, st.n)
				want := Result{Limit: 10, Allowed: st.allowed, Remaining: st.remains, ResetAfter: w.ResetAfter()}
				if st.n > 0 && st.allowed == 0 {
					want.RetryAfter = w.ResetAfter()
				}
				if r != want {
					t.Fatalf("step %d %s n=%d: got %+v, want %+v", i, st.key, st.n, r, want)
				}
			}
		})
	}
}

func TestWindowsAreSeparate(t *testing.T) {
	day := 24 * time.Hour
	today := Fixed(time.Now(), day)
	tomorrow := Fixed(today.End, day)
	for _, p := range everyPolicy() {
		t.Run(p.name, func(t *testing.T) {
			s := p.open(t)
			allow(t, s, "ip:192.0.2.1", 5, today, 5)
			if r := allow(t, s, "ip:192.0.2.1", 5, today, 1); r.Allowed != 0 {
				t.Fatalf("used-up window granted %+v", r)
			}
			// The next day starts from zero.
			if r := allow(t, s, "ip:192.0.2.1", 5, tomorrow, 5); r.Allowed != 5 || r.Remaining != 0 {
				t.Fatalf("next window: %+v", r)
			}
			// A window of another length starting at the same instant is
			// another counter (an operator changed ip_window_seconds).
			hour := Fixed(today.Start, time.Hour)
			if r := allow(t, s, "ip:192.0.2.1", 5, hour, 0); r.Remaining != 5 {
				t.Fatalf("hour window sharing the day's start: %+v", r)
			}
		})
	}
}

func TestInvalidRequests(t *testing.T) {
	w := Month(time.Now())
	for _, p := range everyPolicy() {
		t.Run(p.name, func(t *testing.T) {
			s := p.open(t)
			for _, c := range []struct{ limit, n int }{{10, -1}, {-1, 1}} {
				if r, err := s.AllowN(context.Background(), "consumer:a", c.limit, w, c.n); err == nil {
					t.Errorf("limit %d n %d: %+v, want an error", c.limit, c.n, r)
				}
			}
			if r := allow(t, s, "consumer:a", 10, w, 0); r.Remaining != 10 {
				t.Errorf("invalid requests consumed: %+v", r)
			}
		})
	}
}

// Many goroutines race for one key with random sizes until refused; a drain
// of single units then finds exactly what they left: nothing is granted
// twice or lost.
func TestConcurrentExact(t *testing.T) {
	w := Month(time.Now())
	const limit, workers = 2000, 32
	for _, p := range everyPolicy() {
		t.Run(p.name, func(t *testing.T) {
			s := p.open(t)
			var granted atomic.Int64
			var wg sync.WaitGroup
			for g := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 1000; i++ { // bounded; refused long before
						n := 1 + (g*7+i*13)%100
						r, err := s.AllowN(context.Background(), "consumer:race", limit, w, n)
						if err != nil {
							t.Error(err)
							return
						}
						if r.Allowed != 0 && r.Allowed != n {
							t.Errorf("partial grant %d of %d", r.Allowed, n)
						}
						if r.Allowed == 0 {
							return
						}
						granted.Add(int64(r.Allowed))
					}
				}()
			}
			wg.Wait()
			drained := 0
			for drained <= limit {
				r := allow(t, s, "consumer:race", limit, w, 1)
				if r.Allowed == 0 {
					break
				}
				drained++
			}
			if got := granted.Load() + int64(drained); got != limit {
				t.Fatalf("granted %d + drained %d = %d, want exactly %d", granted.Load(), drained, got, limit)
			}
			if r := allow(t, s, "consumer:race", limit, w, 0); r.Remaining != 0 {
				t.Fatalf("after the drain remaining %d", r.Remaining)
			}
		})
	}
}
