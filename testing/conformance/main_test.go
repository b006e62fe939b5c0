// Package conformance checks the genderize plugin against SPEC.md,
// DESIGN.md and the plugin/suite contract, end to end: real HTTP on
// 127.0.0.1, the Kong stand-in, the current plugin binary over Kong's
// plugin-server protocol, and the real names.db (GENDERIZE_DB). Expected
// predictions come from the engine reading the same database.
package conformance

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/genderize-kong/genderize/engine"
	"github.com/genderize-kong/genderize/testing/binaries"
	"github.com/genderize-kong/genderize/testing/standin"
)

var (
	pluginBin string
	noopBin   string
	dbPath    string
	kongYML   []byte
	eng       *engine.Engine
	// maxPDKCalls is the largest PDK call count any request of the run
	// made; TestMain fails the run when it is above the budget.
	maxPDKCalls atomic.Int64
)

// pdkBudget is the contract's limit of PDK calls per request.
const pdkBudget = 4

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	dbPath = os.Getenv("GENDERIZE_DB")
	if dbPath == "" {
		fmt.Fprintln(os.Stderr, "conformance: GENDERIZE_DB is not set; build the database (make db) and run `make test`, or set GENDERIZE_DB to the absolute path of names.db")
		return 1
	}
	if _, err := os.Stat(dbPath); err != nil {
		fmt.Fprintf(os.Stderr, "conformance: GENDERIZE_DB: %v\n", err)
		return 1
	}
	root, err := binaries.Root()
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		return 1
	}
	tmp, err := os.MkdirTemp("", "conformance-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		return 1
	}
	defer os.RemoveAll(tmp)

	// Always test the current code: build the plugin binary here. Its
	// file name is the plugin's name, as Kong requires.
	pluginBin = filepath.Join(tmp, "genderize")
	if err := binaries.Build("plugin/cmd/genderize", pluginBin); err != nil {
		fmt.Fprintln(os.Stderr, "conformance: the plugin:", err)
		return 1
	}
	noopBin = filepath.Join(tmp, "noop")
	if err := binaries.Build("testing/cmd/noop", noopBin); err != nil {
		fmt.Fprintln(os.Stderr, "conformance: the no-op plugin:", err)
		return 1
	}
	if kongYML, err = os.ReadFile(filepath.Join(root, "kong", "kong.yml")); err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		return 1
	}
	if eng, err = engine.Open(dbPath, engine.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, "conformance: open the engine for expected answers:", err)
		return 1
	}
	defer eng.Close()

	code := m.Run()
	if n := maxPDKCalls.Load(); n > pdkBudget {
		fmt.Fprintf(os.Stderr, "conformance: a request made %d PDK calls; the budget is %d\n", n, pdkBudget)
		code = 1
	}
	return code
}

// env is one Kong node: a stand-in with its own plugin process and its
// own quota files, served on 127.0.0.1.
type env struct {
	s      *standin.Standin
	decl   *standin.Declarative
	base   string
	client *http.Client
	state  string
	nextIP atomic.Int64
	nextC  atomic.Int64
	freeN  int
}

// envConfig shapes an env.
type envConfig struct {
	// freeConsumers pre-declares consumers case-0..case-N-1 on the free
	// plan, so each case has its own quota and throttle bucket.
	freeConsumers int
	// consumers are added as they are.
	consumers []standin.Consumer
	// overrides replace plugin config fields.
	overrides map[string]any
	// mutate changes the parsed kong.yml before the stand-in starts.
	mutate func(*standin.Declarative)
	// maxURIArgs is Kong's lua_max_uri_args; 0 keeps the stand-in's
	// default, the shipped kong.conf's 1000.
	maxURIArgs int
	// plugin replaces the genderize binary (the benchmark's no-op).
	plugin string
	// logs, when set, receives every log line of the stand-in and the
	// plugin.
	logs *logBuffer
}

// logBuffer collects log lines for a test to search.
type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// contains reports whether a line holds every one of the strings.
func (b *logBuffer) contains(all ...string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, l := range b.lines {
		found := true
		for _, s := range all {
			found = found && strings.Contains(l, s)
		}
		if found {
			return true
		}
	}
	return false
}

