package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Kong/go-pdk"
	"github.com/Kong/go-pdk/bridge/bridgetest"
	"github.com/Kong/go-pdk/server/kong_plugin_protocol"
	"google.golang.org/protobuf/proto"

	"github.com/genderize-kong/genderize/engine"
	"github.com/genderize-kong/genderize/plugin/quota"
)

// The consumers of kong/kong.yml, as GetConsumer delivers them.
var (
	anonymous = &kong_plugin_protocol.Consumer{Id: "9f0a6f4e-0000-4000-8000-000000000001", Username: "anonymous"}
	demoFree  = &kong_plugin_protocol.Consumer{Id: "9f0a6f4e-0000-4000-8000-000000000002", Username: "demo-free",
		Tags: []string{"plan:free", "subscription:active"}}
	demoPro = &kong_plugin_protocol.Consumer{Id: "9f0a6f4e-0000-4000-8000-000000000003", Username: "demo-pro",
		Tags: []string{"plan:pro", "subscription:active", "paid-until:2099-12-31"}}
)

func consumerWith(tags ...string) *kong_plugin_protocol.Consumer {
	return &kong_plugin_protocol.Consumer{Id: "9f0a6f4e-0000-4000-8000-0000000000ff", Username: "someone", Tags: tags}
}

// t0 is 22 November 2026, 09:30 UTC: 8 days 14.5 hours before the month
// ends, 14.5 hours before the day ends.
var t0 = time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)

const (
	monthReset = "743400" // seconds from t0 to 2026-12-01
	dayReset   = "52200"  // seconds from t0 to 2026-11-23
	clientIP   = "203.0.113.7"
)

func get(consumer *kong_plugin_protocol.Consumer, rawQuery string) *request {
	return &request{consumer: consumer, method: "GET", rawQuery: rawQuery, ip: clientIP}
}

func jsonError(msg string) string { return `{"error":"` + msg + `"}` }

type want struct {
	status    int
	body      string
	limit     int
	remaining int
	reset     string
}

func check(t *testing.T, label string, got *exitResult, w want) {
	t.Helper()
	if got.status != w.status || string(got.body) != w.body {
		t.Errorf("%s: %d %s\nwant %d %s", label, got.status, got.body, w.status, w.body)
	}
	if l := got.header("X-Rate-Limit-Limit"); l != strconv.Itoa(w.limit) {
		t.Errorf("%s: X-Rate-Limit-Limit %s, want %d", label, l, w.limit)
	}
	if r := got.header("X-Rate-Limit-Remaining"); r != strconv.Itoa(w.remaining) {
		t.Errorf("%s: X-Rate-Limit-Remaining %s, want %d", label, r, w.remaining)
	}
	if w.reset != "" && got.header("X-Rate-Limit-Reset") != w.reset {
		t.Errorf("%s: X-Rate-Limit-Reset %s, want %s", label, got.header("X-Rate-Limit-Reset"), w.reset)
	}
}

// TestPDKCallsPerRequest is the adapter's test: the PDK calls each kind of
// request makes, through go-pdk's real bridge. Every other test decides
// without Kong.
func TestPDKCallsPerRequest(t *testing.T) {
	clk := &clock{now: t0}
	c := testConfig(t, clk)
	const (
		line     = "kong.nginx.get_var"
		consumer = "kong.client.get_consumer"
		ip       = "kong.client.get_forwarded_ip"
		exit     = "kong.response.exit"
	)
	tests := []struct {
		name   string
		req    *request
		status int
		calls  []string
	}{
		{"keyed", get(demoFree, "name=peter"), 200, []string{line, consumer, exit}},
		{"keyed error", get(demoFree, ""), 422, []string{line, consumer, exit}},
		{"keyed POST", &request{consumer: demoFree, method: "POST", rawQuery: "name=peter", ip: clientIP}, 405, []string{line, consumer, exit}},
		{"key-less", get(anonymous, "name=peter"), 200, []string{line, consumer, ip, exit}},
		{"key-less error", get(anonymous, "name="), 422, []string{line, consumer, ip, exit}},
		{"key-less DELETE", &request{consumer: anonymous, method: "DELETE", ip: clientIP}, 405, []string{line, consumer, ip, exit}},
		{"raw bytes", get(demoFree, "name=\xff"), 422, []string{line, consumer, exit}},
		{"preflight", &request{method: "OPTIONS", ip: clientIP}, 204, []string{line, consumer, ip, exit}},
		{"no key-auth", &request{method: "GET", rawQuery: "name=peter", ip: clientIP}, 500, []string{line, consumer, exit}},
		{"max batch", get(demoPro, "country_id=de&"+batchQuery(100)), 200, []string{line, consumer, exit}},
	}
	captureLogs(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, calls := tt.req.viaKong(t, c)
			if got.status != tt.status {
				t.Errorf("status %d, want %d (%s)", got.status, tt.status, got.body)
			}
			if !slices.Equal(calls, tt.calls) {
				t.Errorf("PDK calls\n%v\nwant\n%v", calls, tt.calls)
			}
		})
	}
}

