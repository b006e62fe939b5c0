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
// as sent. The keys tried, first with data wins (see makePlan): the whole
// name, then its accent-folded form (José -> jose); then for a full name
// the given name: after the comma in "Last, First", else the words before
// the surname, initials and titles skipped, a compound given name
// (Marie-Claire, Maria Carmen) before its first part. A multi-word key
// backed by fewer than minCompoundRecords records yields to the shorter
// keys after it. A plain spelling also finds accented data (Joao -> João):
// every key is tried against the folded rows.
//
// Each key is one indexed read: the database stores the folded keys and the
// pooled global counts precomputed, and all the keys of a batch go to
// SQLite in one query (key IN (...)), joined with the (key, country) rows
// the origin of full names needs (below). Answers are cached per (country,
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
// # Full names
//
// The surname is the last word, the words before the comma, or the first
// word when it is a known surname of a tradition that writes it first
// (Hungarian "Nagy Anna", Chinese "Wang Xiaoming", Japanese "Tanaka
// Yuko") or is written in capitals ("DUPONT Jean", then both orders are
// tried). Given names end at a surname particle (van, de, di, von).
// Initials never answer: "J. Smith" and "J." get null with count 0 rather
// than an answer from the surname or from a letter.
//
// The surname is evidence (package surname):
//
//   - of gender, where the language inflects it (Kowalska/Kowalski,
//     Ivanova/Ivanov, Nováková, Jonaitienė, Bērziņa, Jónsdóttir,
//     Papadopoulou): a likelihood ratio L (20 for the unambiguous
//     endings, 4 for weaker ones, their inverses for the masculine
//     forms) multiplies the odds of the given name's female share s,
//     first smoothed by half a record each way over its n records:
//     s' = (s*n + 0.5) / (n + 1), odds = s' / (1 - s') * L, share =
//     odds / (1 + odds). An even given name (Sasha, Jean in the pool)
//     follows the surname; a name that is 99% one gender keeps it.
//   - of origin: endings and common surnames that belong to one language
//     (-nen Finnish, -ski Polish, -escu Romanian, Rossi Italian, Nielsen
//     Danish) name up to two countries. Without a country in the
//     request, the given name's share in that country weighs in as
//     w = n / (n + 10) against the pooled share, n its records there:
//     Andrea Rossi is male (Italy), Andrea Smith female (pooled);
//     with a country_id, the caller's country wins and origin is not
//     used. A character trigram model trained on the database's names was
//     measured first and not used (right 25% of the time on held-out
//     names: the large registers hold names of every origin).
//
// Count stays the number of records behind the given name in the scope
// of the request: surname evidence and origin move the share, never count
// nor the evidence E the probability is calibrated with (see Probability).
// The whole name as sent, when it has data, is answered as it is.
//
// # East Asian names
//
// A given name of Chinese or Korean syllables with a Chinese or Korean
// surname, or split in single syllables (Xiao-Ming, Min Jun, Seo-Yeon),
// is looked up joined (xiaoming) and never from its first syllable. The
// data holds no Chinese or Korean register: a name of two syllables,
// which only that population wears, answers from its diaspora's records
// with its margin over 0.5 shrunk by eaShrink (0.8); a single syllable,
// which the data counts as some other name (Jun, Yan, Kai), answers null
// with count 0. A Japanese name (Japanese surname with a romaji given
// name, or kana) answers from the Japanese data first (origin JP), else
// shrunk the same way. Romaji long vowels are tried both ways (Yuuko,
// Yuko; Yūko folds to yuko), the best-supported answering. Hangul is
// romanised (민준 -> minjun; 김민준 is surname 김 + minjun); kanji and
// hanzi are looked up as they are (the opt-in lexicon build has kanji).
//
// # Other scripts
//
// Names in Greek, Cyrillic, Armenian, Georgian, kana and Hangul are also
// tried in their Latin spellings (package translit: Γιώργος -> giorgos,
// Юлия -> yuliya, yulia...), the best-supported spelling answering;
// Cyrillic and Hebrew are first looked up in their own script (the
// Russian and Israeli data are written in it). Arabic-script names (Arabic,
// Persian) leave short vowels unwritten: they are matched by consonant
// skeleton to the Latin names of the countries that write in that script
// (محمد -> mhmd -> mohamed), the most recorded there answering, its
// margin over 0.5 shrunk by guessShrink (0.6: such matches were right 73%
// of the time on the Persian lexicon, 87-91% on faker's Arabic and
// Persian names). A Latin
// name the data lacks is looked up in Cyrillic, in a second query for the
// unanswered names only (Agafya -> агафья, from the Russian register).
// Both indexes come from one scan of the names table that Open starts in
// the background (answers wait for it, never depend on timing).
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
