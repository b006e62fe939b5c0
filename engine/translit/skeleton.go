package translit

import "strings"

// Names in Arabic, Persian and Hebrew script write the consonants and the
// long vowels, not the short ones, and a Latin spelling cannot be read off
// them letter by letter: محمد is Mohammed, Muhammad or Mohamed. They are
// matched to Latin names by their skeleton instead: the consonants, each
// mapped to one sound class shared by both sides, with V where the name
// starts or ends with a vowel. محمد and mohammed both give "mhmd", فاطمة
// and fatima "ftmV", علي and ali "VlV". A letter with several readings
// gives several skeletons.
//
// Skeleton classes: b p t d h x(kh) j c(ch) s S(sh) z Z(zh) G(gh) f k g l m
// n r w(w, v) y; q and k are one class, as are w and v.

// MaxSkeletons bounds the skeletons Skeletons returns for one key.
const MaxSkeletons = 64

// LatinSkeleton returns the skeleton of a Latin key of the letters a-z
// only (one word), or "" for any other key.
func LatinSkeleton(key string) string {
	if key == "" {
		return ""
	}
	var b strings.Builder
	last := byte(0)
	put := func(c byte) {
		if c != last {
			b.WriteByte(c)
		}
		last = c
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c < 'a' || c > 'z' {
			return ""
		}
		next := byte(0)
		if i+1 < len(key) {
			next = key[i+1]
		}
		if next == 'h' {
			if d, ok := latinDigraphs[c]; ok {
				put(d)
				i++
				continue
			}
		}
		if c == 't' && next == 'z' {
			put('t')
			put('s')
			i++
			continue
		}
		if i > 0 && i+2 < len(key) && isVowel(c) && longVowel(c, next) {
			// ou, ee, aa...: a long vowel, written with a letter in the
			// abjads (Mahmoud, محمود), which a short one is not (محمد).
			b.WriteByte('.')
			last = 0
			i++
			continue
		}
		switch {
		case isVowel(c) || c == 'y' && !isVowel(next):
			if i == 0 {
				put('V')
			}
			last = 0
			if i == len(key)-1 || i == len(key)-2 && next == 'h' && b.Len() > 0 {
				// a final vowel, or a final "ah"/"eh" (Fatimah)
				b.WriteByte('V')
				return b.String()
			}
		case c == 'v':
			put('w')
		case c == 'q':
			put('k')
		case c == 'c':
			put('k')
		case c == 'x':
			put('k')
			put('s')
		default:
			put(c)
		}
	}
	return b.String()
}

func longVowel(c, next byte) bool {
	return c == next || c == 'o' && next == 'u'
}

var latinDigraphs = map[byte]byte{'k': 'x', 's': 'S', 'c': 'c', 'z': 'Z', 'g': 'G', 't': 't', 'd': 'd', 'p': 'f'}

// letter is how an abjad letter reads: its consonant classes, and whether
// it may stand for a vowel.
type letter struct {
	cons  string // classes, one byte each; "" for a letter never a consonant
	vowel bool
}

