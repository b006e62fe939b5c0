package engine

// priorRecords is the prior's weight in records for each gender: a
// Beta(1/4, 1/4) prior. It decides how far a few records are from
// certainty: one register record answers 0.83, four 0.94, a hundred
// 0.998. It was set on the held-out names of `make eval` (answers from
// fewer than ten records were right 90% of the time): Jeffreys' 1/2 stated
// 0.82 for them, too little; 1/4 states 0.87.
const priorRecords = 0.25

// calibrated is the probability stated for an answer whose gender has the
// share share (> 0.5) of the weighted records, backed by evidence (the
// records counted at their source's trust, see schema.sql): the mean of the
// Beta posterior, (share*evidence + priorRecords) / (evidence +
// 2*priorRecords), rounded to two decimals. A raw share claims certainty
// from a single record; on held-out names, answers from fewer than ten
// records stated 0.98 and were right 90% of the time. Evidence, not the
// count, enters: a Wikidata person is worth half a birth record.
func calibrated(share, evidence float64) float64 {
	if !(evidence > 0) { // also NaN
		evidence = 0
	}
	return round2((share*evidence + priorRecords) / (evidence + 2*priorRecords))
}
