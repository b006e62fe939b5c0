package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/genderize-kong/genderize/testing/standin"
)

const (
	errMissingName  = "Missing 'name' parameter"
	errInvalidName  = "Invalid 'name' parameter"
	errInvalidCtry  = "Invalid 'country_id' parameter"
	errInvalidKey   = "Invalid API key"
	errInactive     = "Subscription is not active"
	errLimitReached = "Request limit reached"
	errTooLow       = "Request too low to process"
)

// batchQuery is name[]=... for each name, as clients encode it.
func batchQuery(names ...string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = "name%5B%5D=" + url.QueryEscape(n)
	}
	return strings.Join(parts, "&")
}

func repeatNames(n int) []string {
	base := []string{"peter", "anna", "luca", "maria", "john", "andrea", "kim", "jean", "sophie", "ahmed"}
	out := make([]string, n)
	for i := range out {
		out[i] = base[i%len(base)]
	}
	return out
}

// conformanceCase is one request from a caller with a fresh window.
type conformanceCase struct {
	name    string
	keyless bool   // a key-less caller (fresh client IP) instead of a fresh free consumer
	query   string // raw query; a keyed caller's apikey is appended
	// For 200: the names as decoded, the country and the response form.
	names   []string
	country string
	batch   bool
	// For errors.
	status int
	err    string
}

func conformanceCases() []conformanceCase {
	hundred := repeatNames(100)
	var cases []conformanceCase
	ok := func(name, query string, names []string, country string, batch bool) {
		cases = append(cases, conformanceCase{name: name, query: query, names: names, country: country, batch: batch, status: 200})
	}
	fail := func(name, query string, status int, err string) {
		cases = append(cases, conformanceCase{name: name, query: query, status: status, err: err})
	}

	// Single and batch.
	ok("single male", "name=peter", []string{"peter"}, "", false)
	ok("single female", "name=anna", []string{"anna"}, "", false)
	ok("unknown name", "name=xqzvbnmw", []string{"xqzvbnmw"}, "", false)
	ok("full name", "name=peter%20smith", []string{"peter smith"}, "", false)
	ok("batch in input order", batchQuery("peter", "anna", "xqzvbnmw", "andrea"), []string{"peter", "anna", "xqzvbnmw", "andrea"}, "", true)
	ok("batch with raw brackets", "name[]=anna&name[]=peter", []string{"anna", "peter"}, "", true)
	ok("batch of one is an array", batchQuery("peter"), []string{"peter"}, "", true)
	ok("indexed names in order of appearance", "name%5B1%5D=anna&name%5B0%5D=peter", []string{"anna", "peter"}, "", true)
	ok("duplicate names in a batch each count", batchQuery("anna", "anna", "anna"), []string{"anna", "anna", "anna"}, "", true)
	ok("100 names allowed", batchQuery(hundred...), hundred, "", true)
	fail("101 names refused", batchQuery(repeatNames(101)...), 422, errInvalidName)

	// Echo exactly as sent, after URL decoding.
	ok("echo keeps case", "name=PeTeR", []string{"PeTeR"}, "", false)
	ok("echo keeps surrounding spaces", "name=%20peter%20", []string{" peter "}, "", false)
	ok("plus is a space", "name=anna+maria", []string{"anna maria"}, "", false)
	ok("percent-encoded ASCII", "name=%70%65%74%65%72", []string{"peter"}, "", false)

	// Diacritics and other scripts.
	ok("diacritics", "name=Jos%C3%A9", []string{"José"}, "", false)
	ok("decomposed diacritics echoed as sent", "name=Jose%CC%81", []string{"Jose\u0301"}, "", false)
	ok("raw UTF-8 bytes in the query", "name=José", []string{"José"}, "", false)
	ok("cyrillic", "name="+url.QueryEscape("Анна"), []string{"Анна"}, "", false)
	ok("greek, arabic, hebrew, han in a batch", batchQuery("Γιώργος", "محمد", "דוד", "李"), []string{"Γιώργος", "محمد", "דוד", "李"}, "", true)
	ok("100 non-ASCII runes allowed", "name="+url.QueryEscape(strings.Repeat("é", 100)), []string{strings.Repeat("é", 100)}, "", false)
	ok("100 ASCII characters allowed", "name="+strings.Repeat("a", 100), []string{strings.Repeat("a", 100)}, "", false)

	// Country scoping.
	ok("country scopes and echoes", "name=andrea&country_id=IT", []string{"andrea"}, "IT", false)
	ok("country echoed upper case", "name=andrea&country_id=us", []string{"andrea"}, "US", false)
	ok("country mixed case before the name", "country_id=iT&name=andrea", []string{"andrea"}, "IT", false)
	ok("country percent-encoded", "name=peter&country_id=U%53", []string{"peter"}, "US", false)
	ok("country applies to the whole batch", batchQuery("andrea", "peter", "xqzvbnmw")+"&country_id=IT", []string{"andrea", "peter", "xqzvbnmw"}, "IT", true)
	fail("country not ISO", "name=peter&country_id=XX", 422, errInvalidCtry)
	fail("country of three letters", "name=peter&country_id=USA", 422, errInvalidCtry)
	fail("country of one letter", "name=peter&country_id=U", 422, errInvalidCtry)
	fail("country empty", "name=peter&country_id=", 422, errInvalidCtry)
	fail("country repeated", "name=peter&country_id=US&country_id=US", 422, errInvalidCtry)
	fail("country malformed escape", "name=peter&country_id=%ZZ", 422, errInvalidCtry)
	fail("country invalid UTF-8", "name=peter&country_id=%FF", 422, errInvalidCtry)
	fail("country with white space", "name=peter&country_id=+US", 422, errInvalidCtry)
	fail("country digits", "name=peter&country_id=12", 422, errInvalidCtry)

	// Unknown parameters are ignored.
	ok("unknown parameters ignored", "language_id=en&name=peter&foo=bar", []string{"peter"}, "", false)
	ok("malformed escape in an unknown parameter ignored", "foo=%ZZ&name=peter", []string{"peter"}, "", false)
	ok("empty parameters ignored", "&&name=peter&", []string{"peter"}, "", false)

	// Missing and invalid names.
	fail("no parameters", "", 422, errMissingName)
	fail("no name among others", "foo=bar&language_id=en", 422, errMissingName)
	fail("missing name before invalid country", "country_id=XX", 422, errMissingName)
	fail("empty name", "name=", 422, errInvalidName)
	fail("bare name key", "name", 422, errInvalidName)
	fail("white space name", "name=%20%20", 422, errInvalidName)
	fail("plus-only name", "name=+", 422, errInvalidName)
	fail("invalid name before invalid country", "name=&country_id=XX", 422, errInvalidName)
	fail("empty name[]", "name%5B%5D=", 422, errInvalidName)
	fail("empty name[] among valid ones", batchQuery("peter", "", "anna"), 422, errInvalidName)
	fail("name with name[]", "name=peter&name%5B%5D=anna", 422, errInvalidName)
	fail("name[] with name", "name%5B%5D=anna&name=peter", 422, errInvalidName)
	fail("name with name[N]", "name=peter&name%5B0%5D=anna", 422, errInvalidName)
	ok("name repeated is a batch", "name=Ben&name=Allister", []string{"Ben", "Allister"}, "", true)
	ok("name repeated keeps input order", "name=anna&name=peter&name=anna", []string{"anna", "peter", "anna"}, "", true)
	fail("name repeated with name[]", "name=peter&name=anna&name%5B%5D=luca", 422, errInvalidName)
	fail("101 repeated names refused", strings.Repeat("name=peter&", 100)+"name=anna", 422, errInvalidName)
	fail("invalid UTF-8", "name=%FF", 422, errInvalidName)
	fail("invalid UTF-8 sequence", "name=pe%C3%28ter", 422, errInvalidName)
	fail("overlong UTF-8", "name=%C0%AF", 422, errInvalidName)
	fail("NUL", "name=pe%00ter", 422, errInvalidName)
	fail("tab", "name=pe%09ter", 422, errInvalidName)
	fail("newline", "name=peter%0A", 422, errInvalidName)
	fail("DEL", "name=peter%7F", 422, errInvalidName)
	fail("C1 control", "name=peter%C2%85", 422, errInvalidName)
	fail("control character inside a batch", batchQuery("anna", "pe\x00ter"), 422, errInvalidName)
	fail("101 ASCII characters", "name="+strings.Repeat("a", 101), 422, errInvalidName)
	fail("101 non-ASCII runes", "name="+url.QueryEscape(strings.Repeat("é", 101)), 422, errInvalidName)
	fail("10,000-character name", "name="+strings.Repeat("x", 10000), 422, errInvalidName)
	fail("truncated escape", "name=peter%E", 422, errInvalidName)
	fail("malformed escape", "name=%ZZpeter", 422, errInvalidName)

	// Key-less callers get the same answers, on their IP window.
	n := len(cases)
	for _, c := range cases[:n] {
		switch c.name {
		case "single male", "batch in input order", "country scopes and echoes", "no parameters",
			"empty name[]", "name with name[]", "NUL", "10,000-character name", "country not ISO", "101 names refused":
			c.name = "key-less " + c.name
			c.keyless = true
			cases = append(cases, c)
		}
	}
	// A key-less caller's batch of 100 uses its whole day.
	cases = append(cases, conformanceCase{name: "key-less 100 names use the day", keyless: true, query: batchQuery(hundred...), names: hundred, batch: true, status: 200})
	return cases
}

