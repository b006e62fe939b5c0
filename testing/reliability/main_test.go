// Package reliability checks with real processes that quotas are exact
// under load, survive crashes and behave as documented when Redis fails:
// the current plugin binary (built here) as Kong runs it, driven by the Kong
// stand-in over the plugin-server protocol and real HTTP on 127.0.0.1, the
// real names.db (GENDERIZE_DB), and real redis-servers on free ports
// (testing/redisserver). Every loop is bounded in count and time.
package reliability

import (
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
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/genderize-kong/genderize/testing/binaries"
	"github.com/genderize-kong/genderize/testing/standin"
)

var (
	pluginBin string
	dbPath    string
	kongYML   []byte
)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	dbPath = os.Getenv("GENDERIZE_DB")
	if dbPath == "" {
		fmt.Fprintln(os.Stderr, "reliability: GENDERIZE_DB is not set; build the database (make db) and run `make test`, or set GENDERIZE_DB to the absolute path of names.db")
		return 1
	}
	if _, err := os.Stat(dbPath); err != nil {
		fmt.Fprintf(os.Stderr, "reliability: GENDERIZE_DB: %v\n", err)
		return 1
	}
	root, err := binaries.Root()
	if err != nil {
		fmt.Fprintln(os.Stderr, "reliability:", err)
		return 1
	}
	tmp, err := os.MkdirTemp("", "reliability-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "reliability:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	// The current code, built as bin/genderize is; its file name is the
	// plugin's name, as Kong requires.
	pluginBin = filepath.Join(tmp, "genderize")
	if err := binaries.Build("plugin/cmd/genderize", pluginBin); err != nil {
		fmt.Fprintln(os.Stderr, "reliability: the plugin:", err)
		return 1
	}
	if kongYML, err = os.ReadFile(filepath.Join(root, "kong", "kong.yml")); err != nil {
		fmt.Fprintln(os.Stderr, "reliability:", err)
		return 1
	}
	return m.Run()
}

// The load's caller: one consumer on a plan whose quota the test sets.
const (
	loadKey  = "reliability-key"
	loadUser = "reliability"
)

// nodeConfig shapes one Kong node.
type nodeConfig struct {
	// quota is the plan's monthly quota and the key-less limit per IP.
	quota int
	// policy is quota_policy: "local" (quotaPath) or "redis".
	policy    string
	quotaPath string
	redisPort int
	// redisTimeout is redis.timeout in milliseconds.
	redisTimeout  int
	faultTolerant bool
	// logs, when set, also receives the stand-in's and the plugin's logs.
	logs io.Writer
	// throttleBurst is throttle_burst (the rate is a million a second);
	// default 1<<30, never reached.
	throttleBurst int
}

// node is one Kong node: a stand-in with its own plugin process, serving
// HTTP on 127.0.0.1.
type node struct {
	s      *standin.Standin
	base   string
	client *http.Client
	srv    *http.Server
}

// kongConfig is kong/kong.yml with the test's plugin config and load
// consumer, written to dir as the kong.yml the node runs.
// mutate, when set, changes it before it is written.
func kongConfig(t testing.TB, dir string, cfg nodeConfig, mutate func(*standin.Declarative)) *standin.Declarative {
	t.Helper()
	decl, err := standin.ParseDeclarative(kongYML)
	if err != nil {
		t.Fatalf("kong.yml: %v", err)
	}
	found := false
	for i := range decl.Routes {
		for j := range decl.Routes[i].Plugins {
			p := &decl.Routes[i].Plugins[j]
			if p.Name != "genderize" {
				continue
			}
			found = true
			c := p.Config
			c["database_path"] = dbPath
			c["plans"] = map[string]any{"free": map[string]any{"quota": cfg.quota}}
			c["default_plan"] = "free"
			c["ip_limit"] = cfg.quota
			// The load is many requests per second from one caller:
			// the throttle is not what is tested here.
			c["throttle_rate"] = 1e6
			c["throttle_burst"] = cmp.Or(cfg.throttleBurst, 1<<30)
			c["quota_policy"] = cfg.policy
			c["quota_path"] = cfg.quotaPath
			if cfg.policy == "redis" {
				c["redis"] = map[string]any{"host": "127.0.0.1", "port": cfg.redisPort, "timeout": cfg.redisTimeout}
				c["fault_tolerant"] = cfg.faultTolerant
			}
		}
	}
	if !found {
		t.Fatal("kong.yml has no genderize plugin")
	}
	if err := decl.AddConsumer(standin.Consumer{
		Username:           loadUser,
		Tags:               []string{"plan:free", "subscription:active"},
		KeyauthCredentials: []standin.Credential{{Key: loadKey}},
	}); err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		mutate(decl)
	}
	out, err := yaml.Marshal(decl)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "kong.yml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	decl, err = standin.LoadDeclarative(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return decl
}

func startNode(t testing.TB, cfg nodeConfig) *node {
	t.Helper()
	return startNodeWith(t, cfg, nil, nil)
}

