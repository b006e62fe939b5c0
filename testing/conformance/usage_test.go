package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genderize-kong/genderize/testing/redisserver"
	"github.com/genderize-kong/genderize/testing/standin"
)

// usageRow is the part of genderize-usage -json a test checks.
type usageRow struct {
	Caller     string `json:"caller"`
	ConsumerID string `json:"consumer_id"`
	Username   string `json:"username"`
	IP         string `json:"ip"`
	Plan       string `json:"plan"`
	Limit      *int   `json:"limit"`
	Used       int    `json:"used"`
	Remaining  *int   `json:"remaining"`
	Ended      bool   `json:"ended"`
}

// TestUsageCommand fills the quota store (the local file, then Redis)
// through the stand-in and the plugin, then reads it with genderize-usage
// as an administrator would, and resets one consumer.
func TestUsageCommand(t *testing.T) {
	tool := buildTool(t, "plugin/cmd/genderize-usage")
	t.Run("local", func(t *testing.T) { testUsage(t, tool, "local") })
	t.Run("redis", func(t *testing.T) { testUsage(t, tool, "redis") })
}

func testUsage(t *testing.T, tool, policy string) {
	consumers := []standin.Consumer{
		{ID: "6f1c1a52-0000-4000-8000-000000000001", Username: "usage-basic", Tags: []string{"plan:basic", "subscription:active"},
			KeyauthCredentials: []standin.Credential{{Key: "usage-basic-key"}}},
		{ID: "6f1c1a52-0000-4000-8000-000000000002", Username: "usage-free", Tags: []string{"subscription:active"},
			KeyauthCredentials: []standin.Credential{{Key: "usage-free-key"}}},
	}
	overrides := map[string]any{}
	redisPort := 0
	if policy == "redis" {
		srv := redisserver.Run(t, redisserver.Options{})
		redisPort = srv.Port
		overrides = map[string]any{
			"quota_policy":   "redis",
			"redis":          map[string]any{"host": "127.0.0.1", "port": srv.Port, "timeout": 2000},
			"fault_tolerant": false,
		}
	}
	e := newEnv(t, envConfig{consumers: consumers, overrides: overrides})
	basic := caller{key: "usage-basic-key", ip: e.ip(), limit: 100000, month: true}
	free := caller{key: "usage-free-key", ip: e.ip(), limit: 2500, month: true}
	anon := e.keylessCaller()
	for _, s := range []struct {
		c     caller
		query string
	}{
		{basic, "name=peter"},
		{basic, batchQuery("anna", "luca", "maria")},
		{free, batchQuery(repeatNames(5)...)},
		{anon, batchQuery("kim", "jean")},
		{anon, "name=%20"}, // refused: counts nothing
	} {
		e.get(t, s.c, s.query)
	}

	// The admin's kong.yml: the shipped one with this node's quota file
	// and these consumers.
	quotaPath := filepath.Join(e.state, "quota.db")
	yml := strings.Replace(string(kongYML), "quota_path: /var/lib/genderize/quota.db", "quota_path: "+quotaPath, 1)
	if yml == string(kongYML) {
		t.Fatal("kong.yml has no quota_path line to point at the test's file")
	}
	if policy == "redis" {
		before := yml
		yml = strings.Replace(yml, "quota_policy: local", "quota_policy: redis", 1)
		yml = strings.Replace(yml, "redis:\n            port: 6379\n", fmt.Sprintf("redis:\n            host: 127.0.0.1\n            port: %d\n", redisPort), 1)
		if strings.Count(yml, "127.0.0.1") != strings.Count(before, "127.0.0.1")+1 || !strings.Contains(yml, "quota_policy: redis") {
			t.Fatal("kong.yml has no quota_policy and redis record to point at the test's server")
		}
	}
	for _, c := range consumers {
		yml += "  - id: " + c.ID + "\n    username: " + c.Username + "\n    tags: [\"" + strings.Join(c.Tags, `", "`) + "\"]\n"
	}
	ymlPath := filepath.Join(t.TempDir(), "kong.yml")
	if err := os.WriteFile(ymlPath, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	usage := func(args ...string) (string, int) {
		cmd := exec.Command(tool, append(args, "-kong-yml", ymlPath)...)
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String() + stderr.String(), code
	}
	list := func(args ...string) map[string]usageRow {
		out, code := usage(append([]string{"-json"}, args...)...)
		if code != 0 {
			t.Fatalf("genderize-usage %v: exit %d\n%s", args, code, out)
		}
		var rows []usageRow
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatalf("genderize-usage -json: %v\n%s", err, out)
		}
		m := map[string]usageRow{}
		for _, r := range rows {
			m[r.Caller+" "+r.ConsumerID+r.IP] = r
		}
		return m
	}
	intp := func(p *int) int {
		if p == nil {
			return -1
		}
		return *p
	}
	check := func(rows map[string]usageRow, key, plan string, limit, used int) {
		t.Helper()
		r, ok := rows[key]
		if !ok {
			t.Errorf("no row for %s in %v", key, rows)
			return
		}
		if r.Plan != plan || intp(r.Limit) != limit || r.Used != used || intp(r.Remaining) != limit-used || r.Ended {
			t.Errorf("%s: %+v (limit %d, remaining %d), want plan %s limit %d used %d", key, r, intp(r.Limit), intp(r.Remaining), plan, limit, used)
		}
	}
	basicKey, freeKey, anonKey := "consumer "+consumers[0].ID, "consumer "+consumers[1].ID, "ip "+anon.ip
	all := list()
	if len(all) != 3 {
		t.Errorf("want 3 callers, got %v", all)
	}
	check(all, basicKey, "basic", 100000, 4)
	check(all, freeKey, "free", 2500, 5)
	check(all, anonKey, "key-less", 100, 2)
	if u := all[basicKey].Username; u != "usage-basic" {
		t.Errorf("username %q", u)
	}
	// One caller, by username or id; a client IP.
	for _, args := range [][]string{{"-consumer", "usage-basic"}, {"--consumer", consumers[0].ID}} {
		if rows := list(args...); len(rows) != 1 {
			t.Errorf("%v: %v", args, rows)
		} else {
			check(rows, basicKey, "basic", 100000, 4)
		}
	}
	if rows := list("-ip", anon.ip); len(rows) != 1 {
		t.Errorf("-ip: %v", rows)
	}
	table, code := usage()
	t.Logf("genderize-usage (%s):\n%s", policy, table)
	if code != 0 || !strings.Contains(table, "consumer usage-basic ("+consumers[0].ID+")") || !strings.Contains(table, "WINDOW END") {
		t.Errorf("table (exit %d):\n%s", code, table)
	}

	// Reset: refused without -yes, bad usage refused, then done.
	for _, args := range [][]string{
		{"reset", "-consumer", "usage-basic"},
		{"reset", "-yes"},
		{"reset", "-consumer", "usage-basic", "-ip", "10.0.0.1", "-yes"},
		{"-ip", "not-an-ip"},
	} {
		if out, code := usage(args...); code == 0 {
			t.Errorf("%v succeeded:\n%s", args, out)
		}
	}
	check(list(), basicKey, "basic", 100000, 4)
	out, code := usage("reset", "--consumer", "usage-basic", "--yes")
	if code != 0 || !strings.Contains(out, "1 window counters removed") {
		t.Fatalf("reset: exit %d\n%s", code, out)
	}
	after := list()
	if _, ok := after[basicKey]; ok || len(after) != 2 {
		t.Errorf("after reset: %v", after)
	}
	check(after, freeKey, "free", 2500, 5)
	// The running plugin sees the reset at once.
	r := e.get(t, basic, "name=peter")
	if got := headerInt(t, r, "X-Rate-Limit-Remaining"); got != 100000-1 {
		t.Errorf("after reset the plugin says %d remaining, want %d", got, 100000-1)
	}
}
