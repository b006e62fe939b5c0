// Package origin guesses the country a name comes from by its letters: a
// character trigram model per country, trained on the names each country's
// data holds, as NamSor-style origin models are. It is applied to a full
// name (given name and surname together), whose letters say more than the
// given name alone: Rossi, Nieminen, Papadopoulos and Kowalski each carry
// their language.
//
// The model is a naive Bayes classifier with a uniform prior over
// countries (the question is where the name is from, not which country
// publishes the most names): P(name | country) is the product of the
// probabilities of its trigrams (word boundaries marked), each the
// country's trigram frequency interpolated with the frequency over all
// countries, weighted by how much data the country has (Witten-Bell), so a
// country with a few hundred names does not win on one odd trigram.
package origin

import (
	"math"
	"sort"
	"strings"
)

// MinNames is the number of distinct names a country needs to get a
// model: below it the letters say little.
const MinNames = 300

// Model is a trained origin model. It is read-only after Build and safe
// for concurrent use.
type Model struct {
	countries []string
	// logp[g*len(countries)+c] is log P(trigram g | country c); unseen
	// trigrams score unseen[c].
	index  map[string]int32
	logp   []float32
	unseen []float32
}

// Builder collects training names per country.
type Builder struct {
	counts map[string]map[string]float64 // country -> trigram -> count
	names  map[string]int
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder {
	return &Builder{counts: map[string]map[string]float64{}, names: map[string]int{}}
}

// Add counts the trigrams of one name of country (a namekey key).
func (b *Builder) Add(country, key string) {
	m := b.counts[country]
	if m == nil {
		m = map[string]float64{}
		b.counts[country] = m
	}
	b.names[country]++
	forTrigrams(key, func(g string) { m[g]++ })
}

// forTrigrams calls f with each trigram of key, words padded with ^ and $.
func forTrigrams(key string, f func(string)) {
	for _, w := range strings.Fields(key) {
		rs := []rune("^" + w + "$")
		for i := 0; i+3 <= len(rs); i++ {
			f(string(rs[i : i+3]))
		}
	}
}

// Build returns the model of the countries with at least MinNames names;
// nil when fewer than two countries have that many.
func (b *Builder) Build() *Model {
	var countries []string
	for c, n := range b.names {
		if n >= MinNames {
			countries = append(countries, c)
		}
	}
	if len(countries) < 2 {
		return nil
	}
	sort.Strings(countries)
	// The background: trigram frequencies over all kept countries, each
	// country weighing the same.
	bg := map[string]float64{}
	for _, c := range countries {
		total := 0.0
		for _, n := range b.counts[c] {
			total += n
		}
		for g, n := range b.counts[c] {
			bg[g] += n / total / float64(len(countries))
		}
	}
	vocab := float64(len(bg))
	m := &Model{countries: countries, index: make(map[string]int32, len(bg))}
	grams := make([]string, 0, len(bg))
	for g := range bg {
		grams = append(grams, g)
	}
	sort.Strings(grams)
	m.logp = make([]float32, len(grams)*len(countries))
	m.unseen = make([]float32, len(countries))
	for ci, c := range countries {
		counts := b.counts[c]
		total, types := 0.0, float64(len(counts))
		for _, n := range counts {
			total += n
		}
		lambda := total / (total + types) // Witten-Bell
		// Unseen trigrams (in no country's data) get a small share.
		m.unseen[ci] = float32(math.Log((1 - lambda) * 0.5 / vocab))
		for gi, g := range grams {
			p := lambda*counts[g]/total + (1-lambda)*bg[g]
			m.logp[gi*len(countries)+ci] = float32(math.Log(p))
		}
	}
	for gi, g := range grams {
		m.index[g] = int32(gi)
	}
	return m
}

// Guess is a country and its posterior probability.
type Guess struct {
	Country string
	P       float64
}

// Countries returns the countries the model knows.
func (m *Model) Countries() []string { return m.countries }

// Top returns the n likeliest countries of key with their posteriors
// (uniform prior), best first.
func (m *Model) Top(key string, n int) []Guess {
	nc := len(m.countries)
	score := make([]float64, nc)
	grams := 0
	forTrigrams(key, func(g string) {
		grams++
		gi, ok := m.index[g]
		for c := 0; c < nc; c++ {
			if ok {
				score[c] += float64(m.logp[int(gi)*nc+c])
			} else {
				score[c] += float64(m.unseen[c])
			}
		}
	})
	if grams == 0 {
		return nil
	}
	top := math.Inf(-1)
	for _, s := range score {
		top = math.Max(top, s)
	}
	sum := 0.0
	post := make([]Guess, nc)
	for c, s := range score {
		p := math.Exp(s - top)
		sum += p
		post[c] = Guess{m.countries[c], p}
	}
	for c := range post {
		post[c].P /= sum
	}
	sort.Slice(post, func(i, j int) bool {
		if post[i].P != post[j].P {
			return post[i].P > post[j].P
		}
		return post[i].Country < post[j].Country
	})
	return post[:min(n, nc)]
}