func newEnv(t testing.TB, cfg envConfig) *env {
	t.Helper()
	decl, err := standin.ParseDeclarative(kongYML)
	if err != nil {
		t.Fatalf("kong.yml: %v", err)
	}
	for i := range cfg.freeConsumers {
		c := standin.Consumer{
			Username:           fmt.Sprintf("case-%d", i),
			Tags:               []string{"plan:free", "subscription:active"},
			KeyauthCredentials: []standin.Credential{{Key: fmt.Sprintf("case-%d-key", i)}},
		}
		if err := decl.AddConsumer(c); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range cfg.consumers {
		if err := decl.AddConsumer(c); err != nil {
			t.Fatal(err)
		}
	}
	if cfg.mutate != nil {
		cfg.mutate(decl)
	}
	state := t.TempDir()
	overrides := map[string]any{
		"database_path": dbPath,
		"quota_path":    filepath.Join(state, "quota.db"),
	}
	// GENDERIZE_CONSUMER_CACHE_TTL runs the suite with another
	// consumer_cache_ttl than kong.yml's (make test runs it with 0 too).
	if ttl := os.Getenv("GENDERIZE_CONSUMER_CACHE_TTL"); ttl != "" {
		n, err := strconv.Atoi(ttl)
		if err != nil {
			t.Fatalf("GENDERIZE_CONSUMER_CACHE_TTL: %v", err)
		}
		overrides["consumer_cache_ttl"] = n
	}
	for k, v := range cfg.overrides {
		overrides[k] = v
	}
	logLevel := slog.LevelWarn
	if testing.Verbose() || cfg.logs != nil {
		logLevel = slog.LevelInfo
	}
	var logWriter io.Writer = testWriter{t}
	if cfg.logs != nil {
		logWriter = io.MultiWriter(logWriter, cfg.logs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := standin.Start(ctx, standin.Options{
		Declarative:     decl,
		PluginPath:      cmp.Or(cfg.plugin, pluginBin),
		StandsFor:       "genderize",
		MaxURIArgs:      cfg.maxURIArgs,
		ConfigOverrides: overrides,
		// Every request comes from 127.0.0.1; X-Forwarded-For from it
		// stands for the many client IPs of key-less callers.
		TrustedIPs:   []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Logger:       slog.New(slog.NewTextHandler(logWriter, &slog.HandlerOptions{Level: logLevel})),
		DebugHeaders: true,
		OnResponse: func(_ *standin.Request, r *standin.Response) {
			n := int64(len(r.PDKCalls))
			for {
				m := maxPDKCalls.Load()
				if n <= m || maxPDKCalls.CompareAndSwap(m, n) {
					break
				}
			}
		},
	})
	if err != nil {
		t.Fatalf("start the stand-in: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	e := &env{
		s:      s,
		decl:   decl,
		base:   "http://" + ln.Addr().String() + "/",
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		state:  state,
		freeN:  cfg.freeConsumers,
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.client.CloseIdleConnections()
		_ = srv.Shutdown(ctx)
		s.Close()
	})
	return e
}

// testWriter sends the stand-in's and the plugin's logs to the test log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// caller is who sends a request: a consumer's key, or none (key-less,
// limited per client IP); ip is the client address either way.
type caller struct {
	key   string
	ip    string
	limit int  // expected X-Rate-Limit-Limit
	month bool // window: the UTC calendar month (keyed) or the UTC day (IP)
}

// freeCaller takes the next pre-declared free consumer.
func (e *env) freeCaller(t testing.TB) caller {
	i := int(e.nextC.Add(1) - 1)
	if i >= e.freeN {
		t.Fatalf("env has only %d free consumers", e.freeN)
	}
	return caller{key: fmt.Sprintf("case-%d-key", i), ip: e.ip(), limit: 2500, month: true}
}

// keylessCaller is a client IP no other case uses.
func (e *env) keylessCaller() caller {
	return caller{ip: e.ip(), limit: 100}
}

func (e *env) ip() string {
	n := e.nextIP.Add(1)
	return fmt.Sprintf("10.%d.%d.%d", n>>16&255, n>>8&255, n&255)
}

// reply is one HTTP response.
type reply struct {
	status  int
	header  http.Header
	body    []byte
	methods []string // PDK methods the plugin called; nil when it did not run
}

// do sends one request with rawQuery exactly as given (still
// percent-encoded) and the caller's key appended.
func (e *env) do(t testing.TB, method string, c caller, rawQuery string, header http.Header) reply {
	t.Helper()
	q := rawQuery
	if c.key != "" {
		if q != "" {
			q += "&"
		}
		q += "apikey=" + c.key
	}
	return e.raw(t, method, "/", q, c.ip, header)
}

func (e *env) get(t testing.TB, c caller, rawQuery string) reply {
	t.Helper()
	return e.do(t, http.MethodGet, c, rawQuery, nil)
}

func (e *env) raw(t testing.TB, method, path, rawQuery, ip string, header http.Header) reply {
	t.Helper()
	req, err := http.NewRequest(method, strings.TrimSuffix(e.base, "/")+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.URL.RawQuery = rawQuery
	for k, vs := range header {
		req.Header[k] = vs
	}
	if ip != "" {
		req.Header.Set("X-Forwarded-For", ip)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s?%.200s: %v", method, path, rawQuery, err)
	}
	return readReply(t, fmt.Sprintf("%s ?%.200s", method, rawQuery), resp)
}

// readReply reads resp whole and checks its PDK calls against the budget.
func readReply(t testing.TB, label string, resp *http.Response) reply {
	t.Helper()
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, body: body}
	if m := resp.Header.Get(standin.HeaderPDKMethods); m != "" {
		r.methods = strings.Split(m, ",")
	}
	if len(r.methods) > pdkBudget {
		t.Errorf("%s: %d PDK calls (%v), budget %d", label, len(r.methods), r.methods, pdkBudget)
	}
	return r
}

// rawTCP sends one request line exactly as given (raw bytes included: Go's
// HTTP client would escape them) over a fresh TCP connection, and reads
// the response.
func (e *env) rawTCP(t testing.TB, requestLine, ip string) reply {
	t.Helper()
	addr := strings.TrimSuffix(strings.TrimPrefix(e.base, "http://"), "/")
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	req := requestLine + "\r\nHost: " + addr + "\r\nConnection: close\r\n"
	if ip != "" {
		req += "X-Forwarded-For: " + ip + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%q: %v", requestLine, err)
	}
	return readReply(t, fmt.Sprintf("%q", requestLine), resp)
}

// exposeHeaders is the contract's Access-Control-Expose-Headers.
const exposeHeaders = "X-Rate-Limit-Limit, X-Rate-Limit-Remaining, X-Rate-Limit-Reset, X-Rate-Reset, Retry-After"

// checkHeaders checks what every response of the plugin carries (contract
// point 6): rate headers for the caller's window, content type, CORS.
func checkHeaders(t testing.TB, r reply, c caller, wantRemaining int) {
	t.Helper()
	if r.methods == nil {
		t.Errorf("response %d %s was not made by the plugin", r.status, r.body)
		return
	}
	for name, want := range map[string]string{
		"Content-Type":                  "application/json; charset=utf-8",
		"Access-Control-Allow-Origin":   "*",
		"Access-Control-Expose-Headers": exposeHeaders,
	} {
		if got := r.header.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	limit := headerInt(t, r, "X-Rate-Limit-Limit")
	remaining := headerInt(t, r, "X-Rate-Limit-Remaining")
	reset := headerInt(t, r, "X-Rate-Limit-Reset")
	if legacy := headerInt(t, r, "X-Rate-Reset"); legacy != reset {
		t.Errorf("X-Rate-Reset = %d, X-Rate-Limit-Reset = %d; they must agree", legacy, reset)
	}
	if limit != c.limit {
		t.Errorf("X-Rate-Limit-Limit = %d, want %d", limit, c.limit)
	}
	if remaining != wantRemaining {
		t.Errorf("X-Rate-Limit-Remaining = %d, want %d", remaining, wantRemaining)
	}
	want := secondsToWindowEnd(c.month)
	if d := reset - want; d < -3 || d > 3 {
		t.Errorf("X-Rate-Limit-Reset = %d, want %d (±3) seconds to the end of the window", reset, want)
	}
}

func headerInt(t testing.TB, r reply, name string) int {
	t.Helper()
	v := r.header.Get(name)
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Errorf("%s = %q, want an integer", name, v)
		return -1
	}
	return n
}

// secondsToWindowEnd is the time left in the UTC month or the UTC day
// (ip_window_seconds 86400 aligned to the epoch).
func secondsToWindowEnd(month bool) int {
	now := time.Now().UTC()
	var end time.Time
	if month {
		end = time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC)
	} else {
		end = time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	}
	return int(end.Sub(now).Seconds() + 0.5)
}

// checkError checks status and body {"error": message}, nothing else.
func checkError(t testing.TB, r reply, status int, message string) {
	t.Helper()
	if r.status != status {
		t.Errorf("status %d, want %d (body %.300s)", r.status, status, r.body)
	}
	var got map[string]any
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Errorf("body %.300q is not JSON: %v", r.body, err)
		return
	}
	if len(got) != 1 || got["error"] != message {
		t.Errorf("body %s, want {\"error\":%q}", r.body, message)
	}
}

// expected is the body the plugin must send for names, from the engine
// over the same database (contract point 7).
func expected(t testing.TB, names []string, country string, batch bool) []byte {
	t.Helper()
	ps, err := eng.Predict(names, country)
	if err != nil {
		t.Fatalf("engine: %v", err)
	}
	if batch {
		return engine.AppendJSONArray(nil, ps)
	}
	if len(ps) != 1 {
		t.Fatalf("a single-name request with %d names", len(ps))
	}
	return ps[0].AppendJSON(nil)
}