// TestConformance runs each case from a caller with a fresh window, checks
// status, body and every header, then sends one more single-name request
// to prove the case consumed exactly its names (a rejection: none).
func TestConformance(t *testing.T) {
	cases := conformanceCases()
	e := newEnv(t, envConfig{freeConsumers: len(cases)})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := e.keylessCaller()
			if !tc.keyless {
				c = e.freeCaller(t)
			}
			r := e.get(t, c, tc.query)
			cost := 0
			if tc.status == 200 {
				cost = len(tc.names)
				if r.status != 200 {
					t.Fatalf("status %d, want 200 (body %.300s)", r.status, r.body)
				}
				if want := expected(t, tc.names, tc.country, tc.batch); string(r.body) != string(want) {
					t.Errorf("body\n got %.600s\nwant %.600s", r.body, want)
				}
			} else {
				checkError(t, r, tc.status, tc.err)
			}
			checkHeaders(t, r, c, c.limit-cost)

			next := e.get(t, c, "name=peter")
			if left := c.limit - cost; left > 0 {
				if next.status != 200 {
					t.Fatalf("follow-up: status %d (body %s)", next.status, next.body)
				}
				checkHeaders(t, next, c, left-1)
			} else {
				checkError(t, next, 429, errLimitReached)
				checkHeaders(t, next, c, 0)
			}
		})
	}
}

