package engine

import "testing"

// TestPredictFullNamesAndScripts checks, on the real database, the names
// the issue gives as examples: other scripts answer through their Latin
// spelling with the echo unchanged, the surname's origin and form move the
// answer, initials and split East Asian given names are not answered from
// a fragment.
func TestPredictFullNamesAndScripts(t *testing.T) {
	e := openTest(t, Options{CacheEntries: -1})
	tests := []struct {
		name, country string
		gender        string // "" for null
		minCount      int64  // at least this many records (0: count must be 0)
	}{
		{"Γιώργος", "", Male, 1000},
		{"محمد", "", Male, 100000},
		{"さくら", "", Female, 1000},
		{"サクラ", "", Female, 1000},
		{"Андрей", "", Male, 1},
		{"Yuuko", "", Female, 100},
		{"Yūko", "", Female, 100},
		{"Andrea Rossi", "", Male, 100000},
		{"Andrea Smith", "", Female, 100000},
		{"Rossi, Andrea", "", Male, 100000},
		{"Andrea Rossi", "US", Female, 100000}, // the caller's country wins
		{"Nicola Bianchi", "", Male, 1000},
		{"Simone Ferrari", "", Male, 1000},
		{"Kim Nielsen", "", Male, 1000},
		{"Kari Virtanen", "", Male, 1000},
		{"Jean Dubois", "", Male, 1000},
		{"Gerd Hansen", "", Female, 1000},
		{"Sascha Müller", "", Male, 1000},
		{"Sasha Ivanova", "", Female, 1},
		{"J. Smith", "", "", 0},
		{"J.", "", "", 0},
		{"Smith, J.", "", "", 0},
		{"Dr. J. Robert Oppenheimer", "", Male, 1000},
		{"Nagy Anna", "", Female, 1000},
		{"Wang Wei", "", "", 0},
		{"Xiao-Ming", "", Male, 10},
		{"Yuko Tanaka", "", Female, 1},
	}
	for _, tt := range tests {
		ps, err := e.Predict([]string{tt.name}, tt.country)
		if err != nil {
			t.Fatal(err)
		}
		p := ps[0]
		if p.Name != tt.name || p.Gender != tt.gender || (tt.minCount == 0) != (p.Count == 0) || p.Count < tt.minCount {
			t.Errorf("%q in %q: %+v, want gender %q with at least %d records", tt.name, tt.country, p, tt.gender, tt.minCount)
		}
	}
}

// TestPredictLatinInCyrillic checks the second query: Latin names the data
// lacks in Latin are answered from the Cyrillic register, and names with
// data are not looked up again.
func TestPredictLatinInCyrillic(t *testing.T) {
	e := openTest(t, Options{CacheEntries: -1})
	tests := []struct{ name, gender string }{
		{"Agafya", Female},     // агафья: no Latin record
		{"Oktyabrina", Female}, // октябрина
		{"Agafya Petrova", Female},
		{"Xqzzv", ""},
	}
	for _, tt := range tests {
		ps, err := e.Predict([]string{tt.name, "Maria"}, "")
		if err != nil {
			t.Fatal(err)
		}
		if ps[0].Gender != tt.gender || ps[1].Gender != Female {
			t.Errorf("%q: %+v, %+v", tt.name, ps[0], ps[1])
		}
	}
}
