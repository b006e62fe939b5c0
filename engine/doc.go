// Package engine predicts the gender of personal names from the name
// database built by genderize-db (package schema). It knows nothing of Kong.
//
// # Answers
//
// Open (or Shared, once per process and path, which also follows the file:
// see Live) opens the database read-only; Predict answers a batch of names in the scope of one country, or of all
// countries pooled when the country is "". For each name:
//
//   - gender is the majority gender, probability its calibrated share (see
//     Probability) rounded to two decimals (math.Round(x*100)/100, so
//     0.996 gives 1.0 as genderize.io does), count the records behind the
//     answer in the scope used;
//   - an exact tie between the female and male share gives gender null,
//     probability 0.5 and count the total: the data has the name, and says
//     it is evenly split;
//   - nothing known (unknown name, a script the data does not cover, junk,
//     invalid UTF-8, an empty key) gives gender null, probability 0, count 0.
//
// # Lookup
//
// A name is keyed by namekey.Key (NFC, full case folding, white space
// collapsed, surrounding punctuation ignored); the response echoes the name
// as sent. The keys tried, first with data wins (see candidates): the whole
// name, then its accent-folded form (José -> jose); then for a full name
// the given name: after the comma in "Last, First", else from the start,
// initials and titles skipped, a compound given name (Marie-Claire, Maria
// Carmen) before its first part; for "DUPONT Jean" (surname first, in
// capitals) the word after the surname last. A multi-word key backed by
// fewer than minCompoundRecords records yields to the shorter keys after
// it. A plain spelling also finds accented data (Joao -> João): every key is
// tried against the folded rows. Hebrew, Cyrillic and every other script
// are looked up in their own script.
//
// Each key is one indexed read: the database stores the folded keys and the
// pooled global counts precomputed, and all the keys of a batch go to
// SQLite in one query (key IN (...)). Answers are cached per (country,
// name as sent) in a ristretto cache, unknown names included, with a small
// bounded layer in front of it for the hottest names (see front).
//
// # Probability
//
// The probability is calibrated: among answers stated at p, about p should
// be right. A raw share claims certainty from one record, so the stated
// probability is the mean of a Beta posterior over the majority share s:
//
//	p = (s*E + a) / (E + 2a),  a = 0.15 (a Beta(0.15, 0.15) prior)
//
// where E is the evidence of the row answering: its records, each counted
// at its source's trust (1 for birth registers, censuses and Wikidata
// person counts; 1/2 for ru_names' noisy labels and for lexicon entries),
// stored per row by the builder (names.evidence). One record answers 0.88,
// four 0.97, a hundred 1.0; large counts keep their share. count stays
// the number of real records.
//
// The prior and the trusts were chosen, and are checked, with `make eval`
// (README.md): on names held out of the evaluation build, in each count
// bucket (<10, 10-99, 100-999, 1000-9999, >=10000 records) the mean stated
// probability is within 0.05 of the observed accuracy, with and without
// country_id. The remaining gap is one of the global model, not of counts:
// without country_id, names of 10-99 records from one country's data are
// right less often than their share says when the person is from another
// country (faker's first names: stated 0.96, right 0.90).
//
// # The global model
//
// Without a country, every country's data is pooled, but not as raw
// counts. The sources count different things at very different scales: US
// births over 145 years (hundreds of millions), Swiss and Slovenian
// population stocks summed over years (a person counted once a year),
// Brazil's 2010 census, a few hundred Wikidata persons for most of the
// world. Pooled raw, whichever office publishes the biggest numbers decides
// every name shared between countries; weighting every country equally
// instead lets a few noisy Wikidata records outvote a national register.
// The database therefore weights each country's counts by 1/sqrt(its total
// records), so a country weighs the square root of its data: more data
// still counts for more, not linearly. The probability comes from these
// weighted counts; count is the raw number of records pooled, because it
// answers "how many records is this based on". Within a country, counts
// are used as they are (sources of one country are summed).
package engine
