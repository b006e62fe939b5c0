package quota

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/genderize-kong/genderize/testing/redisserver"
)

func TestRedisUsageAndReset(t *testing.T) {
	srv := redisserver.Run(t, redisserver.Options{})
	s := openTestRedis(t, srv.Addr, false)
	ctx := context.Background()
	month := Month(time.Now())
	day := Fixed(time.Now(), 24*time.Hour)
	next := Fixed(day.End, 24*time.Hour)
	allow(t, s, "consumer:a", 100, month, 7)
	allow(t, s, "consumer:b", 100, month, 2)
	allow(t, s, "ip:2001:db8::1", 10, day, 3)
	allow(t, s, "ip:2001:db8::1", 10, next, 1)
	allow(t, s, "ip:192.0.2.1", 10, day, 4)
	allow(t, s, "consumer:c", 100, month, 0) // a peek stores nothing
	// Another application's key and a key like ours but malformed.
	c := inspectClient(t, srv)
	c.Set(ctx, "other:app", 1, 0)
	c.Set(ctx, "genderize:quota:{consumer:z}:x:y", 1, 0)

	got, err := s.Usage(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []Usage{
		{"consumer:a", month.Start, month.End, 7},
		{"consumer:b", month.Start, month.End, 2},
		{"ip:192.0.2.1", day.Start, day.End, 4},
		{"ip:2001:db8::1", day.Start, day.End, 3},
		{"ip:2001:db8::1", next.Start, next.End, 1},
	}
	if !sameUsage(got, want) {
		t.Fatalf("Usage(\"\") = %+v\nwant %+v", got, want)
	}
	if got, _ := s.Usage(ctx, "ip:"); !sameUsage(got, want[2:]) {
		t.Fatalf("Usage(ip:) = %+v", got)
	}
	if got, _ := s.Usage(ctx, "consumer:a"); !sameUsage(got, want[:1]) {
		t.Fatalf("Usage(consumer:a) = %+v", got)
	}
	// Glob characters in a prefix are literal.
	if got, _ := s.Usage(ctx, "consumer:*"); len(got) != 0 {
		t.Fatalf("Usage(consumer:*) = %+v", got)
	}

	if n, err := s.Reset(ctx, "ip:2001:db8::1"); err != nil || n != 2 {
		t.Fatalf("Reset = %d, %v; want 2 windows", n, err)
	}
	if n, err := s.Reset(ctx, "consumer:"); err != nil || n != 0 {
		t.Fatalf("Reset of a prefix = %d, %v; want 0 (keys are exact)", n, err)
	}
	if r := allow(t, s, "ip:2001:db8::1", 10, day, 0); r.Remaining != 10 {
		t.Fatalf("after Reset: %+v", r)
	}
	if got, _ := s.Usage(ctx, ""); !sameUsage(got, want[:3]) {
		t.Fatalf("after Reset: %+v", got)
	}
}

func sameUsage(a, b []Usage) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || !a[i].WindowStart.Equal(b[i].WindowStart) || !a[i].WindowEnd.Equal(b[i].WindowEnd) || a[i].Used != b[i].Used {
			return false
		}
	}
	return true
}

func TestParseRedisKey(t *testing.T) {
	for _, tt := range []struct {
		name string
		key  string
		ok   bool
	}{
		{redisKey("consumer:5f0c", 100, 200), "consumer:5f0c", true},
		{redisKey("ip:2001:db8::1", 100, 200), "ip:2001:db8::1", true},
		{redisKey("odd}:key", 100, 200), "odd}:key", true},
		{"genderize:quota:{a}:1", "", false},
		{"genderize:quota:a:1:2", "", false},
		{"other:{a}:1:2", "", false},
	} {
		u, ok := parseRedisKey(tt.name)
		if ok != tt.ok || ok && (u.Key != tt.key || u.WindowStart.Unix() != 100 || u.WindowEnd.Unix() != 200) {
			t.Errorf("parseRedisKey(%q) = %+v, %v", tt.name, u, ok)
		}
	}
}

// Redis Cluster: the script runs on the caller's slot and Usage scans every
// master.
func TestRedisCluster(t *testing.T) {
	start := time.Now()
	srv := redisserver.Run(t, redisserver.Options{Cluster: true})
	t.Logf("cluster up in %s", time.Since(start))
	s, err := OpenRedis(Options{Redis: RedisOptions{ClusterAddresses: srv.Addr, Timeout: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok := s.client.(*redis.ClusterClient); !ok {
		t.Fatalf("client %T, want a cluster client", s.client)
	}
	w := Month(time.Now())
	allow(t, s, "consumer:a", 10, w, 4)
	allow(t, s, "ip:2001:db8::1", 10, w, 10)
	if r := allow(t, s, "consumer:a", 10, w, 7); r.Allowed != 0 || r.Remaining != 6 {
		t.Fatalf("%+v", r)
	}
	got, err := s.Usage(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	want := []Usage{{"consumer:a", w.Start, w.End, 4}, {"ip:2001:db8::1", w.Start, w.End, 10}}
	if !sameUsage(got, want) {
		t.Fatalf("Usage = %+v", got)
	}
	if n, err := s.Reset(context.Background(), "consumer:a"); n != 1 || err != nil {
		t.Fatalf("Reset = %d, %v", n, err)
	}
}

// Sentinel: the store asks the sentinels for the master and counts there.
func TestRedisSentinel(t *testing.T) {
	master := redisserver.Run(t, redisserver.Options{})
	sentinel := redisserver.Run(t, redisserver.Options{SentinelFor: master})
	s, err := OpenRedis(Options{Redis: RedisOptions{
		SentinelMaster:    redisserver.SentinelMaster,
		SentinelAddresses: "127.0.0.1:1, " + sentinel.Addr, // the first one is down
		Timeout:           time.Second,
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := Month(time.Now())
	if r := allow(t, s, "consumer:a", 10, w, 4); r.Allowed != 4 || r.Remaining != 6 {
		t.Fatalf("%+v", r)
	}
	if v := redisCounter(t, inspectClient(t, master), "consumer:a", w); v != 4 {
		t.Fatalf("the master counts %d, want 4", v)
	}
	if got, err := s.Usage(context.Background(), "consumer:"); err != nil || len(got) != 1 || got[0].Used != 4 {
		t.Fatalf("Usage = %+v, %v", got, err)
	}
}