// TestPredictionsMatchRealData checks a few answers against what the
// database says about well-known names, so the suite does not only
// compare the plugin with the engine.
func TestPredictionsMatchRealData(t *testing.T) {
	e := newEnv(t, envConfig{freeConsumers: 1})
	c := e.freeCaller(t)
	r := e.get(t, c, batchQuery("peter", "anna", "xqzvbnmw")+"&country_id=it")
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var got []map[string]any
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("got %d results, want 3", len(got))
	}
	for i, want := range []struct {
		name, gender string
	}{{"peter", "male"}, {"anna", "female"}, {"xqzvbnmw", ""}} {
		g := got[i]
		if g["name"] != want.name || g["country_id"] != "IT" {
			t.Errorf("result %d: %v", i, g)
		}
		if want.gender == "" {
			if g["gender"] != nil || g["probability"] != 0.0 || g["count"] != 0.0 {
				t.Errorf("unknown name: %v, want gender null, probability 0, count 0", g)
			}
			continue
		}
		if g["gender"] != want.gender {
			t.Errorf("%s: gender %v, want %s", want.name, g["gender"], want.gender)
		}
		p, _ := g["probability"].(float64)
		n, _ := g["count"].(float64)
		if p < 0.5 || p > 1 || n < 1 {
			t.Errorf("%s: probability %v count %v", want.name, g["probability"], g["count"])
		}
	}
	// Scoping changes the answer where the countries disagree (the data:
	// Andrea is a man's name in Italy, a woman's in the United States).
	it := e.get(t, c, "name=andrea&country_id=IT")
	us := e.get(t, c, "name=andrea&country_id=US")
	var a, b map[string]any
	if json.Unmarshal(it.body, &a) != nil || json.Unmarshal(us.body, &b) != nil {
		t.Fatalf("bodies %s %s", it.body, us.body)
	}
	if a["gender"] != "male" || b["gender"] != "female" {
		t.Errorf("andrea IT %v, US %v: want male and female", a, b)
	}
	// Diacritics, other scripts, case, white space and full names reach
	// the data (checked in names.db: José male with 163,686 records in
	// either Unicode form, Анна female, דוד male).
	r = e.get(t, c, batchQuery("José", "Jose\u0301", "JOSÉ", "Анна", "דוד", "peter smith", " anna "))
	var many []map[string]any
	if err := json.Unmarshal(r.body, &many); err != nil || len(many) != 7 {
		t.Fatalf("status %d body %s", r.status, r.body)
	}
	for i, gender := range []string{"male", "male", "male", "female", "male", "male", "female"} {
		if many[i]["gender"] != gender || many[i]["count"].(float64) < 1 {
			t.Errorf("%q: %v, want %s", many[i]["name"], many[i], gender)
		}
	}
	if many[0]["count"] != many[1]["count"] || many[0]["count"] != many[2]["count"] {
		t.Errorf("José in NFC, NFD and upper case differ: %v %v %v", many[0], many[1], many[2])
	}
	// The exact unknown-name object DESIGN.md decides.
	u := e.get(t, c, "name=xqzvbnmw")
	if want := `{"name":"xqzvbnmw","gender":null,"probability":0.0,"count":0}`; string(u.body) != want {
		t.Errorf("unknown name body %s, want %s", u.body, want)
	}
}

// TestInvalidAPIKey: an apikey the gateway does not know makes the caller
// anonymous; the plugin answers 401 on the client IP's window.
func TestInvalidAPIKey(t *testing.T) {
	e := newEnv(t, envConfig{})
	for _, tc := range []struct{ name, query string }{
		{"unknown key", "name=peter&apikey=nope"},
		{"empty key", "name=peter&apikey="},
		{"bare apikey", "name=peter&apikey"},
		{"key in the wrong case", "name=peter&apikey=DEMO-FREE-KEY"},
		{"duplicate key", "name=peter&apikey=demo-free-key&apikey=demo-free-key"},
		{"401 before 422", "apikey=nope"},
		{"401 before an invalid name", "name=%00&apikey=nope"},
		{"401 before 429", "name=peter&apikey=nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := e.keylessCaller()
			if tc.name == "401 before 429" {
				r := e.get(t, c, batchQuery(repeatNames(100)...))
				if r.status != 200 {
					t.Fatalf("use the day: %d %s", r.status, r.body)
				}
			}
			before := c.limit
			if tc.name == "401 before 429" {
				before = 0
			}
			r := e.get(t, c, tc.query)
			checkError(t, r, 401, errInvalidKey)
			checkHeaders(t, r, c, before)
			if before > 0 {
				next := e.get(t, c, "name=peter")
				checkHeaders(t, next, c, before-1)
			}
		})
	}
}

// TestSubscriptions: each 402 demo key, and the consumer tags that decide
// plan and subscription state.
func TestSubscriptions(t *testing.T) {
	today := time.Now().UTC()
	consumer := func(name string, tags ...string) standin.Consumer {
		return standin.Consumer{Username: name, Tags: tags, KeyauthCredentials: []standin.Credential{{Key: name + "-key"}}}
	}
	e := newEnv(t, envConfig{consumers: []standin.Consumer{
		consumer("paid-until-past", "plan:free", "subscription:active", "paid-until:2020-01-31"),
		consumer("paid-until-yesterday", "plan:free", "subscription:active", "paid-until:"+today.AddDate(0, 0, -1).Format(time.DateOnly)),
		consumer("paid-until-today", "plan:free", "subscription:active", "paid-until:"+today.Format(time.DateOnly)),
		consumer("paid-until-future", "plan:basic", "subscription:active", "paid-until:2099-01-01"),
		consumer("paid-until-garbage", "plan:free", "subscription:active", "paid-until:someday"),
		consumer("unknown-plan", "plan:gold", "subscription:active"),
		consumer("no-plan-tag", "subscription:active"),
		consumer("no-subscription-tag", "plan:pro"),
		consumer("odd-subscription", "plan:free", "subscription:cancelled"),
		consumer("no-tags"),
	}})
	for _, tc := range []struct {
		name, key, query string
		status           int
		limit            int
	}{
		{"demo paused", "demo-paused-key", "name=peter", 402, 100000},
		{"demo expired", "demo-expired-key", "name=peter", 402, 100000},
		{"demo unpaid", "demo-unpaid-key", "name=peter", 402, 1000000},
		{"402 before 422", "demo-paused-key", "", 402, 100000},
		{"402 before an invalid name", "demo-expired-key", "name=%FF", 402, 100000},
		{"paid-until past", "paid-until-past-key", "name=peter", 402, 2500},
		{"paid-until yesterday", "paid-until-yesterday-key", "name=peter", 402, 2500},
		{"paid-until today is still paid", "paid-until-today-key", "name=peter", 200, 2500},
		{"paid-until future", "paid-until-future-key", "name=peter", 200, 100000},
		{"paid-until unparsable", "paid-until-garbage-key", "name=peter", 402, 2500},
		{"plan not in config", "unknown-plan-key", "name=peter", 402, 0},
		{"no plan tag is the default plan", "no-plan-tag-key", "name=peter", 200, 2500},
		{"no subscription tag is active", "no-subscription-tag-key", "name=peter", 200, 1000000},
		{"unknown subscription state", "odd-subscription-key", "name=peter", 402, 2500},
		{"no tags at all", "no-tags-key", "name=peter", 200, 2500},
		{"demo free", "demo-free-key", "name=peter", 200, 2500},
		{"demo pro", "demo-pro-key", "name=peter", 200, 1000000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := caller{key: tc.key, ip: e.ip(), limit: tc.limit, month: true}
			r := e.get(t, c, tc.query)
			if tc.status == 402 {
				checkError(t, r, 402, errInactive)
				checkHeaders(t, r, c, tc.limit)
				return
			}
			if r.status != 200 {
				t.Fatalf("status %d (%s), want 200", r.status, r.body)
			}
			checkHeaders(t, r, c, tc.limit-1)
		})
	}
}

