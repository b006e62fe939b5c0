package engine

import (
	"log/slog"
	"strings"
	"sync"

	"github.com/genderize-kong/genderize/engine/translit"
	"github.com/genderize-kong/genderize/schema/namekey"
)

// abjadCountries are the countries where names are written in Arabic
// script (and Persian, Urdu, Pashto): the Latin names of their data, the
// way their people's names are spelled in Latin, are the spellings offered
// for names sent in that script. Drawn from all Latin names instead, the
// best-supported name with the same consonants is too often a Western one
// (سامر, Samer, read as Summer; فرانک, Faranak, as Frank).
var abjadCountries = countrySet("AE BH DZ EG IQ JO KW LB LY MA OM PS QA SA SD SY TN YE IR AF PK MR TJ AZ BD KM SO DJ")

// cyrillicCountries write names in Cyrillic; their data answers a Latin
// name the rest of the data does not know (Agafya, Oktyabrina), under the
// Cyrillic name whose Latin spellings include it.
var cyrillicCountries = countrySet("RU UA BY BG KZ MK RS KG MN")

func countrySet(codes string) map[string]bool {
	m := map[string]bool{}
	for _, c := range strings.Fields(codes) {
		m[c] = true
	}
	return m
}

// spellIndex holds what the engine needs to cross scripts, from one scan
// of the names table (about half a second on an idle machine), started by
// Open in the background; the first name that needs it waits for it, so
// answers never depend on timing.
type spellIndex struct {
	once sync.Once
	// latin: skeleton (translit.Skeletons) -> the Latin name of
	// abjadCountries with the most records there.
	latin spellings
	// cyrillic: Latin spelling (translit.ToLatin) -> the Cyrillic name of
	// cyrillicCountries with the most records there.
	cyrillic spellings
}

type spelling struct {
	key     string
	records int64
}

type spellings map[string]spelling

// offer keeps key under k when it has more records than the key there.
func (m spellings) offer(k, key string, n int64) {
	if old, ok := m[k]; !ok || n > old.records || n == old.records && key < old.key {
		m[k] = spelling{key, n}
	}
}

// spellings returns the engine's index, built on first use.
func (e *Engine) spellings() *spellIndex {
	e.spell.once.Do(e.buildSpellIndex)
	return &e.spell
}

// spelling returns the Latin key to try for an Arabic-script key (one
// word), or "" when there is none.
func (e *Engine) spelling(key string) string {
	// Hebrew names are answered in their own script (the Israeli data is
	// written in it); matched to the Arabic-world Latin names they did
	// worse than not at all (faker's he: 3 right, 6 wrong more).
	if translit.ScriptOf(key) != translit.Arabic {
		return ""
	}
	skels := translit.Skeletons(key)
	if len(skels) == 0 {
		return ""
	}
	idx := e.spellings()
	// The skeletons come likeliest reading first; the first one found
	// answers (a long vowel read as such before read as nothing).
	for _, s := range skels {
		if sp, ok := idx.latin[s]; ok {
			return sp.key
		}
	}
	return ""
}

// cyrillicSpelling returns the Cyrillic key whose Latin spellings include
// key, a Latin key of one word, or "".
func (e *Engine) cyrillicSpelling(key string) string {
	if strings.IndexByte(key, ' ') >= 0 || translit.ScriptOf(key) != translit.Latin {
		return ""
	}
	return e.spellings().cyrillic[namekey.Fold(key)].key
}

// buildSpellIndex reads the keys of abjadCountries and cyrillicCountries
// with their records there, in one scan. A failing scan is logged (no name
// in the line): the engine answers everything else, without crossing
// scripts this way.
func (e *Engine) buildSpellIndex() {
	e.spell.latin, e.spell.cyrillic = spellings{}, spellings{}
	var in []string
	for c := range abjadCountries {
		in = append(in, "'"+c+"'")
	}
	for c := range cyrillicCountries {
		in = append(in, "'"+c+"'")
	}
	list := strings.Join(in, ",")
	rs, err := e.db.Query(`SELECT key, coalesce(sole, country), female + male FROM names WHERE form = 0 AND (country IN (` +
		list + `) OR country = '' AND sole IN (` + list + `))`)
	if err != nil {
		slog.Error("names db: build the spelling index", "path", e.path, "err", err)
		return
	}
	defer rs.Close()
	latin, cyrillic := map[string]int64{}, map[string]int64{}
	for rs.Next() {
		var key, country string
		var n int64
		if err := rs.Scan(&key, &country, &n); err != nil {
			slog.Error("names db: build the spelling index", "path", e.path, "err", err)
			return
		}
		switch {
		case abjadCountries[country]:
			latin[key] += n
		case cyrillicCountries[country]:
			cyrillic[key] += n
		}
	}
	if err := rs.Err(); err != nil {
		slog.Error("names db: build the spelling index", "path", e.path, "err", err)
	}
	for key, n := range latin {
		if s := translit.LatinSkeleton(key); s != "" {
			e.spell.latin.offer(s, key, n)
		}
	}
	for key, n := range cyrillic {
		if translit.ScriptOf(key) != translit.Cyrillic {
			continue
		}
		for _, v := range translit.ToLatin(key) {
			e.spell.cyrillic.offer(v, key, n)
		}
	}
}
