package conformance

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/genderize-kong/genderize/testing/binaries"
	"github.com/genderize-kong/genderize/testing/standin"
)

// BenchmarkProtocol drives the plugin through the stand-in's protocol
// layer (no HTTP) with 16 concurrent connections; the no-op plugin, which
// only calls Exit, is the floor Kong's protocol imposes: "noop" on the
// plugin's own server, "noop-gopdk" on go-pdk's stock server (what a
// typical Go plugin costs). Compare req/s of "single" with both from the
// same run; `make bench` prints the ratios.
func BenchmarkProtocol(b *testing.B) {
	stockBin := noopStockBin(b)
	names := repeatNames(100)
	single := func(i int64) *standin.Request {
		return benchRequest("name=" + names[i%int64(len(names))] + "&apikey=demo-pro-key")
	}
	batchQ := batchQuery(names...) + "&apikey=demo-pro-key"
	for _, bc := range []struct {
		name   string
		plugin string
		names  int
		make   func(int64) *standin.Request
	}{
		{"noop", noopBin, 1, single},
		{"noop-gopdk", stockBin, 1, single},
		{"single", pluginBin, 1, single},
		{"batch100", pluginBin, 100, func(int64) *standin.Request { return benchRequest(batchQ) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := newEnv(b, envConfig{plugin: bc.plugin, overrides: map[string]any{
				"throttle_rate":  1000000,
				"throttle_burst": 1000000,
				"plans":          map[string]any{"pro": map[string]any{"quota": 1000000000}, "free": map[string]any{"quota": 2500}, "basic": map[string]any{"quota": 100000}},
			}})
			standin.Load(context.Background(), e.s, standin.LoadOptions{Conns: 16, Duration: 200 * time.Millisecond, MaxRequests: 500, Request: bc.make, NamesPerRequest: bc.names})
			b.ResetTimer()
			res := standin.Load(context.Background(), e.s, standin.LoadOptions{Conns: 16, Duration: time.Minute, MaxRequests: int64(b.N), Request: bc.make, NamesPerRequest: bc.names})
			b.StopTimer()
			if res.Statuses[http.StatusOK] != res.Requests {
				b.Fatalf("not every request succeeded: %v", res.Statuses)
			}
			b.ReportMetric(res.RequestsPerSecond(), "req/s")
			b.ReportMetric(res.NamesPerSecond(), "names/s")
			b.ReportMetric(float64(res.P50.Microseconds()), "p50-µs")
			b.ReportMetric(float64(res.P99.Microseconds()), "p99-µs")
		})
	}
}

var (
	noopStockOnce sync.Once
	noopStockPath string
	noopStockErr  error
)

// noopStockBin builds the no-op plugin on go-pdk's stock server beside the
// binaries TestMain built, once per run.
func noopStockBin(b *testing.B) string {
	b.Helper()
	noopStockOnce.Do(func() {
		path := filepath.Join(filepath.Dir(noopBin), "noop-gopdk")
		if err := binaries.Build("testing/cmd/noop-gopdk", path); err != nil {
			noopStockErr = fmt.Errorf("the no-op plugin on go-pdk's server: %w", err)
			return
		}
		noopStockPath = path
	})
	if noopStockErr != nil {
		b.Fatal(noopStockErr)
	}
	return noopStockPath
}

// benchRequest makes a fresh request: Handle fills in a request's
// defaults, so load workers must not share one.
func benchRequest(rawQuery string) *standin.Request {
	return &standin.Request{
		Method: http.MethodGet, Scheme: "http", Host: "127.0.0.1", Port: 8000, Path: "/",
		RawQuery: rawQuery, Header: http.Header{"User-Agent": {"conformance-bench"}}, HTTPVersion: 1.1,
		RemoteAddr: netip.MustParseAddrPort("127.0.0.1:40000"),
	}
}