// quotaStep is one request of a sequence against one caller's window.
type quotaStep struct {
	name, query string
	status      int
	err         string // the error body's message when status is not 200
	remaining   int    // X-Rate-Limit-Remaining after the request
}

// runSteps sends the steps in order, each a subtest.
func runSteps(t *testing.T, e *env, c caller, steps []quotaStep) {
	t.Helper()
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			r := e.get(t, c, s.query)
			if s.status == 200 {
				if r.status != 200 {
					t.Fatalf("status %d %s", r.status, r.body)
				}
			} else {
				checkError(t, r, s.status, s.err)
			}
			checkHeaders(t, r, c, s.remaining)
		})
	}
}

// TestFreePlanExhaustion uses up the free plan's 2,500 names with the
// demo key and checks both 429s and that refusals consume nothing.
func TestFreePlanExhaustion(t *testing.T) {
	e := newEnv(t, envConfig{})
	c := caller{key: "demo-free-key", ip: e.ip(), limit: 2500, month: true}
	hundred := batchQuery(repeatNames(100)...)
	for i := range 24 {
		r := e.get(t, c, hundred)
		if r.status != 200 {
			t.Fatalf("batch %d: status %d %s", i, r.status, r.body)
		}
		checkHeaders(t, r, c, 2500-100*(i+1))
	}
	steps := []quotaStep{
		{"101 names is a 422, not a 429", batchQuery(repeatNames(101)...), 422, errInvalidName, 100},
		{"50 names", batchQuery(repeatNames(50)...), 200, "", 50},
		{"more names than remain", hundred, 429, errTooLow, 50},
		{"51 names than 50 remain", batchQuery(repeatNames(51)...), 429, errTooLow, 50},
		{"exactly what remains", batchQuery(repeatNames(50)...), 200, "", 0},
		{"limit reached", "name=peter", 429, errLimitReached, 0},
		{"limit reached for a batch", hundred, 429, errLimitReached, 0},
		{"422 before 429", "name=", 422, errInvalidName, 0},
		{"missing name before 429", "", 422, errMissingName, 0},
	}
	runSteps(t, e, c, steps)
}

// TestIPLimit exhausts a key-less client IP's daily names.
func TestIPLimit(t *testing.T) {
	e := newEnv(t, envConfig{})
	c := e.keylessCaller()
	steps := []quotaStep{
		{"60 names", batchQuery(repeatNames(60)...), 200, "", 40},
		{"more names than remain", batchQuery(repeatNames(50)...), 429, errTooLow, 40},
		{"exactly what remains", batchQuery(repeatNames(40)...), 200, "", 0},
		{"limit reached", "name=peter", 429, errLimitReached, 0},
		{"invalid key still 401 on the IP window", "name=peter&apikey=nope", 401, errInvalidKey, 0},
		{"422 before 429", "name=%00", 422, errInvalidName, 0},
	}
	runSteps(t, e, c, steps)
	t.Run("another IP has its own window", func(t *testing.T) {
		other := e.keylessCaller()
		r := e.get(t, other, "name=peter")
		if r.status != 200 {
			t.Fatalf("status %d %s", r.status, r.body)
		}
		checkHeaders(t, r, other, 99)
	})
	t.Run("a keyed caller from the same IP is not limited by it", func(t *testing.T) {
		k := caller{key: "demo-pro-key", ip: c.ip, limit: 1000000, month: true}
		r := e.get(t, k, "name=peter")
		if r.status != 200 {
			t.Fatalf("status %d %s", r.status, r.body)
		}
		checkHeaders(t, r, k, 999999)
	})
}

