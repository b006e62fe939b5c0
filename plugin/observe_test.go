package plugin

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/genderize-kong/genderize/plugin/metrics"
	"github.com/genderize-kong/genderize/plugin/metrics/scrape"
	"github.com/genderize-kong/genderize/plugin/quota"
)

// TestMetrics runs requests through Access over go-pdk's bridge with
// metrics on and checks what each one recorded: its status, its refusal
// reason, the names of a 200, one duration, and the timed store calls.
func TestMetrics(t *testing.T) {
	r, err := metrics.New(metrics.Options{Policies: []string{"local", "redis"}})
	if err != nil {
		t.Fatal(err)
	}
	metrics.Enable(r)
	defer metrics.Enable(nil)

	clk := &clock{now: t0}
	c := testConfig(t, clk)
	c.IPLimit = 2
	c.ThrottleRate, c.ThrottleBurst = 0.001, 8
	open := c.state.open
	c.state.open = func(c *Config) (*dependencies, error) {
		d, err := open(c)
		if err == nil {
			d.store = timeStore("local", d.store)
		}
		return d, err
	}
	captureLogs(t)

	tests := []struct {
		name   string
		req    *request
		status int
		reason string // refusal reason label, "" for none
		names  int
	}{
		{"single", get(demoPro, "name=peter"), 200, "", 1},
		{"batch", get(demoPro, "name[]=anna&name[]=luca&name[]=x%20y"), 200, "", 3},
		{"unknown key", get(anonymous, "name=peter&apikey=nope"), 401, "invalid_key", 0},
		{"paused", get(consumerWith("plan:basic", "subscription:paused"), "name=peter"), 402, "inactive_subscription", 0},
		{"unknown plan", get(consumerWith("plan:gold"), "name=peter"), 402, "inactive_subscription", 0},
		{"missing", get(demoPro, "country_id=de"), 422, "missing_name", 0},
		{"invalid", get(demoPro, "name="), 422, "invalid_name", 0},
		{"country", get(demoPro, "name=peter&country_id=XX"), 422, "invalid_country", 0},
		{"preflight", &request{method: "OPTIONS", ip: clientIP}, 204, "", 0},
		{"post", &request{consumer: demoPro, method: "POST", rawQuery: "name=peter", ip: clientIP}, 405, "", 0},
		{"key-less", get(anonymous, "name=peter"), 200, "", 1},
		{"over what is left", get(anonymous, "name[]=anna&name[]=luca"), 429, "batch_over_remaining", 0},
		{"last one", get(anonymous, "name=luca"), 200, "", 1},
		{"none left", get(anonymous, "name=john"), 429, "limit_reached", 0},
		{"no consumer", &request{method: "GET", rawQuery: "name=peter", ip: clientIP}, 500, "", 0},
	}
	for range 6 { // with the single and the batch above: 8, the burst
		tests = append(tests, tests[0])
	}
	tests = append(tests, tests[0])
	tests[len(tests)-1].name, tests[len(tests)-1].status, tests[len(tests)-1].reason, tests[len(tests)-1].names = "throttled", 429, "throttled", 0

	before := gatherPlugin(t, r)
	for i, tt := range tests {
		got, _ := tt.req.viaKong(t, c)
		if got.status != tt.status {
			t.Fatalf("%d %s: status %d, want %d", i, tt.name, got.status, tt.status)
		}
		after := gatherPlugin(t, r)
		status := `genderize_requests_total{status="` + strconv.Itoa(tt.status) + `"}`
		wantDelta := map[string]float64{
			status:                  1,
			"genderize_names_total": float64(tt.names),
			"genderize_request_duration_seconds_count": 1,
		}
		if tt.reason != "" {
			wantDelta[`genderize_refusals_total{reason="`+tt.reason+`"}`] = 1
		}
		for series, v := range after {
			if d := v - before[series]; d != wantDelta[series] && isRequestSeries(series) {
				t.Errorf("%d %s: %s +%v, want +%v", i, tt.name, series, d, wantDelta[series])
			}
		}
		before = after
	}
	// Every request reads the store but the unknown plan's and the one
	// without a consumer.
	if n := before[`genderize_quota_store_duration_seconds_count{policy="local"}`]; n < float64(len(tests)-2) {
		t.Errorf("%v store calls timed for %d requests that read the store", n, len(tests)-2)
	}
	if n := before[`genderize_quota_store_errors_total{policy="local"}`]; n != 0 {
		t.Errorf("%v store errors", n)
	}

	// A store that fails: its error is counted, by policy, and the request
	// answered 503 with no refusal reason.
	c2 := testConfig(t, clk)
	open2 := c2.state.open
	c2.state.open = func(c *Config) (*dependencies, error) {
		d, err := open2(c)
		if err == nil {
			d.store = timeStore("redis", &failingStore{err: quota.ErrUnavailable})
		}
		return d, err
	}
	got, _ := get(demoPro, "name=peter").viaKong(t, c2)
	after := gatherPlugin(t, r)
	if got.status != 503 || after[`genderize_requests_total{status="503"}`] != 1 {
		t.Errorf("failing store: status %d, 503s counted %v", got.status, after[`genderize_requests_total{status="503"}`])
	}
	if after[`genderize_quota_store_errors_total{policy="redis"}`] < 1 || after[`genderize_quota_store_duration_seconds_count{policy="redis"}`] < 1 {
		t.Errorf("failing store: errors %v, calls %v", after[`genderize_quota_store_errors_total{policy="redis"}`], after[`genderize_quota_store_duration_seconds_count{policy="redis"}`])
	}
}

