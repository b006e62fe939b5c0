package plugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/Kong/go-pdk/entities"

	"github.com/genderize-kong/genderize/engine"
	"github.com/genderize-kong/genderize/plugin/quota"
	"github.com/genderize-kong/genderize/plugin/throttle"
)

// failingStore stands in for a quota store that cannot answer (a Redis
// outage): the real stores cannot be made to fail on demand here. It
// records the deadline of every call.
type failingStore struct {
	err       error
	deadlines []time.Duration
	calls     int
}

func (s *failingStore) AllowN(ctx context.Context, key string, limit int, w quota.Window, n int) (quota.Result, error) {
	s.calls++
	if d, ok := ctx.Deadline(); ok {
		s.deadlines = append(s.deadlines, time.Until(d))
	} else {
		s.deadlines = append(s.deadlines, -1)
	}
	return quota.Result{}, s.err
}

func (s *failingStore) Close() error { return nil }

func entity(c interface {
	GetId() string
	GetUsername() string
	GetTags() []string
}) entities.Consumer {
	return entities.Consumer{Id: c.GetId(), Username: c.GetUsername(), Tags: c.GetTags()}
}

// TestDecideStoreFailures: a store that cannot be reached answers 503 with
// what the decision knows of the window (limit and reset, remaining
// unknown: 0), any other store error 500; both consume nothing, and every
// store call is bounded by the policy's timeout.
func TestDecideStoreFailures(t *testing.T) {
	names, err := engine.Shared(testNamesDB(t), engine.Options{CacheEntries: 1000})
	if err != nil {
		t.Fatal(err)
	}
	unavailable := fmt.Errorf("redis 127.0.0.1:1: dial tcp: connection refused: %w", quota.ErrUnavailable)
	broken := errors.New("database disk image is malformed")
	tests := []struct {
		name     string
		err      error
		f        facts
		status   int
		body     string
		limit    int
		reset    time.Duration
		reason   reason
		logged   string
		retryHdr bool
	}{
		{"unavailable keyed", unavailable, facts{method: "GET", query: "name=peter", consumer: entity(demoFree)}, 503, jsonError("Service temporarily unavailable"), 2500, 743400 * time.Second, reasonStoreUnavailable, "connection refused", false},
		{"unavailable key-less", unavailable, facts{method: "GET", query: "name=peter", consumer: entity(anonymous), clientIP: clientIP}, 503, jsonError("Service temporarily unavailable"), 100, 52200 * time.Second, reasonStoreUnavailable, "connection refused", false},
		{"unavailable on a refusal's peek", unavailable, facts{method: "GET", query: "name=", consumer: entity(demoFree)}, 503, jsonError("Service temporarily unavailable"), 2500, 743400 * time.Second, reasonStoreUnavailable, "connection refused", false},
		{"unavailable preflight", unavailable, facts{method: "OPTIONS"}, 503, jsonError("Service temporarily unavailable"), 100, 52200 * time.Second, reasonStoreUnavailable, "connection refused", false},
		{"broken", broken, facts{method: "GET", query: "name=peter", consumer: entity(demoFree)}, 500, jsonError("Internal error"), 2500, 743400 * time.Second, reasonInternal, "malformed", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New().(*Config)
			store := &failingStore{err: tt.err}
			deps := &dependencies{names: names, store: store, throttle: throttle.New(10, 50), storeTimeout: 2 * time.Second}
			d := c.decide(deps, &tt.f, t0)
			if d.status != tt.status || string(d.body) != tt.body || d.reason != tt.reason {
				t.Errorf("%d %s %s, want %d %s %s", d.status, d.body, d.reason, tt.status, tt.body, tt.reason)
			}
			if d.rate.Limit != tt.limit || d.rate.Remaining != 0 || d.rate.ResetAfter != tt.reset {
				t.Errorf("rate %+v, want limit %d, remaining 0, reset %s", d.rate, tt.limit, tt.reset)
			}
			if d.problem == nil || !strings.Contains(fmt.Sprint(d.problem.attrs...), tt.logged) {
				t.Errorf("problem %+v does not carry the error", d.problem)
			}
			if store.calls == 0 {
				t.Fatal("the store was not asked")
			}
			for _, dl := range store.deadlines {
				if dl < 0 || dl > 2*time.Second {
					t.Errorf("store call with deadline in %s, want at most the policy's 2s", dl)
				}
			}
		})
	}
}

