package engine

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

func TestPredictionAppendJSON(t *testing.T) {
	tests := []struct {
		name string
		p    Prediction
		want string
	}{
		{"unknown", Prediction{Name: "Zzyzx"}, `{"name":"Zzyzx","gender":null,"probability":0.0,"count":0}`},
		{"certain", Prediction{Name: "peter", Gender: Male, Probability: 1, Count: 1094417}, `{"name":"peter","gender":"male","probability":1.0,"count":1094417}`},
		{"two decimals", Prediction{Name: "Maria", Gender: Female, Probability: 0.98, Count: 12, CountryID: "FR"}, `{"name":"Maria","gender":"female","probability":0.98,"count":12,"country_id":"FR"}`},
		{"half", Prediction{Name: "x", Probability: 0.5, Count: 2}, `{"name":"x","gender":null,"probability":0.5,"count":2}`},
		{"escapes", Prediction{Name: "a\"b\\c\n\x01\u2028"}, `{"name":"a\"b\\c\n\u0001\u2028","gender":null,"probability":0.0,"count":0}`},
		{"unicode kept", Prediction{Name: "José 李 אבי"}, `{"name":"José 李 אבי","gender":null,"probability":0.0,"count":0}`},
		{"invalid utf8", Prediction{Name: "a\xffb"}, `{"name":"a\ufffdb","gender":null,"probability":0.0,"count":0}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(tt.p.AppendJSON(nil))
			if got != tt.want {
				t.Fatalf("AppendJSON = %s\nwant          %s", got, tt.want)
			}
			if !json.Valid([]byte(got)) {
				t.Fatalf("not valid JSON: %s", got)
			}
		})
	}
}

func TestAppendJSONArray(t *testing.T) {
	got := string(AppendJSONArray(nil, []Prediction{{Name: "a"}, {Name: "b", Gender: Female, Probability: 0.75, Count: 4}}))
	want := `[{"name":"a","gender":null,"probability":0.0,"count":0},{"name":"b","gender":"female","probability":0.75,"count":4}]`
	if got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	if got := string(AppendJSONArray(nil, nil)); got != "[]" {
		t.Fatalf("empty array = %s", got)
	}
}

// TestAppendProbability: the two-decimal shortcut writes what strconv's
// shortest form does, for every two-decimal probability and for values
// it must leave to strconv.
func TestAppendProbability(t *testing.T) {
	strconvForm := func(p float64) string {
		s := strconv.FormatFloat(p, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	var ps []float64
	for c := range 101 {
		ps = append(ps, round2(float64(c)/100), float64(c)/100)
	}
	ps = append(ps, 0.125, 0.995, 0.3333333, 1e-9, 1.5, -0.25, 0.07000000000000001)
	for _, p := range ps {
		if got, want := string(appendProbability(nil, p)), strconvForm(p); got != want {
			t.Errorf("appendProbability(%v) = %s, want %s", p, got, want)
		}
	}
}

// BenchmarkAppendJSONArray encodes a batch of 100 answers; the
// probabilities sub-benchmarks write only their 100 probabilities, with
// the shortcut and with strconv as before it (its baseline).
func BenchmarkAppendJSONArray(b *testing.B) {
	ps := make([]Prediction, 100)
	for i := range ps {
		ps[i] = Prediction{Name: "Alexandra", Gender: Female, Probability: round2(0.5 + float64(i)/200), Count: int64(1000 * i)}
	}
	buf := make([]byte, 0, 80*len(ps))
	b.Run("array", func(b *testing.B) {
		for b.Loop() {
			buf = AppendJSONArray(buf[:0], ps)
		}
	})
	b.Run("probabilities-shortcut", func(b *testing.B) {
		for b.Loop() {
			buf = buf[:0]
			for _, p := range ps {
				buf = appendProbability(buf, p.Probability)
			}
		}
	})
	b.Run("probabilities-strconv", func(b *testing.B) {
		for b.Loop() {
			buf = buf[:0]
			for _, p := range ps {
				start := len(buf)
				buf = strconv.AppendFloat(buf, p.Probability, 'f', -1, 64)
				if !bytes.Contains(buf[start:], []byte(".")) {
					buf = append(buf, ".0"...)
				}
			}
		}
	})
}
