package plugin

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/Kong/go-pdk/entities"
)

func TestAPIKeyArgument(t *testing.T) {
	for _, tt := range []struct {
		query    string
		raw      string
		position int
		ok       bool
	}{
		{"apikey=K", "K", 0, true},
		{"name=peter&apikey=K", "K", 1, true},
		{"&&name=peter&&apikey=K", "K", 1, true}, // empty parts are not arguments
		{"=x&apikey=K", "K", 1, true},            // an argument without a name still counts
		{"name=a&api%6Bey=K%2D1", "K%2D1", 1, true},
		{"apikey=a+b", "a+b", 0, true},
		{"name=peter", "", 0, false},
		{"apikey", "", 0, false},
		{"apikey=", "", 0, false},
		{"apikey=K&apikey=K", "", 0, false},
		{"apikey=K&apikey", "", 0, false},
		{"apikey&apikey=K", "", 0, false},
		{"apikey=K&API%6Bey=K", "K", 0, true}, // names are case-sensitive: "APIkey" is another argument
		{"apikey=K&api%6Bey=J", "", 0, false},
		{"apikeyx=K", "", 0, false},
		{"apikey%zz=K", "", 0, false},
	} {
		raw, pos, ok := apikeyArgument(tt.query)
		if raw != tt.raw || pos != tt.position || ok != tt.ok {
			t.Errorf("%q: %q %d %v, want %q %d %v", tt.query, raw, pos, ok, tt.raw, tt.position, tt.ok)
		}
	}
}

// TestConsumerCache drives the adapter: a recognised key's consumer is
// reused within consumer_cache_ttl (2 PDK calls instead of 3), and the
// answers are the same as when Kong is asked.
func TestConsumerCache(t *testing.T) {
	const (
		line     = "kong.nginx.get_var"
		consumer = "kong.client.get_consumer"
		ip       = "kong.client.get_forwarded_ip"
		exit     = "kong.response.exit"
	)
	clk := &clock{now: t0}
	c := testConfig(t, clk)
	keyed := func(q string) *request { return get(demoFree, q) }
	steps := []struct {
		name      string
		at        time.Duration
		req       *request
		calls     []string
		status    int
		remaining int
	}{
		{"first use asks Kong", 0, keyed("name=peter&apikey=demo-free-key"), []string{line, consumer, exit}, 200, 2499},
		{"repeat is cached", 0, keyed("name=anna&apikey=demo-free-key"), []string{line, exit}, 200, 2498},
		{"cached refusal", 0, keyed("name=&apikey=demo-free-key"), []string{line, exit}, 422, 2498},
		{"cached 405", 0, &request{consumer: demoFree, method: "PUT", rawQuery: "apikey=demo-free-key"}, []string{line, exit}, 405, 2498},
		{"key earlier than when recognised", 0, keyed("apikey=demo-free-key&name=peter"), []string{line, exit}, 200, 2497},
		{"key later than when recognised asks Kong", 0, keyed("name=a&x=1&apikey=demo-free-key"), []string{line, consumer, exit}, 200, 2496},
		{"another encoding of the key is another entry", 0, keyed("name=peter&apikey=demo%2Dfree-key"), []string{line, consumer, exit}, 200, 2495},
		{"duplicate keys ask Kong", 0, &request{consumer: anonymous, method: "GET", rawQuery: "name=peter&apikey=demo-free-key&apikey=demo-free-key", ip: clientIP}, []string{line, consumer, ip, exit}, 401, 100},
		{"preflight asks Kong", 0, &request{method: "OPTIONS", rawQuery: "apikey=demo-free-key", ip: clientIP}, []string{line, consumer, ip, exit}, 204, 100},
		{"still cached just before the TTL", 999 * time.Millisecond, keyed("name=peter&apikey=demo-free-key"), []string{line, exit}, 200, 2494},
		{"expired at the TTL", time.Second, keyed("name=peter&apikey=demo-free-key"), []string{line, consumer, exit}, 200, 2493},
		{"cached again", time.Second, keyed("name=peter&apikey=demo-free-key"), []string{line, exit}, 200, 2492},
		{"unknown keys are never cached (1)", 0, &request{consumer: anonymous, method: "GET", rawQuery: "name=peter&apikey=nope", ip: clientIP}, []string{line, consumer, ip, exit}, 401, 100},
		{"unknown keys are never cached (2)", 0, &request{consumer: anonymous, method: "GET", rawQuery: "name=peter&apikey=nope", ip: clientIP}, []string{line, consumer, ip, exit}, 401, 100},
	}
	captureLogs(t)
	for _, st := range steps {
		clk.set(t0.Add(st.at))
		got, calls := st.req.viaKong(t, c)
		if got.status != st.status || got.header("X-Rate-Limit-Remaining") != fmt.Sprint(st.remaining) {
			t.Errorf("%s: %d %s remaining %s, want %d remaining %d", st.name, got.status, got.body, got.header("X-Rate-Limit-Remaining"), st.status, st.remaining)
		}
		if strings.Join(calls, ",") != strings.Join(st.calls, ",") {
			t.Errorf("%s: PDK calls %v, want %v", st.name, calls, st.calls)
		}
	}

	// The cache is the instance's: another instance (a config change)
	// asks Kong.
	clk.set(t0.Add(time.Second))
	c2 := testConfig(t, clk)
	if _, calls := keyed("name=peter&apikey=demo-free-key").viaKong(t, c2); len(calls) != 3 {
		t.Errorf("new instance: PDK calls %v, want Kong asked", calls)
	}
	// consumer_cache_ttl 0 asks every time.
	c3 := testConfig(t, clk)
	c3.ConsumerCacheTTL = 0
	for range 2 {
		if _, calls := keyed("name=peter&apikey=demo-free-key").viaKong(t, c3); len(calls) != 3 {
			t.Errorf("ttl 0: PDK calls %v, want Kong asked", calls)
		}
	}
}

// The cache holds at most maxCachedKeys entries, expired ones swept first.
func TestConsumerCacheBound(t *testing.T) {
	cc := newConsumerCache()
	who := entities.Consumer{Id: "x", Username: "x"}
	for i := range maxCachedKeys + 100 {
		cc.put(fmt.Sprint("key-", i), 0, who, t0, time.Second)
	}
	if len(cc.entries) != maxCachedKeys {
		t.Fatalf("%d entries, want %d", len(cc.entries), maxCachedKeys)
	}
	if _, ok := cc.get(fmt.Sprint("key-", maxCachedKeys), 0, t0); ok {
		t.Error("a key past the bound was cached")
	}
	cc.put("fresh", 0, who, t0.Add(time.Second), time.Second)
	if _, ok := cc.get("fresh", 0, t0.Add(time.Second)); !ok || len(cc.entries) != 1 {
		t.Errorf("after the TTL: %d entries, fresh cached %v", len(cc.entries), ok)
	}
}
