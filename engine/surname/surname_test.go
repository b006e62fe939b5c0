package surname

import (
	"slices"
	"testing"
)

func TestGender(t *testing.T) {
	tests := []struct {
		key  string
		want int // 1 female, -1 male, 0 none
	}{
		{"kowalska", 1}, {"kowalski", -1}, {"ivanova", 1}, {"ivanov", -1}, {"иванова", 1}, {"иванов", -1},
		{"nováková", 1}, {"novák", 0}, {"novotná", 1}, {"novotný", -1}, {"dostoevskaya", 1}, {"dostoevsky", -1},
		{"jonaitienė", 1}, {"jonaitytė", 1}, {"jonaitis", -1}, {"kazlauskas", -1}, {"bērziņa", 1}, {"bērziņš", -1},
		{"jónsdóttir", 1}, {"papadopoulou", 1}, {"papadopoulos", -1}, {"papadakis", -1},
		{"smith", 0}, {"nova", 0}, {"johnson", 0}, {"", 0},
	}
	for _, tt := range tests {
		e := Gender(tt.key)
		got := 0
		if e > 1 {
			got = 1
		} else if e < 1 {
			got = -1
		}
		if got != tt.want {
			t.Errorf("Gender(%q) = %v, want sign %d", tt.key, e, tt.want)
		}
	}
}

func TestOf(t *testing.T) {
	tests := map[string]Tradition{
		"wang": Chinese, "kim": Korean, "lee": Korean, "tanaka": Japanese, "nagy": Hungarian,
		"kovács": Hungarian, "smith": None, "simon": None,
	}
	for k, want := range tests {
		if got := Of(k); got != want {
			t.Errorf("Of(%q) = %v, want %v", k, got, want)
		}
	}
}

func TestCountries(t *testing.T) {
	tests := map[string]string{
		"rossi": "IT", "bianchini": "IT", "dubois": "FR", "rousseau": "FR", "müller": "DE",
		"virtanen": "FI", "nieminen": "FI", "andersson": "SE", "nielsen": "DK", "hansen": "NO",
		"jónsdóttir": "IS", "hernández": "ES", "ferreira": "PT", "kowalski": "PL", "nováková": "CZ",
		"nagy": "HU", "popescu": "RO", "petrović": "HR", "papadopoulos": "GR", "yılmaz": "TR",
		"tanaka": "JP", "kazlauskas": "LT", "smith": "", "martin": "", "costa": "",
	}
	for k, want := range tests {
		got := Countries(k)
		if want == "" && got != nil || want != "" && !slices.Contains(got, want) {
			t.Errorf("Countries(%q) = %v, want %q", k, got, want)
		}
	}
}
