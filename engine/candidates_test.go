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
		{"J. Robert Oppenheimer", []string{"j. robert oppenheimer", "~j robert oppenheimer", "robert oppenheimer", "~robert oppenheimer", "robert", "~robert"}},
		{"J.", []string{"j", "~j"}},
		{"Dubois, Jean-Pierre", []string{"jean-pierre", "~jean pierre", "jean", "~jean"}},
		{"Николай Петров", []string{"николай петров", "~николай петров", "николай", "~николай"}},
		{"李伟", []string{"李伟", "~李伟"}},
		{"Mr. John Smith", []string{"mr. john smith", "~mr john smith", "john smith", "~john smith", "john", "~john"}},
		{"Dr Maria", []string{"dr maria", "~dr maria", "maria", "~maria"}},
		{"Dr", []string{"dr", "~dr"}},
		{"DUPONT Jean-Pierre", []string{"dupont jean-pierre", "~dupont jean pierre", "dupont", "~dupont", "jean-pierre", "~jean pierre", "jean", "~jean"}},
		{"JEAN Dupont", []string{"jean dupont", "~jean dupont", "jean", "~jean", "dupont", "~dupont"}},
		{"MARIA CARMEN", []string{"maria carmen", "~maria carmen", "maria", "~maria"}},
		{"J. DUPONT Jean", []string{"j. dupont jean", "~j dupont jean", "dupont jean", "~dupont jean", "dupont", "~dupont"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range candidates(tt.name, namekey.Key(tt.name), nil) {
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
		{[]candidate{{"maria", false}}, answer{Female, 0.98, 100}},
		{[]candidate{{"andrea", false}}, answer{"", 0.5, 100}},
		{[]candidate{{"josé", false}, {"jose", true}}, answer{Male, 1, 300}},
		{[]candidate{{"jorge", false}, {"jose", false}}, answer{Male, 0.99, 200}},
		// A folded key without a folded row reads the exact row.
		{[]candidate{{"mariá", false}, {"maria", true}}, answer{Female, 0.98, 100}},
		{[]candidate{{"nobody", false}}, answer{}},
		{nil, answer{}},
		// Weak compound yields to the given name, strong one answers.
		{[]candidate{{"riley breanna", false}, {"riley", false}}, answer{Female, 0.6, 100}},
		{[]candidate{{"zoe anne", false}, {"zoe", false}}, answer{Female, 0.95, 3}}, // (3 + 0.15) / 3.3
		{[]candidate{{"maria carmen", false}, {"maria", false}}, answer{Female, 1, 641}},
		{[]candidate{{"luc", false}}, answer{Male, 0.99, 10}}, // (10 + 0.15) / 10.3
	}
	for _, tt := range tests {
		if got := decide(tt.cands, rows, "FR"); got != tt.want {
			t.Errorf("decide(%v) = %+v, want %+v", tt.cands, got, tt.want)
		}
	}
	luc := []candidate{{"luc", false}}
	if got := decide(luc, rows, ""); got != (answer{Male, 0.99, 10}) {
		t.Errorf("luc, global: %+v", got)
	}
	if got := decide(luc, rows, "BE"); got != (answer{}) {
		t.Errorf("luc in BE, where it is not found: %+v", got)
	}
}