// TestThrottle empties a caller's token bucket (throttle_burst 50,
// throttle_rate 10/s in kong.yml) with concurrent requests.
func TestThrottle(t *testing.T) {
	e := newEnv(t, envConfig{freeConsumers: 1})
	for _, c := range []caller{e.freeCaller(t), e.keylessCaller()} {
		name := "keyed"
		if c.key == "" {
			name = "key-less"
			c.limit = 100
		}
		t.Run(name, func(t *testing.T) {
			const total, workers = 150, 10
			var mu sync.Mutex
			var ok, throttled int
			var wg sync.WaitGroup
			start := time.Now()
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range total / workers {
						// Key-less callers have 100 names a day: the
						// throttle must refuse before the window runs out.
						r := e.get(t, c, "name=peter")
						mu.Lock()
						switch {
						case r.status == 200:
							ok++
						case r.status == 429 && r.header.Get("Retry-After") != "":
							throttled++
							checkError(t, r, 429, errTooLow)
							if ra := headerInt(t, r, "Retry-After"); ra < 1 {
								t.Errorf("Retry-After %d, want >= 1", ra)
							}
						case r.status == 429:
							// The window ran out (key-less): fine, not throttling.
							checkError(t, r, 429, errLimitReached)
						default:
							t.Errorf("worker %d: status %d %s", w, r.status, r.body)
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start).Seconds()
			if throttled == 0 {
				t.Fatalf("%d requests in %.2fs, none throttled", total, elapsed)
			}
			if maxOK := 50 + int(elapsed*10) + 1; ok > maxOK {
				t.Errorf("%d requests passed in %.2fs; burst 50 at 10/s allows at most %d", ok, elapsed, maxOK)
			}
			// Throttled requests consumed nothing: the window shows only
			// the successes. Wait for a token first.
			time.Sleep(300 * time.Millisecond)
			r := e.get(t, c, "")
			checkError(t, r, 422, errMissingName)
			checkHeaders(t, r, c, c.limit-ok)
		})
	}
}

// TestPreflight: a CORS preflight carries no key and reaches the plugin
// without a consumer (run_on_preflight false).
func TestPreflight(t *testing.T) {
	e := newEnv(t, envConfig{})
	c := e.keylessCaller()
	used := e.get(t, c, batchQuery("peter", "anna"))
	if used.status != 200 {
		t.Fatalf("status %d %s", used.status, used.body)
	}
	for _, tc := range []struct{ name, query string }{
		{"plain", ""},
		{"with a query", "name=peter"},
		{"with an apikey", "name=peter&apikey=demo-free-key"},
		{"with an invalid apikey", "apikey=nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.raw(t, http.MethodOptions, "/", tc.query, c.ip, http.Header{
				"Origin":                         {"https://example.com"},
				"Access-Control-Request-Method":  {"GET"},
				"Access-Control-Request-Headers": {"content-type"},
			})
			if r.status != 204 {
				t.Fatalf("status %d %s, want 204", r.status, r.body)
			}
			if len(r.body) != 0 {
				t.Errorf("body %q, want empty", r.body)
			}
			for name, want := range map[string]string{
				"Access-Control-Allow-Methods": "GET, OPTIONS",
				"Access-Control-Allow-Headers": "*",
				"Access-Control-Max-Age":       "86400",
			} {
				if got := r.header.Get(name); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
			checkHeaders(t, r, c, 98)
			want := []string{"kong.nginx.get_var", "kong.client.get_consumer", "kong.client.get_forwarded_ip", "kong.response.exit"}
			if strings.Join(r.methods, ",") != strings.Join(want, ",") {
				t.Errorf("PDK calls %v, want %v", r.methods, want)
			}
		})
	}
}

// TestKongAnswers: what is not routed never reaches the plugin.
func TestKongAnswers(t *testing.T) {
	e := newEnv(t, envConfig{})
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, "/foo"},
		{http.MethodGet, "/api/"},
		{http.MethodGet, "//"},
		{http.MethodOptions, "/foo"},
		{http.MethodPost, "/foo"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := e.raw(t, tc.method, tc.path, "name=peter", e.ip(), nil)
			if r.status != 404 || string(r.body) != `{"message":"no Route matched with those values"}` {
				t.Errorf("%d %s, want Kong's 404", r.status, r.body)
			}
			if r.methods != nil {
				t.Errorf("the plugin ran: %v", r.methods)
			}
		})
	}
}

// TestMethodNotAllowed: the route takes every method on the base path;
// the plugin answers those other than GET and OPTIONS with 405, Allow and
// the caller's rate headers, consuming nothing (SPEC: every response
// carries the rate headers).
func TestMethodNotAllowed(t *testing.T) {
	e := newEnv(t, envConfig{freeConsumers: 8})
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodHead, "PROPFIND"} {
		for _, keyed := range []bool{true, false} {
			c := e.keylessCaller()
			if keyed {
				c = e.freeCaller(t)
			}
			t.Run(fmt.Sprintf("%s keyed=%v", method, keyed), func(t *testing.T) {
				r := e.do(t, method, c, "name=peter", nil)
				if r.status != 405 {
					t.Fatalf("status %d %s, want 405", r.status, r.body)
				}
				if method != http.MethodHead {
					checkError(t, r, 405, "Method not allowed")
				} else if len(r.body) != 0 {
					t.Errorf("HEAD answered with a body %q", r.body)
				}
				if got := r.header.Get("Allow"); got != "GET, OPTIONS" {
					t.Errorf("Allow %q", got)
				}
				checkHeaders(t, r, c, c.limit)
				// Nothing was consumed.
				checkHeaders(t, e.get(t, c, "name="), c, c.limit)
			})
		}
	}
	t.Run("405 before 401", func(t *testing.T) {
		c := e.keylessCaller()
		r := e.do(t, http.MethodPost, c, "name=peter&apikey=nope", nil)
		checkError(t, r, 405, "Method not allowed")
		checkHeaders(t, r, c, 100)
	})
}

// TestRawBytes: bytes that are not UTF-8, sent raw (not percent-encoded)
// in the request target over a plain TCP connection, reach the plugin as
// Kong delivers them (the raw bytes in a protobuf string field). A bad name
// is 422 with the caller's headers and consumes nothing; a bad byte in an
// unrelated parameter is ignored.
func TestRawBytes(t *testing.T) {
	e := newEnv(t, envConfig{freeConsumers: 8})
	for _, tc := range []struct {
		name   string
		query  string
		keyed  bool
		status int
		err    string
		names  []string
		batch  bool
	}{
		{"raw 0xFF name", "name=\xff", true, 422, errInvalidName, nil, false},
		{"raw 0xFF name, key-less", "name=\xff", false, 422, errInvalidName, nil, false},
		{"raw invalid sequence in a batch", "name[]=anna&name[]=pe\xc3\x28ter", true, 422, errInvalidName, nil, false},
		{"raw lone continuation byte", "name=peter\x80", true, 422, errInvalidName, nil, false},
		{"raw byte in an unrelated parameter", "foo=\xff\xfe&name=peter", true, 200, "", []string{"peter"}, false},
		{"raw byte in an unrelated key", "\xff=1&name=peter", false, 200, "", []string{"peter"}, false},
		{"raw valid UTF-8 in a repeated name", "name=Jos\xc3\xa9&name=anna", true, 200, "", []string{"José", "anna"}, true},
		{"raw byte in country_id", "name=peter&country_id=U\xff", true, 422, errInvalidCtry, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := e.keylessCaller()
			if tc.keyed {
				c = e.freeCaller(t)
			}
			q := tc.query
			if c.key != "" {
				q += "&apikey=" + c.key
			}
			r := e.rawTCP(t, "GET /?"+q+" HTTP/1.1", c.ip)
			if tc.status == 200 {
				if r.status != 200 || string(r.body) != string(expected(t, tc.names, "", tc.batch)) {
					t.Fatalf("%d %s", r.status, r.body)
				}
				checkHeaders(t, r, c, c.limit-len(tc.names))
				return
			}
			checkError(t, r, tc.status, tc.err)
			checkHeaders(t, r, c, c.limit)
			checkHeaders(t, e.get(t, c, "name="), c, c.limit)
		})
	}
}

