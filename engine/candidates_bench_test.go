package engine

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/genderize-kong/genderize/schema/namekey"
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
	predictBatches(b, names)
}

// BenchmarkGivenNames is BenchmarkFullNames's measure on given names
// alone (the real names BenchmarkPredict uses).
func BenchmarkGivenNames(b *testing.B) {
	predictBatches(b, realNames(b, 50_000))
}

// predictBatches predicts names in uncached batches of 100 and reports the
// wall time and the process's CPU time per name: on a shared machine the
// CPU time is the steadier of the two (time slices lost to other processes
// are not counted).
func predictBatches(b *testing.B, names []string) {
	names = names[:len(names)/100*100]
	e := openTest(b, Options{CacheEntries: -1})
	i := 0
	cpu0 := cpuTime(b)
	for b.Loop() {
		start := (i * 100) % len(names)
		if _, err := e.Predict(names[start:start+100], ""); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N*100), "cpu-ns/name")
	perName(b, 100)
}

// cpuTime returns the user and system CPU time of the process so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
