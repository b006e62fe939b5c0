package engine

import (
	"strings"
	"unicode"

	"github.com/genderize-kong/genderize/engine/surname"
	"github.com/genderize-kong/genderize/engine/translit"
	"github.com/genderize-kong/genderize/schema/namekey"
)

// candidate is one key a name is looked up under.
type candidate struct {
	key    string
	folded bool // an accent-folded key: read its folded row, else its exact row
	// group > 0 marks spellings of one name in another script (translit):
	// of the consecutive candidates of a group, the best-supported answers.
	group int
	// whole is the key of the whole name as sent: surname evidence does
	// not apply to it.
	whole bool
	// guessed marks a Latin name matched by consonant skeleton to an
	// Arabic-script one: another name may share the consonants.
	guessed bool
}

// Candidate groups.
const (
	translitGroup = 1 + iota
	romajiGroup
)

// maxCandidates bounds the keys tried for one name (see candidates).
const maxCandidates = 24

// eastAsian says how a name of East Asian origin is answered.
type eastAsian int

const (
	notEastAsian eastAsian = iota
	// eaSparse: Chinese or Korean, which the data barely covers: a given
	// name of several syllables answers (such names are that population's
	// own), with its probability shrunk; a single syllable, which the data
	// counts as some other name (Jun, Yan, Kai), answers null.
	eaSparse
	// eaJapanese: Japanese, answered from the Japanese data first.
	eaJapanese
)

// plan is how one name is answered: the keys to try, in order, and what
// the rest of the name says.
type plan struct {
	cands []candidate
	// evidence is the gender evidence of the surname (1 for none).
	evidence surname.Evidence
	// origin are the countries whose counts weigh in for the given name,
	// from the surname, when the request has no country.
	origin []string
	ea     eastAsian
	// syllables is the number of syllables of an East Asian given name.
	syllables int
}

// titles are skipped before a given name ("Dr. Maria Lopez"). Words that
// are also given names (Don, Dona) are not titles here.
var titles = map[string]bool{
	"mr": true, "mrs": true, "ms": true, "miss": true, "mx": true, "dr": true, "prof": true,
	"sir": true, "dame": true, "herr": true, "frau": true, "mme": true, "mlle": true, "m": false,
	"sr": true, "sra": true, "srta": true, "sig": true, "sig.ra": true, "dott": true, "ing": true,
	"mag": true, "dipl": true, "univ": true, "rev": true, "fr": true, "hr": true, "fru": true,
	"madame": true, "mademoiselle": true, "monsieur": true, "signor": true, "signora": true,
	"señor": true, "señora": true, "dra": true, "doc": true, "professor": true, "dr.-ing": true,
}

// particles start a surname ("Ludwig van Beethoven", "Maria de la Cruz"):
// a given name ends before them.
var particles = map[string]bool{
	"van": true, "von": true, "der": true, "den": true, "de": true, "del": true, "della": true,
	"di": true, "da": true, "dos": true, "das": true, "du": true, "le": true, "la": true,
	"ter": true, "ten": true, "zu": true, "af": true, "al": true, "el": true, "bin": true,
	"ibn": true, "ben": false, "mac": true, "mc": true, "st": true, "y": true,
}