func batchQuery(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = "name%5B%5D=name" + strconv.Itoa(i)
	}
	return strings.Join(parts, "&")
}

func TestErrors(t *testing.T) {
	long := strings.Repeat("é", 101)
	tests := []struct {
		name     string
		consumer *kong_plugin_protocol.Consumer
		query    string
		want     want
	}{
		// 401: the anonymous consumer with a key in the query.
		{"unknown key", anonymous, "name=peter&apikey=nope", want{401, jsonError("Invalid API key"), 100, 100, dayReset}},
		{"empty key", anonymous, "name=peter&apikey=", want{401, jsonError("Invalid API key"), 100, 100, dayReset}},
		{"bare key", anonymous, "apikey&name=peter", want{401, jsonError("Invalid API key"), 100, 100, dayReset}},
		{"401 before 422", anonymous, "apikey=x", want{401, jsonError("Invalid API key"), 100, 100, dayReset}},

		// 402: subscription state on consumer tags.
		{"paused", consumerWith("plan:basic", "subscription:paused"), "name=peter", want{402, jsonError("Subscription is not active"), 100000, 100000, monthReset}},
		{"expired", consumerWith("plan:basic", "subscription:expired"), "name=peter", want{402, jsonError("Subscription is not active"), 100000, 100000, monthReset}},
		{"unpaid", consumerWith("plan:pro", "subscription:unpaid"), "name=peter", want{402, jsonError("Subscription is not active"), 1000000, 1000000, monthReset}},
		{"other state", consumerWith("plan:pro", "subscription:trial"), "name=peter", want{402, jsonError("Subscription is not active"), 1000000, 1000000, monthReset}},
		{"paid until yesterday", consumerWith("plan:free", "paid-until:2026-11-21"), "name=peter", want{402, jsonError("Subscription is not active"), 2500, 2500, monthReset}},
		{"unreadable paid-until", consumerWith("plan:free", "paid-until:21/11/2026"), "name=peter", want{402, jsonError("Subscription is not active"), 2500, 2500, monthReset}},
		{"unknown plan", consumerWith("plan:gold", "subscription:active"), "name=peter", want{402, jsonError("Subscription is not active"), 0, 0, monthReset}},
		{"two plans", consumerWith("plan:free", "plan:pro"), "name=peter", want{402, jsonError("Subscription is not active"), 0, 0, monthReset}},
		{"402 before 422", consumerWith("subscription:paused"), "", want{402, jsonError("Subscription is not active"), 2500, 2500, monthReset}},

		// 422: the name.
		{"no query", demoFree, "", want{422, jsonError("Missing 'name' parameter"), 2500, 2500, monthReset}},
		{"other parameters only", demoFree, "language_id=en&names=x&name%5Bx%5D=y", want{422, jsonError("Missing 'name' parameter"), 2500, 2500, monthReset}},
		{"key-less missing", anonymous, "country_id=US", want{422, jsonError("Missing 'name' parameter"), 100, 100, dayReset}},
		{"empty", demoFree, "name=", want{422, jsonError("Invalid 'name' parameter"), 2500, 2500, monthReset}},
		{"no value", demoFree, "name", want{422, jsonError("Invalid 'name' parameter"), 2500, 2500, monthReset}},
		{"blank", demoFree, "name=+%20%E3%80%80", want{422, jsonError("Invalid 'name' parameter"), 2500, 2500, monthReset}},
		{"too long", demoFree, "name=" + url.QueryEscape(long), want{422, jsonError("Invalid 'name' parameter"), 2500, 2500, monthReset}},
		{"invalid utf8", demoFree, "name=peter%FF", want{422, jsonError("Invalid 'name' parameter"), 2500, 2500, monthReset}},
		{"nul", demoFree, "name=pe%00ter", want{422, jsonError("Invalid 'name' parameter"), 2500, 2500, monthReset}},
		{"tab", demoFree, "name=pe%09ter", want{422, jsonError("Invalid 'name' parameter"), 2500, 2500, monthReset}},
		{"newline", demoFree, "name%5B%5D=ok&name%5B%5D=pe%0Ater", want{422, jsonError("Invalid 'name' parameter"), 2500, 2500, monthReset}},
		{"C1 control", demoFree, "name=pe%C2%85ter", want{422, jsonError("Invalid 'name' parameter"), 2500, 2500, monthReset}},
		{"bad percent", demoFree, "name=pe%zzter", want{422, jsonError("Invalid 'name' parameter"), 2500, 2500, monthReset}},
		{"cut percent", demoFree, "name=peter%E", want{422, jsonError("Invalid 'name' parameter"), 2500, 2500, monthReset}},
		{"raw byte", demoFree, "name=\xff", want{422, jsonError("Invalid 'name' parameter"), 2500, 2500, monthReset}},
		{"raw bytes in a batch", demoFree, "name[]=ok&name[]=pe\xc3\x28ter", want{422, jsonError("Invalid 'name' parameter"), 2500, 2500, monthReset}},
		{"key-less raw byte", anonymous, "name=\xffpeter", want{422, jsonError("Invalid 'name' parameter"), 100, 100, dayReset}},
		{"101 repeated names", demoFree, strings.Repeat("name=x&", 101), want{422, jsonError("Invalid 'name' parameter"), 2500, 2500, monthReset}},
		{"name twice and name[]", demoFree, "name=peter&name=maria&name[]=x", want{422, jsonError("Invalid 'name' parameter"), 2500, 2500, monthReset}},
		{"name and name[]", demoFree, "name=peter&name%5B%5D=maria", want{422, jsonError("Invalid 'name' parameter"), 2500, 2500, monthReset}},
		{"name and name[0]", demoFree, "name[0]=maria&name=peter", want{422, jsonError("Invalid 'name' parameter"), 2500, 2500, monthReset}},
		{"101 names", demoFree, batchQuery(101), want{422, jsonError("Invalid 'name' parameter"), 2500, 2500, monthReset}},
		{"name before country", demoFree, "name=&country_id=XX", want{422, jsonError("Invalid 'name' parameter"), 2500, 2500, monthReset}},

		// 422: the country.
		{"unknown country", demoFree, "name=peter&country_id=XX", want{422, jsonError("Invalid 'country_id' parameter"), 2500, 2500, monthReset}},
		{"reserved code", demoFree, "name=peter&country_id=UK", want{422, jsonError("Invalid 'country_id' parameter"), 2500, 2500, monthReset}},
		{"alpha-3", demoFree, "name=peter&country_id=USA", want{422, jsonError("Invalid 'country_id' parameter"), 2500, 2500, monthReset}},
		{"empty country", demoFree, "name=peter&country_id=", want{422, jsonError("Invalid 'country_id' parameter"), 2500, 2500, monthReset}},
		{"country twice", demoFree, "name=peter&country_id=US&country_id=US", want{422, jsonError("Invalid 'country_id' parameter"), 2500, 2500, monthReset}},
		{"bad percent country", demoFree, "name=peter&country_id=U%G5", want{422, jsonError("Invalid 'country_id' parameter"), 2500, 2500, monthReset}},
	}
	clk := &clock{now: t0}
	c := testConfig(t, clk)
	logs := captureLogs(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := get(tt.consumer, tt.query).do(t, c)
			check(t, tt.name, got, tt.want)
			if got.header("Retry-After") != "" {
				t.Errorf("Retry-After %q on a %d", got.header("Retry-After"), got.status)
			}
		})
	}
	// Nothing was consumed by any of them.
	peter := string(predict(t, c, false, "", "peter"))
	check(t, "keyed after the errors", get(demoFree, "name=peter").do(t, c), want{200, peter, 2500, 2499, monthReset})
	check(t, "key-less after the errors", get(anonymous, "name=peter").do(t, c), want{200, peter, 100, 99, dayReset})
	for _, logged := range []string{`plan=gold`, `conflicting plan tags`, `unparsable tag \"paid-until:21/11/2026\"`} {
		if !strings.Contains(logs.String(), logged) {
			t.Errorf("log lacks %s:\n%s", logged, logs)
		}
	}
	if strings.Contains(logs.String(), "nope") {
		t.Errorf("an API key reached the log:\n%s", logs)
	}
}

