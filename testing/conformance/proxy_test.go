package conformance

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/genderize-kong/genderize/plugin/quota"
	"github.com/genderize-kong/genderize/testing/standin"
)

// TestBehindLoadBalancer: with trusted_ips set to the balancer's subnet and
// real_ip_header X-Forwarded-For, key-less callers behind the balancer are
// counted per real client, a client's own forged X-Forwarded-For (which the
// balancer appends to) does not help it, and the header from a peer that
// is not trusted is ignored.
func TestBehindLoadBalancer(t *testing.T) {
	decl, err := standin.ParseDeclarative(kongYML)
	if err != nil {
		t.Fatal(err)
	}
	quotaPath := filepath.Join(t.TempDir(), "quota.db")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := standin.Start(ctx, standin.Options{
		Declarative: decl,
		PluginPath:  pluginBin,
		ConfigOverrides: map[string]any{
			"database_path": dbPath, "quota_path": quotaPath, "ip_limit": 3,
		},
		// kong.conf: trusted_ips = 10.0.0.0/24, real_ip_header = X-Forwarded-For
		TrustedIPs:   []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")},
		RealIPHeader: "X-Forwarded-For",
		Logger:       slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	const (
		balancer = "10.0.0.5"     // trusted
		outsider = "203.0.113.7"  // reaches Kong directly: not trusted
		clientA  = "198.51.100.1" // behind the balancer
		clientB  = "198.51.100.2"
	)
	send := func(peer, xff string) (status, remaining int) {
		t.Helper()
		h := http.Header{}
		if xff != "" {
			h.Set("X-Forwarded-For", xff)
		}
		resp := s.Handle(ctx, &standin.Request{
			Method: http.MethodGet, Scheme: "http", Host: "api.example", Port: 8000, Path: "/",
			RawQuery: "name=peter", Header: h, HTTPVersion: 1.1,
			RemoteAddr: netip.AddrPortFrom(netip.MustParseAddr(peer), 40000),
		})
		remaining, err := strconv.Atoi(resp.Header.Get("X-Rate-Limit-Remaining"))
		if err != nil {
			t.Fatalf("from %s (X-Forwarded-For %q): status %d, X-Rate-Limit-Remaining %q", peer, xff, resp.Status, resp.Header.Get("X-Rate-Limit-Remaining"))
		}
		return resp.Status, remaining
	}
	steps := []struct {
		what           string
		peer, xff      string
		status, remain int
	}{
		{"client A through the balancer", balancer, clientA, 200, 2},
		{"client B has its own allowance", balancer, clientB, 200, 2},
		{"client A again", balancer, clientA, 200, 1},
		{"client A forging a first address: the balancer appends the real one", balancer, "192.0.2.99, " + clientA, 200, 0},
		{"client A is at its limit", balancer, clientA, 429, 0},
		{"client B is not", balancer, clientB, 200, 1},
		{"an untrusted peer's header is ignored: counted as the peer", outsider, clientB, 200, 2},
		{"another forged address from it: still the peer", outsider, "192.0.2.1", 200, 1},
		{"and another", outsider, "192.0.2.2", 200, 0},
		{"the peer is at its limit whatever it claims", outsider, "192.0.2.3", 429, 0},
		{"client B kept its count", balancer, clientB, 200, 0},
		{"the balancer's own requests (no header) count as the balancer", balancer, "", 200, 2},
	}
	for _, st := range steps {
		status, remaining := send(st.peer, st.xff)
		if status != st.status || remaining != st.remain {
			t.Errorf("%s: status %d remaining %d, want %d and %d", st.what, status, remaining, st.status, st.remain)
		}
	}

	// The quota file holds one counter per real client.
	c, err := quota.OpenLocalCounters(quotaPath, false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	usage, err := c.Usage(ctx, "ip:")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, u := range usage {
		got[u.Key] += u.Used
	}
	want := map[string]int{"ip:" + clientA: 3, "ip:" + clientB: 3, "ip:" + outsider: 3, "ip:" + balancer: 1}
	if len(got) != len(want) {
		t.Errorf("counters %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("counter %s = %d, want %d (all: %v)", k, got[k], n, got)
		}
	}
}
