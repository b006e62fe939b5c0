package namekey

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

func TestKey(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"Maria", "maria"},
		{"MARIA", "maria"},
		{"  Maria   Carmen \t", "maria carmen"},
		{"Marie-Claire", "marie-claire"},
		{"O'Brien", "o'brien"},
		{"JOSÉ", "josé"},
		{"Jose\u0301", "josé"}, // decomposed input is composed (NFC)
		{"Straße", "strasse"},  // full case folding, not lowering
		{"ΣΩΚΡΆΤΗΣ", "σωκράτησ"},
		{"Николай", "николай"},
		{"אבי", "אבי"},
		{"李伟", "李伟"},
		{"(Юпи)", "юпи"},
		{"-(Андреева).", "андреева"},
		{"A.j.", "a.j"},
		{"Smith, John", "smith, john"},
		{"\"Anna\"", "anna"},
		{"jo\x00hn", "jo hn"},
		{"\xff\xfe", ""},
		{"a\xffb", "a\ufffdb"},
		{"", ""},
		{"   ", ""},
		{"!!!", ""},
		{"İlker", "i̇lker"},
	}
	for _, tt := range tests {
		if got := Key(tt.in); got != tt.want {
			t.Errorf("Key(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFold(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"josé", "jose"},
		{"maria", "maria"},
		{"søren", "soren"},
		{"jürgen", "jurgen"},
		{"łukasz", "lukasz"},
		{"marie-claire", "marie claire"},
		{"a'isha", "aisha"},
		{"a.j", "a j"},
		{"ἀλέξανδροσ", "αλεξανδροσ"},
		{"николай", "николай"}, // й is a letter, not an accented и
		{"алёна", "алена"},     // ё folds to е, as Russians often write it
		{"שָׂרָה", "שרה"},      // niqqud removed
		{"अंजलि", "अंजलि"},     // Indic vowel signs are kept
		{"李伟", "李伟"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Fold(tt.in); got != tt.want {
			t.Errorf("Fold(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestIsInitial(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"j", true}, {"j.", true}, {"é", true}, {"ж", true},
		{"jo", false}, {"", false}, {".", false}, {"李", false}, {"a.j", false},
	}
	for _, tt := range tests {
		if got := IsInitial(tt.in); got != tt.want {
			t.Errorf("IsInitial(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// junk returns n reproducible strings of random bytes and runes.
func junk(n int) []string {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune("aZé ß-'.,\t\x00\u0301\u200dİΣйא李😀\u2028\ufffd")
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for range r.IntN(40) {
			if r.IntN(4) == 0 {
				b.WriteByte(byte(r.IntN(256)))
			} else {
				b.WriteRune(alphabet[r.IntN(len(alphabet))])
			}
		}
		out[i] = b.String()
	}
	return out
}

// TestKeyProperties checks on arbitrary input what the database and the
// engine rely on: keys are valid NFC UTF-8 without surrounding or doubled
// spaces, bounded in length, and normalising twice changes nothing.
func TestKeyProperties(t *testing.T) {
	inputs := append(junk(5000), strings.Repeat("Ab ", 10000), strings.Repeat("é", 5000))
	for _, in := range inputs {
		k := Key(in)
		if !utf8.ValidString(k) || !norm.NFC.IsNormalString(k) {
			t.Fatalf("Key(%q) = %q: not valid NFC UTF-8", in, k)
		}
		if strings.TrimSpace(k) != k || strings.Contains(k, "  ") {
			t.Fatalf("Key(%q) = %q: stray spaces", in, k)
		}
		if n := utf8.RuneCountInString(k); n > MaxRunes {
			t.Fatalf("Key(%q) has %d runes, more than %d", in, n, MaxRunes)
		}
		if k2 := Key(k); k2 != k {
			t.Fatalf("Key not idempotent: Key(%q) = %q, Key(that) = %q", in, k, k2)
		}
		f := Fold(k)
		if !utf8.ValidString(f) || Fold(f) != f {
			t.Fatalf("Fold(%q) = %q, Fold(that) = %q", k, f, Fold(f))
		}
	}
}

func FuzzKey(f *testing.F) {
	for _, s := range []string{"Maria", "José", "Smith, John", "\xff", "İ", "ﬃ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k := Key(s)
		if !utf8.ValidString(k) || Key(k) != k {
			t.Fatalf("Key(%q) = %q, Key(that) = %q", s, k, Key(k))
		}
		Fold(k)
	})
}

func BenchmarkKeyASCII(b *testing.B) {
	for b.Loop() {
		Key("Christopher")
	}
}

func BenchmarkKeyUnicode(b *testing.B) {
	for b.Loop() {
		Key("José María")
	}
}
