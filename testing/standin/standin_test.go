package standin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/genderize-kong/genderize/testing/binaries"
)

var probeBin, noopBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "standin-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	probeBin = filepath.Join(dir, "pdkprobe")
	noopBin = filepath.Join(dir, "noop")
	for bin, pkg := range map[string]string{probeBin: "testing/standin/testdata/pdkprobe", noopBin: "testing/cmd/noop"} {
		if err := binaries.Build(pkg, bin); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const probeYML = `
_format_version: "3.0"
routes:
  - name: probe
    paths: ["~/$"]
    methods: [GET, OPTIONS]
    plugins:
      - name: key-auth
        config: {key_names: [apikey], key_in_query: true, key_in_header: false, anonymous: anonymous, run_on_preflight: false}
      - name: pdkprobe
        config: {max_batch: 7, default_plan: gold}
consumers:
  - username: anonymous
  - username: demo-pro
    custom_id: cust-1
    tags: ["plan:pro"]
    keyauth_credentials:
      - key: pro-key
`

func startProbe(t *testing.T) *Standin {
	t.Helper()
	d, err := ParseDeclarative([]byte(probeYML))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := Start(ctx, Options{
		Declarative: d,
		PluginPath:  probeBin,
		TrustedIPs:  []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func request(rawQuery string, header http.Header) *Request {
	if header == nil {
		header = http.Header{}
	}
	return &Request{
		Method: http.MethodGet, Scheme: "http", Host: "127.0.0.1", Port: 8000, Path: "/",
		RawQuery: rawQuery, Header: header, HTTPVersion: 1.1,
		RemoteAddr: netip.MustParseAddrPort("127.0.0.1:50000"),
	}
}

func probe(t *testing.T, s *Standin, r *Request) (*Response, map[string]any) {
	t.Helper()
	resp := s.Handle(context.Background(), r)
	var out map[string]any
	if resp.Status == 200 {
		if err := json.Unmarshal(resp.Body, &out); err != nil {
			t.Fatalf("body %s: %v", resp.Body, err)
		}
	}
	return resp, out
}

// TestPDKAnswers calls PDK methods through the real go-pdk client and
// checks Kong's answers.
func TestPDKAnswers(t *testing.T) {
	s := startProbe(t)
	resp, out := probe(t, s, request("mode=all&name%5B%5D=a+b&apikey=pro-key&flag",
		http.Header{"X-Probe": {"one", "two"}, "X-Forwarded-For": {"203.0.113.9, 198.51.100.7"}}))
	if resp.Status != 200 {
		t.Fatalf("status %d %s", resp.Status, resp.Body)
	}
	cons := out["consumer"].(map[string]any)
	want := map[string]any{
		"ip":           "127.0.0.1",
		"forwarded_ip": "198.51.100.7", // real_ip_recursive off: the last address
		"raw_query":    "mode=all&name%5B%5D=a+b&apikey=pro-key&flag",
		// Kong answers the bare "flag" with true; go-pdk drops
		// non-string values from the map.
		"query":           map[string]any{"mode": []any{"all"}, "name[]": []any{"a b"}, "apikey": []any{"pro-key"}},
		"header":          "one",
		"headers_x_probe": []any{"one", "two"},
		"method":          "GET",
		"path":            "/",
		"scheme":          "http",
		"port":            8000.0,
		"path_with_query": "/?mode=all&name%5B%5D=a+b&apikey=pro-key&flag",
		"http_version":    1.1,
		"route_name":      "probe",
		"ctx_get":         "v",
		"trusted":         true,
		"nginx_var":       "GET",
		"max_batch":       7.0,
		"default_plan":    "gold",
		"credential":      map[string]any{"id": stableID("keyauth_credentials", "pro-key"), "consumer_id": ""},
	}
	for k, v := range want {
		if !reflect.DeepEqual(out[k], v) {
			t.Errorf("%s = %#v, want %#v", k, out[k], v)
		}
	}
	if cons["username"] != "demo-pro" || cons["custom_id"] != "cust-1" || cons["id"] != stableID("consumers", "demo-pro\x00cust-1") {
		t.Errorf("consumer %v", cons)
	}
	if tags, _ := cons["tags"].([]any); len(tags) != 1 || tags[0] != "plan:pro" {
		t.Errorf("consumer tags %v", cons["tags"])
	}
	if lc := out["load_consumer"].(map[string]any); lc["username"] != "demo-pro" {
		t.Errorf("load_consumer %v", lc)
	}
	if id, _ := out["node_id"].(string); len(id) != 36 {
		t.Errorf("node id %q", id)
	}
	if got := resp.Header.Values("X-Multi"); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("X-Multi %v", got)
	}
	if resp.Header.Get("X-Before-Exit") != "kept" {
		t.Errorf("a header set before exit was lost: %v", resp.Header)
	}
	if resp.Header.Get("WWW-Authenticate") != "" {
		t.Errorf("keyed request carries WWW-Authenticate")
	}
	if n := len(resp.PDKCalls); n != 25 {
		t.Errorf("%d PDK calls counted: %v", n, resp.PDKCalls)
	}
}

func TestAnonymousAndPreflight(t *testing.T) {
	s := startProbe(t)
	resp, out := probe(t, s, request("mode=all", nil))
	if resp.Status != 200 {
		t.Fatalf("status %d", resp.Status)
	}
	if c := out["consumer"].(map[string]any); c["username"] != "anonymous" {
		t.Errorf("consumer %v, want anonymous", c)
	}
	if out["credential"].(map[string]any)["id"] != "" {
		t.Errorf("credential %v, want none", out["credential"])
	}
	if resp.Header.Get("WWW-Authenticate") != `Key realm="kong"` {
		t.Errorf("WWW-Authenticate %q", resp.Header.Get("WWW-Authenticate"))
	}
	r := request("mode=all&apikey=pro-key", nil)
	r.Method = http.MethodOptions
	resp, out = probe(t, s, r)
	if c := out["consumer"].(map[string]any); c["id"] != "" {
		t.Errorf("preflight consumer %v, want none (run_on_preflight false)", c)
	}
}

func TestKongOwnAnswers(t *testing.T) {
	s := startProbe(t)
	for _, tc := range []struct {
		method, path, query string
		status              int
		body                string
	}{
		{"POST", "/", "", 404, `{"message":"no Route matched with those values"}`},
		{"GET", "/x", "", 404, `{"message":"no Route matched with those values"}`},
		{"GET", "/", "mode=noexit", 503, `{"message":"no Service found with those values"}`},
		{"GET", "/", "mode=badstatus", 500, `{"message":"An unexpected error occurred"}`},
	} {
		r := request(tc.query, nil)
		r.Method, r.Path = tc.method, tc.path
		resp := s.Handle(context.Background(), r)
		if resp.Status != tc.status || string(resp.Body) != tc.body {
			t.Errorf("%s %s?%s: %d %s, want %d %s", tc.method, tc.path, tc.query, resp.Status, resp.Body, tc.status, tc.body)
		}
	}
}

// TestInstanceAndRestart: one instance serves every event; a server that
// dies is respawned and gets a new instance.
func TestInstanceAndRestart(t *testing.T) {
	s := startProbe(t)
	var first map[string]any
	for i := 1; i <= 5; i++ {
		_, out := probe(t, s, request("", nil))
		if out["events"] != float64(i) {
			t.Fatalf("event %d ran on an instance that saw %v events", i, out["events"])
		}
		first = out
	}
	pid := int(first["pid"].(float64))
	resp := s.Handle(context.Background(), request("mode=crash", nil))
	if resp.Status != 500 {
		t.Errorf("a crash mid-request: %d %s, want 500", resp.Status, resp.Body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.PluginPID() == 0 || s.PluginPID() == pid {
		if time.Now().After(deadline) {
			t.Fatal("not respawned")
		}
		time.Sleep(10 * time.Millisecond)
	}
	resp, out := probe(t, s, request("", nil))
	if resp.Status != 200 || out["events"] != 1.0 || int(out["pid"].(float64)) == pid {
		t.Errorf("after the restart: %d %v", resp.Status, out)
	}
}

func TestStopKillsServer(t *testing.T) {
	s := startProbe(t)
	pid := s.PluginPID()
	s.Close()
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("plugin server %d still runs after Close", pid)
	}
}

func TestSchemaViolation(t *testing.T) {
	d, err := ParseDeclarative([]byte(strings.Replace(probeYML, "default_plan: gold", "default_plan: gold, typo_field: 1", 1)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Start(context.Background(), Options{Declarative: d, PluginPath: probeBin, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err == nil || !strings.Contains(err.Error(), "config.typo_field: unknown field") {
		t.Errorf("Start: %v, want a schema violation", err)
	}
}

func TestNoopServesOverHTTP(t *testing.T) {
	d, err := ParseDeclarative([]byte(strings.Replace(probeYML, "name: pdkprobe", "name: genderize", 1)))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(context.Background(), Options{Declarative: d, PluginPath: noopBin, StandsFor: "genderize", DebugHeaders: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res := Load(context.Background(), s, LoadOptions{Conns: 4, Duration: 30 * time.Second, MaxRequests: 200, NamesPerRequest: 1, Request: func(int64) *Request { return request("name=a", nil) }})
	if res.Requests != 200 || res.Statuses[200] != 200 || res.MaxPDKCalls != 1 {
		t.Errorf("load: %+v", res)
	}
}