func TestSubscriptionsThatAreActive(t *testing.T) {
	clk := &clock{now: t0}
	c := testConfig(t, clk)
	tests := []struct {
		name     string
		consumer *kong_plugin_protocol.Consumer
		limit    int
	}{
		{"demo-free", demoFree, 2500},
		{"demo-pro", demoPro, 1000000},
		{"no tags: default plan, active", consumerWith(), 2500},
		{"basic", consumerWith("plan:basic"), 100000},
		{"paid through today", consumerWith("plan:basic", "paid-until:2026-11-22"), 100000},
		{"unrelated tags", consumerWith("team:data", "plan:pro"), 1000000},
		{"key sent by a keyed caller", demoFree, 2500},
	}
	for i, tt := range tests {
		consumer := proto.Clone(tt.consumer).(*kong_plugin_protocol.Consumer)
		consumer.Id = fmt.Sprintf("%s-%d", consumer.Id, i) // a fresh window each
		got := get(consumer, "name=peter&apikey=demo-key").do(t, c)
		check(t, tt.name, got, want{200, string(predict(t, c, false, "", "peter")), tt.limit, tt.limit - 1, monthReset})
	}
	// The anonymous consumer is recognised by id as well as by username.
	c.AnonymousConsumer = anonymous.Id
	got := get(&kong_plugin_protocol.Consumer{Id: anonymous.Id}, "name=peter&apikey=x").do(t, c)
	check(t, "anonymous by id", got, want{401, jsonError("Invalid API key"), 100, 100, dayReset})
}

