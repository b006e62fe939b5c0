package metrics

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/genderize-kong/genderize/engine"
	"github.com/genderize-kong/genderize/plugin/metrics/scrape"
)

// fakeEngine stands for the engine's process-wide figures.
type fakeEngine struct {
	hits, misses uint64
	infos        []engine.Info
}

func (f *fakeEngine) options() Options {
	return Options{
		CacheStats: func() (uint64, uint64) { return f.hits, f.misses },
		Databases:  func() []engine.Info { return f.infos },
		Policies:   []string{"local", "redis"},
	}
}

func newTest(t *testing.T, f *fakeEngine) *Recorder {
	t.Helper()
	r, err := New(f.options())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// gather reads r as a scrape would, failing on a collector error.
func gather(t *testing.T, r *Recorder) scrape.Samples {
	t.Helper()
	s, err := scrape.Gather(r.Gatherer())
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	return s
}

func TestRecorder(t *testing.T) {
	loaded := time.Date(2026, 11, 22, 21, 0, 0, 500e6, time.UTC)
	f := &fakeEngine{hits: 7, misses: 3, infos: []engine.Info{{
		Path: "/data/names.db", SchemaVersion: "2", Built: "2026-11-22T20:00:00Z", Keys: 859187, Countries: 187, Loaded: loaded,
	}}}
	r := newTest(t, f)

	fresh := gather(t, r)
	for _, series := range []string{
		`genderize_requests_total{status="200"}`, `genderize_requests_total{status="429"}`, `genderize_requests_total{status="500"}`,
		`genderize_refusals_total{reason="invalid_key"}`, `genderize_refusals_total{reason="inactive_subscription"}`,
		`genderize_refusals_total{reason="missing_name"}`, `genderize_refusals_total{reason="invalid_name"}`,
		`genderize_refusals_total{reason="invalid_country"}`, `genderize_refusals_total{reason="limit_reached"}`,
		`genderize_refusals_total{reason="throttled"}`, `genderize_refusals_total{reason="batch_over_remaining"}`,
		`genderize_quota_store_errors_total{policy="local"}`, `genderize_quota_store_errors_total{policy="redis"}`,
		`genderize_quota_store_duration_seconds_count{policy="local"}`,
		"genderize_names_total", "genderize_request_duration_seconds_count",
	} {
		if v, ok := fresh[series]; !ok || v != 0 {
			t.Errorf("fresh recorder: %s = %v (present %v), want 0", series, v, ok)
		}
	}
	if _, ok := fresh[`genderize_refusals_total{reason=""}`]; ok {
		t.Error("a series for NoReason")
	}

	calls := []struct {
		status, names int
		reason        Reason
		d             time.Duration
	}{
		{200, 1, NoReason, 100 * time.Microsecond},
		{200, 100, NoReason, 2 * time.Millisecond},
		{200, 0, NoReason, time.Millisecond}, // a batch of zero names
		{401, 0, InvalidKey, 50 * time.Microsecond},
		{422, 3, InvalidName, 50 * time.Microsecond}, // names of a refusal are not answered
		{429, 0, LimitReached, 50 * time.Microsecond},
		{429, 0, Throttled, 50 * time.Microsecond},
		{429, 0, BatchOverRemaining, 50 * time.Microsecond},
		{500, 0, NoReason, 50 * time.Microsecond},
		{503, 0, NoReason, 50 * time.Microsecond}, // a status not made in advance
		{204, 0, NoReason, 0},
	}
	var total time.Duration
	for _, c := range calls {
		r.Request(c.status, c.names, c.reason, c.d)
		total += c.d
	}
	r.Store("local", time.Millisecond, nil)
	r.Store("local", 2*time.Millisecond, errors.New("disk full"))
	r.Store("redis", 5*time.Second, context.DeadlineExceeded)
	r.Store("memcached", time.Millisecond, nil) // not registered in advance

	got := gather(t, r)
	want := map[string]float64{
		`genderize_requests_total{status="200"}`:                       3,
		`genderize_requests_total{status="204"}`:                       1,
		`genderize_requests_total{status="401"}`:                       1,
		`genderize_requests_total{status="402"}`:                       0,
		`genderize_requests_total{status="422"}`:                       1,
		`genderize_requests_total{status="429"}`:                       3,
		`genderize_requests_total{status="500"}`:                       1,
		`genderize_requests_total{status="503"}`:                       1,
		"genderize_names_total":                                        101,
		`genderize_refusals_total{reason="invalid_key"}`:               1,
		`genderize_refusals_total{reason="inactive_subscription"}`:     0,
		`genderize_refusals_total{reason="invalid_name"}`:              1,
		`genderize_refusals_total{reason="limit_reached"}`:             1,
		`genderize_refusals_total{reason="throttled"}`:                 1,
		`genderize_refusals_total{reason="batch_over_remaining"}`:      1,
		"genderize_request_duration_seconds_count":                     float64(len(calls)),
		"genderize_request_duration_seconds_sum":                       total.Seconds(),
		`genderize_quota_store_errors_total{policy="local"}`:           1,
		`genderize_quota_store_errors_total{policy="redis"}`:           1,
		`genderize_quota_store_errors_total{policy="memcached"}`:       0,
		`genderize_quota_store_duration_seconds_count{policy="local"}`: 2,
		`genderize_quota_store_duration_seconds_sum{policy="local"}`:   0.003,
		`genderize_quota_store_duration_seconds_sum{policy="redis"}`:   5,
		"genderize_cache_hits_total":                                   7,
		"genderize_cache_misses_total":                                 3,
		`genderize_database_info{built="2026-11-22T20:00:00Z",countries="187",keys="859187",path="/data/names.db",schema_version="2"}`: 1,
		"genderize_database_loaded_timestamp_seconds": float64(loaded.UnixNano()) / 1e9,
	}
	for series, w := range want {
		v, ok := got[series]
		if !ok {
			t.Errorf("%s missing", series)
		} else if diff := v - w; diff > 1e-9 || diff < -1e-9 {
			t.Errorf("%s = %v, want %v", series, v, w)
		}
	}
	for _, prefix := range []string{"go_goroutines", "go_memstats_alloc_bytes", "process_cpu_seconds_total", "process_resident_memory_bytes"} {
		if _, ok := got[prefix]; !ok {
			t.Errorf("%s missing: the Go and process collectors", prefix)
		}
	}

	// The collector asks the engine at every scrape.
	f.hits = 8
	f.infos = append(f.infos, engine.Info{Path: "/data/new.db", SchemaVersion: "2", Built: "b", Keys: 1, Countries: 1, Loaded: loaded.Add(time.Hour)})
	got = gather(t, r)
	if got["genderize_cache_hits_total"] != 8 {
		t.Errorf("cache hits not read at scrape time: %v", got["genderize_cache_hits_total"])
	}
	if n := len(got.Prefixed("genderize_database_info")); n != 2 {
		t.Errorf("%d database_info series, want 2", n)
	}
	if got["genderize_database_loaded_timestamp_seconds"] != float64(loaded.Add(time.Hour).UnixNano())/1e9 {
		t.Errorf("loaded timestamp %v, want the latest load", got["genderize_database_loaded_timestamp_seconds"])
	}
}

func TestDatabaseNotOpenYet(t *testing.T) {
	got := gather(t, newTest(t, &fakeEngine{}))
	if s := got.Prefixed("genderize_database_"); len(s) != 0 {
		t.Errorf("no database open, yet %q", s)
	}
}

// serve serves r's /metrics on a free port until the test ends.
func serve(t *testing.T, r *Recorder, log *slog.Logger) string {
	t.Helper()
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Serve(ln, log) }()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return "http://" + ln.Addr().String() + "/metrics"
}

