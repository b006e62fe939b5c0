package engine

import (
	"database/sql"
	"math"
	"strings"
	"sync"

	"github.com/genderize-kong/genderize/engine/surname"
)

// pair is a (key, country) row a plan reads besides its keys' rows in the
// request's scope: the given name in the countries its surname points to.
type pair struct{ key, country string }

// appendPairs appends the rows of the origin countries the given-name
// candidates need: single-word given names only (not the whole name, not
// a compound, not another script's spellings), the answers origin changes.
func (p *plan) appendPairs(dst []pair) []pair {
	start := len(dst)
	for _, c := range p.cands {
		if c.whole || c.group == translitGroup && p.ea != eaJapanese || strings.Contains(c.key, " ") {
			continue
		}
	next:
		for _, o := range p.origin[:min(len(p.origin), maxOrigins)] {
			pr := pair{c.key, o}
			for _, d := range dst[start:] {
				if d == pr {
					continue next
				}
			}
			dst = append(dst, pr)
		}
	}
	return dst
}

// maxOrigins bounds the origin countries read per name.
const maxOrigins = 2

// extraStmts are the lookups with pairs, one per (keys size, pairs size),
// prepared when first needed: most batches have none.
type extraStmts struct {
	mu    sync.Mutex
	stmts map[[2]int]*sql.Stmt
}

// pairStmt returns the statement reading batchSizes[size] keys (as the
// plain lookup does) and batchSizes[psize] (key, country) pairs.
func (e *Engine) pairStmt(size, psize int) (*sql.Stmt, error) {
	e.extra.mu.Lock()
	defer e.extra.mu.Unlock()
	id := [2]int{size, psize}
	if s := e.extra.stmts[id]; s != nil {
		return s, nil
	}
	q := lookupQuery(batchSizes[size]) +
		" UNION ALL SELECT n.key, n.country, n.form, n.female, n.male, n.female_share, n.sole, coalesce(n.evidence, n.female + n.male) FROM (VALUES (?,?)" +
		strings.Repeat(",(?,?)", batchSizes[psize]-1) +
		") AS v JOIN names n ON n.key = v.column1 AND n.country = v.column2"
	s, err := e.db.Prepare(q)
	if err != nil {
		return nil, err
	}
	if e.extra.stmts == nil {
		e.extra.stmts = map[[2]int]*sql.Stmt{}
	}
	e.extra.stmts[id] = s
	return s, nil
}

func (x *extraStmts) close() {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, s := range x.stmts {
		s.Close()
	}
	x.stmts = nil
}

// Constants of plan.adjust; see the package documentation.
const (
	// originPrior is the weight, in records, of the pooled share against
	// the origin country's own: a country with n records of the given
	// name weighs n / (n + originPrior).
	originPrior = 10
	// eaShrink scales the margin over 0.5 of an answer for a Chinese or
	// Korean given name, which the data knows only from its diaspora.
	eaShrink = 0.8
	// guessShrink scales the margin of an answer from a Latin name matched
	// to an Arabic-script one by its consonants: on the Persian lexicon
	// such answers were right 73% of the time, on faker's Arabic and
	// Persian names 87-91%.
	guessShrink = 0.6
)

// adjust returns the answer for candidate c found with row r, taking in
// the rest of the name: the origin country's counts (no country sent),
// the East Asian policy, then the surname's gender evidence. ok is false
// when the name must not be answered at all.
func (p *plan) adjust(c candidate, r row, rows map[rowKey]row, country string) (a answer, ok bool) {
	count := r.female + r.male
	share := r.share
	if c.whole {
		return answerOf(share, count, r.evidence), true
	}
	switch p.ea {
	case eaSparse:
		if p.syllables < 2 {
			// One syllable: the records are of some other name.
			return answer{}, false
		}
	}
	fromOrigin := false
	if country == "" {
		for _, o := range p.origin[:min(len(p.origin), maxOrigins)] {
			or, found := find(rows, c.key, c.folded, o)
			if !found && c.folded {
				or, found = find(rows, c.key, false, o)
			}
			n := or.female + or.male
			if !found || n <= 0 {
				continue
			}
			w := float64(n) / float64(n+originPrior)
			share = w*or.share + (1-w)*share
			fromOrigin = true
			break
		}
	}
	if c.guessed {
		share = 0.5 + (share-0.5)*guessShrink
	}
	if p.ea == eaSparse || p.ea == eaJapanese && !fromOrigin {
		// No data about the population: the records are of its diaspora,
		// or of a like-spelled name elsewhere (Kimi is Finnish too).
		share = 0.5 + (share-0.5)*eaShrink
	}
	if p.evidence != 1 {
		share = withEvidence(share, count, p.evidence)
	}
	return answerOf(share, count, r.evidence), true
}

// withEvidence combines a female share backed by count records with a
// likelihood ratio: the share is first smoothed by half a record each way
// (so that a share of 1 from 3 records can still move), then its odds are
// multiplied by the ratio.
func withEvidence(share float64, count int64, lr surname.Evidence) float64 {
	n := float64(count)
	s := (share*n + 0.5) / (n + 1)
	odds := s / (1 - s) * float64(lr)
	if math.IsInf(odds, 0) || math.IsNaN(odds) {
		return share
	}
	return odds / (1 + odds)
}
