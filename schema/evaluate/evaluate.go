// Package evaluate scores gender predictions against labelled names with the
// four metrics of Santamaría and Mihaljević ("Comparison and benchmark of
// name-to-gender inference services", PeerJ Computer Science 2018), and
// measures how well stated probabilities are calibrated.
//
// A confusion matrix has the true gender in rows and the prediction in
// columns; u is "no prediction" (null gender). Rows whose true gender is u
// are not scored. With ff, fm, fu, mf, mm, mu its cells:
//
//	errorCoded          = (fm + mf + fu + mu) / (ff + fm + fu + mf + mm + mu)
//	errorCodedWithoutNA = (fm + mf) / (ff + fm + mf + mm)
//	naCoded             = (fu + mu) / (ff + fm + fu + mf + mm + mu)
//	errorGenderBias     = (mf - fm) / (ff + fm + mf + mm)
//
// A positive bias means more men called women than women called men.
package evaluate

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Label is a gender as labelled or predicted.
type Label int

// The labels; Unknown is "no prediction" in a prediction, "not known" in a
// label.
const (
	Female Label = iota
	Male
	Unknown
)

// ParseLabel reads f, m or u (any case; female, male and unknown too).
func ParseLabel(s string) (Label, error) {
	switch s {
	case "f", "F", "female", "Female", "FEMALE":
		return Female, nil
	case "m", "M", "male", "Male", "MALE":
		return Male, nil
	case "u", "U", "", "unknown", "Unknown", "UNKNOWN", "null":
		return Unknown, nil
	}
	return Unknown, fmt.Errorf("gender %q: want f, m or u", s)
}

func (l Label) String() string { return [...]string{"f", "m", "u"}[l] }

// Confusion counts rows by true gender (first index) and prediction
// (second index).
type Confusion [3][3]int64

// Add counts one row.
func (c *Confusion) Add(truth, pred Label) { c[truth][pred]++ }

// Metrics are the four scores of a confusion matrix. A score with a zero
// denominator is NaN.
type Metrics struct {
	Scored              int64 // rows with a true gender f or m
	Answered            int64 // of those, rows with a prediction
	ErrorCoded          float64
	ErrorCodedWithoutNA float64
	NACoded             float64
	ErrorGenderBias     float64
}

// Metrics computes the four scores; rows whose true gender is u are left out.
func (c *Confusion) Metrics() Metrics {
	ff, fm, fu := c[Female][Female], c[Female][Male], c[Female][Unknown]
	mf, mm, mu := c[Male][Female], c[Male][Male], c[Male][Unknown]
	all := ff + fm + fu + mf + mm + mu
	answered := ff + fm + mf + mm
	return Metrics{
		Scored:              all,
		Answered:            answered,
		ErrorCoded:          ratio(fm+mf+fu+mu, all),
		ErrorCodedWithoutNA: ratio(fm+mf, answered),
		NACoded:             ratio(fu+mu, all),
		ErrorGenderBias:     ratio(mf-fm, answered),
	}
}

func ratio(n, d int64) float64 {
	if d == 0 {
		return math.NaN()
	}
	return float64(n) / float64(d)
}

// Answer is one scored prediction with a true gender f or m.
type Answer struct {
	Truth, Pred Label
	Probability float64 // stated probability of Pred
	Count       int64   // records behind the answer
	// Observed is how right the answer is, for calibration: 1 or 0 for a
	// label of one person; for a label that stands for many people (a
	// name with its female and male counts), the share of them that have
	// the predicted gender.
	Observed float64
}

// Right reports whether the prediction is the true gender.
func (a Answer) Right() bool { return a.Truth == a.Pred }

// Result collects the rows of one group.
type Result struct {
	Confusion Confusion
	Answers   []Answer // rows with a true gender and a prediction
}

// Add scores one row. A row whose true gender is u is counted in the
// matrix (its row is never read) and kept out of the answers.
func (r *Result) Add(truth, pred Label, probability float64, count int64) {
	observed := 0.0
	if truth == pred {
		observed = 1
	}
	r.AddShare(truth, pred, probability, count, observed)
}

// AddShare is Add for a label that stands for many people: observed is the
// share of them that have the predicted gender. The metrics count the row
// under truth (the majority); the calibration tables use observed.
func (r *Result) AddShare(truth, pred Label, probability float64, count int64, observed float64) {
	r.Confusion.Add(truth, pred)
	if truth != Unknown && pred != Unknown {
		r.Answers = append(r.Answers, Answer{truth, pred, probability, count, observed})
	}
}

