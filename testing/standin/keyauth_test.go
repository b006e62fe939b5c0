package standin

import (
	"net/http"
	"net/netip"
	"reflect"
	"testing"

	pb "github.com/Kong/go-pdk/server/kong_plugin_protocol"
	"google.golang.org/protobuf/proto"
)

func TestNgxURIArgs(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		max  int
		want map[string][]queryValue
	}{
		{"a=1&a=2", 0, map[string][]queryValue{"a": {{"1", true}, {"2", true}}}},
		{"a", 0, map[string][]queryValue{"a": {{"", false}}}},
		{"a=", 0, map[string][]queryValue{"a": {{"", true}}}},
		{"=x&&b=1", 0, map[string][]queryValue{"b": {{"1", true}}}},
		{"a+b=c%20d+e", 0, map[string][]queryValue{"a b": {{"c d e", true}}}},
		{"x=%ZZ%4", 0, map[string][]queryValue{"x": {{"%ZZ%4", true}}}},
		{"name%5B%5D=x", 0, map[string][]queryValue{"name[]": {{"x", true}}}},
		{"a=1&b=2&c=3", 2, map[string][]queryValue{"a": {{"1", true}}, "b": {{"2", true}}}},
	} {
		if got := ngxURIArgs(tc.raw, tc.max); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ngxURIArgs(%q, %d) = %v, want %v", tc.raw, tc.max, got, tc.want)
		}
	}
}

