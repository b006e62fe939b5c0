package namekey

import "testing"

func TestCountryCode(t *testing.T) {
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{"US", "US", true}, {"us", "US", true}, {"dK", "DK", true}, {"IL", "IL", true},
		{"XK", "", false}, {"UK", "", false}, {"EU", "", false}, {"ZZ", "", false},
		{"", "", false}, {"U", "", false}, {"USA", "", false}, {"1A", "", false}, {"é", "", false},
	}
	for _, tt := range tests {
		got, ok := CountryCode(tt.in)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("CountryCode(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
	if len(isoCountries) != 249 {
		t.Fatalf("isoCountries has %d codes, want 249", len(isoCountries))
	}
}