// startNodeWith starts a node whose plugin server gets pluginArgs, its
// kong.yml changed by mutate.
func startNodeWith(t testing.TB, cfg nodeConfig, pluginArgs []string, mutate func(*standin.Declarative)) *node {
	t.Helper()
	if cfg.quotaPath == "" {
		cfg.quotaPath = filepath.Join(t.TempDir(), "quota.db")
	}
	if cfg.redisTimeout == 0 {
		cfg.redisTimeout = 2000
	}
	decl := kongConfig(t, t.TempDir(), cfg, mutate)
	level := slog.LevelWarn
	if testing.Verbose() {
		level = slog.LevelInfo
	}
	var w io.Writer = testWriter{t}
	if cfg.logs != nil {
		w = io.MultiWriter(w, cfg.logs)
		level = slog.LevelInfo
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := standin.Start(ctx, standin.Options{
		Declarative: decl,
		PluginPath:  pluginBin,
		PluginArgs:  pluginArgs,
		// X-Forwarded-For from 127.0.0.1 stands for key-less callers'
		// addresses.
		TrustedIPs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Logger:     slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})),
	})
	if err != nil {
		t.Fatalf("start the stand-in: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	n := &node{
		s:      s,
		base:   "http://" + ln.Addr().String() + "/",
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 128}},
		srv:    &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second},
	}
	go n.srv.Serve(ln)
	t.Cleanup(n.close)
	return n
}

func (n *node) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n.client.CloseIdleConnections()
	_ = n.srv.Shutdown(ctx)
	n.s.Close()
}

// testWriter sends logs to the test log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// who sends a request: the load consumer's key, or none (key-less) from
// ip.
type who struct {
	key string
	ip  string
}

var (
	keyed   = who{key: loadKey, ip: "198.51.100.1"}
	keyless = who{ip: "203.0.113.7"}
)

// reply is what one request got.
type reply struct {
	status    int
	body      []byte
	remaining int // X-Rate-Limit-Remaining; -1 when absent
	took      time.Duration
	err       error // transport failure: no HTTP answer
}

// names to send, real and frequent, so that every request makes the
// engine work.
var nameList = []string{"peter", "maria", "anna", "john", "lukas", "sofia", "ali", "mei", "olga", "jan",
	"emma", "noah", "andrea", "kim", "sasha", "yuki", "carlos", "fatima", "ivan", "lena"}

// query is a request for n names (n == 1: the single-name form), seeded
// by seq so requests differ; n == 0 sends an empty name (422, a peek).
func query(c who, n, seq int) string {
	var b strings.Builder
	switch n {
	case 0:
		b.WriteString("name=")
	case 1:
		b.WriteString("name=" + nameList[seq%len(nameList)])
	default:
		for i := range n {
			if i > 0 {
				b.WriteByte('&')
			}
			b.WriteString("name%5B%5D=" + nameList[(seq+i)%len(nameList)])
		}
	}
	if c.key != "" {
		b.WriteString("&apikey=" + c.key)
	}
	return b.String()
}

// get sends one request for n names.
func (n *node) get(ctx context.Context, c who, names, seq int) reply {
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.base, nil)
	if err != nil {
		return reply{err: err}
	}
	req.URL.RawQuery = query(c, names, seq)
	req.Header.Set("X-Forwarded-For", c.ip)
	resp, err := n.client.Do(req)
	if err != nil {
		return reply{err: err, took: time.Since(start)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, body: body, remaining: -1, took: time.Since(start), err: err}
	if v, err := strconv.Atoi(resp.Header.Get("X-Rate-Limit-Remaining")); err == nil {
		r.remaining = v
	}
	return r
}

// remaining asks a node what is left of c's quota without consuming: an
// empty name is a 422 carrying the window as the store sees it.
func (n *node) remaining(t testing.TB, c who) int {
	t.Helper()
	r := n.get(context.Background(), c, 0, 0)
	if r.err != nil || r.status != 422 || r.remaining < 0 {
		t.Fatalf("peek: status %d remaining %d body %s err %v", r.status, r.remaining, r.body, r.err)
	}
	return r.remaining
}

// Bodies of SPEC.md's refusals the load may meet.
const (
	bodyLimitReached = `{"error":"Request limit reached"}`
	bodyTooLow       = `{"error":"Request too low to process"}`
	bodyUnavailable  = `{"error":"Service temporarily unavailable"}`
)

// checkAnswer checks a 200's body: n predictions, an array for a batch.
func checkAnswer(body []byte, n int) error {
	if n == 1 {
		var p struct {
			Name *string `json:"name"`
		}
		if err := json.Unmarshal(body, &p); err != nil || p.Name == nil {
			return fmt.Errorf("single-name answer %.200s: %v", body, err)
		}
		return nil
	}
	var ps []struct {
		Name *string `json:"name"`
	}
	if err := json.Unmarshal(body, &ps); err != nil || len(ps) != n {
		return fmt.Errorf("batch of %d answered %d predictions (%.200s): %v", n, len(ps), body, err)
	}
	return nil
}

// tally counts what a load got, in names.
type tally struct {
	mu       sync.Mutex
	answered int // names in 200s
	refused  int // requests refused 429
	failed   int // names of requests that got no answer of the plugin (in flight at a crash)
	statuses map[int]int
	slowest  time.Duration
}

func (ta *tally) add(r reply, names int) {
	ta.mu.Lock()
	defer ta.mu.Unlock()
	if ta.statuses == nil {
		ta.statuses = map[int]int{}
	}
	ta.statuses[r.status]++
	ta.slowest = max(ta.slowest, r.took)
	switch {
	case r.err == nil && r.status == 200:
		ta.answered += names
	case r.err == nil && r.status == 429:
		ta.refused++
	default:
		ta.failed += names
	}
}