func TestServe(t *testing.T) {
	r := newTest(t, &fakeEngine{})
	r.Request(200, 2, NoReason, time.Millisecond)
	url := serve(t, r, slog.New(slog.NewTextHandler(io.Discard, nil)))
	got, err := scrape.Get(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	if got["genderize_names_total"] != 2 {
		t.Errorf("served genderize_names_total %v, want 2", got["genderize_names_total"])
	}
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{http.MethodPost, "/metrics", http.StatusMethodNotAllowed},
		{http.MethodGet, "/", http.StatusNotFound},
		{http.MethodGet, "/debug/pprof/", http.StatusNotFound},
	} {
		req, _ := http.NewRequest(c.method, strings.TrimSuffix(url, "/metrics")+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, resp.StatusCode, c.status)
		}
	}
}

func TestListenTaken(t *testing.T) {
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = Listen(ln.Addr().String())
	if err == nil || !strings.Contains(err.Error(), "metrics listen "+ln.Addr().String()) {
		t.Errorf("second Listen on %s: %v, want an error naming the address", ln.Addr(), err)
	}
}

// TestEnable: the package functions record into the enabled Recorder only,
// and turn the engine's cache counting on and off with it.
func TestEnable(t *testing.T) {
	r := newTest(t, &fakeEngine{})
	defer Enable(nil)

	Request(200, 1, NoReason, time.Millisecond)
	Store("local", time.Millisecond, errors.New("x"))
	if On() {
		t.Fatal("On before Enable")
	}
	Enable(r)
	if !On() {
		t.Fatal("not On after Enable")
	}
	Request(200, 1, NoReason, time.Millisecond)
	Request(429, 0, Throttled, time.Millisecond)
	Store("local", time.Millisecond, errors.New("x"))
	Enable(nil)
	Request(200, 1, NoReason, time.Millisecond)

	got := gather(t, r)
	for series, want := range map[string]float64{
		`genderize_requests_total{status="200"}`:             1,
		`genderize_refusals_total{reason="throttled"}`:       1,
		`genderize_quota_store_errors_total{policy="local"}`: 1,
		"genderize_names_total":                              1,
	} {
		if got[series] != want {
			t.Errorf("%s = %v, want %v", series, got[series], want)
		}
	}
}