// TestDecideMethods: the route takes every method; the plugin answers GET,
// preflights (OPTIONS) with 204, and the rest with 405 and Allow, on the
// caller's window, before any other refusal and consuming nothing.
func TestDecideMethods(t *testing.T) {
	clk := &clock{now: t0}
	c := testConfig(t, clk)
	get(demoFree, "name=peter").do(t, c)
	get(anonymous, batchQuery(2)).do(t, c)
	tests := []struct {
		name string
		req  *request
		want want
	}{
		{"keyed POST", &request{consumer: demoFree, method: "POST", rawQuery: "name=peter"}, want{405, jsonError("Method not allowed"), 2500, 2499, monthReset}},
		{"keyed HEAD", &request{consumer: demoFree, method: "HEAD", rawQuery: "name=peter"}, want{405, jsonError("Method not allowed"), 2500, 2499, monthReset}},
		{"key-less PUT", &request{consumer: anonymous, method: "PUT", ip: clientIP}, want{405, jsonError("Method not allowed"), 100, 98, dayReset}},
		{"405 before 401", &request{consumer: anonymous, method: "DELETE", rawQuery: "apikey=nope", ip: clientIP}, want{405, jsonError("Method not allowed"), 100, 98, dayReset}},
		{"405 before 402", &request{consumer: consumerWith("subscription:paused"), method: "PATCH"}, want{405, jsonError("Method not allowed"), 2500, 2500, monthReset}},
		{"405 before 422", &request{consumer: demoFree, method: "POST", rawQuery: "name=\xff"}, want{405, jsonError("Method not allowed"), 2500, 2499, monthReset}},
		{"405 before 402 for an unknown plan", &request{consumer: consumerWith("plan:gold"), method: "POST"}, want{405, jsonError("Method not allowed"), 0, 0, monthReset}},
		{"unknown method", &request{consumer: demoFree, method: "BREW"}, want{405, jsonError("Method not allowed"), 2500, 2499, monthReset}},
		{"lower-case get is not GET", &request{consumer: demoFree, method: "get", rawQuery: "name=peter"}, want{405, jsonError("Method not allowed"), 2500, 2499, monthReset}},
		{"keyed preflight (run_on_preflight on)", &request{consumer: demoFree, method: "OPTIONS"}, want{204, "", 2500, 2499, monthReset}},
		{"key-less preflight", &request{method: "OPTIONS", ip: clientIP}, want{204, "", 100, 98, dayReset}},
		{"no consumer POST: key-auth missing", &request{method: "POST", ip: clientIP}, want{500, jsonError("Internal error"), 0, 0, "0"}},
	}
	captureLogs(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.req.do(t, c)
			check(t, tt.name, got, tt.want)
			allow := got.header("Allow")
			switch {
			case got.status == 405 && allow != "GET, OPTIONS":
				t.Errorf("Allow %q on a 405", allow)
			case got.status != 405 && allow != "":
				t.Errorf("Allow %q on a %d", allow, got.status)
			}
			if got.header("Retry-After") != "" {
				t.Errorf("Retry-After on a %d", got.status)
			}
		})
	}
	check(t, "nothing consumed", get(demoFree, "name=").do(t, c), want{422, jsonError("Invalid 'name' parameter"), 2500, 2499, monthReset})
}

