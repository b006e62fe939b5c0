package engine

import (
	"reflect"
	"testing"

	"github.com/genderize-kong/genderize/schema/namekey"
)

func TestCandidates(t *testing.T) {
	tests := []struct {
		name string
		want []string // folded keys marked with a leading ~
	}{
		{"Maria", []string{"maria", "~maria"}},
		{"José", []string{"josé", "~jose"}},
		{"John Smith", []string{"john smith", "~john smith", "john", "~john"}},
		{"Smith, John", []string{"john", "~john"}},
		{"Smith,", []string{"smith", "~smith"}},
		{"Maria Carmen Lopez", []string{"maria carmen lopez", "~maria carmen lopez", "maria carmen", "~maria carmen", "maria", "~maria"}},
		{"Marie-Claire Dubois", []string{"marie-claire dubois", "~marie claire dubois", "marie-claire", "~marie claire", "marie", "~marie"}},
		{"J. Robert Oppenheimer", []string{"j. robert oppenheimer", "~j robert oppenheimer", "robert", "~robert"}},
		{"J.", nil},
		{"j", nil},
		{"J. Smith", []string{"j. smith", "~j smith"}},
		{"Smith, J.", nil},
		{"Smith, J. Robert", []string{"robert", "~robert"}},
		{"John F. Kennedy", []string{"john f. kennedy", "~john f kennedy", "john", "~john"}},
		{"Ludwig van Beethoven", []string{"ludwig van beethoven", "~ludwig van beethoven", "ludwig", "~ludwig"}},
		{"Nagy Anna", []string{"nagy anna", "~nagy anna", "anna", "~anna"}},
		{"Anna Nagy", []string{"anna nagy", "~anna nagy", "anna", "~anna"}},
		{"Wang Xiaoming", []string{"wang xiaoming", "~wang xiaoming", "xiaoming", "~xiaoming"}},
		{"Xiao-Ming Wang", []string{"xiao-ming wang", "~xiao ming wang", "xiaoming", "~xiaoming", "xiao-ming", "~xiao ming"}},
		{"Xiao-Ming", []string{"xiao-ming", "~xiao ming", "xiaoming", "~xiaoming"}},
		{"Min Jun", []string{"min jun", "~min jun", "minjun", "~minjun"}},
		{"Kim Smith", []string{"kim smith", "~kim smith", "kim", "~kim"}},
		{"Yuuko Tanaka", []string{"yuuko tanaka", "~yuuko tanaka", "yuuko", "~yuuko", "yuko", "~yuko"}},
		{"Yūko", []string{"yūko", "~yuko"}},
		{"Jean-Pierre", []string{"jean-pierre", "~jean pierre", "jean", "~jean"}},
		{"Γιώργος", []string{"γιώργοσ", "~γιωργοσ", "giorgos", "~giorgos"}},
		{"Wang Wei", []string{"wang wei", "~wang wei", "wei", "~wei"}},
		{"Dubois, Jean-Pierre", []string{"jean-pierre", "~jean pierre", "jean", "~jean"}},
		{"Николай Петров", []string{"николай петров", "~николай петров", "николай", "~николай", "nikolay", "~nikolay", "nikolai", "~nikolai", "nikolaj", "~nikolaj"}},
		{"李伟", []string{"李伟", "~李伟"}},
		{"Mr. John Smith", []string{"mr. john smith", "~mr john smith", "john", "~john"}},
		{"Dr Maria", []string{"dr maria", "~dr maria", "maria", "~maria"}},
		{"Dr", []string{"dr", "~dr"}},
		{"DUPONT Jean-Pierre", []string{"dupont jean-pierre", "~dupont jean pierre", "dupont", "~dupont", "jean-pierre", "~jean pierre", "jean", "~jean"}},
		{"JEAN Dupont", []string{"jean dupont", "~jean dupont", "jean", "~jean", "dupont", "~dupont"}},
		{"MARIA CARMEN", []string{"maria carmen", "~maria carmen", "maria", "~maria"}},
		{"J. DUPONT Jean", []string{"j. dupont jean", "~j dupont jean", "dupont", "~dupont"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range makePlan(tt.name, namekey.Key(tt.name), nil).cands {
				if c.folded {
					got = append(got, "~"+c.key)
				} else {
					got = append(got, c.key)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("candidates(%q) = %q, want %q", tt.name, got, tt.want)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	// evidence: every record from a register (see calibrate.go).
	rows := map[rowKey]row{
		{"maria", false, "FR"}:         {female: 98, male: 2, share: 0.98, evidence: 100},
		{"andrea", false, "FR"}:        {female: 50, male: 50, share: 0.5, evidence: 100},
		{"jose", false, "FR"}:          {female: 2, male: 198, share: 0.01, evidence: 200},
		{"jose", true, "FR"}:           {female: 1, male: 299, share: 1.0 / 300, evidence: 300},
		{"riley breanna", false, "FR"}: {female: 1, male: 0, share: 1, evidence: 1},
		{"riley", false, "FR"}:         {female: 60, male: 40, share: 0.6, evidence: 100},
		{"zoe anne", false, "FR"}:      {female: 3, male: 0, share: 1, evidence: 3},
		{"maria carmen", false, "FR"}:  {female: 640, male: 1, share: 640.0 / 641, evidence: 641},
		// Found in FR only: the global row is FR's row.
		{"luc", false, ""}: {female: 0, male: 10, share: 0, sole: "FR", evidence: 10},
	}
	tests := []struct {
		cands []candidate
		want  answer
	}{
		{[]candidate{{key: "maria"}}, answer{Female, 0.98, 100}},
		{[]candidate{{key: "andrea"}}, answer{"", 0.5, 100}},
		{[]candidate{{key: "josé", folded: false}, {key: "jose", folded: true}}, answer{Male, 1, 300}},
		{[]candidate{{key: "jorge", folded: false}, {key: "jose", folded: false}}, answer{Male, 0.99, 200}},
		// A folded key without a folded row reads the exact row.
		{[]candidate{{key: "mariá", folded: false}, {key: "maria", folded: true}}, answer{Female, 0.98, 100}},
		{[]candidate{{key: "nobody", folded: false}}, answer{}},
		{nil, answer{}},
		// Weak compound yields to the given name, strong one answers.
		{[]candidate{{key: "riley breanna", folded: false}, {key: "riley", folded: false}}, answer{Female, 0.6, 100}},
		{[]candidate{{key: "zoe anne", folded: false}, {key: "zoe", folded: false}}, answer{Female, 0.95, 3}}, // (3 + 0.15) / 3.3
		{[]candidate{{key: "maria carmen", folded: false}, {key: "maria"}}, answer{Female, 1, 641}},
		{[]candidate{{key: "luc", folded: false}}, answer{Male, 0.99, 10}}, // (10 + 0.15) / 10.3
	}
	for _, tt := range tests {
		if got := decide(&plan{cands: tt.cands, evidence: 1}, rows, "FR"); got != tt.want {
			t.Errorf("decide(%v) = %+v, want %+v", tt.cands, got, tt.want)
		}
	}
	luc := []candidate{{key: "luc", folded: false}}
	if got := decide(&plan{cands: luc, evidence: 1}, rows, ""); got != (answer{Male, 0.99, 10}) {
		t.Errorf("luc, global: %+v", got)
	}
	if got := decide(&plan{cands: luc, evidence: 1}, rows, "BE"); got != (answer{}) {
		t.Errorf("luc in BE, where it is not found: %+v", got)
	}
}

func TestDecidePlan(t *testing.T) {
	rows := map[rowKey]row{
		{"andrea", false, ""}:   {female: 900, male: 100, share: 0.9, evidence: 1000},
		{"andrea", false, "IT"}: {female: 3, male: 500, share: 3.0 / 503, evidence: 503},
		{"andrea", false, "US"}: {female: 400, male: 4, share: 400.0 / 404, evidence: 404},
		{"sasha", false, ""}:    {female: 40, male: 60, share: 0.4, evidence: 100},
		{"giorgos", false, ""}:  {female: 0, male: 1000, share: 0, evidence: 1000},
		{"georgios", false, ""}: {female: 0, male: 30, share: 0, evidence: 30},
		{"wei", false, ""}:      {female: 30, male: 70, share: 0.3, evidence: 100},
		{"xiaoming", false, ""}: {female: 10, male: 90, share: 0.1, evidence: 100},
		{"luc", false, ""}:      {female: 0, male: 3, share: 0, sole: "IT", evidence: 3},
	}
	andrea := []candidate{{key: "andrea rossi", whole: true}, {key: "andrea"}}
	tests := []struct {
		name    string
		p       plan
		country string
		want    answer
	}{
		{"origin weighs in", plan{cands: andrea, evidence: 1, origin: []string{"IT"}}, "", answer{Male, 0.98, 1000}},
		{"the caller's country wins", plan{cands: andrea, evidence: 1, origin: []string{"IT"}}, "US", answer{Female, 0.99, 404}},
		{"no origin", plan{cands: andrea, evidence: 1}, "", answer{Female, 0.9, 1000}},
		{"origin without data", plan{cands: andrea, evidence: 1, origin: []string{"FI"}}, "", answer{Female, 0.9, 1000}},
		{"origin from a sole global row", plan{cands: []candidate{{key: "luc"}}, evidence: 1, origin: []string{"IT"}}, "", answer{Male, 0.95, 3}}, // (3 + 0.15) / 3.3
		{"feminine surname", plan{cands: []candidate{{key: "sasha"}}, evidence: 20}, "", answer{Female, 0.93, 100}},
		{"masculine surname", plan{cands: []candidate{{key: "sasha"}}, evidence: 1.0 / 20}, "", answer{Male, 0.97, 100}},
		{"evidence skips the whole name", plan{cands: []candidate{{key: "sasha", whole: true}}, evidence: 20}, "", answer{Male, 0.6, 100}},
		{"best-supported spelling", plan{cands: []candidate{{key: "georgios", group: 1}, {key: "giorgos", group: 1}, {key: "yorgos", group: 1}}, evidence: 1}, "", answer{Male, 1, 1000}},
		{"one syllable, sparse data", plan{cands: []candidate{{key: "wei"}}, evidence: 1, ea: eaSparse, syllables: 1}, "", answer{}},
		{"a skeleton match, shrunk", plan{cands: []candidate{{key: "xiaoming", guessed: true}}, evidence: 1}, "", answer{Male, 0.74, 100}},
		{"two syllables, shrunk", plan{cands: []candidate{{key: "xiaoming"}}, evidence: 1, ea: eaSparse, syllables: 2}, "", answer{Male, 0.82, 100}},
	}
	for _, tt := range tests {
		if got := decide(&tt.p, rows, tt.country); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
