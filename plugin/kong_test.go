package plugin

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Kong/go-pdk"
	"github.com/Kong/go-pdk/bridge"
	"github.com/Kong/go-pdk/bridge/bridgetest"
	"github.com/Kong/go-pdk/entities"
	"github.com/Kong/go-pdk/server/kong_plugin_protocol"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/genderize-kong/genderize/engine"
	"github.com/genderize-kong/genderize/plugin/quota"
	"github.com/genderize-kong/genderize/plugin/throttle"
)

// fakeKong answers the plugin's PDK calls as Kong does, over go-pdk's real
// bridge and wire format (bridgetest.MockFunc). go-pdk's own test.TestEnv
// hard-codes the consumer and the client IP; this one is set per request.
type fakeKong struct {
	request

	mu       sync.Mutex
	calls    []string
	exit     *exitResult
	errors   []string
	statusCh chan<- string
}

type exitResult struct {
	status  int
	body    []byte
	headers map[string][]string
	reason  reason // known when decided without the adapter
}

func (f *fakeKong) Handle(method string, args []byte) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, method)
	var out proto.Message
	switch method {
	case "kong.client.get_consumer":
		if f.consumer != nil {
			out = f.consumer
		} // Kong answers nil with an empty frame
	case "kong.nginx.get_var":
		var name kong_plugin_protocol.String
		if err := proto.Unmarshal(args, &name); err != nil || name.V != "request" {
			f.errors = append(f.errors, fmt.Sprintf("get_var %q %v", name.V, err))
		}
		// Kong sends the raw bytes in a string field; Go's encoder would
		// refuse a string that is not UTF-8, so send them as bytes.
		out = &kong_plugin_protocol.ByteString{V: []byte(f.requestLine())}
	case "kong.request.get_raw_query":
		out = bridge.WrapString(f.rawQuery)
	case "kong.request.get_method":
		out = bridge.WrapString(f.method)
	case "kong.client.get_forwarded_ip":
		out = bridge.WrapString(f.ip)
	case "kong.response.exit":
		var a kong_plugin_protocol.ExitArgs
		if err := proto.Unmarshal(args, &a); err != nil {
			f.errors = append(f.errors, "exit args: "+err.Error())
		}
		f.exit = &exitResult{status: int(a.Status), body: a.Body}
		if a.Headers != nil {
			f.exit.headers = bridge.UnwrapHeaders(a.Headers)
		}
		// go-pdk closes the connection after exit: stop serving it.
		f.statusCh <- "finished"
	case "kong.log.alert", "kong.log.crit", "kong.log.err", "kong.log.warn",
		"kong.log.notice", "kong.log.info", "kong.log.debug":
	default:
		f.errors = append(f.errors, "unexpected PDK call "+method)
	}
	if out == nil {
		return nil
	}
	b, err := proto.Marshal(out)
	if err != nil {
		f.errors = append(f.errors, err.Error())
	}
	return b
}

func (f *fakeKong) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// The bridge reports the connection closing after an exit-less
	// request here; that case is checked by do itself.
	if format != "Can't read method name" {
		f.errors = append(f.errors, format)
	}
}

func (f *fakeKong) IsRunning() bool                        { return true }
func (f *fakeKong) SubscribeStatusChange(ch chan<- string) { f.statusCh = ch }

// maxCalls is the PDK budget of one request (DESIGN: each call is a round
// trip to Kong).
const maxCalls = 4

// request is one request as Kong would present it to the plugin.
type request struct {
	consumer *kong_plugin_protocol.Consumer // nil: no consumer
	method   string
	rawQuery string // may hold raw bytes that are not UTF-8
	ip       string
}

// requestLine is nginx's $request for r.
func (r *request) requestLine() string {
	target := "/"
	if r.rawQuery != "" {
		target += "?" + r.rawQuery
	}
	return r.method + " " + target + " HTTP/1.1"
}

// facts are what the adapter would gather for r.
func (r *request) facts(c *Config) facts {
	f := facts{method: r.method}
	_, f.query = splitRequestLine(r.requestLine())
	if r.consumer != nil {
		f.consumer = entities.Consumer{Id: r.consumer.Id, Username: r.consumer.Username, CustomId: r.consumer.CustomId, Tags: r.consumer.Tags}
	}
	if c.needsClientIP(&f) {
		f.clientIP = r.ip
	}
	return f
}