var abjad = map[rune]letter{
	// Arabic and Persian
	'ا': {"", true}, 'أ': {"", true}, 'إ': {"", true}, 'آ': {"", true}, 'ٱ': {"", true},
	'ب': {"b", false}, 'پ': {"p", false}, 'ت': {"t", false}, 'ث': {"st", false},
	'ج': {"jg", false}, 'چ': {"c", false}, 'ح': {"h", false}, 'خ': {"x", false},
	'د': {"d", false}, 'ذ': {"zd", false}, 'ر': {"r", false}, 'ز': {"z", false},
	'ژ': {"Z", false}, 'س': {"s", false}, 'ش': {"S", false}, 'ص': {"s", false},
	'ض': {"dz", false}, 'ط': {"t", false}, 'ظ': {"z", false}, 'ع': {"", true},
	'غ': {"G", false}, 'ف': {"f", false}, 'ق': {"kG", false}, 'ك': {"k", false},
	'ک': {"k", false}, 'گ': {"g", false}, 'ل': {"l", false}, 'م': {"m", false},
	'ن': {"n", false}, 'ه': {"h", true}, 'ة': {"h", true}, 'و': {"w", true},
	'ي': {"y", true}, 'ى': {"", true}, 'ی': {"y", true}, 'ء': {"", true},
	'ئ': {"y", true}, 'ؤ': {"w", true},
	// Hebrew
	'א': {"", true}, 'ב': {"bw", false}, 'ג': {"g", false}, 'ד': {"d", false},
	'ה': {"h", true}, 'ו': {"w", true}, 'ז': {"z", false}, 'ח': {"hxc", false},
	'ט': {"t", false}, 'י': {"y", true}, 'כ': {"kxc", false}, 'ך': {"kxc", false},
	'ל': {"l", false}, 'מ': {"m", false}, 'ם': {"m", false}, 'נ': {"n", false},
	'ן': {"n", false}, 'ס': {"s", false}, 'ע': {"", true}, 'פ': {"pf", false},
	'ף': {"f", false}, 'צ': {"z", false}, 'ץ': {"z", false}, 'ק': {"k", false},
	'ר': {"r", false}, 'ש': {"Ss", false}, 'ת': {"t", false},
}

// Skeletons returns the skeletons an Arabic, Persian or Hebrew key (one
// word) may have, at most MaxSkeletons, the likeliest reading first; nil
// for other keys or letters without a rule.
func Skeletons(key string) []string {
	key = stripMarks(key)
	rs := []rune(key)
	if len(rs) == 0 || strings.ContainsRune(key, ' ') {
		return nil
	}
	// Each letter offers readings; a reading is a string of classes, ""
	// "." for a medial vowel letter (a long vowel leaves no mark but keeps the
	// consonants around it apart), "V" for a
	// vowel at the start or end.
	out := []string{""}
	for i, r := range rs {
		l, ok := abjad[r]
		if !ok {
			return nil
		}
		first, final := i == 0, i == len(rs)-1
		var reads []string
		if l.vowel && !(first && (r == 'و' || r == 'ו' || r == 'י')) {
			switch {
			case first || final:
				reads = append(reads, "V")
			case l.cons == "" && r != 'ع' && r != 'ע':
				// alef: a long a, spelled a (Fatima) or aa (Faatima).
				reads = append(reads, ",", ".")
			default:
				// a long vowel spelled with two letters (Mahmoud) or one
				// (Yosef); the Latin skeleton keeps the first as ".",
				// the second as nothing (the "," only keeps the
				// consonants around it apart, as the vowel does in Latin).
				reads = append(reads, ".", ",")
			}
		}
		for j := 0; j < len(l.cons); j++ {
			reads = append(reads, l.cons[j:j+1])
		}
		if r == 'צ' || r == 'ץ' {
			reads = append(reads, "ts")
		}
		if r == 'ة' || r == 'ه' && final || r == 'ה' && final {
			// The feminine ending reads a or ah: Fatima, Fatimah.
			reads = []string{"V", "h"}
		}
		next := make([]string, 0, len(out)*len(reads))
		for _, o := range out {
			for _, rd := range reads {
				if len(next) == MaxSkeletons {
					break
				}
				next = append(next, join(o, rd))
			}
		}
		out = next
	}
	for i, o := range out {
		out[i] = strings.ReplaceAll(o, ",", "")
	}
	return dedupeStrings(out)
}

// join appends a reading to a skeleton: a V after a V is one vowel, and
// the same class twice in a row is one consonant (a doubled letter is
// written once in the Latin skeleton too).
func join(s, read string) string {
	if read == "" {
		return s
	}
	if (read == "." || read == ",") && (s == "" || strings.HasSuffix(s, ".") || strings.HasSuffix(s, ",") || strings.HasSuffix(s, "V")) {
		return s
	}
	if strings.HasSuffix(s, "V") && read == "V" {
		return s
	}
	if s != "" && read[0] == s[len(s)-1] && read != "V" {
		return s + read[1:]
	}
	return s + read
}

func dedupeStrings(s []string) []string {
	out := s[:0]
	seen := map[string]bool{}
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