// predict is the engine's own answer, the bytes the plugin must send.
func predict(t *testing.T, c *Config, batch bool, country string, names ...string) []byte {
	t.Helper()
	e, err := engine.Shared(c.DatabasePath, engine.Options{CacheEntries: int64(c.CacheSize)})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := e.Predict(names, country)
	if err != nil {
		t.Fatal(err)
	}
	if batch {
		return engine.AppendJSONArray(nil, ps)
	}
	return ps[0].AppendJSON(nil)
}

func TestBatchOrderAndEcho(t *testing.T) {
	clk := &clock{now: t0}
	c := testConfig(t, clk)
	tests := []struct {
		name    string
		query   string
		batch   bool
		country string
		names   []string
	}{
		{"single", "name=peter", false, "", []string{"peter"}},
		{"single, country lower case", "name=Maria&country_id=it", false, "IT", []string{"Maria"}},
		{"batch of one is an array", "name%5B%5D=peter", true, "", []string{"peter"}},
		{"literal brackets", "name[]=Anna&name[]=Jan", true, "", []string{"Anna", "Jan"}},
		{"order kept", "name%5B%5D=Zoe&name%5B%5D=Adam&name%5B%5D=maria&name%5B%5D=Zzyzxq&name%5B%5D=Peter",
			true, "", []string{"Zoe", "Adam", "maria", "Zzyzxq", "Peter"}},
		{"indexed, order of appearance", "name[1]=Karl&name[0]=Emma&name[7]=Jonas", true, "", []string{"Karl", "Emma", "Jonas"}},
		{"echo as sent", "name%5B%5D=+peter++&name%5B%5D=JOS%C3%89&name%5B%5D=Jos%C3%A9+Mar%C3%ADa+Garc%C3%ADa&name%5B%5D=%E6%9D%8E&name%5B%5D=a%22b%5Cc&name%5B%5D=o%27neil",
			true, "", []string{" peter  ", "JOSÉ", "José María García", "李", `a"b\c`, "o'neil"}},
		{"semicolon is part of a name", "name=anna;bob", false, "", []string{"anna;bob"}},
		{"country applies to all", "country_id=dE&name%5B%5D=Andrea&name%5B%5D=Kim", true, "DE", []string{"Andrea", "Kim"}},
		{"unknown parameters ignored", "language_id=en&name=peter&x=%zz&&=", false, "", []string{"peter"}},
		{"raw bytes in an unknown parameter ignored", "x=\xff\xfe&name=peter&\xff=1", false, "", []string{"peter"}},
		{"repeated name is a batch", "name=Ben&name=Allister", true, "", []string{"Ben", "Allister"}},
		{"repeated name, raw UTF-8", "name=Jos\xc3\xa9&name=Ana", true, "", []string{"José", "Ana"}},
		{"100 characters", "name=" + strings.Repeat("%C3%A9", 100), false, "", []string{strings.Repeat("é", 100)}},
	}
	remaining := 1000000
	for _, tt := range tests {
		got := get(demoPro, tt.query).do(t, c)
		remaining -= len(tt.names)
		check(t, tt.name, got, want{200, string(predict(t, c, tt.batch, tt.country, tt.names...)), 1000000, remaining, monthReset})

		// Independently of the engine: the names and the country, in order.
		var results []map[string]any
		if tt.batch {
			if err := json.Unmarshal(got.body, &results); err != nil {
				t.Fatalf("%s: %v: %s", tt.name, err, got.body)
			}
		} else {
			var one map[string]any
			if err := json.Unmarshal(got.body, &one); err != nil {
				t.Fatalf("%s: %v: %s", tt.name, err, got.body)
			}
			results = append(results, one)
		}
		if len(results) != len(tt.names) {
			t.Fatalf("%s: %d results for %d names", tt.name, len(results), len(tt.names))
		}
		for i, r := range results {
			if r["name"] != tt.names[i] {
				t.Errorf("%s: result %d name %q, want %q", tt.name, i, r["name"], tt.names[i])
			}
			country, has := r["country_id"]
			if (tt.country != "") != has || (has && country != tt.country) {
				t.Errorf("%s: result %d country_id %v, want %q", tt.name, i, country, tt.country)
			}
		}
	}
	// The real data says something about a common name.
	got := get(demoPro, "name=peter").do(t, c)
	if !strings.Contains(string(got.body), `"gender":"male"`) {
		t.Errorf("peter: %s", got.body)
	}
}

