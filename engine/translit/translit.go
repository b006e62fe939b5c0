// Package translit spells personal names written in other scripts the way
// the name data writes them, so that a name sent in Greek, Cyrillic,
// Armenian, Georgian, Japanese kana or Korean Hangul finds the records kept
// under its Latin spelling (Γιώργος -> giorgos, さくら -> sakura, 민준 ->
// minjun), and a name in an abjad (Arabic, Persian, Hebrew), which leaves
// most vowels unwritten, can be matched to Latin spellings by its
// consonants (see Skeletons).
//
// Every function takes a key as namekey.Key makes it (lower case, NFC) and
// returns lower-case keys. None of them fails: a rune it has no rule for
// makes it return nothing rather than a half-transliterated name.
package translit

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// MaxVariants bounds the spellings Latin returns for one key.
const MaxVariants = 6

// Script names the writing systems this package knows.
type Script int

// Scripts, by the first letter of a key.
const (
	Other Script = iota
	Latin
	Greek
	Cyrillic
	Armenian
	Georgian
	Kana
	Hangul
	Han
	Arabic
	Hebrew
)

var scriptNames = [...]string{"other", "latin", "greek", "cyrillic", "armenian", "georgian", "kana", "hangul", "han", "arabic", "hebrew"}

func (s Script) String() string { return scriptNames[s] }

// ScriptOf returns the script of the first letter of key.
func ScriptOf(key string) Script {
	for _, r := range key {
		switch {
		case r < utf8.RuneSelf:
			if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' {
				return Latin
			}
			continue
		case unicode.Is(unicode.Latin, r):
			return Latin
		case unicode.Is(unicode.Greek, r):
			return Greek
		case unicode.Is(unicode.Cyrillic, r):
			return Cyrillic
		case unicode.Is(unicode.Armenian, r):
			return Armenian
		case unicode.Is(unicode.Georgian, r):
			return Georgian
		case unicode.Is(unicode.Hiragana, r), unicode.Is(unicode.Katakana, r):
			return Kana
		case unicode.Is(unicode.Hangul, r):
			return Hangul
		case unicode.Is(unicode.Han, r):
			return Han
		case unicode.Is(unicode.Arabic, r):
			return Arabic
		case unicode.Is(unicode.Hebrew, r):
			return Hebrew
		case unicode.IsLetter(r):
			return Other
		}
	}
	return Other
}

// segment is one piece of a transliteration: its usual spelling first,
// then the other spellings the data also uses.
type segment []string

// ToLatin returns the Latin spellings of key, the most usual first, at most
// MaxVariants; nil when key is Latin, in a script without rules here, or
// holds a letter the rules do not cover. Words stay separated by spaces.
func ToLatin(key string) []string {
	var segs []segment
	var ok bool
	// Marks are dropped: accents in Greek, vowel points and the like are
	// not written in the Latin data.
	script := ScriptOf(key)
	if script == Latin || script == Other || script == Han {
		return nil
	}
	key = stripMarks(key)
	switch script {
	case Greek:
		segs, ok = greek(key)
	case Cyrillic:
		segs, ok = cyrillic(key)
	case Armenian:
		segs, ok = armenian(key)
	case Georgian:
		segs, ok = perRune(key, georgianLetters)
	case Kana:
		segs, ok = kana(key)
	case Hangul:
		segs, ok = hangul(key)
	}
	if !ok || len(segs) == 0 {
		return nil
	}
	return expand(segs, MaxVariants)
}

// expand turns segments into spellings: all usual spellings first, then
// each segment's alternatives one at a time, then every segment's second
// spelling at once.
func expand(segs []segment, limit int) []string {
	var b strings.Builder
	join := func(pick func(i int) string) string {
		b.Reset()
		for i := range segs {
			b.WriteString(pick(i))
		}
		return strings.Join(strings.Fields(b.String()), " ")
	}
	out := []string{join(func(i int) string { return segs[i][0] })}
	add := func(s string) {
		if s == "" || len(out) >= limit {
			return
		}
		for _, o := range out {
			if o == s {
				return
			}
		}
		out = append(out, s)
	}
	for j := range segs {
		for k := 1; k < len(segs[j]); k++ {
			add(join(func(i int) string {
				if i == j {
					return segs[i][k]
				}
				return segs[i][0]
			}))
		}
	}
	add(join(func(i int) string { return segs[i][min(1, len(segs[i])-1)] }))
	return out
}

