package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/genderize-kong/genderize/plugin/quota"
)

const testYML = `_format_version: "3.0"
routes:
  - name: genderize
    paths: ["~/$"]
    plugins:
      - name: key-auth
      - name: genderize
        config:
          plans:
            gold: {quota: 50}
            free: {quota: 10}
          default_plan: free
          ip_limit: 5
          quota_path: QUOTA
consumers:
  - username: anonymous
  - id: 11111111-1111-4111-8111-111111111111
    username: goldie
    tags: ["plan:gold", "subscription:active"]
  - id: 22222222-2222-4222-8222-222222222222
    username: plain
  - username: noid
  - id: 33333333-3333-4333-8333-333333333333
    username: twoplans
    tags: ["plan:gold", "plan:free"]
`

func TestRun(t *testing.T) {
	dir := t.TempDir()
	quotaPath := filepath.Join(dir, "quota.db")
	yml := filepath.Join(dir, "kong.yml")
	os.WriteFile(yml, []byte(strings.Replace(testYML, "QUOTA", quotaPath, 1)), 0o644)
	now := time.Now()
	s, err := quota.OpenLocal(quotaPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key string
		w   quota.Window
		n   int
	}{
		{"consumer:11111111-1111-4111-8111-111111111111", quota.Month(now), 7},
		{"consumer:22222222-2222-4222-8222-222222222222", quota.Month(now), 12},
		{"consumer:33333333-3333-4333-8333-333333333333", quota.Month(now), 1},
		{"consumer:99999999-9999-4999-8999-999999999999", quota.Month(now), 2},
		{"ip:2001:db8::1", quota.Fixed(now, 24*time.Hour), 4},
	} {
		if _, err := s.AllowN(context.Background(), c.key, 100, c.w, c.n); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	ctx := context.Background()

	tests := []struct {
		args []string
		want []string // lines (fields joined by one space) the output must hold
		err  string
	}{
		{args: nil, want: []string{
			"consumer goldie (11111111-1111-4111-8111-111111111111) gold 50 7 43",
			"consumer plain (22222222-2222-4222-8222-222222222222) free 10 12 0", // over: remaining 0
			"consumer twoplans (33333333-3333-4333-8333-333333333333) ? ? 1 ?",   // the plugin refuses it
			"consumer 99999999-9999-4999-8999-999999999999 ? ? 2 ?",              // not in kong.yml
			"ip 2001:db8::1 key-less 5 4 1",
		}},
		{args: []string{"-consumer", "goldie"}, want: []string{"consumer goldie (11111111-1111-4111-8111-111111111111) gold 50 7 43"}},
		{args: []string{"--ip", "2001:DB8:0::1"}, want: []string{"ip 2001:db8::1 key-less 5 4 1"}},
		{args: []string{"-consumer", "nobody-here"}, want: []string{"(no counters)"}},
		{args: []string{"-consumer", "noid"}, err: "has no id"},
		{args: []string{"-ip", "300.1.1.1"}, err: "not an IP address"},
		{args: []string{"-consumer", "goldie", "-ip", "10.0.0.1"}, err: "bad usage"},
		{args: []string{"extra"}, err: "bad usage"},
		{args: []string{"reset", "-consumer", "goldie"}, err: "add -yes"},
		{args: []string{"reset", "-yes"}, err: "which caller"},
		{args: []string{"-quota-path", filepath.Join(dir, "missing.db")}, err: "no such file"},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		err := run(ctx, append(tt.args, "-kong-yml", yml), &out, &errOut, now)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%v: err %v, want %q", tt.args, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tt.args, err)
			continue
		}
		lines := map[string]bool{}
		for _, l := range strings.Split(out.String(), "\n") {
			f := strings.Fields(l)
			if len(f) > 1 && strings.HasSuffix(f[len(f)-1], "Z") {
				f = f[:len(f)-1] // the window end
			}
			lines[strings.Join(f, " ")] = true
		}
		for _, w := range tt.want {
			if !lines[w] {
				t.Errorf("%v: no line %q in\n%s", tt.args, w, out.String())
			}
		}
		if len(lines) != len(tt.want)+2 { // the header and the final empty line
			t.Errorf("%v: %d lines, want %d:\n%s", tt.args, len(lines)-2, len(tt.want), out.String())
		}
	}
	// Missing or plugin-less kong.yml.
	if err := run(ctx, []string{"-kong-yml", filepath.Join(dir, "none.yml")}, &bytes.Buffer{}, &bytes.Buffer{}, now); err == nil {
		t.Error("a missing kong.yml was accepted")
	}
	bare := filepath.Join(dir, "bare.yml")
	os.WriteFile(bare, []byte("_format_version: \"3.0\"\n"), 0o644)
	if err := run(ctx, []string{"-kong-yml", bare}, &bytes.Buffer{}, &bytes.Buffer{}, now); err == nil || !strings.Contains(err.Error(), "no genderize plugin") {
		t.Errorf("kong.yml without the plugin: %v", err)
	}
	var out bytes.Buffer
	if err := run(ctx, []string{"reset", "-consumer", "goldie", "-yes", "-kong-yml", yml}, &out, &bytes.Buffer{}, now); err != nil || !strings.Contains(out.String(), "1 window counters removed") {
		t.Errorf("reset: %v %s", err, out.String())
	}
	if err := run(ctx, []string{"reset", "-consumer", "goldie", "-yes", "-kong-yml", yml}, &out, &bytes.Buffer{}, now); err != nil {
		t.Error(err)
	}
	if !errors.Is(run(ctx, []string{"-bogus"}, &bytes.Buffer{}, &bytes.Buffer{}, now), errUsage) {
		t.Error("an unknown flag is not a usage error")
	}
}
