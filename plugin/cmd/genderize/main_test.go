package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/genderize-kong/genderize/plugin/metrics/scrape"
	"github.com/genderize-kong/genderize/schema"
	"github.com/genderize-kong/genderize/testing/binaries"
	"github.com/genderize-kong/genderize/testing/redisserver"
	"github.com/genderize-kong/genderize/testing/standin"
)

// bin is this command, built for the tests; its file name is the
// plugin's name, as Kong requires. dbTool is genderize-db.
var bin, dbTool string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "genderize-cmd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin, dbTool = filepath.Join(dir, "genderize"), filepath.Join(dir, "genderize-db")
	for out, pkg := range map[string]string{bin: "plugin/cmd/genderize", dbTool: "schema/cmd/genderize-db"} {
		if err := binaries.Build(pkg, out); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// takenAddr is a 127.0.0.1 address something listens on until the test
// ends.
func takenAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// freeAddr is a 127.0.0.1 address nothing listened on a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// run runs the binary with args, bounded in time.
func run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// TestDumpUnchanged: -metrics-listen changes nothing of -dump, which Kong
// parses: the same plugin info, nothing on stderr, and nothing listened
// on (the address given is taken, and -dump still succeeds).
func TestDumpUnchanged(t *testing.T) {
	plain, plainErr, err := run(t, "-dump")
	if err != nil {
		t.Fatalf("-dump: %v: %s", err, plainErr)
	}
	with, withErr, err := run(t, "-dump", "-metrics-listen", takenAddr(t))
	if err != nil {
		t.Fatalf("-dump -metrics-listen: %v: %s", err, withErr)
	}
	if withErr != plainErr {
		t.Errorf("stderr with -metrics-listen %q, without %q", withErr, plainErr)
	}
	// go-pdk writes the schema from maps: compare what it says, not its
	// key order.
	var a, b any
	if err := json.Unmarshal([]byte(plain), &a); err != nil {
		t.Fatalf("-dump output %q: %v", plain, err)
	}
	if err := json.Unmarshal([]byte(with), &b); err != nil {
		t.Fatalf("-dump -metrics-listen output %q: %v", with, err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("-dump -metrics-listen says\n%s\nwithout it\n%s", with, plain)
	}
	if strings.Count(with, "\n") != strings.Count(plain, "\n") {
		t.Errorf("-dump -metrics-listen prints %d lines, without %d", strings.Count(with, "\n"), strings.Count(plain, "\n"))
	}
}

// TestMetricsListenFails: an address that cannot be listened on stops the
// plugin server at once, saying why, before it opens Kong's socket.
func TestMetricsListenFails(t *testing.T) {
	taken := takenAddr(t)
	for _, addr := range []string{taken, "127.0.0.1:notaport", "192.0.2.1:9542"} {
		prefix := t.TempDir()
		_, stderr, err := run(t, "-kong-prefix", prefix, "-metrics-listen", addr)
		if err == nil {
			t.Errorf("-metrics-listen %s: the plugin server served", addr)
			continue
		}
		if !strings.Contains(stderr, "metrics listen "+addr) {
			t.Errorf("-metrics-listen %s: stderr %q does not name the metrics address", addr, stderr)
		}
		if _, err := os.Stat(filepath.Join(prefix, "genderize.socket")); err == nil {
			t.Errorf("-metrics-listen %s: the socket was opened", addr)
		}
	}
}

// TestMetricsEndToEnd drives the plugin server through the stand-in over
// HTTP and reads its /metrics as Prometheus would.
func TestMetricsEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	started := time.Now()
	db := namesDB(t)
	_, base, url := startWithMetrics(t, ctx, map[string]any{
		"ip_limit": 2,
		// Eight requests at once per caller, then about one a minute and
		// a half: the ninth in a row is throttled.
		"throttle_burst": 8,
		"throttle_rate":  0.01,
	})

	// Before any request: the recorder's series, at 0, and no database
	// yet (the plugin opens it on first use).
	before, err := scrape.Get(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := before[`genderize_refusals_total{reason="batch_over_remaining"}`]; !ok || v != 0 {
		t.Errorf("before any request: batch_over_remaining %v (present %v), want 0", v, ok)
	}
	if info := before.Prefixed("genderize_database_"); len(info) != 0 {
		t.Errorf("before any request: %q", info)
	}

	type step struct {
		method, query string
		status        int
	}
	steps := []step{
		{"GET", "name=peter&apikey=demo-pro-key", 200},
		{"GET", "name=peter&apikey=demo-pro-key", 200},
		{"GET", "name[]=anna&name[]=luca&name[]=zzzzqx&apikey=demo-pro-key", 200},
		{"GET", "name=peter&apikey=not-a-key", 401},
		{"GET", "name=anna&apikey=demo-paused-key", 402},
		{"GET", "apikey=demo-pro-key", 422},
		{"GET", "name=&apikey=demo-pro-key", 422},
		{"GET", "name=anna&country_id=XX&apikey=demo-pro-key", 422},
		{"OPTIONS", "", 204},
		// Key-less: 2 names a day for this IP.
		{"GET", "name=maria", 200},
		{"GET", "name[]=anna&name[]=luca", 429}, // more than the one left
		{"GET", "name=luca", 200},
		{"GET", "name=john", 429}, // none left
	}
	for range 8 {
		steps = append(steps, step{"GET", "name=anna&apikey=demo-free-key", 200})
	}
	steps = append(steps, step{"GET", "name=anna&apikey=demo-free-key", 429}) // throttled
	for _, st := range steps {
		if status := send(t, ctx, st.method, base+"/?"+st.query); status != st.status {
			t.Fatalf("%s ?%s: %d, want %d", st.method, st.query, status, st.status)
		}
	}

	got, err := scrape.Get(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		`genderize_requests_total{status="200"}`:                   13,
		`genderize_requests_total{status="204"}`:                   1,
		`genderize_requests_total{status="401"}`:                   1,
		`genderize_requests_total{status="402"}`:                   1,
		`genderize_requests_total{status="422"}`:                   3,
		`genderize_requests_total{status="429"}`:                   3,
		`genderize_requests_total{status="500"}`:                   0,
		"genderize_names_total":                                    15,
		`genderize_refusals_total{reason="invalid_key"}`:           1,
		`genderize_refusals_total{reason="inactive_subscription"}`: 1,
		`genderize_refusals_total{reason="missing_name"}`:          1,
		`genderize_refusals_total{reason="invalid_name"}`:          1,
		`genderize_refusals_total{reason="invalid_country"}`:       1,
		`genderize_refusals_total{reason="limit_reached"}`:         1,
		`genderize_refusals_total{reason="throttled"}`:             1,
		`genderize_refusals_total{reason="batch_over_remaining"}`:  1,
		"genderize_request_duration_seconds_count":                 float64(len(steps)),
		`genderize_quota_store_errors_total{policy="local"}`:       0,
	}
	for series, w := range want {
		if v, ok := got[series]; !ok || v != w {
			t.Errorf("%s = %v (present %v), want %v", series, v, ok, w)
		}
	}
	if got["genderize_request_duration_seconds_sum"] <= 0 {
		t.Errorf("request duration sum %v", got["genderize_request_duration_seconds_sum"])
	}
	if n := got[`genderize_quota_store_duration_seconds_count{policy="local"}`]; n < 1 {
		t.Errorf("quota store calls timed: %v", n)
	}
	// Every name with a key is looked up in the cache once per request
	// that predicts it: at least the 15 names answered.
	if h, m := got["genderize_cache_hits_total"], got["genderize_cache_misses_total"]; h+m < 15 || m < 1 {
		t.Errorf("cache hits %v misses %v: want at least 15 lookups and a miss", h, m)
	}
	info := got.Prefixed("genderize_database_info{")
	wantInfo := fmt.Sprintf(`path=%q,schema_version="%d"}`, db, schema.Version)
	if len(info) != 1 || !strings.Contains(info[0], wantInfo) || !strings.HasSuffix(info[0], " 1") || strings.Contains(info[0], `keys="0"`) {
		t.Errorf("database info %q, want one series with %s and keys", info, wantInfo)
	}
	loaded := got["genderize_database_loaded_timestamp_seconds"]
	if loaded < float64(started.Unix()) || loaded > float64(time.Now().Unix()+1) {
		t.Errorf("database loaded at %v, want during the test (from %d)", loaded, started.Unix())
	}
	for _, series := range []string{"go_goroutines", "process_cpu_seconds_total", "process_resident_memory_bytes"} {
		if _, ok := got[series]; !ok {
			t.Errorf("%s missing", series)
		}
	}
	for _, l := range got.Prefixed("genderize_") {
		t.Log(l)
	}
}

// namesDB is $GENDERIZE_DB made absolute; the test is skipped without it.
func namesDB(t *testing.T) string {
	t.Helper()
	db := os.Getenv("GENDERIZE_DB")
	if db == "" {
		t.Skip("GENDERIZE_DB is not set (make test sets it)")
	}
	db, err := filepath.Abs(db)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// startWithMetrics starts the stand-in with the plugin server serving its
// metrics on a free port and overrides on kong.yml's plugin config, and
// serves it over HTTP until the test ends. It returns the base URL and
// the metrics URL.
func startWithMetrics(t *testing.T, ctx context.Context, overrides map[string]any) (s *standin.Standin, base, metricsURL string) {
	t.Helper()
	decl, err := standin.LoadDeclarative(filepath.Join("..", "..", "..", "kong", "kong.yml"))
	if err != nil {
		t.Fatal(err)
	}
	config := map[string]any{
		"database_path": namesDB(t),
		"quota_path":    filepath.Join(t.TempDir(), "quota.db"),
	}
	for k, v := range overrides {
		config[k] = v
	}
	addr := freeAddr(t)
	s, err = standin.Start(ctx, standin.Options{
		Declarative:     decl,
		PluginPath:      bin,
		PluginArgs:      []string{"-metrics-listen", addr},
		ConfigOverrides: config,
		Logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL, "http://" + addr + "/metrics"
}

// send makes one request and returns its status.
func send(t *testing.T, ctx context.Context, method, url string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if method == "OPTIONS" {
		req.Header.Set("Origin", "https://example.com")
		req.Header.Set("Access-Control-Request-Method", "GET")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestMetricsRedisOutage: the redis policy's calls are timed, and its
// failures counted, while Redis is down (fault_tolerant off: 503).
func TestMetricsRedisOutage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	redis := redisserver.Run(t, redisserver.Options{})
	_, base, url := startWithMetrics(t, ctx, map[string]any{
		"quota_policy":   "redis",
		"redis":          map[string]any{"host": "127.0.0.1", "port": redis.Port, "timeout": 500},
		"fault_tolerant": false,
	})
	query := base + "/?name=peter&apikey=demo-pro-key"
	if status := send(t, ctx, "GET", query); status != 200 {
		t.Fatalf("with Redis up: %d", status)
	}
	redis.Stop()
	if status := send(t, ctx, "GET", query); status != 503 {
		t.Fatalf("with Redis down: %d, want 503", status)
	}
	got, err := scrape.Get(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	for series, want := range map[string]float64{
		`genderize_requests_total{status="200"}`:                       1,
		`genderize_requests_total{status="503"}`:                       1,
		"genderize_names_total":                                        1,
		`genderize_quota_store_errors_total{policy="redis"}`:           1,
		`genderize_quota_store_duration_seconds_count{policy="redis"}`: 2,
		`genderize_quota_store_errors_total{policy="local"}`:           0,
	} {
		if got[series] != want {
			t.Errorf("%s = %v, want %v", series, got[series], want)
		}
	}
}

// TestMetricsFollowSwap: the database metrics describe whichever database
// serves now; a database renamed over the file and reloaded (SIGHUP) shows
// at the next scrape, with its own load time.
func TestMetricsFollowSwap(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	live := filepath.Join(t.TempDir(), "names.db")
	binaries.NamesDB(t, dbTool, live, "Anna\tFR\tF\t300\nPeter\tFR\tM\t500\n")
	s, base, url := startWithMetrics(t, ctx, map[string]any{"database_path": live})
	if status := send(t, ctx, "GET", base+"/?name=anna&apikey=demo-pro-key"); status != 200 {
		t.Fatalf("status %d", status)
	}
	info := func() ([]string, float64) {
		t.Helper()
		got, err := scrape.Get(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		return got.Prefixed("genderize_database_info{"), got["genderize_database_loaded_timestamp_seconds"]
	}
	before, loadedBefore := info()
	if len(before) != 1 || !strings.Contains(before[0], `countries="1",keys="2",path=`+strconv.Quote(live)) {
		t.Fatalf("first database described as %q", before)
	}

	binaries.NamesDB(t, dbTool, live, "Anna\tFR\tF\t300\nPeter\tDE\tM\t500\nLuca\tIT\tM\t200\n")
	if err := syscall.Kill(s.PluginPID(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	// The reload runs as the signal arrives; allow it 10 s, bounded.
	var after []string
	var loadedAfter float64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if after, loadedAfter = info(); len(after) == 1 && strings.Contains(after[0], `countries="3",keys="3"`) {
			break
		}
	}
	if len(after) != 1 || !strings.Contains(after[0], `countries="3",keys="3"`) {
		t.Fatalf("after the swap: %q, want one series with 3 countries and 3 keys", after)
	}
	if loadedAfter <= loadedBefore {
		t.Errorf("loaded timestamp %v after the swap, %v before", loadedAfter, loadedBefore)
	}
}