// TestPDKBudget pins the calls of each kind of request (contract point 1).
func TestPDKBudget(t *testing.T) {
	e := newEnv(t, envConfig{freeConsumers: 4})
	keyed := []string{"kong.nginx.get_var", "kong.client.get_consumer", "kong.response.exit"}
	keyless := []string{"kong.nginx.get_var", "kong.client.get_consumer", "kong.client.get_forwarded_ip", "kong.response.exit"}
	for _, tc := range []struct {
		name   string
		c      caller
		query  string
		status int
		want   []string
	}{
		{"keyed success", e.freeCaller(t), "name=peter", 200, keyed},
		{"keyed batch", e.freeCaller(t), batchQuery(repeatNames(100)...), 200, keyed},
		{"keyed 422", e.freeCaller(t), "name=", 422, keyed},
		{"keyed 402", caller{key: "demo-paused-key", ip: e.ip()}, "name=peter", 402, keyed},
		{"key-less success", e.keylessCaller(), "name=peter", 200, keyless},
		{"key-less 422", e.keylessCaller(), "", 422, keyless},
		{"invalid key 401", e.keylessCaller(), "name=peter&apikey=nope", 401, keyless},
		{"keyed 405", e.freeCaller(t), "name=peter", 405, keyed},
		{"key-less 405", e.keylessCaller(), "name=peter", 405, keyless},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := http.MethodGet
			if tc.status == 405 {
				method = http.MethodPost
			}
			r := e.do(t, method, tc.c, tc.query, nil)
			if r.status != tc.status {
				t.Errorf("status %d %s, want %d", r.status, r.body, tc.status)
			}
			if strings.Join(r.methods, ",") != strings.Join(tc.want, ",") {
				t.Errorf("PDK calls %v, want %v", r.methods, tc.want)
			}
		})
	}
	if n := e.s.MaxPDKCalls(); n > pdkBudget {
		t.Errorf("a request made %d PDK calls, budget %d", n, pdkBudget)
	}
}

// TestLargeQueries: a 100 KB query string, either one huge name or many
// unknown parameters, and more names than max_batch by far. key-auth
// reads only the first lua_max_uri_args (1000) arguments, so the key goes
// first where the query has more.
func TestLargeQueries(t *testing.T) {
	e := newEnv(t, envConfig{freeConsumers: 4})
	keyFirst := func(c caller, query string) (caller, string) {
		q := "apikey=" + c.key + "&" + query
		c.key = ""
		return c, q
	}
	var unknown strings.Builder
	for i := 0; unknown.Len() < 100<<10; i++ {
		fmt.Fprintf(&unknown, "x%d=%s&", i, strings.Repeat("v", 40))
	}
	t.Run("100 KB name", func(t *testing.T) {
		c := e.freeCaller(t)
		r := e.get(t, c, "name="+strings.Repeat("n", 100<<10))
		checkError(t, r, 422, errInvalidName)
		checkHeaders(t, r, c, 2500)
	})
	t.Run("100 KB of unknown parameters", func(t *testing.T) {
		c, q := keyFirst(e.freeCaller(t), unknown.String()+"name=peter")
		r := e.get(t, c, q)
		if r.status != 200 || string(r.body) != string(expected(t, []string{"peter"}, "", false)) {
			t.Fatalf("status %d body %.300s", r.status, r.body)
		}
		checkHeaders(t, r, c, 2499)
	})
	t.Run("1000 names", func(t *testing.T) {
		c, q := keyFirst(e.freeCaller(t), batchQuery(repeatNames(1000)...))
		r := e.get(t, c, q)
		checkError(t, r, 422, errInvalidName)
		checkHeaders(t, r, c, 2500)
	})
	t.Run("a key after lua_max_uri_args arguments is not seen", func(t *testing.T) {
		// Kong's key-auth never sees it: the caller is anonymous, and the
		// plugin, which reads the raw query, answers 401 on the IP window.
		c := e.freeCaller(t)
		r := e.get(t, c, unknown.String()+"name=peter")
		checkError(t, r, 401, errInvalidKey)
		checkHeaders(t, r, caller{ip: c.ip, limit: 100}, 100)
	})
}

// TestConcurrentConsumption: the quota's check-and-consume is atomic.
func TestConcurrentConsumption(t *testing.T) {
	e := newEnv(t, envConfig{freeConsumers: 1})
	t.Run("keyed", func(t *testing.T) {
		c := e.freeCaller(t)
		var wg sync.WaitGroup
		statuses := make([]int, 40)
		for i := range statuses {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = e.get(t, c, batchQuery("anna", "peter")).status
			}()
		}
		wg.Wait()
		for i, st := range statuses {
			if st != 200 {
				t.Errorf("request %d: status %d", i, st)
			}
		}
		r := e.get(t, c, "")
		checkHeaders(t, r, c, 2500-80)
	})
	t.Run("key-less over the limit", func(t *testing.T) {
		c := e.keylessCaller()
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok := 0
		for range 45 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := e.get(t, c, batchQuery("anna", "peter", "luca"))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case r.status == 200:
					ok++
				case r.status == 429:
				default:
					t.Errorf("status %d %s", r.status, r.body)
				}
			}()
		}
		wg.Wait()
		if ok > 33 {
			t.Errorf("%d batches of 3 passed; the IP has 100 names", ok)
		}
		r := e.get(t, c, "")
		checkHeaders(t, r, c, 100-3*ok)
	})
}