func stripMarks(s string) string {
	if isASCII(s) {
		return s
	}
	var b strings.Builder
	for _, r := range norm.NFD.String(s) {
		// The Cyrillic breve (й) and the kana voicing marks (が) are parts
		// of letters; NFC puts them back.
		if unicode.Is(unicode.Mn, r) && r != '\u0306' && r != '\u3099' && r != '\u309A' && r != '\u0308' {
			continue
		}
		b.WriteRune(r)
	}
	return norm.NFC.String(b.String())
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// perRune transliterates key letter by letter with table; spaces and
// hyphens are kept as word breaks.
func perRune(key string, table map[rune]segment) ([]segment, bool) {
	var segs []segment
	for _, r := range key {
		var ok bool
		if segs, ok = appendLetter(segs, table, r); !ok {
			return nil, false
		}
	}
	return segs, true
}

// appendLetter appends r's spellings from table, or r itself when it is a
// word break; ok is false for a rune that is neither, which the script
// cannot spell.
func appendLetter(segs []segment, table map[rune]segment, r rune) ([]segment, bool) {
	if s, ok := table[r]; ok {
		return append(segs, s), true
	}
	if !breakRune(r) {
		return nil, false
	}
	return append(segs, segment{string(r)}), true
}

func breakRune(r rune) bool { return r == ' ' || r == '-' || r == '\'' }

// greek follows the Greek passport spelling (ELOT 743) the Greek data uses
// (Γιώργος -> giorgos, Ελένη -> eleni), with the older spellings as
// alternatives (χ -> ch or h, υ -> y or i, αυ -> av or af).
func greek(key string) ([]segment, bool) {
	rs := []rune(key)
	var segs []segment
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		next := rune(0)
		if i+1 < len(rs) {
			next = rs[i+1]
		}
		if d, ok := greekDigraphs[string([]rune{r, next})]; ok && next != 0 {
			start := i == 0 || breakRune(rs[i-1])
			if start && d.initial != nil {
				segs = append(segs, d.initial)
			} else {
				segs = append(segs, d.medial)
			}
			i++
			continue
		}
		var ok bool
		if segs, ok = appendLetter(segs, greekLetters, r); !ok {
			return nil, false
		}
	}
	return segs, true
}

type digraph struct{ initial, medial segment }

var greekDigraphs = map[string]digraph{
	"ου": {nil, segment{"ou"}},
	"αι": {nil, segment{"ai", "e"}},
	"ει": {nil, segment{"ei", "i"}},
	"οι": {nil, segment{"oi", "i"}},
	"αυ": {nil, segment{"av", "af"}},
	"ευ": {nil, segment{"ev", "ef"}},
	"μπ": {segment{"b"}, segment{"mp", "b"}},
	"ντ": {segment{"d"}, segment{"nt", "d"}},
	"γκ": {segment{"g"}, segment{"gk", "g"}},
	"γγ": {nil, segment{"ng"}},
	"τσ": {nil, segment{"ts"}},
	"τζ": {nil, segment{"tz"}},
}

var greekLetters = map[rune]segment{
	'α': {"a"}, 'β': {"v"}, 'γ': {"g"}, 'δ': {"d"}, 'ε': {"e"}, 'ζ': {"z"},
	'η': {"i"}, 'θ': {"th"}, 'ι': {"i"}, 'κ': {"k"}, 'λ': {"l"}, 'μ': {"m"},
	'ν': {"n"}, 'ξ': {"x"}, 'ο': {"o"}, 'π': {"p"}, 'ρ': {"r"}, 'σ': {"s"},
	'ς': {"s"}, 'τ': {"t"}, 'υ': {"y", "i"}, 'φ': {"f"}, 'χ': {"ch", "h"},
	'ψ': {"ps"}, 'ω': {"o"}, 'ϊ': {"i"}, 'ϋ': {"y", "i"},
}

// cyrillic follows the spellings of passports and of the Latin data
// (Юлия -> yuliya or iuliia or julia): Ukrainian и is y, Russian и is i.
func cyrillic(key string) ([]segment, bool) {
	ukrainian := strings.ContainsAny(key, "іїєґ")
	var segs []segment
	rs := []rune(key)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		start := i == 0 || breakRune(rs[i-1])
		end := i+2 == len(rs) || i+2 < len(rs) && breakRune(rs[i+2])
		switch {
		case r == 'и' && ukrainian:
			segs = append(segs, segment{"y", "i"})
		case r == 'е' && start:
			segs = append(segs, segment{"e", "ye"})
		case r == 'я' && i > 0 && rs[i-1] == 'и':
			// Мария, Юлия: Mariya, Maria
			segs = append(segs, segment{"ya", "a"})
		case r == 'и' && i+1 < len(rs) && rs[i+1] == 'й' && end:
			// -ий: Dmitriy, Dmitrii, Dmitri
			segs = append(segs, segment{"iy", "ii", "i"})
			i++
		default:
			var ok bool
			if segs, ok = appendLetter(segs, cyrillicLetters, r); !ok {
				return nil, false
			}
		}
	}
	return segs, true
}

