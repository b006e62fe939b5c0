package conformance

import (
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/genderize-kong/genderize/testing/binaries"
	"github.com/genderize-kong/genderize/testing/standin"
)

// TestLogsCarryNoKeysOrNames sends requests with distinctive keys and
// names through every path that logs (bad tags, a plan not in the config,
// unknown keys, refusals, the throttle, the quota) and searches every log
// line of the stand-in and the plugin for them, in every spelling a
// request carried.
func TestLogsCarryNoKeysOrNames(t *testing.T) {
	secrets := []string{
		"privkey-good-51f0c2", "privkey-badtag-8e1d77", "privkey-noplan-0a9b3e",
		"privkey-paused-c4d2f1", "privkey-unknown-77ab09",
	}
	names := []string{"Zorvathiel", "Quillibeth", "Xandrosyne", "Émerawdine", "Þórvalkyr"}
	logs := &logBuffer{}
	e := newEnv(t, envConfig{logs: logs, consumers: []standin.Consumer{
		{Username: "priv-good", Tags: []string{"plan:free"}, KeyauthCredentials: []standin.Credential{{Key: secrets[0]}}},
		{Username: "priv-badtag", Tags: []string{"paid-until:someday"}, KeyauthCredentials: []standin.Credential{{Key: secrets[1]}}},
		{Username: "priv-noplan", Tags: []string{"plan:platinum"}, KeyauthCredentials: []standin.Credential{{Key: secrets[2]}}},
		{Username: "priv-paused", Tags: []string{"subscription:paused"}, KeyauthCredentials: []standin.Credential{{Key: secrets[3]}}},
	}, overrides: map[string]any{"ip_limit": 3}})

	ip := e.ip()
	for _, key := range secrets {
		c := caller{key: key, ip: ip}
		for _, n := range names {
			e.get(t, c, "name="+url.QueryEscape(n))
			e.get(t, c, batchQuery(n, n+" Smith")+"&country_id=FR")
			e.get(t, c, "name="+url.QueryEscape(n)+"&country_id=ZZ")
		}
		e.get(t, c, "name=")
		e.get(t, c, batchQuery(repeatNames(101)...))
		// The key in a header too, where key-auth does not look.
		e.do(t, "GET", caller{ip: ip}, "name="+url.QueryEscape(names[0]), map[string][]string{"Apikey": {key}})
	}
	// Key-less: past the ip_limit.
	for i := range 12 {
		e.get(t, caller{ip: ip}, "name="+url.QueryEscape(names[i%len(names)]))
	}

	lines := logs.snapshot()
	// The test must see the plugin's own log lines, or it proves nothing.
	for _, want := range []string{"priv-badtag", "priv-noplan"} {
		if !logs.contains(want) {
			t.Errorf("no log line about consumer %s: the logs were not captured (%d lines)", want, len(lines))
		}
	}
	var needles []string
	for _, s := range append(append([]string{}, secrets...), names...) {
		needles = append(needles, strings.ToLower(s), strings.ToLower(url.QueryEscape(s)))
	}
	for _, l := range lines {
		low := strings.ToLower(l)
		for _, n := range needles {
			if strings.Contains(low, n) {
				t.Errorf("a log line carries %q: %s", n, l)
			}
		}
	}
	t.Logf("%d log lines searched", len(lines))
}

func (b *logBuffer) snapshot() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.lines...)
}

// accessLogFormat is the shipped nginx log format; every file that sets
// it must set this one.
const accessLogFormat = `genderize '$remote_addr - $remote_user [$time_local] "$request_method $uri $server_protocol" $status $body_bytes_sent "$http_referer" "$http_user_agent"'`

// TestShippedAccessLogFormat: kong.conf, kong.env, the Dockerfile and the
// compose file all select one access-log format, and it has no variable
// that holds the query string.
func TestShippedAccessLogFormat(t *testing.T) {
	root, err := binaries.Root()
	if err != nil {
		t.Fatal(err)
	}
	// Variables holding the query string, or the request line with it.
	leaky := regexp.MustCompile(`\$(request|request_uri|args|query_string|arg_\w+|request_body)\b`)
	if m := leaky.FindString(accessLogFormat); m != "" {
		t.Fatalf("the format logs %s", m)
	}
	for _, tt := range []struct {
		file          string
		format, using string // the lines, after unescaping
	}{
		{"kong.conf", "nginx_http_log_format = " + accessLogFormat, "proxy_access_log = logs/access.log genderize"},
		{"kong.env", "KONG_NGINX_HTTP_LOG_FORMAT=" + accessLogFormat, "KONG_PROXY_ACCESS_LOG=logs/access.log genderize"},
		{"Dockerfile", `KONG_NGINX_HTTP_LOG_FORMAT="` + accessLogFormat + `"`, `KONG_PROXY_ACCESS_LOG="/dev/stdout genderize"`},
		{"docker-compose.yml", accessLogFormat, "KONG_PROXY_ACCESS_LOG: /dev/stdout genderize"},
	} {
		data, err := os.ReadFile(filepath.Join(root, "kong", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		switch tt.file {
		case "Dockerfile": // ENV unescapes \$ and \"
			text = strings.NewReplacer(`\$`, `$`, `\"`, `"`).Replace(text)
		case "docker-compose.yml": // compose unescapes $$
			text = strings.ReplaceAll(text, "$$", "$")
		}
		found := map[string]bool{}
		for _, l := range strings.Split(text, "\n") {
			l = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(l), `\`))
			found[l] = true
		}
		for _, want := range []string{tt.format, tt.using} {
			if !found[want] {
				t.Errorf("kong/%s lacks the line %s", tt.file, want)
			}
		}
		if strings.Contains(tt.file, "kong.") && leaky.MatchString(text) {
			t.Errorf("kong/%s sets a log format with %s", tt.file, leaky.FindString(text))
		}
	}
}
