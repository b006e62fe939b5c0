package evaluate

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 || (math.IsNaN(a) && math.IsNaN(b)) }

func TestMetrics(t *testing.T) {
	tests := []struct {
		name string
		c    Confusion // rows truth f, m, u; columns prediction f, m, u
		want Metrics
	}{
		{
			name: "mixed",
			c:    Confusion{{40, 5, 5}, {10, 35, 5}, {7, 8, 9}},
			// all = 100, answered = 90
			want: Metrics{Scored: 100, Answered: 90, ErrorCoded: 25.0 / 100, ErrorCodedWithoutNA: 15.0 / 90,
				NACoded: 10.0 / 100, ErrorGenderBias: 5.0 / 90},
		},
		{
			name: "women called men",
			c:    Confusion{{6, 4, 0}, {0, 10, 0}},
			want: Metrics{Scored: 20, Answered: 20, ErrorCoded: 0.2, ErrorCodedWithoutNA: 0.2, NACoded: 0, ErrorGenderBias: -0.2},
		},
		{
			name: "all perfect",
			c:    Confusion{{3, 0, 0}, {0, 7, 0}, {0, 0, 100}},
			want: Metrics{Scored: 10, Answered: 10},
		},
		{
			name: "nothing answered",
			c:    Confusion{{0, 0, 4}, {0, 0, 1}},
			want: Metrics{Scored: 5, ErrorCoded: 1, ErrorCodedWithoutNA: math.NaN(), NACoded: 1, ErrorGenderBias: math.NaN()},
		},
		{
			name: "empty",
			want: Metrics{ErrorCoded: math.NaN(), ErrorCodedWithoutNA: math.NaN(), NACoded: math.NaN(), ErrorGenderBias: math.NaN()},
		},
	}
	for _, tt := range tests {
		got := tt.c.Metrics()
		if got.Scored != tt.want.Scored || got.Answered != tt.want.Answered ||
			!near(got.ErrorCoded, tt.want.ErrorCoded) || !near(got.ErrorCodedWithoutNA, tt.want.ErrorCodedWithoutNA) ||
			!near(got.NACoded, tt.want.NACoded) || !near(got.ErrorGenderBias, tt.want.ErrorGenderBias) {
			t.Errorf("%s: Metrics() = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestParseLabel(t *testing.T) {
	for in, want := range map[string]Label{"f": Female, "F": Female, "male": Male, "m": Male, "u": Unknown, "": Unknown} {
		if got, err := ParseLabel(in); err != nil || got != want {
			t.Errorf("ParseLabel(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"x", "fm", "1"} {
		if _, err := ParseLabel(in); err == nil {
			t.Errorf("ParseLabel(%q): no error", in)
		}
	}
}

type row struct {
	truth, pred Label
	probability float64
	count       int64
}

// result builds a Result from (truth, pred, probability, count) rows.
func result(rows ...row) *Result {
	r := &Result{}
	for _, a := range rows {
		r.Add(a.truth, a.pred, a.probability, a.count)
	}
	return r
}

func TestAddShare(t *testing.T) {
	r := &Result{}
	r.AddShare(Female, Female, 0.7, 50, 0.6) // a name 60% female, answered female
	r.AddShare(Male, Female, 0.9, 50, 0.4)   // a name 60% male, answered female
	r.AddShare(Male, Unknown, 0, 0, 0)
	m := r.Confusion.Metrics()
	if m.Scored != 3 || m.Answered != 2 || !near(m.ErrorCodedWithoutNA, 0.5) {
		t.Errorf("metrics %+v, want 3 scored, 2 answered, errorCodedWithoutNA 0.5", m)
	}
	b := r.ByCount()[1]
	if b.N != 2 || !near(b.Stated, 0.8) || !near(b.Observed, 0.5) {
		t.Errorf("count bucket 10-99 = %+v, want 2 answers, stated 0.8, observed 0.5", b)
	}
}

func TestCalibration(t *testing.T) {
	r := result(
		row{Female, Female, 0.55, 5},
		row{Female, Male, 0.65, 5},   // wrong
		row{Male, Male, 0.95, 50},    // [0.95,0.99)
		row{Male, Male, 0.97, 500},   // [0.95,0.99)
		row{Male, Female, 0.99, 500}, // wrong, [0.99,1]
		row{Female, Female, 1, 20000},
		row{Female, Unknown, 0, 0}, // not an answer
		row{Unknown, Male, 1, 3},   // no true gender: not scored
	)
	byP := r.ByProbability()
	want := map[string]Bucket{
		"[0.50,0.60)": {N: 1, Stated: 0.55, Observed: 1},
		"[0.60,0.70)": {N: 1, Stated: 0.65, Observed: 0},
		"[0.95,0.99)": {N: 2, Stated: 0.96, Observed: 1},
		"[0.99,1.00]": {N: 2, Stated: 0.995, Observed: 0.5},
	}
	for _, b := range byP {
		w := want[b.Label]
		if b.N != w.N || !near(b.Stated, w.Stated) || !near(b.Observed, w.Observed) {
			t.Errorf("probability bucket %s = %+v, want %+v", b.Label, b, w)
		}
	}
	// |gaps|: 0.45, 0.65, 0.04 (x2), 0.495 (x2) over 6 answers.
	if got, want := ECE(byP), (0.45+0.65+2*0.04+2*0.495)/6; !near(got, want) {
		t.Errorf("ECE = %v, want %v", got, want)
	}
	byC := r.ByCount()
	wantC := []Bucket{
		{Label: "<10", N: 2, Stated: 0.6, Observed: 0.5},
		{Label: "10-99", N: 1, Stated: 0.95, Observed: 1},
		{Label: "100-999", N: 2, Stated: 0.98, Observed: 0.5},
		{Label: "1000-9999"},
		{Label: ">=10000", N: 1, Stated: 1, Observed: 1},
	}
	for i, b := range byC {
		w := wantC[i]
		if b.Label != w.Label || b.N != w.N || !near(b.Stated, w.Stated) || !near(b.Observed, w.Observed) {
			t.Errorf("count bucket %d = %+v, want %+v", i, b, w)
		}
	}
	if !math.IsNaN(ECE(nil)) {
		t.Error("ECE of no answers is not NaN")
	}
}

func TestThresholds(t *testing.T) {
	r := result(
		row{Female, Male, 0.6, 3},     // wrong
		row{Female, Female, 0.6, 40},  // right, same probability as the wrong one
		row{Male, Female, 0.8, 12},    // wrong
		row{Male, Male, 0.9, 200},     // right
		row{Female, Female, 0.99, 15}, // right
		row{Female, Unknown, 0, 0},
	)
	// 5 answers, 2 wrong. Probability >= 0.6: 2/5; >= 0.8: 1/3; >= 0.9: 0/2.
	tests := []struct {
		target float64
		min    float64
		nA     float64
	}{
		{0.4, 0.6, 1.0 / 6},
		{0.34, 0.8, 3.0 / 6},
		{0.3, 0.9, 4.0 / 6},
		{0, 0.9, 4.0 / 6},
	}
	for _, tt := range tests {
		th := r.ProbabilityThreshold(tt.target)
		if !th.Reached || th.Min != tt.min || !near(th.Metrics.NACoded, tt.nA) || th.Metrics.ErrorCodedWithoutNA > tt.target {
			t.Errorf("ProbabilityThreshold(%v) = %+v, want min %v, naCoded %v", tt.target, th, tt.min, tt.nA)
		}
	}
	// By count: >= 3: 2/5; >= 12: 1/4; >= 15: 0/3.
	if th := r.CountThreshold(0.25); !th.Reached || th.Min != 12 {
		t.Errorf("CountThreshold(0.25) = %+v, want min 12", th)
	}
	if th := r.CountThreshold(0.1); !th.Reached || th.Min != 15 || th.Metrics.Answered != 3 {
		t.Errorf("CountThreshold(0.1) = %+v, want min 15 with 3 answers", th)
	}
	// Every answer wrong: no cut-off reaches 0 but dropping them all.
	bad := result(row{Female, Male, 0.9, 10})
	if th := bad.ProbabilityThreshold(0); th.Reached {
		t.Errorf("threshold over only wrong answers reached: %+v", th)
	}
	// The matrix of the result is not changed by the search.
	if r.Confusion[Female][Male] != 1 || r.Confusion[Female][Unknown] != 1 {
		t.Errorf("threshold search changed the result: %v", r.Confusion)
	}
}