// Bucket is one line of a calibration table.
type Bucket struct {
	Label    string
	N        int64
	Stated   float64 // mean stated probability
	Observed float64 // mean Observed: the share of right answers
}

// Gap is the observed accuracy minus the stated probability: negative when
// the answers claim too much.
func (b Bucket) Gap() float64 { return b.Observed - b.Stated }

// ProbabilityEdges are the lower bounds of the probability buckets.
var ProbabilityEdges = []float64{0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99}

// CountEdges are the lower bounds of the count buckets: <10, 10-99,
// 100-999, 1000-9999, >=10000.
var CountEdges = []int64{0, 10, 100, 1000, 10000}

// ByProbability is the calibration table by stated probability.
func (r *Result) ByProbability() []Bucket {
	labels := make([]string, len(ProbabilityEdges))
	for i, lo := range ProbabilityEdges {
		if i+1 < len(ProbabilityEdges) {
			labels[i] = fmt.Sprintf("[%.2f,%.2f)", lo, ProbabilityEdges[i+1])
		} else {
			labels[i] = fmt.Sprintf("[%.2f,1.00]", lo)
		}
	}
	return buckets(r.Answers, labels, func(a Answer) int {
		i := len(ProbabilityEdges) - 1
		for i > 0 && a.Probability < ProbabilityEdges[i] {
			i--
		}
		return i
	})
}

// ByCount is the calibration table by the records behind the answer.
func (r *Result) ByCount() []Bucket {
	labels := []string{"<10", "10-99", "100-999", "1000-9999", ">=10000"}
	return buckets(r.Answers, labels, func(a Answer) int {
		i := len(CountEdges) - 1
		for i > 0 && a.Count < CountEdges[i] {
			i--
		}
		return i
	})
}

func buckets(answers []Answer, labels []string, index func(Answer) int) []Bucket {
	out := make([]Bucket, len(labels))
	for i := range out {
		out[i].Label = labels[i]
	}
	for _, a := range answers {
		b := &out[index(a)]
		b.N++
		b.Stated += a.Probability
		b.Observed += a.Observed
	}
	for i := range out {
		if out[i].N > 0 {
			out[i].Stated /= float64(out[i].N)
			out[i].Observed /= float64(out[i].N)
		}
	}
	return out
}

// ECE is the expected calibration error of a table: the mean of |gap|
// weighted by the answers in each bucket. NaN without answers.
func ECE(table []Bucket) float64 {
	var n int64
	var sum float64
	for _, b := range table {
		n += b.N
		sum += float64(b.N) * math.Abs(b.Gap())
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// Threshold is the least strict cut-off that reaches a target
// errorCodedWithoutNA: answers below it are turned into no prediction.
type Threshold struct {
	Min     float64 // minimum probability, or minimum count
	Metrics Metrics // the scores with the cut-off applied
	Reached bool    // false: no cut-off reaches the target
}

// ProbabilityThreshold is the lowest minimum probability at which the
// answers kept have errorCodedWithoutNA <= target.
func (r *Result) ProbabilityThreshold(target float64) Threshold {
	return r.threshold(target, func(a Answer) float64 { return a.Probability })
}

// CountThreshold is the lowest minimum count at which the answers kept
// have errorCodedWithoutNA <= target.
func (r *Result) CountThreshold(target float64) Threshold {
	return r.threshold(target, func(a Answer) float64 { return float64(a.Count) })
}

// threshold walks the answers from the least to the most trusted by key,
// dropping one distinct key value at a time, until the error of those left
// is within target.
func (r *Result) threshold(target float64, key func(Answer) float64) Threshold {
	sorted := slices.Clone(r.Answers)
	slices.SortFunc(sorted, func(a, b Answer) int { return cmp.Compare(key(a), key(b)) })
	c := r.Confusion
	var wrong int64
	for _, a := range sorted {
		if !a.Right() {
			wrong++
		}
	}
	for i := 0; i < len(sorted); {
		answered := int64(len(sorted) - i)
		if float64(wrong) <= target*float64(answered) {
			return Threshold{Min: key(sorted[i]), Metrics: c.Metrics(), Reached: true}
		}
		// Drop every answer with this key value: a cut-off cannot split them.
		v := key(sorted[i])
		for ; i < len(sorted) && key(sorted[i]) == v; i++ {
			a := sorted[i]
			c[a.Truth][a.Pred]--
			c[a.Truth][Unknown]++
			if !a.Right() {
				wrong--
			}
		}
	}
	return Threshold{Metrics: c.Metrics()}
}
