package plugin

import (
	"net/url"
	"strings"
	"testing"
)

// appendUnescaped decodes exactly as url.QueryUnescape, errors included.
func TestAppendUnescaped(t *testing.T) {
	inputs := []string{"", "peter", "a+b", "%41%42", "%e2%82%ac", "%E2%82%AC", "100%", "%4", "%zz", "%%41", "a%2", "+%2B+",
		"\xff%FF", "name%5B%5D", "%00", "%4g", "%g4", strings.Repeat("%C3%A9", 50)}
	for _, in := range inputs {
		want, err := url.QueryUnescape(in)
		got, ok := appendUnescaped([]byte("prefix:"), in)
		if ok != (err == nil) || ok && string(got) != "prefix:"+want {
			t.Errorf("%q: %q %v, want %q %v", in, got, ok, want, err)
		}
	}
}

func FuzzAppendUnescaped(f *testing.F) {
	for _, s := range []string{"a+b", "%41", "%zz", "%", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		want, err := url.QueryUnescape(in)
		got, ok := appendUnescaped(nil, in)
		if ok != (err == nil) || ok && string(got) != want {
			t.Errorf("%q: %q %v, want %q %v", in, got, ok, want, err)
		}
	})
}

// Parsing a batch makes no string per argument: the names slice and one
// buffer for all escaped values, whatever the batch size.
func TestParseQueryAllocations(t *testing.T) {
	var plain, escaped strings.Builder
	for i := range 100 {
		if i > 0 {
			plain.WriteByte('&')
			escaped.WriteByte('&')
		}
		plain.WriteString("name%5B%5D=peter")
		escaped.WriteString("name%5B%5D=Jos%C3%A9")
	}
	for _, tt := range []struct {
		name  string
		query string
		max   float64
	}{
		{"plain names", plain.String(), 1},
		{"escaped names", escaped.String(), 2},
		{"single, with a country (its upper-case code)", "name=peter&country_id=us&apikey=k", 2},
	} {
		q := parseQuery(tt.query, 100, 100)
		if q.problem != nil {
			t.Fatalf("%s: %s", tt.name, q.problem.body)
		}
		if n := testing.AllocsPerRun(20, func() { parseQuery(tt.query, 100, 100) }); n > tt.max {
			t.Errorf("%s: %.0f allocations, want at most %.0f", tt.name, n, tt.max)
		}
	}
	q := parseQuery(escaped.String(), 100, 100)
	if len(q.names) != 100 || q.names[0] != "José" || q.names[99] != "José" {
		t.Errorf("names %d %q", len(q.names), q.names[:1])
	}
}

// Finding the API key makes no allocation, whatever the arguments.
func TestAPIKeyArgumentAllocations(t *testing.T) {
	q := batchQuery(100) + "&api%6Bey=K"
	if n := testing.AllocsPerRun(20, func() { apikeyArgument(q) }); n != 0 {
		t.Errorf("%.0f allocations", n)
	}
}