// makePlan returns how a name with exact key key is answered; spell finds
// the Latin spelling of an abjad word (nil: none). The keys are tried in
// order, the first with data answers (see decide); each key is tried
// exactly, then accent-folded:
//
//  1. the whole name ("maria carmen"), unless it is one initial ("J.");
//  2. for a full name, its given name: the part after the comma in
//     "Last, First" order; else, the words before the surname: the last
//     word, or the first when it is a known surname written first
//     (Hungarian "Nagy Anna", East Asian "Wang Xiaoming") or a surname
//     in capitals ("DUPONT Jean", the order of French forms; then both
//     orders are tried); initials and titles are skipped ("Dr. J. Robert
//     Oppenheimer" -> robert), and a name of initials only has no given
//     name ("J. Smith" is not answered from Smith); a compound given name
//     is tried whole before its first part ("Maria Carmen" -> maria
//     carmen -> maria; "Marie-Claire" -> marie-claire -> marie);
//  3. an East Asian given name of several syllables is tried joined
//     (Xiao-Ming, Xiao Ming -> xiaoming) and never from its first
//     syllable; romaji long vowels are also tried short (Yuuko -> yuko);
//  4. a given name in another script, spelled in Latin (translit): all
//     its spellings, the best-supported answers (Γιώργος -> giorgos).
func makePlan(name, key string, spell func(string) string) plan {
	p := plan{evidence: 1}
	if namekey.IsInitial(key) {
		return p
	}
	add := func(k string, group int, whole bool) {
		k = strings.TrimSpace(k)
		if k == "" || len(p.cands) >= maxCandidates {
			return
		}
		for _, c := range p.cands {
			if c.key == k && !c.folded {
				return
			}
		}
		p.cands = append(p.cands, candidate{key: k, group: group, whole: whole})
		// Tried even when folding changes nothing: "joao" has no exact
		// row, but the folded row of João is stored under it.
		if f := namekey.Fold(k); f != "" {
			for _, c := range p.cands {
				if c.key == f && c.folded {
					return
				}
			}
			p.cands = append(p.cands, candidate{key: f, folded: true, group: group, whole: whole})
		}
	}

	// addSpelled adds a word in another script with its Latin spellings,
	// all in one group: the best-supported answers, the word as written
	// included (さくら has 2 lexicon records in the lexicon build, sakura
	// 2,598).
	addSpelled := func(native string, joined bool) bool {
		variants := translit.ToLatin(native)
		guess := ""
		if spell != nil {
			guess = spell(native)
		}
		if len(variants) == 0 && guess == "" {
			return false
		}
		if translit.ScriptOf(native) == translit.Cyrillic {
			// The Russian register is written in Cyrillic: it answers
			// first, the Latin spellings only without it.
			add(native, 0, false)
		} else {
			add(native, translitGroup, false)
		}
		for _, v := range variants {
			if joined {
				v = strings.ReplaceAll(v, " ", "")
			}
			add(v, translitGroup, false)
		}
		if guess != "" {
			n := len(p.cands)
			add(guess, translitGroup, false)
			for i := n; i < len(p.cands); i++ {
				p.cands[i].guessed = true
			}
		}
		return true
	}

	words, sur, comma := splitName(key)
	var firstInfo, lastInfo surname.Info
	// A Korean name in Hangul is written without a space, surname first.
	hangulSplit := false
	if len(words) == 1 && sur == "" && translit.ScriptOf(key) == translit.Hangul {
		if rs := []rune(words[0]); len(rs) == 3 && hangulSurnames[rs[0]] {
			sur, words = string(rs[:1]), []string{string(rs[1:])}
			hangulSplit = true
		}
	}
	switch {
	case comma:
	case hangulSplit:
		add(key, 0, true)
	case len(words) == 1 && translit.RomajiShort(namekey.Fold(key)) != "":
		// A romaji name with long vowels is tried below with its short
		// spelling, the best-supported of the two answering.
	case len(words) == 1 && translit.ScriptOf(key) != translit.Latin && addSpelled(key, false):
	default:
		add(key, 0, true)
	}
	capsFirst := !comma && len(words) > 1 && surnameFirst(name)
	if !comma && len(words) > 1 && sur == "" {
		first, last := words[0], words[len(words)-1]
		firstInfo, lastInfo = surname.Read(first), surname.Read(last)
		tf, tl := firstInfo.Tradition, lastInfo.Tradition
		oneSyl := len(words) == 2 && len(first) <= 6 && len(last) <= 6 &&
			translit.Syllables(namekey.Fold(first)) == 1 && translit.Syllables(namekey.Fold(last)) == 1
		switch {
		case capsFirst:
			sur = last
			words = words[:len(words)-1]
		case oneSyl && (tf == surname.None) == (tl == surname.None) && (distinctlyEastAsian(first) || distinctlyEastAsian(last)):
			// Min Jun, Xiao Ming: one given name split in syllables (no
			// surname, or both could be one).
		case tl == surname.None && len(words) <= 3 && (tf == surname.Hungarian ||
			tf == surname.Japanese && translit.IsRomaji(namekey.Fold(words[1])) ||
			(tf == surname.Chinese || tf == surname.Korean) && eaGiven(words[1:])):
			sur, words = first, words[1:]
		default:
			sur, words = last, words[:len(words)-1]
		}
	}
	given := givenWords(words)

	// East Asian names.
	var info surname.Info
	switch {
	case sur == "":
		info = surname.Read("")
	case firstInfo.Gender != 0 && sur == words0(key):
		info = firstInfo
	case lastInfo.Gender != 0 && sur == lastWord(key):
		info = lastInfo
	default:
		info = surname.Read(sur)
	}
	trad := info.Tradition
	switch {
	case trad == surname.Japanese && (len(given) == 1 && translit.IsRomaji(namekey.Fold(given[0])) ||
		translit.ScriptOf(key) == translit.Kana):
		p.ea = eaJapanese
	case (trad == surname.Chinese || trad == surname.Korean) && eaGiven(given):
		p.ea, p.syllables = eaSparse, eaParts(given)
	case sur == "" && len(given) >= 2 && eaParts(given) == len(given):
		// Min Jun, Seo Yeon: single syllables in a row.
		p.ea, p.syllables = eaSparse, len(given)
	case len(given) == 1 && strings.Contains(given[0], "-") && oneSyllableParts(given[0]):
		p.ea, p.syllables = eaSparse, strings.Count(given[0], "-")+1
	case translit.ScriptOf(key) == translit.Kana:
		p.ea = eaJapanese
	case translit.ScriptOf(key) == translit.Hangul:
		p.ea, p.syllables = eaSparse, len([]rune(strings.Join(given, "")))
	}

	if p.ea == eaJapanese {
		p.origin = []string{"JP"}
	}
	if sur != "" {
		p.evidence = info.Gender
		if p.ea == notEastAsian {
			p.origin = info.Countries
		}
	}

	addGiven := func(words []string) {
		if len(words) == 0 {
			return
		}
		if p.ea == eaSparse {
			joined := strings.Join(strings.FieldsFunc(strings.Join(words, " "), func(r rune) bool { return r == ' ' || r == '-' }), "")
			if !addSpelled(joined, true) {
				add(joined, 0, false)
			}
			add(strings.Join(words, " "), 0, false)
			return
		}
		// Romaji long vowels: Yuuko, Kouhei are mostly recorded Yuko,
		// Kohei; both spellings are tried, the best-supported answers.
		if len(words) == 1 {
			if s := translit.RomajiShort(namekey.Fold(words[0])); s != "" {
				add(words[0], romajiGroup, false)
				add(s, romajiGroup, false)
				return
			}
		}
		if len(words) >= 2 {
			add(words[0]+" "+words[1], 0, false)
		}
		if translit.ScriptOf(words[0]) == translit.Latin || !addSpelled(words[0], false) {
			add(words[0], 0, false)
		}
		if head, _, ok := strings.Cut(words[0], "-"); ok && !namekey.IsInitial(head) {
			add(head, 0, false)
		}
	}
	addGiven(given)
	if capsFirst && len(given) > 0 {
		// "DUPONT Jean": the word in capitals is the surname.
		addGiven(givenWords(append(words[1:len(words):len(words)], sur)))
	}
	return p
}