func TestKeyAuth(t *testing.T) {
	d, err := ParseDeclarative([]byte(probeYML))
	if err != nil {
		t.Fatal(err)
	}
	conf := func(anonymous string, inHeader, hide bool) KeyAuthConfig {
		c, err := keyAuthConfig(map[string]any{"key_names": []any{"apikey"}, "key_in_header": inHeader, "anonymous": anonymous, "hide_credentials": hide, "run_on_preflight": false})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	pro := "demo-pro"
	for _, tc := range []struct {
		name     string
		conf     KeyAuthConfig
		method   string
		query    string
		header   http.Header
		consumer string // username, "" for none
		cred     bool
		www      bool
		status   int
		message  string
		rawQuery *string
	}{
		{name: "valid key", conf: conf("anonymous", false, false), query: "apikey=pro-key", consumer: pro, cred: true},
		{name: "no key", conf: conf("anonymous", false, false), query: "name=x", consumer: "anonymous", www: true},
		{name: "empty key", conf: conf("anonymous", false, false), query: "apikey=", consumer: "anonymous", www: true},
		{name: "bare key", conf: conf("anonymous", false, false), query: "apikey", consumer: "anonymous", www: true},
		{name: "unknown key", conf: conf("anonymous", false, false), query: "apikey=nope", consumer: "anonymous"},
		{name: "duplicate key", conf: conf("anonymous", false, false), query: "apikey=pro-key&apikey=pro-key", consumer: "anonymous"},
		{name: "preflight skipped", conf: conf("anonymous", false, false), method: "OPTIONS", query: "apikey=pro-key"},
		{name: "header ignored when key_in_header false", conf: conf("anonymous", false, false), header: http.Header{"Apikey": {"pro-key"}}, consumer: "anonymous", www: true},
		{name: "header key", conf: conf("anonymous", true, false), header: http.Header{"Apikey": {"pro-key"}}, consumer: pro, cred: true},
		{name: "anonymous by id", conf: conf(d.Consumers[0].ID, false, false), query: "", consumer: "anonymous", www: true},
		{name: "no anonymous: 401", conf: conf("", false, false), query: "apikey=nope", status: 401, message: "Invalid authentication credentials"},
		{name: "no anonymous, no key", conf: conf("", false, false), status: 401, message: "No API key found in request", www: true},
		{name: "anonymous missing: 500", conf: conf("ghost", false, false), status: 500, message: "An unexpected error occurred", www: true},
		{name: "hide credentials", conf: conf("anonymous", false, true), query: "a=1&apikey=pro-key&b=2", consumer: pro, cred: true, rawQuery: ptr("a=1&b=2")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ka := newKeyAuth(tc.conf, d.Consumers, 1000)
			r := request(tc.query, tc.header)
			if tc.method != "" {
				r.Method = tc.method
			}
			out := ka.authenticate(r)
			got := ""
			if out.consumer != nil {
				got = out.consumer.Username
			}
			if got != tc.consumer || (out.credential != nil) != tc.cred || (out.wwwAuthenticate != "") != tc.www ||
				out.status != tc.status || out.message != tc.message || !reflect.DeepEqual(out.rawQuery, tc.rawQuery) {
				t.Errorf("got consumer %q cred %v www %q status %d %q rawQuery %v", got, out.credential != nil, out.wwwAuthenticate, out.status, out.message, out.rawQuery)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestDeclarative(t *testing.T) {
	a, err := ParseDeclarative([]byte(probeYML))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ParseDeclarative([]byte(probeYML))
	if a.Consumers[1].ID != b.Consumers[1].ID || a.Routes[0].ID != b.Routes[0].ID {
		t.Error("generated ids are not stable")
	}
	r := &a.Routes[0]
	for _, tc := range []struct {
		method, path string
		want         bool
	}{{"GET", "/", true}, {"OPTIONS", "/", true}, {"POST", "/", false}, {"GET", "/x", false}, {"GET", "/x/", false}, {"GET", "", false}} {
		if got := r.matches(tc.method, tc.path); got != tc.want {
			t.Errorf("matches(%s %q) = %v", tc.method, tc.path, got)
		}
	}
	if err := a.AddConsumer(Consumer{Username: "dup", KeyauthCredentials: []Credential{{Key: "pro-key"}}}); err == nil {
		t.Error("a shared key was accepted")
	}
	for _, bad := range []string{
		"consumers: [{tags: [x]}]",
		"routes: [{name: r, paths: ['~/[']}]",
		"plugins: [{name: x, route: nowhere}]",
	} {
		if _, err := ParseDeclarative([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

func TestForwardedIP(t *testing.T) {
	s := &Standin{opts: Options{TrustedIPs: nil, RealIPHeader: "X-Forwarded-For"}}
	r := request("", http.Header{"X-Forwarded-For": {"203.0.113.9"}})
	if got := s.forwardedIP(r).String(); got != "127.0.0.1" {
		t.Errorf("untrusted peer: %s", got)
	}
	s.opts.TrustedIPs = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	if got := s.forwardedIP(r).String(); got != "203.0.113.9" {
		t.Errorf("trusted peer: %s", got)
	}
	r.Header.Set("X-Forwarded-For", "garbage")
	if got := s.forwardedIP(r).String(); got != "127.0.0.1" {
		t.Errorf("garbage header: %s", got)
	}
}

// TestRawBytesInStrings: Kong's lua-protobuf puts a Lua string's bytes in
// a protobuf string field whether or not they are UTF-8; the stand-in does
// the same, so a plugin that decodes such an answer as a Go string fails
// as it would in Kong, and one that reads the field as bytes gets them.
func TestRawBytesInStrings(t *testing.T) {
	r := &Request{Method: "GET", Path: "/", RawQuery: "name=\xff&x=1", HTTPVersion: 1.1}
	x := &Exchange{req: r, rawQuery: r.RawQuery}
	arg, err := proto.Marshal(&pb.String{V: "request"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method string
		args   []byte
		want   string
	}{
		{"kong.request.get_raw_query", nil, "name=\xff&x=1"},
		{"kong.nginx.get_var", arg, "GET /?name=\xff&x=1 HTTP/1.1"},
		{"kong.request.get_path_with_query", nil, "/?name=\xff&x=1"},
	} {
		out, err := x.call(tc.method, tc.args)
		if err != nil {
			t.Fatalf("%s: %v", tc.method, err)
		}
		var b pb.ByteString
		if err := proto.Unmarshal(out, &b); err != nil || string(b.V) != tc.want {
			t.Errorf("%s as bytes: %q %v, want %q", tc.method, b.V, err, tc.want)
		}
		var s pb.String
		if err := proto.Unmarshal(out, &s); err == nil {
			t.Errorf("%s: Go's decoder took invalid UTF-8 in a string field", tc.method)
		}
	}
	// Valid strings decode either way.
	x.rawQuery = "name=peter"
	out, err := x.call("kong.request.get_raw_query", nil)
	var s pb.String
	if err != nil || proto.Unmarshal(out, &s) != nil || s.V != "name=peter" {
		t.Errorf("valid string: %q %v", s.V, err)
	}
}

func TestNginxArgs(t *testing.T) {
	for _, tt := range []struct{ target, args string }{
		{"/?name=x&apikey=k", "name=x&apikey=k"},
		{"/", ""},
		{"/?name=x#&apikey=k", "name=x"},
		{"/#?name=x", ""},
		{"http://example.com/?name=x#y", "name=x"},
	} {
		if got := nginxArgs(tt.target); got != tt.args {
			t.Errorf("%q: %q, want %q", tt.target, got, tt.args)
		}
	}
}