var cyrillicLetters = map[rune]segment{
	'а': {"a"}, 'б': {"b"}, 'в': {"v"}, 'г': {"g", "h"}, 'ґ': {"g"}, 'д': {"d"},
	'е': {"e"}, 'ё': {"e", "yo"}, 'є': {"ye", "ie"}, 'ж': {"zh", "j"}, 'з': {"z"},
	'и': {"i"}, 'і': {"i"}, 'ї': {"yi", "i"}, 'й': {"y", "i", "j"}, 'к': {"k"},
	'л': {"l"}, 'м': {"m"}, 'н': {"n"}, 'о': {"o"}, 'п': {"p"}, 'р': {"r"},
	'с': {"s"}, 'т': {"t"}, 'у': {"u"}, 'ф': {"f"}, 'х': {"kh", "h"},
	'ц': {"ts", "c"}, 'ч': {"ch"}, 'ш': {"sh"}, 'щ': {"shch", "sch"},
	'ъ': {""}, 'ы': {"y"}, 'ь': {"", "i"}, 'э': {"e"}, 'ю': {"yu", "iu", "ju"},
	'я': {"ya", "ia", "ja"}, 'ў': {"u", "w"},
}

// armenian follows the BGN/PCGN spelling (Անահիտ -> anahit), with ու -> u
// and և -> ev.
func armenian(key string) ([]segment, bool) {
	rs := []rune(key)
	var segs []segment
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		start := i == 0 || breakRune(rs[i-1])
		switch {
		case r == 'ո' && i+1 < len(rs) && rs[i+1] == 'ւ':
			segs = append(segs, segment{"u"})
			i++
			continue
		case r == 'ե' && start:
			segs = append(segs, segment{"ye", "e"})
			continue
		case r == 'ո' && start:
			segs = append(segs, segment{"vo", "o"})
			continue
		}
		var ok bool
		if segs, ok = appendLetter(segs, armenianLetters, r); !ok {
			return nil, false
		}
	}
	return segs, true
}

var armenianLetters = map[rune]segment{
	'ա': {"a"}, 'բ': {"b"}, 'գ': {"g"}, 'դ': {"d"}, 'ե': {"e"}, 'զ': {"z"},
	'է': {"e"}, 'ը': {"y", "e"}, 'թ': {"t"}, 'ժ': {"zh"}, 'ի': {"i"}, 'լ': {"l"},
	'խ': {"kh"}, 'ծ': {"ts"}, 'կ': {"k"}, 'հ': {"h"}, 'ձ': {"dz"}, 'ղ': {"gh"},
	'ճ': {"ch"}, 'մ': {"m"}, 'յ': {"y"}, 'ն': {"n"}, 'շ': {"sh"}, 'ո': {"o"},
	'չ': {"ch"}, 'պ': {"p"}, 'ջ': {"j"}, 'ռ': {"r"}, 'ս': {"s"}, 'վ': {"v"},
	'տ': {"t"}, 'ր': {"r"}, 'ց': {"ts"}, 'ւ': {"v"}, 'փ': {"p"}, 'ք': {"k"},
	'օ': {"o"}, 'ֆ': {"f"}, 'և': {"ev"},
}

// georgianLetters follows the national system of 2002 (ნინო -> nino).
var georgianLetters = map[rune]segment{
	'ა': {"a"}, 'ბ': {"b"}, 'გ': {"g"}, 'დ': {"d"}, 'ე': {"e"}, 'ვ': {"v"},
	'ზ': {"z"}, 'თ': {"t"}, 'ი': {"i"}, 'კ': {"k"}, 'ლ': {"l"}, 'მ': {"m"},
	'ნ': {"n"}, 'ო': {"o"}, 'პ': {"p"}, 'ჟ': {"zh"}, 'რ': {"r"}, 'ს': {"s"},
	'ტ': {"t"}, 'უ': {"u"}, 'ფ': {"p"}, 'ქ': {"k"}, 'ღ': {"gh"}, 'ყ': {"q", "k"},
	'შ': {"sh"}, 'ჩ': {"ch"}, 'ც': {"ts"}, 'ძ': {"dz"}, 'წ': {"ts"}, 'ჭ': {"ch"},
	'ხ': {"kh", "h"}, 'ჯ': {"j"}, 'ჰ': {"h"},
}