func TestQuotaDecrementsByNames(t *testing.T) {
	clk := &clock{now: t0}
	c := testConfig(t, clk)
	c.Plans["tiny"] = Plan{Quota: 10}
	tiny := consumerWith("plan:tiny")
	steps := []struct {
		query string
		want  want
	}{
		{"name=peter", want{200, "", 10, 9, monthReset}},
		{batchQuery(5), want{200, "", 10, 4, monthReset}},
		{"name=", want{422, jsonError("Invalid 'name' parameter"), 10, 4, monthReset}},
		// A batch that does not fit consumes nothing: retry with fewer.
		{batchQuery(5), want{429, jsonError("Request too low to process"), 10, 4, monthReset}},
		{batchQuery(4), want{200, "", 10, 0, monthReset}},
		{"name=peter", want{429, jsonError("Request limit reached"), 10, 0, monthReset}},
		{batchQuery(2), want{429, jsonError("Request limit reached"), 10, 0, monthReset}},
	}
	for i, st := range steps {
		got := get(tiny, st.query).do(t, c)
		if st.want.body == "" {
			st.want.body = string(got.body)
		}
		check(t, fmt.Sprintf("step %d %.20s", i, st.query), got, st.want)
		if got.status == 429 && got.header("Retry-After") != "" {
			t.Errorf("step %d: quota 429 carries Retry-After %s", i, got.header("Retry-After"))
		}
	}

	// Key-less callers: ip_limit names per IP per day, each IP its own.
	c.IPLimit = 3
	for i, w := range []want{{200, "", 3, 2, dayReset}, {200, "", 3, 0, dayReset}, {429, jsonError("Request limit reached"), 3, 0, dayReset}} {
		q := "name=peter"
		if i == 1 {
			q = batchQuery(2)
		}
		got := get(anonymous, q).do(t, c)
		if w.body == "" {
			w.body = string(got.body)
		}
		check(t, fmt.Sprintf("key-less %d", i), got, w)
	}
	other := get(anonymous, "name=peter")
	other.ip = "2001:db8::9"
	check(t, "another IP", other.do(t, c), want{200, string(predict(t, c, false, "", "peter")), 3, 2, dayReset})
}