// TestMetricsOff: with metrics off nothing is wrapped or timed.
func TestMetricsOff(t *testing.T) {
	metrics.Enable(nil)
	s := &failingStore{err: errors.New("x")}
	if got := timeStore("local", s); got != quota.Store(s) {
		t.Errorf("timeStore with metrics off = %T, want the store itself", got)
	}
	if !started().IsZero() {
		t.Error("started() read the clock with metrics off")
	}
}

func gatherPlugin(t *testing.T, r *metrics.Recorder) scrape.Samples {
	t.Helper()
	s, err := scrape.Gather(r.Gatherer())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// isRequestSeries: the series one request moves by a known amount.
func isRequestSeries(series string) bool {
	for _, p := range []string{"genderize_requests_total", "genderize_names_total", "genderize_refusals_total", "genderize_request_duration_seconds_count"} {
		if strings.HasPrefix(series, p) {
			return true
		}
	}
	return false
}

// BenchmarkAccessMetrics is one request through the handler with metrics
// off and on, side by side (compare ns/op): what recording costs the
// request path, store timing and cache counting included.
func BenchmarkAccessMetrics(b *testing.B) {
	r, err := metrics.New(metrics.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer metrics.Enable(nil)
	config := func(on bool) *Config {
		c := testConfig(b, &clock{now: t0})
		c.Plans["bench"] = Plan{Quota: 1 << 30}
		c.ThrottleRate, c.ThrottleBurst = 1e9, 1<<30
		open := c.state.open
		c.state.open = func(c *Config) (*dependencies, error) {
			d, err := open(c)
			if err == nil && on {
				d.store = timeStore("local", d.store)
			}
			return d, err
		}
		return c
	}
	off, on := config(false), config(true)
	keyed := consumerWith("plan:bench")
	for _, q := range []struct{ name, query string }{{"one-name", "name=peter"}, {"batch-100", "country_id=DE&" + batchQuery(100)}} {
		b.Run(q.name+"/off", func(b *testing.B) {
			metrics.Enable(nil)
			runAccess(b, off, keyed, q.query, 200)
		})
		b.Run(q.name+"/on", func(b *testing.B) {
			metrics.Enable(r)
			runAccess(b, on, keyed, q.query, 200)
		})
	}
}
