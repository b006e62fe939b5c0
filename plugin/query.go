package plugin

import (
	"iter"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/genderize-kong/genderize/engine"
)

// query is what a request asks, read from its raw query string.
type query struct {
	// names in order of appearance, URL-decoded, exactly as sent.
	names []string
	// batch is true when the names came as name[] or name[N], or as name
	// repeated (as genderize.io answered, and clients such as DemografixeR
	// send): the answer is then an array, even for one name[].
	batch bool
	// country is the upper-case country_id, "" when not sent.
	country string
	// apikey is true when an apikey parameter is present, whatever its
	// value.
	apikey bool
	// problem is the first 422 the request deserves, nil if none, and
	// problemReason which of the three it is.
	problem       *apiError
	problemReason reason
}

// parseQuery reads a raw query as Kong hands it over (still percent-encoded,
// `+` for spaces) and checks it against the limits. It never fails: a bad
// query yields a query whose problem says why.
//
// Only name, name[], name[N], country_id and apikey mean something; any
// other parameter is ignored, as old clients send language_id. Parameters
// are split on '&' alone: ';' is a literal character in a name.
//
// Decoding makes no intermediate strings: a name without escapes is a view
// of raw, and escaped ones are decoded into one buffer per request that
// the names then view (decoded text is never longer than its raw form, so
// the buffer never moves). In a batch of 100 `name%5B%5D=` arguments that
// saves 100 allocations for the names of the arguments alone.
func parseQuery(raw string, maxBatch, maxNameLength int) query {
	var (
		q          query
		singles    int  // name=
		batched    int  // name[]= and name[N]=
		badName    bool // a name that is malformed or out of limits
		countries  int
		badCountry bool
		decoded    []byte   // the request's decoded values, made on first need
		keyBuf     [32]byte // a decoded argument name; ours are short
	)
	for a := range arguments(raw) {
		rawValue := a.value
		key := a.name
		if needsUnescape(key) {
			b, ok := appendUnescaped(keyBuf[:0], key)
			if !ok {
				continue // a parameter we cannot name is not one of ours
			}
			key = unsafe.String(unsafe.SliceData(b), len(b))
		}
		unescape := func(v string) (string, bool) {
			if !needsUnescape(v) {
				return v, true
			}
			if decoded == nil {
				decoded = make([]byte, 0, len(raw))
			}
			start := len(decoded)
			var ok bool
			decoded, ok = appendUnescaped(decoded, v)
			if !ok {
				decoded = decoded[:start]
				return "", false
			}
			return unsafe.String(unsafe.SliceData(decoded[start:]), len(decoded)-start), true
		}
		switch {
		case key == "name" || key == "name[]" || isIndexedName(key):
			if key == "name" {
				singles++
			} else {
				batched++
			}
			name, ok := unescape(rawValue)
			if !ok || !validName(name, maxNameLength) {
				badName = true
				continue
			}
			// Bound the work a hostile query can cause; the count alone
			// decides the error.
			if q.names == nil {
				q.names = make([]string, 0, min(strings.Count(raw, "&")+1, maxBatch+1))
			}
			if len(q.names) <= maxBatch {
				q.names = append(q.names, name)
			}
		case key == "country_id":
			countries++
			value, ok := unescape(rawValue)
			if !ok {
				badCountry = true
				continue
			}
			code, ok := engine.CountryCode(value)
			if !ok {
				badCountry = true
				continue
			}
			q.country = code
		case key == "apikey":
			q.apikey = true
		}
	}
	q.batch = batched > 0 || singles > 1
	switch {
	case singles+batched == 0:
		q.problem, q.problemReason = errMissingName, reasonMissingName
	case badName, singles > 0 && batched > 0, singles+batched > maxBatch:
		q.problem, q.problemReason = errInvalidName, reasonInvalidName
	case badCountry, countries > 1:
		q.problem, q.problemReason = errInvalidCountry, reasonInvalidCountry
	}
	if q.problem != nil {
		q.names = nil
	}
	return q
}

// needsUnescape reports whether s holds an escape or a '+'. A plain loop:
// strings.ContainsAny builds its byte set on every call, 2% of a batch's
// CPU in the profile.
func needsUnescape(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '%' || s[i] == '+' {
			return true
		}
	}
	return false
}

// appendUnescaped appends s decoded as url.QueryUnescape decodes it ('+' is
// a space, %XX a byte, any other byte itself); ok is false on a malformed
// escape, as QueryUnescape's error.
func appendUnescaped(dst []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '+':
			dst = append(dst, ' ')
		case '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return dst, false
			}
			dst = append(dst, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
		default:
			dst = append(dst, c)
		}
	}
	return dst, true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// argument is one query argument, still percent-encoded.
type argument struct {
	name, value string
	// hasValue is false for a bare name ("apikey"), true for "apikey=".
	hasValue bool
}

// arguments yields a raw query's arguments in order, split as key-auth's
// ngx.req.get_uri_args splits them: on '&' alone (';' is a literal
// character in a name), empty parts skipped, each cut at its first '='.
func arguments(raw string) iter.Seq[argument] {
	return func(yield func(argument) bool) {
		for raw != "" {
			var part string
			part, raw, _ = strings.Cut(raw, "&")
			if part == "" {
				continue
			}
			var a argument
			a.name, a.value, a.hasValue = strings.Cut(part, "=")
			if !yield(a) {
				return
			}
		}
	}
}

// isIndexedName reports whether key is name[N] with N a decimal index.
func isIndexedName(key string) bool {
	index, ok := strings.CutPrefix(key, "name[")
	if !ok {
		return false
	}
	index, ok = strings.CutSuffix(index, "]")
	if !ok || index == "" {
		return false
	}
	for i := 0; i < len(index); i++ {
		if index[i] < '0' || index[i] > '9' {
			return false
		}
	}
	return true
}

// validName reports whether name is acceptable: valid UTF-8, no control
// characters (Unicode Cc), not only white space, at most maxLength code
// points.
func validName(name string, maxLength int) bool {
	if !utf8.ValidString(name) || utf8.RuneCountInString(name) > maxLength {
		return false
	}
	blank := true
	for _, r := range name {
		if unicode.Is(unicode.Cc, r) {
			return false
		}
		if !unicode.IsSpace(r) {
			blank = false
		}
	}
	return !blank
}
