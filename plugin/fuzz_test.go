package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/Kong/go-pdk/entities"

	"github.com/genderize-kong/genderize/engine"
	"github.com/genderize-kong/genderize/plugin/quota"
	"github.com/genderize-kong/genderize/plugin/throttle"
)

// Seeds shared by both targets: the queries of SPEC.md and DESIGN.md, and
// the malformed ones that found bugs before (raw bytes, bad escapes,
// name with name[], too many names).
var fuzzQueries = []string{
	"",
	"name=peter",
	"name=Peter&country_id=de",
	"name%5B%5D=peter&name%5B%5D=maria",
	"name[]=peter&name[]=maria&country_id=US",
	"name[0]=anna&name[1]=ben",
	"name=Ben&name=Allister",
	"name=peter&name[]=maria",
	"name=",
	"name=%20%20",
	"name=%ff",
	"name=\xff",
	"name=%E5%BC%A0%E4%BC%9F",
	"name=Jos%C3%A9+Mar%C3%ADa",
	"name=a%00b",
	"name=%zz",
	"%zz=peter",
	"name=peter&country_id=XX",
	"name=peter&country_id=de&country_id=fr",
	"name=peter&apikey=",
	"name=peter&apikey",
	"name=peter;language_id=en",
	"name[]=" + string(bytes.Repeat([]byte("a"), 101)),
	"name[x]=peter",
	"&&&name=peter&&",
	string(bytes.Repeat([]byte("name[]=x&"), 101)),
}

// FuzzParseQuery: any raw query parses without panicking into either one
// of the API's 422 problems (and no names) or 1 to maxBatch valid names.
func FuzzParseQuery(f *testing.F) {
	for _, q := range fuzzQueries {
		f.Add(q)
	}
	problems := []*apiError{errMissingName, errInvalidName, errInvalidCountry}
	const maxBatch, maxLen = 100, 100
	f.Fuzz(func(t *testing.T, raw string) {
		q := parseQuery(raw, maxBatch, maxLen)
		if q.problem != nil {
			if !slices.Contains(problems, q.problem) {
				t.Fatalf("problem %s is not one of the API's 422s", q.problem.body)
			}
			if q.names != nil {
				t.Fatalf("a refused query kept names %q", q.names)
			}
			return
		}
		if len(q.names) < 1 || len(q.names) > maxBatch {
			t.Fatalf("%d names accepted", len(q.names))
		}
		if !q.batch && len(q.names) != 1 {
			t.Fatalf("single-name query with %d names", len(q.names))
		}
		for _, n := range q.names {
			if !validName(n, maxLen) || !utf8.ValidString(n) {
				t.Fatalf("invalid name %q accepted", n)
			}
		}
		if q.country != "" {
			if code, ok := engine.CountryCode(q.country); !ok || code != q.country {
				t.Fatalf("country %q accepted", q.country)
			}
		}
		if again := parseQuery(raw, maxBatch, maxLen); !slices.Equal(again.names, q.names) || again.country != q.country || again.batch != q.batch {
			t.Fatal("parseQuery is not deterministic")
		}
	})
}

// fuzzCallers are who a request may come from: the consumers key-auth
// hands over (active, tiny plan, paused, expired, unknown plan, two plan
// tags), the anonymous consumer (counted per IP), and none (a preflight,
// or a route without key-auth).
var fuzzCallers = []entities.Consumer{
	{Id: "c0000000-0000-4000-8000-000000000001", Username: "active", Tags: []string{"plan:big", "subscription:active"}},
	{Id: "c0000000-0000-4000-8000-000000000002", Username: "tiny", Tags: []string{"plan:tiny"}},
	{Id: "c0000000-0000-4000-8000-000000000003", Username: "paused", Tags: []string{"plan:big", "subscription:paused"}},
	{Id: "c0000000-0000-4000-8000-000000000004", Username: "expired", Tags: []string{"plan:big", "paid-until:2001-01-01"}},
	{Id: "c0000000-0000-4000-8000-000000000005", Username: "unknown-plan", Tags: []string{"plan:gold"}},
	{Id: "c0000000-0000-4000-8000-000000000006", Username: "two-plans", Tags: []string{"plan:big", "plan:tiny"}},
	{Id: "9f0a6f4e-0000-4000-8000-000000000001", Username: "anonymous"},
	{},
}