// do decides r with c, as Access would after its PDK calls, and returns
// the answer as Exit would carry it, checked against the rules every
// answer obeys.
func (r *request) do(t testing.TB, c *Config) *exitResult {
	t.Helper()
	var d decision
	deps, ok := c.ready()
	if !ok {
		d = refusal(errInternal, reasonInternal, quota.Result{})
	} else {
		f := r.facts(c)
		d = c.answer(deps, &f)
	}
	var h structpb.Struct
	if err := proto.Unmarshal(appendHeaders(nil, &d), &h); err != nil {
		t.Fatalf("headers: %v", err)
	}
	e := &exitResult{status: d.status, body: d.body, headers: bridge.UnwrapHeaders(&h), reason: d.reason}
	checkExit(t, e)
	return e
}

// viaKong runs r through c's Access handler over go-pdk's bridge and
// checks the rules every request obeys: at most four PDK calls, exactly
// one exit and it comes last, and the headers of every answer.
func (r *request) viaKong(t testing.TB, c *Config) (*exitResult, []string) {
	t.Helper()
	f := &fakeKong{request: *r}
	conn := bridgetest.MockFunc(f)
	c.Access(pdk.Init(conn))
	conn.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.errors {
		t.Errorf("fake Kong: %s", e)
	}
	if len(f.calls) > maxCalls {
		t.Errorf("%d PDK calls, at most %d allowed: %v", len(f.calls), maxCalls, f.calls)
	}
	if f.exit == nil {
		t.Fatalf("request ended without kong.response.exit; calls %v", f.calls)
	}
	if last := f.calls[len(f.calls)-1]; last != "kong.response.exit" {
		t.Errorf("last PDK call %s, want the exit: %v", last, f.calls)
	}
	checkExit(t, f.exit)
	return f.exit, f.calls
}

// checkExit checks the headers every answer carries.
func checkExit(t testing.TB, e *exitResult) {
	t.Helper()
	for _, h := range []string{"X-Rate-Limit-Limit", "X-Rate-Limit-Remaining", "X-Rate-Limit-Reset", "X-Rate-Reset"} {
		if len(e.headers[h]) != 1 {
			t.Errorf("status %d: header %s = %q, want one value", e.status, h, e.headers[h])
		}
	}
	if got, want := e.headers["X-Rate-Reset"], e.headers["X-Rate-Limit-Reset"]; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("X-Rate-Reset %q differs from X-Rate-Limit-Reset %q", got, want)
	}
	for h, want := range map[string]string{
		"Content-Type":                  "application/json; charset=utf-8",
		"Access-Control-Allow-Origin":   "*",
		"Access-Control-Expose-Headers": "X-Rate-Limit-Limit, X-Rate-Limit-Remaining, X-Rate-Limit-Reset, X-Rate-Reset, Retry-After",
	} {
		if got := e.headers[h]; len(got) != 1 || got[0] != want {
			t.Errorf("status %d: header %s = %q, want %q", e.status, h, got, want)
		}
	}
}

func (e *exitResult) header(name string) string {
	return strings.Join(e.headers[name], ",")
}

// testNamesDB is the real name database: GENDERIZE_DB (set by make test),
// else names.db at the module root.
func testNamesDB(t testing.TB) string {
	t.Helper()
	path := os.Getenv("GENDERIZE_DB")
	if path == "" {
		dir, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		for ; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				path = filepath.Join(dir, "names.db")
				break
			}
			if filepath.Dir(dir) == dir {
				t.Fatal("module root not found")
			}
		}
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("name database %s missing: run `make db` (or set GENDERIZE_DB): %v", path, err)
	}
	return path
}

// clock is the injectable time of a test config.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// testConfig is the kong.yml config with the real name database, a fresh
// quota file and fresh throttle buckets per test, and clk as its time.
func testConfig(t testing.TB, clk *clock) *Config {
	t.Helper()
	c := New().(*Config)
	c.DatabasePath = testNamesDB(t)
	c.QuotaPath = filepath.Join(t.TempDir(), "quota.db")
	c.state.now = clk.Now
	c.state.open = func(c *Config) (*dependencies, error) {
		names, err := engine.Shared(c.DatabasePath, engine.Options{CacheEntries: int64(c.CacheSize)})
		if err != nil {
			return nil, err
		}
		store, err := quota.OpenLocal(c.QuotaPath)
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { store.Close() })
		return &dependencies{names: names, store: store, throttle: throttle.New(c.ThrottleRate, c.ThrottleBurst), storeTimeout: c.storeTimeout()}, nil
	}
	return c
}

// captureLogs sends slog's default logger to a buffer for the test.
func captureLogs(t *testing.T) *syncBuffer {
	t.Helper()
	var buf syncBuffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	return &buf
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