func TestWindowReset(t *testing.T) {
	endOfJanuary := time.Date(2026, 1, 31, 23, 59, 59, 0, time.UTC)
	clk := &clock{now: endOfJanuary}
	c := testConfig(t, clk)
	c.Plans["tiny"] = Plan{Quota: 2}
	c.IPLimit = 1
	tiny := consumerWith("plan:tiny")
	peter := string(predict(t, c, false, "", "peter"))

	check(t, "january", get(tiny, batchQuery(2)).do(t, c), want{200, string(predict(t, c, true, "", "name0", "name1")), 2, 0, "1"})
	check(t, "january used up", get(tiny, "name=peter").do(t, c), want{429, jsonError("Request limit reached"), 2, 0, "1"})
	check(t, "key-less january", get(anonymous, "name=peter").do(t, c), want{200, peter, 1, 0, "1"})

	clk.set(endOfJanuary.Add(time.Second)) // 1 February, 00:00:00
	february := strconv.Itoa(28 * 86400)
	check(t, "february", get(tiny, "name=peter").do(t, c), want{200, peter, 2, 1, february})
	check(t, "key-less next day", get(anonymous, "name=peter").do(t, c), want{200, peter, 1, 0, "86400"})

	// A 7-hour key-less window counts from the Unix epoch.
	c2 := testConfig(t, clk)
	c2.IPWindowSeconds = 7 * 3600
	clk.set(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)) // windows start at 22:00 and 05:00
	check(t, "7h window", get(anonymous, "name=peter").do(t, c2), want{200, peter, 100, 99, strconv.Itoa(5 * 3600)})
}

func TestThrottle(t *testing.T) {
	clk := &clock{now: t0}
	c := testConfig(t, clk)
	c.ThrottleRate, c.ThrottleBurst = 0.25, 2 // a token every 4s
	peter := string(predict(t, c, false, "", "peter"))

	check(t, "1st", get(demoFree, "name=peter").do(t, c), want{200, peter, 2500, 2499, monthReset})
	check(t, "2nd", get(demoFree, "name=peter").do(t, c), want{200, peter, 2500, 2498, monthReset})
	got := get(demoFree, "name=peter").do(t, c)
	check(t, "3rd", got, want{429, jsonError("Request too low to process"), 2500, 2498, monthReset})
	if got.header("Retry-After") != "4" {
		t.Errorf("Retry-After %q, want 4", got.header("Retry-After"))
	}
	// Errors that come before the throttle are still answered as such.
	check(t, "422 while throttled", get(demoFree, "name=").do(t, c), want{422, jsonError("Invalid 'name' parameter"), 2500, 2498, monthReset})
	// Other callers have their own bucket.
	check(t, "pro", get(demoPro, "name=peter").do(t, c), want{200, peter, 1000000, 999999, monthReset})

	clk.set(t0.Add(3500 * time.Millisecond))
	got = get(demoFree, "name=peter").do(t, c)
	if got.status != 429 || got.header("Retry-After") != "1" {
		t.Errorf("at +3.5s: %d Retry-After %q, want 429 and 1", got.status, got.header("Retry-After"))
	}
	clk.set(t0.Add(4 * time.Second))
	check(t, "refilled", get(demoFree, "name=peter").do(t, c), want{200, peter, 2500, 2497, "743396"})

	// Key-less callers are throttled per IP.
	c3 := testConfig(t, clk)
	c3.ThrottleRate, c3.ThrottleBurst = 0.25, 1
	check(t, "ip 1st", get(anonymous, "name=peter").do(t, c3), want{200, peter, 100, 99, ""})
	check(t, "ip 2nd", get(anonymous, "name=peter").do(t, c3), want{429, jsonError("Request too low to process"), 100, 99, ""})
}

func TestPreflight(t *testing.T) {
	clk := &clock{now: t0}
	c := testConfig(t, clk)
	get(anonymous, batchQuery(3)).do(t, c) // the IP has used 3 names
	got := (&request{method: "OPTIONS", ip: clientIP}).do(t, c)
	check(t, "preflight", got, want{204, "", 100, 97, dayReset})
	for h, v := range map[string]string{
		"Access-Control-Allow-Methods": "GET, OPTIONS",
		"Access-Control-Allow-Headers": "*",
		"Access-Control-Max-Age":       "86400",
	} {
		if got.header(h) != v {
			t.Errorf("%s = %q, want %q", h, got.header(h), v)
		}
	}
	// The preflight consumed nothing.
	check(t, "after", get(anonymous, "name=peter").do(t, c), want{200, string(predict(t, c, false, "", "peter")), 100, 96, dayReset})
}