// FuzzDecide drives the whole decision with any method, query, caller and
// client address, on the real engine and a real local quota store: it never
// panics, every answer is one of the API's statuses with its exact body and
// the rate headers' numbers, a 200 answers every name, and only a 200
// consumes, exactly its names.
func FuzzDecide(f *testing.F) {
	for i, q := range fuzzQueries {
		f.Add("GET", q, uint8(i), "203.0.113.7")
	}
	for _, m := range []string{"OPTIONS", "POST", "HEAD", "DELETE", "get", ""} {
		f.Add(m, "name=peter", uint8(0), "2001:db8::1")
		f.Add(m, "name=peter", uint8(6), "2001:db8::1")
	}
	f.Add("GET", "name=peter", uint8(7), "198.51.100.1")
	f.Add("GET", "name=peter&apikey=wrong", uint8(6), "198.51.100.1")

	names, err := engine.Shared(testNamesDB(f), engine.Options{CacheEntries: 10000})
	if err != nil {
		f.Fatal(err)
	}
	store, err := quota.OpenLocal(filepath.Join(f.TempDir(), "quota.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { store.Close() })
	c := New().(*Config)
	// A plan that never runs out (so that consumption is always seen) and
	// one that does at once (so that the quota's refusals are reached).
	c.Plans = Plans{"big": {Quota: math.MaxInt32}, "tiny": {Quota: 3}}
	c.DefaultPlan = "big"
	c.IPLimit = 150
	c.ThrottleRate, c.ThrottleBurst = 1e9, math.MaxInt32
	if err := c.validate(); err != nil {
		f.Fatal(err)
	}
	deps := &dependencies{names: names, store: store, throttle: throttle.New(c.ThrottleRate, c.ThrottleBurst), storeTimeout: c.storeTimeout()}

	// Every body the API may answer, by status (200 and 204 apart).
	bodies := map[int][]string{}
	for _, e := range []*apiError{errInvalidKey, errNotActive, errMissingName, errInvalidName, errInvalidCountry,
		errLimitReached, errTooLow, errMethodNotAllowed, errInternal, errUnavailable} {
		bodies[e.status] = append(bodies[e.status], string(e.body))
	}
	ctx := context.Background()

	f.Fuzz(func(t *testing.T, method, rawQuery string, who uint8, ip string) {
		consumer := fuzzCallers[int(who)%len(fuzzCallers)]
		fa := &facts{method: method, query: rawQuery, consumer: consumer, clientIP: ip}
		key, w := "consumer:"+consumer.Id, quota.Month(t0)
		if consumer.Id == "" || c.isAnonymous(consumer) {
			key, w = "ip:"+ip, c.ipWindow(t0)
		}
		used := func() int {
			r, err := store.AllowN(ctx, key, math.MaxInt32, w, 0)
			if err != nil {
				t.Fatal(err)
			}
			return math.MaxInt32 - r.Remaining
		}
		before := used()
		d := c.decide(deps, fa, t0)
		consumed := used() - before

		switch d.status {
		case 200:
			if method != "GET" {
				t.Fatalf("%q answered 200", method)
			}
			n := checkPredictions(t, d.body)
			if n != d.names || consumed != n {
				t.Fatalf("200 with %d predictions, names %d, consumed %d", n, d.names, consumed)
			}
		case 204:
			if method != "OPTIONS" || len(d.body) != 0 {
				t.Fatalf("%q answered 204 with %q", method, d.body)
			}
		default:
			if !slices.Contains(bodies[d.status], string(d.body)) {
				t.Fatalf("status %d with body %s: not one of the API's answers", d.status, d.body)
			}
			if d.status == 500 && consumer.Id != "" {
				t.Fatalf("500 for a request with a consumer: %s", d.body)
			}
		}
		if d.status != 200 && consumed != 0 {
			t.Fatalf("status %d consumed %d names", d.status, consumed)
		}
		if d.rate.Remaining < 0 || d.rate.Remaining > d.rate.Limit || d.rate.ResetAfter < 0 {
			t.Fatalf("rate %+v", d.rate)
		}
	})
}

// checkPredictions checks a 200's body (one prediction, or an array of
// them) and returns how many it holds.
func checkPredictions(t *testing.T, body []byte) int {
	t.Helper()
	type prediction struct {
		Name        *string  `json:"name"`
		Gender      *string  `json:"gender"`
		Probability *float64 `json:"probability"`
		Count       *int64   `json:"count"`
	}
	var ps []prediction
	if len(body) > 0 && body[0] == '{' {
		var p prediction
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatalf("200 body %.300s: %v", body, err)
		}
		ps = []prediction{p}
	} else if err := json.Unmarshal(body, &ps); err != nil {
		t.Fatalf("200 body %.300s: %v", body, err)
	}
	for _, p := range ps {
		switch {
		case p.Name == nil, p.Probability == nil, p.Count == nil:
			t.Fatalf("prediction without a field: %.300s", body)
		case p.Gender != nil && *p.Gender != "male" && *p.Gender != "female":
			t.Fatalf("gender %q", *p.Gender)
		case *p.Probability < 0 || *p.Probability > 1 || *p.Count < 0:
			t.Fatalf("probability %v count %d", *p.Probability, *p.Count)
		}
	}
	return len(ps)
}
