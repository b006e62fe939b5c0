package plugin

import (
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

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
	// problem is the first 422 the request deserves, nil if none.
	problem *apiError
}

// parseQuery reads a raw query as Kong hands it over (still percent-encoded,
// `+` for spaces) and checks it against the limits. It never fails: a bad
// query yields a query whose problem says why.
//
// Only name, name[], name[N], country_id and apikey mean something; any
// other parameter is ignored, as old clients send language_id. Parameters
// are split on '&' alone: ';' is a literal character in a name.
func parseQuery(raw string, maxBatch, maxNameLength int) query {
	var (
		q          query
		singles    int  // name=
		batched    int  // name[]= and name[N]=
		badName    bool // a name that is malformed or out of limits
		countries  int
		badCountry bool
	)
	for raw != "" {
		var param string
		param, raw, _ = strings.Cut(raw, "&")
		if param == "" {
			continue
		}
		rawKey, rawValue, _ := strings.Cut(param, "=")
		key, err := url.QueryUnescape(rawKey)
		if err != nil {
			continue // a parameter we cannot name is not one of ours
		}
		switch {
		case key == "name" || key == "name[]" || isIndexedName(key):
			if key == "name" {
				singles++
			} else {
				batched++
			}
			name, err := url.QueryUnescape(rawValue)
			if err != nil || !validName(name, maxNameLength) {
				badName = true
				continue
			}
			// Bound the work a hostile query can cause; the count alone
			// decides the error.
			if len(q.names) <= maxBatch {
				q.names = append(q.names, name)
			}
		case key == "country_id":
			countries++
			value, err := url.QueryUnescape(rawValue)
			if err != nil {
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
		q.problem = errMissingName
	case badName, singles > 0 && batched > 0, singles+batched > maxBatch:
		q.problem = errInvalidName
	case badCountry, countries > 1:
		q.problem = errInvalidCountry
	}
	if q.problem != nil {
		q.names = nil
	}
	return q
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