func TestNoConsumerIsAnInternalError(t *testing.T) {
	clk := &clock{now: t0}
	c := testConfig(t, clk)
	logs := captureLogs(t)
	for _, method := range []string{"GET", "HEAD", "POST"} {
		got := (&request{method: method, rawQuery: "name=peter", ip: clientIP}).do(t, c)
		check(t, method, got, want{500, jsonError("Internal error"), 0, 0, "0"})
	}
	if n := strings.Count(logs.String(), "key-auth with anonymous must run before genderize"); n != 1 {
		t.Errorf("%d log lines about the missing key-auth, want 1 (at most one a minute):\n%s", n, logs)
	}
}

type panickingNames struct{}

func (panickingNames) Predict([]string, string) ([]engine.Prediction, error) {
	panic("index out of range")
}

type failingNames struct{}

func (failingNames) Predict([]string, string) ([]engine.Prediction, error) {
	return nil, errors.New("disk I/O error")
}

// The real engine cannot be made to panic or fail on demand; these stand
// in for it to check the recovery and the refusal to consume.
func TestPanicAndEngineFailure(t *testing.T) {
	for _, tt := range []struct {
		name  string
		names predictor
	}{{"panic", panickingNames{}}, {"failure", failingNames{}}} {
		t.Run(tt.name, func(t *testing.T) {
			clk := &clock{now: t0}
			c := testConfig(t, clk)
			open := c.state.open
			c.state.open = func(c *Config) (*dependencies, error) {
				d, err := open(c)
				if err == nil {
					d.names = tt.names
				}
				return d, err
			}
			logs := captureLogs(t)
			// A failure is answered after a peek at the window; a panic
			// with what was known before it (no remaining count).
			remaining := map[string][2]int{"failure": {2500, 100}, "panic": {0, 0}}[tt.name]
			got := get(demoFree, "name=peter").do(t, c)
			check(t, "keyed", got, want{500, jsonError("Internal error"), 2500, remaining[0], monthReset})
			got = get(anonymous, "name%5B%5D=peter").do(t, c)
			check(t, "key-less", got, want{500, jsonError("Internal error"), 100, remaining[1], dayReset})
			if !strings.Contains(logs.String(), tt.name) && !strings.Contains(logs.String(), "disk I/O error") {
				t.Errorf("not logged:\n%s", logs)
			}
			// The process goes on answering.
			check(t, "after", get(demoFree, "name=").do(t, c), want{422, jsonError("Invalid 'name' parameter"), 2500, 2500, monthReset})
		})
	}
}

func TestBadConfig(t *testing.T) {
	tests := []struct {
		field  string
		change func(*Config)
	}{
		{"database_path", func(c *Config) { c.DatabasePath = "" }},
		{"cache_size", func(c *Config) { c.CacheSize = -1 }},
		{"max_batch", func(c *Config) { c.MaxBatch = 0 }},
		{"max_name_length", func(c *Config) { c.MaxNameLength = -5 }},
		{"plans", func(c *Config) { c.Plans = nil }},
		{"plans.free.quota", func(c *Config) { c.Plans["free"] = Plan{Quota: -1} }},
		{"default_plan", func(c *Config) { c.DefaultPlan = "gold" }},
		{"anonymous_consumer", func(c *Config) { c.AnonymousConsumer = "" }},
		{"ip_limit", func(c *Config) { c.IPLimit = -1 }},
		{"ip_window_seconds", func(c *Config) { c.IPWindowSeconds = 0 }},
		{"throttle_rate", func(c *Config) { c.ThrottleRate = 0 }},
		{"throttle_burst", func(c *Config) { c.ThrottleBurst = 0 }},
		{"quota_policy", func(c *Config) { c.QuotaPolicy = "memory" }},
		{"quota_path", func(c *Config) { c.QuotaPath = "" }},
		{"consumer_cache_ttl", func(c *Config) { c.ConsumerCacheTTL = -1 }},
		{"consumer_cache_ttl", func(c *Config) { c.ConsumerCacheTTL = 61 }},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			clk := &clock{now: t0}
			c := testConfig(t, clk)
			tt.change(c)
			logs := captureLogs(t)
			for range 3 {
				got, calls := get(demoFree, "name=peter").viaKong(t, c)
				check(t, tt.field, got, want{500, jsonError("Internal error"), 0, 0, "0"})
				if len(calls) != 1 {
					t.Errorf("PDK calls %v, want the exit alone", calls)
				}
			}
			lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], "error="+tt.field) && !strings.Contains(lines[0], `error="`+tt.field) {
				t.Errorf("want one log line naming %s, got:\n%s", tt.field, logs)
			}
		})
	}
}