// TestPluginRestart kills the plugin server; the stand-in respawns it as
// Kong does, and the quota survives in its durable store.
func TestPluginRestart(t *testing.T) {
	e := newEnv(t, envConfig{freeConsumers: 1})
	c := e.freeCaller(t)
	if r := e.get(t, c, batchQuery("anna", "peter", "luca")); r.status != 200 {
		t.Fatalf("status %d %s", r.status, r.body)
	}
	pid := e.s.PluginPID()
	if pid == 0 {
		t.Fatal("no plugin process")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if p := e.s.PluginPID(); p != 0 && p != pid {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the plugin server was not respawned")
		}
		time.Sleep(20 * time.Millisecond)
	}
	r := e.get(t, c, "name=anna")
	if r.status != 200 {
		t.Fatalf("after the restart: status %d %s", r.status, r.body)
	}
	checkHeaders(t, r, c, 2500-4)
}

// TestBadConfig: a config the plugin cannot run with answers 500 to every
// request, with the usual headers, and one log line names the field.
func TestBadConfig(t *testing.T) {
	for _, tc := range []struct {
		field string
		value any
	}{
		{"max_batch", -1},
		{"max_name_length", 0},
		{"default_plan", "platinum"},
		{"plans", map[string]any{}},
		{"ip_limit", -5},
		{"ip_window_seconds", 0},
		{"throttle_rate", -1},
		{"quota_policy", "carrier-pigeon"},
		{"database_path", "/nonexistent/names.db"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			logs := &logBuffer{}
			e := newEnv(t, envConfig{overrides: map[string]any{tc.field: tc.value}, logs: logs})
			for _, c := range []caller{{key: "demo-free-key", ip: e.ip()}, e.keylessCaller()} {
				r := e.get(t, c, "name=peter")
				checkError(t, r, 500, "Internal error")
				for _, h := range []string{"X-Rate-Limit-Limit", "X-Rate-Limit-Remaining", "X-Rate-Limit-Reset", "X-Rate-Reset"} {
					headerInt(t, r, h)
				}
				if got := r.header.Get("Content-Type"); got != "application/json; charset=utf-8" {
					t.Errorf("Content-Type %q", got)
				}
				if got := r.header.Get("Access-Control-Allow-Origin"); got != "*" {
					t.Errorf("Access-Control-Allow-Origin %q", got)
				}
			}
			if !logs.contains(tc.field) {
				t.Errorf("no log line names %s", tc.field)
			}
		})
	}
}

// TestWithoutKeyAuth: a GET without a consumer means key-auth is not in
// front of the plugin; it must fail closed (contract point 1).
func TestWithoutKeyAuth(t *testing.T) {
	e := newEnv(t, envConfig{mutate: func(d *standin.Declarative) {
		for i := range d.Routes {
			r := &d.Routes[i]
			r.Plugins = slices.DeleteFunc(r.Plugins, func(p standin.Plugin) bool { return p.Name == "key-auth" })
		}
	}})
	c := e.keylessCaller()
	r := e.get(t, c, "name=peter&apikey=demo-pro-key")
	checkError(t, r, 500, "Internal error")
	if r.methods[0] != "kong.nginx.get_var" || r.methods[1] != "kong.client.get_consumer" {
		t.Errorf("PDK calls %v", r.methods)
	}
	// A preflight is still answered.
	p := e.raw(t, http.MethodOptions, "/", "", c.ip, nil)
	if p.status != 204 {
		t.Errorf("preflight %d %s", p.status, p.body)
	}
}

// TestPluginInfo: what Kong learns from the query command (-dump).
func TestPluginInfo(t *testing.T) {
	e := newEnv(t, envConfig{})
	info := e.s.Plugin()
	if info.Name != "genderize" {
		t.Errorf("name %q", info.Name)
	}
	if !slices.Contains(info.Phases, "access") {
		t.Errorf("phases %v lack access", info.Phases)
	}
	// Below key-auth (1250), or the plugin would run before the consumer
	// is known.
	if info.Priority >= 1250 || info.Priority <= 0 {
		t.Errorf("priority %d, want between 0 and 1250", info.Priority)
	}
}

// TestDefaultMaxURIArgs: with Kong's default lua_max_uri_args (100),
// key-auth does not see a key after 100 names, and the caller is refused
// as anonymous; this is why the shipped kong.conf sets 1000.
func TestDefaultMaxURIArgs(t *testing.T) {
	e := newEnv(t, envConfig{maxURIArgs: 100})
	c := caller{key: "demo-pro-key", ip: e.ip(), limit: 1000000, month: true}
	r := e.get(t, c, batchQuery(repeatNames(100)...))
	checkError(t, r, 401, errInvalidKey)
	checkHeaders(t, r, caller{ip: c.ip, limit: 100}, 100)
	r = e.get(t, c, batchQuery(repeatNames(99)...))
	if r.status != 200 {
		t.Fatalf("99 names and the key: %d %s", r.status, r.body)
	}
	checkHeaders(t, r, c, 1000000-99)
}

// TestGatewayHeaders: what Kong adds around the plugin's answer.
func TestGatewayHeaders(t *testing.T) {
	e := newEnv(t, envConfig{freeConsumers: 1})
	keyless := e.get(t, e.keylessCaller(), "name=peter")
	if got := keyless.header.Get("WWW-Authenticate"); got != `Key realm="kong"` {
		t.Errorf("key-less: WWW-Authenticate %q, want key-auth's", got)
	}
	keyed := e.get(t, e.freeCaller(t), "name=peter")
	if got := keyed.header.Get("WWW-Authenticate"); got != "" {
		t.Errorf("keyed: WWW-Authenticate %q", got)
	}
	for _, r := range []reply{keyless, keyed} {
		if r.header.Get("X-Kong-Response-Latency") == "" || r.header.Get("Content-Length") != fmt.Sprint(len(r.body)) {
			t.Errorf("gateway headers %v", r.header)
		}
	}
}

