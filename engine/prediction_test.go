package engine

import (
	"encoding/json"
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
