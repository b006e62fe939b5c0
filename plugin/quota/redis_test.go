package quota

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/genderize-kong/genderize/testing/redisserver"
)

// redisCounter reads a counter straight from Redis: -1 when the key does
// not exist.
func redisCounter(t *testing.T, c *redis.Client, key string, w Window) int {
	t.Helper()
	v, err := c.Get(context.Background(), redisKey(key, w.Start.Unix(), w.End.Unix())).Int()
	if errors.Is(err, redis.Nil) {
		return -1
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func inspectClient(t *testing.T, srv *redisserver.Server) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// waitUp waits (bounded) until the store has found Redis again.
func waitUp(t *testing.T, s *Redis) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.down.Load() {
		if time.Now().After(deadline) {
			t.Fatal("store still counting locally 10 s after Redis came back")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRedisKeysAndExpiry(t *testing.T) {
	srv := redisserver.Run(t, redisserver.Options{})
	c := inspectClient(t, srv)
	s := openTestRedis(t, srv.Addr, false)
	ctx := context.Background()
	w := Fixed(time.Now(), time.Hour)

	allow(t, s, "consumer:a", 10, w, 3)
	key := "genderize:quota:{consumer:a}:" + itoa(w.Start.Unix()) + ":" + itoa(w.End.Unix())
	if keys, _ := c.Keys(ctx, "*").Result(); len(keys) != 1 || keys[0] != key {
		t.Fatalf("keys %q, want [%s]", keys, key)
	}
	if at, err := c.PExpireTime(ctx, key).Result(); err != nil || at != time.Duration(w.End.UnixMilli())*time.Millisecond {
		t.Fatalf("expires at %v (%v), want the window's end %d ms", at, err, w.End.UnixMilli())
	}
	// A refused request and a peek write nothing.
	allow(t, s, "consumer:a", 10, w, 8)
	allow(t, s, "consumer:b", 10, w, 0)
	allow(t, s, "consumer:c", 10, w, 11)
	if v := redisCounter(t, c, "consumer:a", w); v != 3 {
		t.Fatalf("counter %d after a refusal, want 3", v)
	}
	for _, k := range []string{"consumer:b", "consumer:c"} {
		if v := redisCounter(t, c, k, w); v != -1 {
			t.Fatalf("%s: a peek or a refusal created a counter (%d)", k, v)
		}
	}

	// A window that ends in a moment: its counter is gone after its end.
	now := time.Now()
	short := Window{Start: now.Add(-time.Second), End: now.Add(300 * time.Millisecond), Now: now}
	allow(t, s, "consumer:short", 10, short, 10)
	if v := redisCounter(t, c, "consumer:short", short); v != 10 {
		t.Fatalf("short window counter %d", v)
	}
	deadline := time.Now().Add(5 * time.Second)
	for redisCounter(t, c, "consumer:short", short) != -1 {
		if time.Now().After(deadline) {
			t.Fatal("counter still there seconds after its window ended")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// Two nodes sharing one Redis see each other's consumption.
func TestRedisSharedByNodes(t *testing.T) {
	srv := redisserver.Run(t, redisserver.Options{})
	a := openTestRedis(t, srv.Addr, true)
	b := openTestRedis(t, srv.Addr, true)
	w := Month(time.Now())
	allow(t, a, "consumer:x", 100, w, 60)
	if r := allow(t, b, "consumer:x", 100, w, 50); r.Allowed != 0 || r.Remaining != 40 {
		t.Fatalf("node b: %+v, want refused with 40 left", r)
	}
	if r := allow(t, b, "consumer:x", 100, w, 40); r.Allowed != 40 {
		t.Fatalf("node b: %+v", r)
	}
	if r := allow(t, a, "consumer:x", 100, w, 0); r.Remaining != 0 {
		t.Fatalf("node a sees %d left", r.Remaining)
	}
}

// fault_tolerant: during an outage the node counts alone; when Redis is
// back the node's counts are added to Redis.
func TestRedisOutageFaultTolerant(t *testing.T) {
	srv := redisserver.Run(t, redisserver.Options{Persist: true})
	c := inspectClient(t, srv)
	s := openTestRedis(t, srv.Addr, true)
	w := Month(time.Now())
	allow(t, s, "consumer:a", 100, w, 10)

	srv.Stop()
	// The node does not know the 10 Redis holds: it counts from zero.
	if r := allow(t, s, "consumer:a", 100, w, 5); r.Allowed != 5 || r.Remaining != 95 {
		t.Fatalf("first request of the outage: %+v", r)
	}
	if !s.down.Load() {
		t.Fatal("store not in outage mode")
	}
	allow(t, s, "consumer:a", 100, w, 7)
	allow(t, s, "ip:192.0.2.9", 10, w, 3)
	if r := allow(t, s, "consumer:a", 100, w, 89); r.Allowed != 0 || r.Remaining != 88 {
		t.Fatalf("the node's own limit during the outage: %+v", r)
	}

	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	waitUp(t, s)
	if v := redisCounter(t, c, "consumer:a", w); v != 10+12 {
		t.Fatalf("after the outage Redis counts %d, want 10 before + 12 during", v)
	}
	if v := redisCounter(t, c, "ip:192.0.2.9", w); v != 3 {
		t.Fatalf("ip counter %d after the outage, want 3", v)
	}
	if r := allow(t, s, "consumer:a", 100, w, 0); r.Remaining != 78 {
		t.Fatalf("after recovery %+v, want 78 left", r)
	}
	key := redisKey("consumer:a", w.Start.Unix(), w.End.Unix())
	if at, _ := c.PExpireTime(context.Background(), key).Result(); at != time.Duration(w.End.UnixMilli())*time.Millisecond {
		t.Fatalf("pushed counter expires at %v", at)
	}
	if len(s.fallback) != 0 {
		t.Fatalf("%d node-local counters left after the push", len(s.fallback))
	}
}

// fault_tolerant off: ErrUnavailable during the outage, nothing consumed.
func TestRedisOutageNotFaultTolerant(t *testing.T) {
	srv := redisserver.Run(t, redisserver.Options{Persist: true})
	c := inspectClient(t, srv)
	s := openTestRedis(t, srv.Addr, false)
	w := Month(time.Now())
	allow(t, s, "consumer:a", 100, w, 10)
	srv.Stop()
	for i := range 5 {
		for _, n := range []int{0, 1, 50} {
			if r, err := s.AllowN(context.Background(), "consumer:a", 100, w, n); !errors.Is(err, ErrUnavailable) {
				t.Fatalf("request %d n=%d during the outage: %+v, %v; want ErrUnavailable", i, n, r, err)
			}
		}
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	waitUp(t, s)
	if v := redisCounter(t, c, "consumer:a", w); v != 10 {
		t.Fatalf("Redis counts %d after refusing every request of the outage, want 10", v)
	}
	if r := allow(t, s, "consumer:a", 100, w, 1); r.Allowed != 1 || r.Remaining != 89 {
		t.Fatalf("after recovery: %+v", r)
	}
}

// A hung Redis (SIGSTOP) costs a request at most the timeout; once the
// outage is known, requests do not wait for Redis at all.
func TestRedisHangBoundedByTimeout(t *testing.T) {
	for _, ft := range []bool{true, false} {
		name := "fault-tolerant"
		if !ft {
			name = "not-fault-tolerant"
		}
		t.Run(name, func(t *testing.T) {
			srv := redisserver.Run(t, redisserver.Options{})
			s := openTestRedis(t, srv.Addr, ft) // timeout 500 ms
			w := Month(time.Now())
			allow(t, s, "consumer:a", 1000, w, 1)
			if err := srv.Pause(); err != nil {
				t.Fatal(err)
			}
			defer srv.Resume()
			// Generous bound: the timeout plus scheduling noise.
			bound := s.timeout + 1500*time.Millisecond
			var wg sync.WaitGroup
			for round := range 3 {
				for g := range 16 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						start := time.Now()
						r, err := s.AllowN(context.Background(), "consumer:a", 1000, w, 1)
						took := time.Since(start)
						if took > bound {
							t.Errorf("round %d request %d took %s, more than %s", round, g, took, bound)
						}
						if ft && (err != nil || r.Allowed != 1) {
							t.Errorf("fault tolerant: %+v, %v", r, err)
						}
						if !ft && !errors.Is(err, ErrUnavailable) {
							t.Errorf("not fault tolerant: %+v, %v; want ErrUnavailable", r, err)
						}
					}()
				}
				wg.Wait()
			}
			if !s.down.Load() {
				t.Fatal("a hung Redis was not noticed")
			}
			if err := srv.Resume(); err != nil {
				t.Fatal(err)
			}
			waitUp(t, s)
			if r := allow(t, s, "consumer:a", 1000, w, 1); r.Allowed != 1 {
				t.Fatalf("after resume: %+v", r)
			}
		})
	}
}

// During an outage the node keeps a bounded number of counters; a new
// caller beyond that is refused with ErrUnavailable rather than counted
// nowhere.
func TestRedisFallbackBounded(t *testing.T) {
	s := openTestRedis(t, deadAddr(t), true)
	s.maxFallback = 3
	w := Month(time.Now())
	for _, k := range []string{"ip:192.0.2.1", "ip:192.0.2.2", "ip:192.0.2.3"} {
		allow(t, s, k, 10, w, 1)
	}
	if _, err := s.AllowN(context.Background(), "ip:192.0.2.4", 10, w, 1); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("fourth caller: %v, want ErrUnavailable", err)
	}
	// Known callers and peeks still work.
	if r := allow(t, s, "ip:192.0.2.1", 10, w, 2); r.Allowed != 2 || r.Remaining != 7 {
		t.Fatalf("known caller: %+v", r)
	}
	if r := allow(t, s, "ip:192.0.2.5", 10, w, 0); r.Remaining != 10 {
		t.Fatalf("peek: %+v", r)
	}
	// Counters of ended windows make room, at the next sweep.
	old := Fixed(time.Now().Add(-48*time.Hour), time.Hour)
	s.mu.Lock()
	s.fallback = map[fallbackKey]int{{"ip:192.0.2.1", old.Start.Unix(), old.End.Unix()}: 1}
	s.fallback[fallbackKey{"ip:192.0.2.2", old.Start.Unix(), old.End.Unix()}] = 1
	s.fallback[fallbackKey{"ip:192.0.2.3", old.Start.Unix(), old.End.Unix()}] = 1
	s.lastSweep = time.Time{} // the last sweep was over a second ago
	s.mu.Unlock()
	if r := allow(t, s, "ip:192.0.2.4", 10, w, 1); r.Allowed != 1 {
		t.Fatalf("after pruning: %+v", r)
	}
}

func TestRedisPassword(t *testing.T) {
	srv := redisserver.Run(t, redisserver.Options{Password: "pw"})
	w := Month(time.Now())
	for _, tc := range []struct {
		user, pw string
		ok       bool
	}{
		{"", "pw", true},
		{"default", "pw", true},
		{"", "wrong", false},
		{"", "", false},
	} {
		s, err := OpenRedis(Options{Redis: RedisOptions{Host: "127.0.0.1", Port: srv.Port, Username: tc.user, Password: tc.pw, Timeout: time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.AllowN(context.Background(), "consumer:a", 10, w, 1)
		if tc.ok && err != nil || !tc.ok && !errors.Is(err, ErrUnavailable) {
			t.Errorf("user %q password %q: %v", tc.user, tc.pw, err)
		}
		s.Close()
	}
}

func TestRedisOptions(t *testing.T) {
	tests := []struct {
		name string
		o    RedisOptions
		err  string // substring; empty: valid
		kind string // "single", "cluster", "failover"
	}{
		{"single", RedisOptions{Host: "redis.internal", Port: 6380, Database: 2}, "", "single"},
		{"default port", RedisOptions{Host: "redis.internal"}, "", "single"},
		{"no host", RedisOptions{}, "host is empty", ""},
		{"cluster", RedisOptions{ClusterAddresses: "10.0.0.1:7000, 10.0.0.2:7000"}, "", "cluster"},
		{"cluster one seed", RedisOptions{ClusterAddresses: "10.0.0.1:7000"}, "", "cluster"},
		{"cluster no address", RedisOptions{ClusterAddresses: " , "}, "no address", ""},
		{"cluster database", RedisOptions{ClusterAddresses: "10.0.0.1:7000", Database: 1}, "only database 0", ""},
		{"sentinel", RedisOptions{SentinelMaster: "mymaster", SentinelAddresses: "10.0.0.1:26379,10.0.0.2:26379"}, "", "failover"},
		{"sentinel no address", RedisOptions{SentinelMaster: "mymaster"}, "sentinel_addresses", ""},
	}
	for _, tt := range tests {
		c, timeout, err := newRedisClient(tt.o)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: error %v, want one with %q", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if timeout != DefaultRedisTimeout {
			t.Errorf("%s: timeout %s, want the default %s", tt.name, timeout, DefaultRedisTimeout)
		}
		var kind string
		switch cc := c.(type) {
		case *redis.ClusterClient:
			kind = "cluster"
		case *redis.Client:
			kind = "single"
			if tt.o.SentinelMaster != "" {
				kind = "failover"
			}
			o := cc.Options()
			if tt.o.SentinelMaster == "" {
				want := tt.o.Host + ":6379"
				if tt.o.Port != 0 {
					want = tt.o.Host + ":" + itoa(int64(tt.o.Port))
				}
				if o.Addr != want || o.DB != tt.o.Database {
					t.Errorf("%s: addr %s db %d", tt.name, o.Addr, o.DB)
				}
			}
			if o.DialTimeout != DefaultRedisTimeout || o.ReadTimeout != DefaultRedisTimeout ||
				o.WriteTimeout != DefaultRedisTimeout || o.PoolTimeout != DefaultRedisTimeout || !o.ContextTimeoutEnabled {
				t.Errorf("%s: timeouts dial %s read %s write %s pool %s", tt.name, o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout)
			}
		}
		if kind != tt.kind {
			t.Errorf("%s: %T, want a %s client", tt.name, c, tt.kind)
		}
		c.Close()
	}

	c, timeout, err := newRedisClient(RedisOptions{Host: "redis.internal", SSL: true, ServerName: "cache.example", Timeout: 150 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	o := c.(*redis.Client).Options()
	if timeout != 150*time.Millisecond || o.ReadTimeout != timeout || o.DialTimeout != timeout {
		t.Errorf("timeout %s, read %s", timeout, o.ReadTimeout)
	}
	if o.TLSConfig == nil || o.TLSConfig.ServerName != "cache.example" || !o.TLSConfig.InsecureSkipVerify {
		t.Errorf("ssl without ssl_verify: %+v", o.TLSConfig)
	}
	c2, _, _ := newRedisClient(RedisOptions{Host: "redis.internal", SSL: true, SSLVerify: true})
	defer c2.Close()
	if tc := c2.(*redis.Client).Options().TLSConfig; tc == nil || tc.InsecureSkipVerify {
		t.Errorf("ssl_verify: %+v", tc)
	}
}

func TestRedisRegistered(t *testing.T) {
	srv := redisserver.Run(t, redisserver.Options{})
	o := Options{Redis: RedisOptions{Host: "127.0.0.1", Port: srv.Port}, FaultTolerant: true}
	a, err := Open("redis", o)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.(*Redis); !ok {
		t.Fatalf("Open(redis) = %T", a)
	}
	b, _ := Open("redis", o)
	if a != b {
		t.Fatal("same options opened twice")
	}
	if r := allow(t, a, "consumer:a", 10, Month(time.Now()), 1); r.Allowed != 1 {
		t.Fatalf("%+v", r)
	}
	if _, err := Open("redis", Options{}); err == nil {
		t.Fatal("redis without a host opened")
	}
}

// An outage is logged once, with its end; a second outage within a minute
// (a flapping Redis) is not logged again. No caller's key is ever logged.
func TestRedisOutageLogs(t *testing.T) {
	var buf syncBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(prev) })

	srv := redisserver.Run(t, redisserver.Options{})
	s := openTestRedis(t, srv.Addr, true)
	w := Month(time.Now())
	for range 2 {
		srv.Stop()
		for range 5 {
			allow(t, s, "ip:192.0.2.77", 100, w, 1)
			allow(t, s, "consumer:secret-id", 100, w, 1)
		}
		time.Sleep(1500 * time.Millisecond) // a few failed probes
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		waitUp(t, s)
	}
	out := buf.String()
	if n := strings.Count(out, "level=WARN"); n != 1 {
		t.Errorf("%d warnings for two outages within a minute, want 1:\n%s", n, out)
	}
	if n := strings.Count(out, "reachable again"); n != 1 {
		t.Errorf("%d recovery lines, want 1:\n%s", n, out)
	}
	for _, secret := range []string{"192.0.2.77", "secret-id"} {
		if strings.Contains(out, secret) {
			t.Errorf("log names a caller (%s):\n%s", secret, out)
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// ssl, ssl_verify and server_name against a redis-server speaking TLS only,
// its certificate (for 127.0.0.1 and redisserver.TLSServerName) signed by a
// CA the system trusts through SSL_CERT_FILE.
func TestRedisTLS(t *testing.T) {
	srv := redisserver.Run(t, redisserver.Options{TLS: true})
	// Read once per process, on the first verification: no other test
	// verifies certificates.
	t.Setenv("SSL_CERT_FILE", srv.CAFile())
	w := Month(time.Now())
	for _, tc := range []struct {
		name   string
		o      RedisOptions
		usable bool
	}{
		{"verified, the address's name", RedisOptions{SSL: true, SSLVerify: true}, true},
		{"verified, server_name", RedisOptions{SSL: true, SSLVerify: true, ServerName: redisserver.TLSServerName}, true},
		{"verified, wrong server_name", RedisOptions{SSL: true, SSLVerify: true, ServerName: "other.test"}, false},
		{"not verified", RedisOptions{SSL: true, ServerName: "other.test"}, true},
		{"plain text to TLS", RedisOptions{}, false},
	} {
		tc.o.Host, tc.o.Port, tc.o.Timeout = "127.0.0.1", srv.Port, time.Second
		s, err := OpenRedis(Options{Redis: tc.o})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.AllowN(context.Background(), "consumer:a", 10, w, 1)
		if tc.usable && err != nil || !tc.usable && !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s: %v", tc.name, err)
		}
		s.Close()
	}
}

// The plugin bounds a request with a deadline of its own, as long as the
// store's timeout: when it expires on a hung Redis, that is Redis's
// failure (fallback, or ErrUnavailable), not a caller that went away.
func TestRedisCallerDeadline(t *testing.T) {
	for _, ft := range []bool{true, false} {
		srv := redisserver.Run(t, redisserver.Options{})
		s := openTestRedis(t, srv.Addr, ft)
		w := Month(time.Now())
		allow(t, s, "consumer:a", 10, w, 1)
		if err := srv.Pause(); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		r, err := s.AllowN(ctx, "consumer:a", 10, w, 1)
		cancel()
		srv.Resume()
		if ft && (err != nil || r.Allowed != 1) {
			t.Errorf("fault tolerant, caller's deadline on a hung Redis: %+v, %v", r, err)
		}
		if !ft && !errors.Is(err, ErrUnavailable) {
			t.Errorf("caller's deadline on a hung Redis: %v, want ErrUnavailable", err)
		}
		// A caller that cancels is not an outage.
		waitUp(t, s)
		ctx, cancel = context.WithCancel(context.Background())
		cancel()
		if _, err := s.AllowN(ctx, "consumer:a", 10, w, 1); !errors.Is(err, context.Canceled) || s.down.Load() {
			t.Errorf("cancelled caller: %v, down %v", err, s.down.Load())
		}
	}
}