// TestAnonymousByID: the anonymous consumer may be named by its id, in
// key-auth and in the plugin alike (contract point 2).
func TestAnonymousByID(t *testing.T) {
	const guestID = "0b7e3a5c-61f1-4c5e-9d0a-2f4a8c6e1b93"
	e := newEnv(t, envConfig{mutate: func(d *standin.Declarative) {
		for i := range d.Consumers {
			if c := &d.Consumers[i]; c.Username == "anonymous" {
				c.Username, c.ID = "guest", guestID
			}
		}
		for i := range d.Routes {
			for j := range d.Routes[i].Plugins {
				if p := &d.Routes[i].Plugins[j]; p.Name == "key-auth" {
					p.Config["anonymous"] = guestID
				}
			}
		}
	}, overrides: map[string]any{"anonymous_consumer": guestID}})
	c := e.keylessCaller()
	r := e.get(t, c, "name=peter")
	if r.status != 200 {
		t.Fatalf("status %d %s", r.status, r.body)
	}
	checkHeaders(t, r, c, 99)
	r = e.get(t, c, "name=peter&apikey=nope")
	checkError(t, r, 401, errInvalidKey)
	checkHeaders(t, r, c, 99)
}

// TestKillUnderLoad kills the plugin server while requests are in flight:
// those fail (500, as Kong answers a plugin-server error), none hangs, and
// requests succeed again once the server is respawned.
func TestKillUnderLoad(t *testing.T) {
	e := newEnv(t, envConfig{overrides: map[string]any{"throttle_rate": 100000, "throttle_burst": 100000}})
	c := caller{key: "demo-pro-key", ip: e.ip(), limit: 1000000, month: true}
	stop := make(chan struct{})
	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				r := e.get(t, c, "name=anna")
				mu.Lock()
				statuses[r.status]++
				mu.Unlock()
				if r.status != 200 && r.status != 500 {
					t.Errorf("status %d %s", r.status, r.body)
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	pid := e.s.PluginPID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for p := e.s.PluginPID(); p == 0 || p == pid; p = e.s.PluginPID() {
		if time.Now().After(deadline) {
			t.Fatal("not respawned")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	if statuses[200] == 0 {
		t.Fatalf("no request succeeded: %v", statuses)
	}
	for range 5 {
		if r := e.get(t, c, "name=anna"); r.status != 200 {
			t.Errorf("after the respawn: %d %s", r.status, r.body)
		}
	}
	t.Logf("statuses during the kill: %v", statuses)
}

// TestConsumerCache: with consumer_cache_ttl, a repeated key costs two PDK
// calls (request line, exit) and gets the same answers; a declarative
// rollout that pauses a subscription or removes a key is obeyed within the
// TTL.
func TestConsumerCache(t *testing.T) {
	e := newEnv(t, envConfig{freeConsumers: 2, overrides: map[string]any{"consumer_cache_ttl": 1}})
	paused, removed := e.freeCaller(t), e.freeCaller(t)
	for _, c := range []caller{paused, removed} {
		first := e.get(t, c, "name=peter")
		if first.status != 200 || len(first.methods) != 3 {
			t.Fatalf("first request: %d %s, PDK calls %v", first.status, first.body, first.methods)
		}
		// The second may or may not be within the second: either way it
		// is answered the same, and cached it costs two calls.
		second := e.get(t, c, "name=anna")
		if second.status != 200 || string(second.body) != string(expected(t, []string{"anna"}, "", false)) {
			t.Fatalf("second request: %d %s", second.status, second.body)
		}
		checkHeaders(t, second, c, 2498)
		if len(second.methods) != 2 && len(second.methods) != 3 {
			t.Errorf("second request: PDK calls %v", second.methods)
		}
	}

	// Roll out: one subscription paused, another consumer's key removed.
	consumers := slices.Clone(e.decl.Consumers)
	for i := range consumers {
		switch {
		case consumers[i].Username == strings.TrimSuffix(paused.key, "-key"):
			consumers[i].Tags = []string{"plan:free", "subscription:paused"}
		case consumers[i].Username == strings.TrimSuffix(removed.key, "-key"):
			consumers[i].KeyauthCredentials = nil
		}
	}
	if err := e.s.ReplaceConsumers(consumers); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // the TTL, and a little more
	r := e.get(t, paused, "name=peter")
	checkError(t, r, 402, errInactive)
	checkHeaders(t, r, paused, 2498)
	r = e.get(t, removed, "name=peter")
	checkError(t, r, 401, errInvalidKey)
	checkHeaders(t, r, caller{ip: removed.ip, limit: 100}, 100)
}

// TestConsumerCacheSavesACall: within the TTL a repeated key is answered
// with two PDK calls.
func TestConsumerCacheSavesACall(t *testing.T) {
	e := newEnv(t, envConfig{freeConsumers: 1, overrides: map[string]any{"consumer_cache_ttl": 60}})
	c := e.freeCaller(t)
	want := [][]string{
		{"kong.nginx.get_var", "kong.client.get_consumer", "kong.response.exit"},
		{"kong.nginx.get_var", "kong.response.exit"},
		{"kong.nginx.get_var", "kong.response.exit"},
	}
	for i, w := range want {
		r := e.get(t, c, batchQuery("peter", "anna"))
		if r.status != 200 || strings.Join(r.methods, ",") != strings.Join(w, ",") {
			t.Errorf("request %d: %d, PDK calls %v, want %v", i, r.status, r.methods, w)
		}
		checkHeaders(t, r, c, 2500-2*(i+1))
	}
}