func TestUnopenableFilesAreRetried(t *testing.T) {
	clk := &clock{now: t0}
	c := testConfig(t, clk)
	open := c.state.open
	fail := true
	c.state.open = func(c *Config) (*dependencies, error) {
		if fail {
			return nil, errors.New("quota_path: open quota store: permission denied")
		}
		return open(c)
	}
	logs := captureLogs(t)
	check(t, "failing", get(demoFree, "name=peter").do(t, c), want{500, jsonError("Internal error"), 0, 0, "0"})
	check(t, "still failing", get(demoFree, "name=peter").do(t, c), want{500, jsonError("Internal error"), 0, 0, "0"})
	if n := strings.Count(logs.String(), "permission denied"); n != 1 {
		t.Errorf("%d log lines, want 1:\n%s", n, logs)
	}
	fail = false
	check(t, "recovered", get(demoFree, "name=peter").do(t, c), want{200, string(predict(t, c, false, "", "peter")), 2500, 2499, monthReset})
}

// The default dependencies: the shared engine and quota file, opened from
// the config's paths as in production.
func TestSharedDependencies(t *testing.T) {
	c1 := New().(*Config)
	c1.DatabasePath = testNamesDB(t)
	c1.QuotaPath = t.TempDir() + "/state/quota.db"
	c2 := New().(*Config)
	if err := json.Unmarshal(mustJSON(t, c1), c2); err != nil {
		t.Fatal(err)
	}
	got := get(demoFree, "name=peter").do(t, c1)
	if got.status != 200 || got.header("X-Rate-Limit-Remaining") != "2499" {
		t.Fatalf("c1: %d %s remaining %s", got.status, got.body, got.header("X-Rate-Limit-Remaining"))
	}
	// A second instance of the same config (another worker) shares the
	// counters.
	got = get(demoFree, "name=peter").do(t, c2)
	if got.status != 200 || got.header("X-Rate-Limit-Remaining") != "2498" {
		t.Fatalf("c2: %d %s remaining %s", got.status, got.body, got.header("X-Rate-Limit-Remaining"))
	}
	d1, _ := c1.ready()
	d2, _ := c2.ready()
	if d1.store != d2.store || d1.names != d2.names || d1.throttle != d2.throttle {
		t.Fatal("instances of one config do not share engine, store and throttle")
	}
	if _, ok := d1.store.(*quota.Local); !ok {
		t.Fatalf("store is %T", d1.store)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Kong runs the handlers of one instance concurrently, from the very first
// request (when the config is validated and the files opened). The quota
// holds exactly under that load.
func TestConcurrentRequests(t *testing.T) {
	clk := &clock{now: t0}
	c := testConfig(t, clk)
	c.Plans["tiny"] = Plan{Quota: 60}
	c.ThrottleRate, c.ThrottleBurst = 1000, 1000
	tiny := consumerWith("plan:tiny")
	const workers, perWorker = 8, 12
	var mu sync.Mutex
	statuses := map[int]int{}
	granted := 0
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				n := 1 + (g+i)%2
				f := &fakeKong{request: *get(tiny, batchQuery(n))}
				conn := bridgetest.MockFunc(f)
				c.Access(pdk.Init(conn))
				conn.Close()
				mu.Lock()
				if f.exit == nil {
					t.Error("no exit")
				} else {
					statuses[f.exit.status]++
					if f.exit.status == 200 {
						granted += n
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// Requests ask for 1 or 2 names: the last name may be left when only
	// 2-name requests came after it.
	if granted < 59 || granted > 60 || statuses[429] == 0 || statuses[200]+statuses[429] != workers*perWorker {
		t.Fatalf("granted %d names, statuses %v; want 59 or 60 names granted, the rest 429", granted, statuses)
	}
	check(t, "after", get(tiny, "name=").do(t, c), want{422, jsonError("Invalid 'name' parameter"), 60, 60 - granted, monthReset})
}