// TestNoAllocations: recording allocates nothing, on or off, once a
// status or policy has been seen.
func TestNoAllocations(t *testing.T) {
	r := newTest(t, &fakeEngine{})
	defer Enable(nil)
	for _, on := range []*Recorder{nil, r} {
		Enable(on)
		allocs := testing.AllocsPerRun(1000, func() {
			Request(200, 1, NoReason, time.Millisecond)
			Request(429, 0, LimitReached, time.Millisecond)
			Store("local", time.Millisecond, nil)
		})
		if allocs != 0 {
			t.Errorf("enabled %v: %v allocations per request, want 0", on != nil, allocs)
		}
	}
}

func TestReasonString(t *testing.T) {
	for r, want := range map[Reason]string{NoReason: "", InvalidKey: "invalid_key", BatchOverRemaining: "batch_over_remaining", numReasons: "reason(9)"} {
		if got := r.String(); got != want {
			t.Errorf("Reason(%d).String() = %q, want %q", r, got, want)
		}
	}
}

// BenchmarkRecord is what a request pays to be counted: off, and on.
func BenchmarkRecord(b *testing.B) {
	r, err := New((&fakeEngine{}).options())
	if err != nil {
		b.Fatal(err)
	}
	defer Enable(nil)
	for _, c := range []struct {
		name string
		r    *Recorder
	}{{"off", nil}, {"on", r}} {
		b.Run(c.name, func(b *testing.B) {
			Enable(c.r)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					Request(200, 1, NoReason, 300*time.Microsecond)
					Store("local", 50*time.Microsecond, nil)
				}
			})
		})
	}
}
