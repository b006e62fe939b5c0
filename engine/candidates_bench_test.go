package engine

import (
	"path/filepath"

	"github.com/genderize-kong/genderize/schema/namekey"
	"testing"
)

// BenchmarkFullNames predicts batches of 100 uncached full names: faker
// given names of many locales and scripts with surnames typical of their
// country (see TestFullNames), so that every step of a plan is exercised:
// parsing, origin rows, transliteration. Compare ns/name with
// BenchmarkPredict/uncached-batch100 (given names alone).
func BenchmarkFullNames(b *testing.B) {
	dir := dataDir(b)
	us := topSurnames(b, filepath.Join(dir, "surnames", "us_census2000.tsv.gz"), 200)
	keep := map[string]bool{"en": true, "ar": true, "el": true, "ja": true}
	for l := range surnamesByLocale {
		keep[l] = true
	}
	var names []string
	for _, r := range readLexicon(b, filepath.Join(dir, "lexicons", "faker_first_names.tsv.gz"), keep) {
		names = append(names, fullNameOf(r.locale, r.name, r.gender, us))
	}
	names = names[:len(names)/100*100]
	e := openTest(b, Options{CacheEntries: -1})
	// The spelling index is built on the first Arabic name: not measured.
	if _, err := e.Predict([]string{"محمد"}, ""); err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		start := (i * 100) % len(names)
		if _, err := e.Predict(names[start:start+100], ""); err != nil {
			b.Fatal(err)
		}
		i++
	}
	perName(b, 100)
}

// BenchmarkMakePlan measures the plan of a name alone (no database):
// parsing, surname rules, East Asian syllables, transliteration.
func BenchmarkMakePlan(b *testing.B) {
	names := []string{"Maria", "John Smith", "Andrea Rossi", "Anna Kowalska", "Dr. J. Robert Oppenheimer",
		"Wang Xiaoming", "Γιώργος Παπαδόπουλος", "さくら", "Nagy Anna", "Marie-Claire Dubois"}
	keys := make([]string, len(names))
	for i, n := range names {
		keys[i] = namekey.Key(n)
	}
	i := 0
	for b.Loop() {
		makePlan(names[i%len(names)], keys[i%len(names)], nil)
		i++
	}
}