func TestReasons(t *testing.T) {
	clk := &clock{now: t0}
	c := testConfig(t, clk)
	c.Plans["tiny"] = Plan{Quota: 2}
	tiny := consumerWith("plan:tiny")
	for _, tt := range []struct {
		req  *request
		want reason
	}{
		{get(demoFree, "name=peter"), reasonNone},
		{&request{consumer: demoFree, method: "PUT"}, reasonMethod},
		{get(anonymous, "apikey=x"), reasonKey},
		{get(consumerWith("subscription:paused"), "name=x"), reasonSubscription},
		{get(demoFree, "name="), reasonInvalidName},
		{get(demoFree, "x=1"), reasonMissingName},
		{get(demoFree, "name=x&country_id=XX"), reasonInvalidCountry},
		{get(tiny, batchQuery(3)), reasonBatchTooLarge},
		{get(tiny, batchQuery(2)), reasonNone},
		{get(tiny, "name=x"), reasonQuotaExhausted},
		{&request{method: "GET"}, reasonInternal},
	} {
		if got := tt.req.do(t, c); got.reason != tt.want {
			t.Errorf("%s %q: reason %s, want %s", tt.req.method, tt.req.rawQuery, got.reason, tt.want)
		}
	}
	if reasonThrottled.String() != "throttled" || reason(200).String() != "reason(200)" {
		t.Errorf("names: %s %s", reasonThrottled, reason(200))
	}
}

func TestSplitRequestLine(t *testing.T) {
	for _, tt := range []struct{ line, method, query string }{
		{"GET /?name=peter HTTP/1.1", "GET", "name=peter"},
		{"GET / HTTP/1.1", "GET", ""},
		{"GET /? HTTP/1.1", "GET", ""},
		{"POST /?a=1?b=2 HTTP/2.0", "POST", "a=1?b=2"},
		{"GET /?name=\xff\xfe HTTP/1.1", "GET", "name=\xff\xfe"},
		{"GET http://example.com/?name=x HTTP/1.1", "GET", "name=x"},
		{"GET /?name=x", "GET", "name=x"}, // HTTP/0.9
		// nginx skips spaces before the target and ends $args at a
		// fragment: key-auth never sees what follows '#'.
		{"GET   /?name=x&apikey=k HTTP/1.1", "GET", "name=x&apikey=k"},
		{"GET /?name=x#&apikey=k HTTP/1.1", "GET", "name=x"},
		{"GET /?name=x#a?b HTTP/1.1", "GET", "name=x"},
		{"GET /#?name=x HTTP/1.1", "GET", ""},
		{"GET http://example.com/?name=x#y HTTP/1.1", "GET", "name=x"},
		{"", "", ""},
	} {
		m, q := splitRequestLine(tt.line)
		if m != tt.method || q != tt.query {
			t.Errorf("%q: %q %q, want %q %q", tt.line, m, q, tt.method, tt.query)
		}
	}
}

// The logger's memory of what it logged is bounded, whatever the keys.
func TestLimitedLogger(t *testing.T) {
	logs := captureLogs(t)
	l := newLimitedLogger(slog.Default())
	for i := range 3 * maxLogKeys {
		l.once(t0, fmt.Sprint("key ", i), "line")
	}
	if len(l.last) != maxLogKeys {
		t.Errorf("%d keys remembered, want %d", len(l.last), maxLogKeys)
	}
	if n := strings.Count(logs.String(), "line"); n != maxLogKeys {
		t.Errorf("%d lines, want %d (the rest dropped while the memory is full)", n, maxLogKeys)
	}
	l.once(t0.Add(30*time.Second), "key 0", "again")
	if strings.Contains(logs.String(), "again") {
		t.Error("a repeat within a minute was logged")
	}
	// A minute on, old kinds expire and new ones are logged again.
	l.once(t0.Add(logEvery), "new", "fresh")
	if !strings.Contains(logs.String(), "fresh") || len(l.last) != 1 {
		t.Errorf("after a minute: %d keys, log:\n%s", len(l.last), logs)
	}
}
