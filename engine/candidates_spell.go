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
const abjadCountries = "'AE','BH','DZ','EG','IQ','JO','KW','LB','LY','MA','OM','PS','QA','SA','SD','SY'," +
	"'TN','YE','IR','AF','PK','MR','TJ','AZ','BD','KM','SO','DJ'"

// speller finds the Latin spelling of a name written in Arabic script: of
// the Latin names of abjadCountries with one of its skeletons (see
// translit.Skeletons), the one with the most records in those countries.
// Its index holds one key per skeleton and is built on the first such
// name an engine sees, in one scan of the names table (about a second on a
// busy machine, once per process), so that opening an engine stays fast.
type speller struct {
	once  sync.Once
	index map[string]spelling // skeleton -> the best-supported Latin key
}

type spelling struct {
	key     string
	records int64
}

type spellings map[string]spelling

// spelling returns the Latin key to try for an abjad key (one word), or
// "" when there is none.
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
	e.spell.once.Do(func() { e.spell.index = e.buildSpellIndex() })
	// The skeletons come likeliest reading first; the first one found
	// answers (a long vowel read as such before read as nothing).
	for _, s := range skels {
		if sp, ok := e.spell.index[s]; ok {
			return sp.key
		}
	}
	return ""
}

func (e *Engine) buildSpellIndex() map[string]spelling {
	index := spellings{}
	e.scanKeys("spelling", abjadCountries, func(key string, n int64) {
		if s := translit.LatinSkeleton(key); s != "" {
			index.offer(s, key, n)
		}
	})
	return index
}

// offer keeps key under k when it has more records than the key there.
func (m spellings) offer(k, key string, n int64) {
	if old, ok := m[k]; !ok || n > old.records {
		m[k] = spelling{key, n}
	}
}

// scanKeys calls f with each key of form 0 found in countries (a quoted,
// comma-separated SQL list) and its records there, in one scan of the
// names table. A failing scan is logged (no name in the line): the engine
// answers everything else, without the index being built.
func (e *Engine) scanKeys(index, countries string, f func(key string, records int64)) {
	rs, err := e.db.Query(`SELECT key, sum(female + male) FROM names WHERE form = 0 AND (country IN (` +
		countries + `) OR country = '' AND sole IN (` + countries + `)) GROUP BY key`)
	if err != nil {
		slog.Error("names db: build an index", "index", index, "path", e.path, "err", err)
		return
	}
	defer rs.Close()
	for rs.Next() {
		var key string
		var n int64
		if err := rs.Scan(&key, &n); err != nil {
			slog.Error("names db: build an index", "index", index, "path", e.path, "err", err)
			return
		}
		f(key, n)
	}
	if err := rs.Err(); err != nil {
		slog.Error("names db: build an index", "index", index, "path", e.path, "err", err)
	}
}

// cyrillicCountries write names in Cyrillic; their data answers a Latin
// name the rest of the data does not know (Yaroslava, Vsevolod), under
// the Cyrillic name whose Latin spellings include it.
const cyrillicCountries = "'RU','UA','BY','BG','KZ','MK','RS','KG','MN','TJ'"

// cyrillicIndex maps the Latin spellings of the Cyrillic names in the
// database (translit.ToLatin) to the best-supported Cyrillic name.
type cyrillicIndex struct {
	once  sync.Once
	index map[string]spelling
}

// cyrillicSpelling returns the Cyrillic key whose Latin spellings include
// key, a Latin key of one word, or "".
func (e *Engine) cyrillicSpelling(key string) string {
	if strings.IndexByte(key, ' ') >= 0 || translit.ScriptOf(key) != translit.Latin {
		return ""
	}
	e.cyr.once.Do(func() { e.cyr.index = e.buildCyrillicIndex() })
	return e.cyr.index[namekey.Fold(key)].key
}

func (e *Engine) buildCyrillicIndex() map[string]spelling {
	index := spellings{}
	e.scanKeys("cyrillic", cyrillicCountries, func(key string, n int64) {
		if translit.ScriptOf(key) != translit.Cyrillic {
			return
		}
		for _, v := range translit.ToLatin(key) {
			index.offer(v, key, n)
		}
	})
	return index
}
