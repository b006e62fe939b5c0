// Package namekey turns a personal name and a country into the key under
// which the name database stores them and the engine looks them up. The
// database builder and the engine both import it, so a name is keyed the
// same way on both sides; it imports neither of them.
//
// CountryCode validates the country part: an ISO 3166-1 alpha-2 code.
//
// Key is the exact key: Unicode NFC, full Unicode case folding (ß -> ss,
// Σ -> σ), white space trimmed and collapsed to one space, punctuation and
// symbols around the name dropped. Fold is the accent-folded key used when
// the exact key has no data: diacritics removed (José -> jose), letters
// without a decomposition mapped (ø -> o, ł -> l, æ -> ae), hyphens and dots
// turned into spaces and apostrophes removed, so "Jean-Pierre", "Jean Pierre"
// and "Jéan-Piérre" meet.
package namekey

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// MaxRunes bounds the work done on one name: a key keeps at most this many
// runes of the normalised name. Real names are far shorter; the plugin
// refuses longer names before the engine sees them.
const MaxRunes = 256

// A cases.Caser keeps state between calls and must not be shared by
// goroutines, so each goroutine borrows one.
var folders = sync.Pool{New: func() any { c := cases.Fold(); return &c }}

// Key returns the exact lookup key of name. It never fails: invalid UTF-8
// becomes U+FFFD, and a name with nothing but punctuation gives "".
func Key(name string) string {
	if isASCII(name) {
		return asciiKey(name)
	}
	if !utf8.ValidString(name) {
		name = strings.ToValidUTF8(name, "\uFFFD")
	}
	name = truncate(name, 4*MaxRunes)
	c := folders.Get().(*cases.Caser)
	folded := c.String(norm.NFC.String(name))
	folders.Put(c)
	// Case folding can leave a sequence that is not NFC (İ -> i + U+0307).
	return tidy(norm.NFC.String(folded))
}

// Fold returns the accent-folded form of a key produced by Key. For most
// keys with nothing to fold it returns key itself.
func Fold(key string) string {
	var b strings.Builder
	b.Grow(len(key))
	changed := false
	var base rune // the last rune that was not a combining mark
	for _, r := range norm.NFD.String(key) {
		switch {
		case r < utf8.RuneSelf:
			if IsApostrophe(r) {
				changed = true
				continue
			}
			if r == '-' || r == '.' || r == '_' {
				changed = true
				r = ' '
			}
			base = r
			b.WriteRune(r)
		case unicode.Is(unicode.Mn, r):
			if dropsMark(base, r) {
				changed = true
				continue
			}
			b.WriteRune(r)
		case IsApostrophe(r):
			changed = true
		case unicode.Is(unicode.Pd, r):
			changed = true
			base = ' '
			b.WriteByte(' ')
		default:
			base = r
			if s, ok := letterFolds[r]; ok {
				changed = true
				b.WriteString(s)
				continue
			}
			b.WriteRune(r)
		}
	}
	if !changed {
		// NFD followed by NFC is the identity on an NFC key.
		return key
	}
	return tidy(norm.NFC.String(b.String()))
}

// dropsMark reports whether the combining mark m on base is a diacritic to
// fold away. Only scripts whose marks are optional accents or vowel points
// are folded (Latin, Greek, Cyrillic, Hebrew, Arabic): in Indic scripts the
// marks are vowels and removing them would change the name. The Cyrillic
// breve stays, since й is a letter of its own, not an accented и.
func dropsMark(base, m rune) bool {
	switch {
	case base < utf8.RuneSelf:
		return true
	case unicode.Is(unicode.Latin, base), unicode.Is(unicode.Greek, base):
		return true
	case unicode.Is(unicode.Cyrillic, base):
		return m != '\u0306'
	case unicode.Is(unicode.Hebrew, base), unicode.Is(unicode.Arabic, base):
		return true
	}
	return false
}

// letterFolds maps letters that have no Unicode decomposition to their plain
// Latin spelling. Keys are already case-folded, so only lower case appears.
var letterFolds = map[rune]string{
	'ø': "o", 'đ': "d", 'ð': "d", 'ł': "l", 'ħ': "h", 'ı': "i", 'ŧ': "t",
	'æ': "ae", 'œ': "oe", 'þ': "th", 'ŀ': "l",
}

// IsApostrophe reports whether r is one of the apostrophes names are
// written with (O'Brien, A’isha, Ma'ayan).
func IsApostrophe(r rune) bool {
	switch r {
	case '\'', '`', '\u00B4', '\u2018', '\u2019', '\u02BC', '\u02BB', '\u2032':
		return true
	}
	return false
}

// IsInitial reports whether tok, one space-separated word of a key, is an
// initial: a single letter of an alphabet, with or without a dot ("j",
// "j."). Syllabic and logographic scripts have one-character names, so only
// Latin, Greek and Cyrillic letters count as initials.
func IsInitial(tok string) bool {
	tok = strings.TrimSuffix(tok, ".")
	r, size := utf8.DecodeRuneInString(tok)
	if size == 0 || size != len(tok) {
		return false
	}
	return unicode.Is(unicode.Latin, r) || unicode.Is(unicode.Cyrillic, r) || unicode.Is(unicode.Greek, r)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// asciiKey is Key for ASCII input, where full case folding is lowering.
func asciiKey(s string) string {
	start, end := 0, len(s)
	for start < end && !isASCIIAlnum(s[start]) {
		start++
	}
	for end > start && !isASCIIAlnum(s[end-1]) {
		end--
	}
	s = s[start:end]
	if len(s) > MaxRunes {
		s = s[:MaxRunes]
	}
	clean := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if ('A' <= c && c <= 'Z') || c < ' ' || c == 0x7F || (c == ' ' && (i+1 == len(s) || s[i+1] == ' ')) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	b := make([]byte, 0, len(s))
	space := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c == 0x7F {
			space = true
			continue
		}
		if space {
			b = append(b, ' ')
			space = false
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return string(b)
}

func isASCIIAlnum(c byte) bool {
	return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// tidy collapses runs of white space and control characters to one space and
// drops everything but letters and digits at the start, and everything but
// letters, marks and digits at the end.
func tidy(s string) string {
	keep := func(r rune) bool {
		return unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsNumber(r)
	}
	// A combining mark cannot start a name: its base was trimmed away.
	s = strings.TrimLeftFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
	s = strings.TrimRightFunc(s, func(r rune) bool { return !keep(r) })
	var b strings.Builder
	b.Grow(len(s))
	space, n := false, 0
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			space = true
			continue
		}
		if space {
			if n+1 >= MaxRunes {
				break
			}
			b.WriteByte(' ')
			space = false
			n++
		}
		if n == MaxRunes {
			break
		}
		b.WriteRune(r)
		n++
	}
	return strings.TrimRightFunc(b.String(), func(r rune) bool { return !keep(r) })
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
