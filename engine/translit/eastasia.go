package translit

import "strings"

// kana spells hiragana and katakana in Hepburn romaji (さくら -> sakura,
// きょうこ -> kyoko or kyouko). A long vowel written out (ou, uu, oo) is
// also spelled short, as most Latin records of Japanese names are (Yuko,
// Kohei); the katakana length mark ー is dropped or repeats the vowel.
func kana(key string) ([]segment, bool) {
	rs := []rune(key)
	for i, r := range rs {
		if 'ァ' <= r && r <= 'ヶ' {
			rs[i] = r - 0x60 // katakana -> hiragana
		}
	}
	var segs []segment
	double := false // after っ: double the next consonant
	last := byte(0) // the vowel that ends the previous syllable
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == 'っ':
			double = true
			continue
		case r == 'ー':
			if last == 0 {
				return nil, false
			}
			segs = append(segs, segment{"", string(last)})
			continue
		case breakRune(r) || r == '・':
			segs = append(segs, segment{" "})
			last = 0
			continue
		}
		syl, ok := kanaSyllables[r]
		if !ok {
			return nil, false
		}
		if i+1 < len(rs) {
			if y, ok := kanaSmall[rs[i+1]]; ok {
				switch {
				case strings.HasSuffix(syl, "i") && len(syl) > 1:
					base := strings.TrimSuffix(syl, "i")
					if base == "sh" || base == "ch" || base == "j" {
						syl = base + y[1:]
					} else {
						syl = base + y
					}
					i++
				}
			}
		}
		v := syl[len(syl)-1]
		if len(syl) == 1 && (syl == "u" && (last == 'o' || last == 'u') || syl == "o" && last == 'o' || syl == "a" && last == 'a') {
			// A long vowel: Yuuko, Yuko.
			segs = append(segs, segment{"", syl})
			continue
		}
		if double && syl[0] != 'a' && syl[0] != 'i' && syl[0] != 'u' && syl[0] != 'e' && syl[0] != 'o' {
			if strings.HasPrefix(syl, "ch") {
				syl = "t" + syl
			} else {
				syl = syl[:1] + syl
			}
		}
		double = false
		segs = append(segs, segment{syl})
		last = v
		if syl == "n" {
			last = 0
		}
	}
	return segs, true
}

var kanaSmall = map[rune]string{'ゃ': "ya", 'ゅ': "yu", 'ょ': "yo"}

var kanaSyllables = func() map[rune]string {
	const table = "" +
		"あa いi うu えe おo かka きki くku けke こko がga ぎgi ぐgu げge ごgo " +
		"さsa しshi すsu せse そso ざza じji ずzu ぜze ぞzo たta ちchi つtsu てte とto " +
		"だda ぢji づzu でde どdo なna にni ぬnu ねne のno はha ひhi ふfu へhe ほho " +
		"ばba びbi ぶbu べbe ぼbo ぱpa ぴpi ぷpu ぺpe ぽpo まma みmi むmu めme もmo " +
		"やya ゆyu よyo らra りri るru れre ろro わwa ゐi ゑe をo んn ゔvu " +
		"ぁa ぃi ぅu ぇe ぉo ゃya ゅyu ょyo ゎwa"
	m := map[rune]string{}
	for _, f := range strings.Fields(table) {
		r := []rune(f)
		m[r[0]] = string(r[1:])
	}
	return m
}()

// hangul spells Korean syllables in the Revised Romanization, syllable by
// syllable as names are (민준 -> minjun, 서연 -> seoyeon), with the older
// McCune-Reischauer-like spellings as alternatives (eo -> u, g -> k).
func hangul(key string) ([]segment, bool) {
	var segs []segment
	for _, r := range key {
		if breakRune(r) {
			segs = append(segs, segment{" "})
			continue
		}
		if r < 0xAC00 || r > 0xD7A3 {
			return nil, false
		}
		idx := int(r - 0xAC00)
		l, v, t := idx/588, (idx%588)/28, idx%28
		segs = append(segs, hangulInitials[l], hangulVowels[v], hangulFinals[t])
	}
	return segs, true
}

var hangulInitials = []segment{
	{"g", "k"}, {"kk"}, {"n"}, {"d", "t"}, {"tt"}, {"r", "l"}, {"m"}, {"b", "p"}, {"pp"},
	{"s"}, {"ss"}, {""}, {"j", "ch"}, {"jj"}, {"ch"}, {"k"}, {"t"}, {"p"}, {"h"},
}

var hangulVowels = []segment{
	{"a"}, {"ae"}, {"ya"}, {"yae"}, {"eo", "u", "o"}, {"e"}, {"yeo", "yu", "yo"}, {"ye"}, {"o"},
	{"wa"}, {"wae"}, {"oe"}, {"yo"}, {"u", "oo"}, {"wo"}, {"we"}, {"wi"}, {"yu"},
	{"eu"}, {"ui"}, {"i"},
}

var hangulFinals = []segment{
	{""}, {"k"}, {"k"}, {"k"}, {"n"}, {"n"}, {"n"}, {"t"}, {"l"}, {"k"}, {"m"}, {"l"},
	{"l"}, {"l"}, {"p"}, {"l"}, {"m"}, {"p"}, {"p"}, {"t"}, {"t"}, {"ng"}, {"t"}, {"t"},
	{"k"}, {"t"}, {"p"}, {"t"},
}