func words0(key string) string {
	w, _, _ := strings.Cut(key, " ")
	return w
}

func lastWord(key string) string {
	return key[strings.LastIndexByte(key, ' ')+1:]
}

// fallback replaces the candidates of a plan that found nothing with the
// ones tried in a second query, and reports whether there are any: a Latin
// given name the data lacks is looked up in Cyrillic, where the Russian
// register writes it (Yaroslava -> ярослава); cyrillic finds that
// spelling (see Engine.cyrillicSpelling).
func (p *plan) fallback(cyrillic func(string) string) bool {
	var given string
	for _, c := range p.cands {
		if !c.whole && !c.folded && c.group == 0 && !strings.Contains(c.key, " ") {
			given = c.key
			break
		}
		if c.whole && !strings.Contains(c.key, " ") {
			given = c.key
		}
	}
	if given == "" || p.ea != notEastAsian {
		return false
	}
	k := cyrillic(given)
	if k == "" {
		return false
	}
	p.cands = append(p.cands[:0], candidate{key: k})
	return true
}

// splitName splits a key into its name words and, for "Last, First",
// the surname; titles before the given name are dropped.
func splitName(key string) (words []string, sur string, comma bool) {
	given := key
	last, first, comma := strings.Cut(key, ",")
	if comma {
		given = first
		if strings.TrimSpace(first) == "" {
			// "Smith," names nobody: keep what there is.
			given, comma = last, false
		} else if f := strings.Fields(last); len(f) > 0 {
			sur = f[len(f)-1]
		}
	}
	words = strings.Fields(given)
	for len(words) > 1 && titles[strings.TrimSuffix(words[0], ".")] {
		words = words[1:]
	}
	return words, sur, comma
}