// RomajiShort returns key, a Latin key that reads as Japanese romaji, with
// its long vowels ou and uu written short (yuuko -> yuko, kouhei -> kohei;
// yūko is folded to yuko by namekey already), or "" when key is not romaji
// or has no such long vowel.
func RomajiShort(key string) string {
	// Only ou and uu, in a name ending in a vowel as most Japanese given
	// names do: aa, oo and a final n also close Finnish, Persian and
	// French names that read as romaji (Aabia, Ahoo, Akoun).
	if !strings.Contains(key, "ou") && !strings.Contains(key, "uu") ||
		!isVowel(key[len(key)-1]) || !IsRomaji(key) {
		return ""
	}
	s := strings.NewReplacer("ou", "o", "uu", "u").Replace(key)
	if s == key {
		return ""
	}
	return s
}

// IsRomaji reports whether key, a Latin key, is made only of Hepburn
// syllables (kana spelled in romaji), with at least two of them.
func IsRomaji(key string) bool {
	n := 0
	for i := 0; i < len(key); {
		l := romajiSyllable(key[i:])
		if l == 0 {
			return false
		}
		i += l
		n++
	}
	return n >= 2
}

// romajiSyllable returns the length of the Hepburn syllable s starts with,
// 0 if none.
func romajiSyllable(s string) int {
	if s == "" {
		return 0
	}
	if isVowel(s[0]) {
		return 1
	}
	if s[0] == 'n' && (len(s) == 1 || !isVowel(s[1]) && s[1] != 'y') {
		return 1 // ん
	}
	// A doubled consonant (っ): kk, tt, ss, pp, tch.
	if len(s) > 2 && s[0] == s[1] && strings.IndexByte("ktsp", s[0]) >= 0 {
		if l := romajiSyllable(s[1:]); l > 0 {
			return 1 + l
		}
	}
	for _, c := range []string{"shy", "chy", "tsu", "sh", "ch", "ky", "gy", "ny", "hy", "by", "py", "my", "ry", "j"} {
		if strings.HasPrefix(s, c) && len(s) > len(c) && isVowel(s[len(c)]) {
			return len(c) + 1
		}
	}
	if strings.IndexByte("kgszjtdnhbpmyrwf", s[0]) >= 0 && len(s) > 1 && isVowel(s[1]) {
		switch s[:2] {
		case "si", "ti", "tu", "hu", "zi", "di", "du", "wi", "wu", "we", "yi", "ye", "fa", "fi", "fe", "fo":
			return 0
		}
		return 2
	}
	return 0
}

func isVowel(c byte) bool { return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u' }

// Syllables returns how many East Asian syllables word, one Latin word,
// is made of, 0 when it is not made of them: pinyin (xiaoming: 2), the
// Revised Romanization of Korean (seoyeon: 2) or Wade-Giles and Hong Kong
// spellings (hsiao, kwok). The sets are permissive (any initial with any
// final), so many short Western names parse too ("anna" is an + na):
// callers use it only with other evidence, an East Asian surname or a
// given name split into single syllables.
func Syllables(word string) int {
	n := len(word)
	if n == 0 || n > 24 {
		return 0
	}
	// best[i]: fewest syllables covering word[:i], -1 when none do.
	var best [25]int
	for i := 1; i <= n; i++ {
		best[i] = -1
		for j := max(0, i-7); j < i; j++ {
			if (j == 0 || best[j] > 0) && eaSyllable(word[j:i]) {
				if c := best[j] + 1; best[i] < 0 || c < best[i] {
					best[i] = c
				}
			}
		}
	}
	return max(best[n], 0)
}

var eaInitials = func() map[string]bool {
	m := map[string]bool{}
	for _, in := range strings.Fields("b p m f d t n l g k h j q x zh ch sh r z c s y w kk tt pp ss jj hs ts") {
		m[in] = true
	}
	return m
}()

var eaFinals = func() map[string]bool {
	m := map[string]bool{}
	for _, f := range strings.Fields("a o e i u v ai ei ao ou an en ang eng ong er ia ie iao iu ian in iang " +
		"ing iong ua uo uai ui uan un uang ue ve uen ueng " +
		// Korean vowels and codas
		"ae ya yae eo yeo ye wa wae oe yo wo we wi yu eu " +
		"ak an al am ap at ang ik il im ip it ok on ol om op ot uk ul um up ut " +
		"euk eun eul eum eup eung eok eon eol eom eop eong yeok yeon yeol yeom yeop yeong " +
		"yak yang yok yong yuk yun yul yung wan wang won wol wook ook oon ool " +
		"aek aeng yeon eng ing oi oong uen un ung " +
		// Wade-Giles and Cantonese spellings
		"ieh ueh uei ung iung ee oo oy ai au oi ui ou ok uk ing eung eong") {
		m[f] = true
	}
	return m
}()

func eaSyllable(s string) bool {
	if eaFinals[s] {
		return true
	}
	for l := 1; l <= 2 && l < len(s); l++ {
		if eaInitials[s[:l]] && eaFinals[s[l:]] {
			return true
		}
	}
	return false
}