// givenWords returns the given names among words (surname removed): up to
// the first surname particle, without initials.
func givenWords(words []string) []string {
	var out []string
	for i, w := range words {
		if i > 0 && particles[w] {
			break
		}
		if namekey.IsInitial(w) || titles[strings.TrimSuffix(w, ".")] {
			continue
		}
		out = append(out, w)
	}
	return out
}

// eaParts returns the number of East Asian syllables the given names are
// made of (each word or hyphenated part one or more), 0 when any part is
// not made of them.
func eaParts(given []string) int {
	n := 0
	for _, w := range given {
		for _, part := range strings.Split(namekey.Fold(w), " ") {
			s := translit.Syllables(part)
			if s == 0 {
				return 0
			}
			n += s
		}
	}
	return n
}

// distinctlyEastAsian reports whether a syllable is spelled in a way few
// Western given names are (Jun, Xiao, Seo, Hyun), so that "Min Jun" is read
// as one given name split in two and "Joy Long" or "Hal King" are not.
func distinctlyEastAsian(w string) bool {
	for _, s := range []string{"x", "q", "zh", "eo", "eu", "ae", "ao", "iu", "ui", "ie", "yu", "ju", "hy", "ky", "gy", "ny"} {
		if strings.Contains(w, s) {
			return true
		}
	}
	return false
}

// eaGiven reports whether given reads as a Chinese or Korean given name:
// one or two syllables (Wei, Xiaoming, Seo-Yeon), not Nielsen (ni-el-sen).
func eaGiven(given []string) bool {
	n := eaParts(given)
	return n == 1 || n == 2
}

// oneSyllableParts reports whether every hyphenated part of w is a single
// East Asian syllable (Xiao-Ming, Seo-Yeon, not Jean-Pierre).
func oneSyllableParts(w string) bool {
	for _, part := range strings.Split(w, "-") {
		if translit.Syllables(namekey.Fold(part)) != 1 {
			return false
		}
	}
	return true
}

// hangulSurnames are the commonest Korean surnames in Hangul (Statistics
// Korea): a name of three syllables starting with one is surname + given.
var hangulSurnames = func() map[rune]bool {
	m := map[rune]bool{}
	for _, r := range "김이박최정강조윤장임한오서신권황안송류전홍고문양손배백허유남심노하곽성차주우구민진나지엄채원천방공현함변염여추도소석선설마길연위표명기반왕금옥육인맹제모탁국어은편용예경봉사부가복태목형피두감호" {
		m[r] = true
	}
	return m
}()

// surnameFirst reports whether name starts with a word of two or more
// letters all in capitals and has a later word with a lower-case letter.
func surnameFirst(name string) bool {
	first, rest, ok := strings.Cut(strings.TrimSpace(name), " ")
	if !ok {
		return false
	}
	letters := 0
	for _, r := range first {
		switch {
		case unicode.IsLower(r):
			return false
		case unicode.IsUpper(r):
			letters++
		}
	}
	return letters >= 2 && strings.IndexFunc(rest, unicode.IsLower) >= 0
}
