package quota

import (
	"testing"
	"time"
)

func TestMonth(t *testing.T) {
	tests := []struct {
		at         string
		start, end string
		reset      time.Duration
	}{
		{"2026-01-31T23:59:59Z", "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z", time.Second},
		{"2026-02-01T00:00:00Z", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z", 28 * 24 * time.Hour},
		{"2028-02-10T00:00:00Z", "2028-02-01T00:00:00Z", "2028-03-01T00:00:00Z", 20 * 24 * time.Hour},
		{"2026-12-31T12:00:00Z", "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z", 12 * time.Hour},
		// A local time is counted in the UTC month it falls in.
		{"2026-03-01T01:00:00+02:00", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z", time.Hour},
	}
	for _, tt := range tests {
		at := mustTime(t, tt.at)
		w := Month(at)
		if !w.Start.Equal(mustTime(t, tt.start)) || !w.End.Equal(mustTime(t, tt.end)) {
			t.Errorf("Month(%s) = [%s, %s), want [%s, %s)", tt.at, w.Start, w.End, tt.start, tt.end)
		}
		if got := w.ResetAfter(); got != tt.reset {
			t.Errorf("Month(%s).ResetAfter() = %s, want %s", tt.at, got, tt.reset)
		}
	}
}

func TestFixed(t *testing.T) {
	tests := []struct {
		at     string
		d      time.Duration
		start  string
		resetS int
	}{
		{"2026-11-22T09:30:00Z", 24 * time.Hour, "2026-11-22T00:00:00Z", 14*3600 + 30*60},
		{"2026-11-22T09:30:00Z", time.Hour, "2026-11-22T09:00:00Z", 30 * 60},
		// 7 hours does not divide a day: windows still count from the epoch.
		{"1970-01-01T15:00:00Z", 7 * time.Hour, "1970-01-01T14:00:00Z", 6 * 3600},
		{"2026-11-22T00:00:00Z", 7 * time.Hour, "2026-11-21T22:00:00Z", 5 * 3600},
		{"1969-12-31T23:00:00Z", 24 * time.Hour, "1969-12-31T00:00:00Z", 3600},
	}
	for _, tt := range tests {
		w := Fixed(mustTime(t, tt.at), tt.d)
		if !w.Start.Equal(mustTime(t, tt.start)) || w.End.Sub(w.Start) != tt.d {
			t.Errorf("Fixed(%s, %s) = [%s, %s), want start %s", tt.at, tt.d, w.Start, w.End, tt.start)
		}
		if w.Start.Unix()%int64(tt.d/time.Second) != 0 {
			t.Errorf("Fixed(%s, %s) starts at %d, not aligned to the epoch", tt.at, tt.d, w.Start.Unix())
		}
		if got := w.ResetAfter(); got != time.Duration(tt.resetS)*time.Second {
			t.Errorf("Fixed(%s, %s).ResetAfter() = %s, want %ds", tt.at, tt.d, got, tt.resetS)
		}
	}
}

func TestDecide(t *testing.T) {
	w := Month(mustTime(t, "2026-04-30T00:00:00Z"))
	day := 24 * time.Hour
	tests := []struct {
		name           string
		used, limit, n int
		want           Result
	}{
		{"peek fresh", 0, 100, 0, Result{Limit: 100, Remaining: 100, ResetAfter: day}},
		{"peek used", 40, 100, 0, Result{Limit: 100, Remaining: 60, ResetAfter: day}},
		{"one", 0, 100, 1, Result{Limit: 100, Allowed: 1, Remaining: 99, ResetAfter: day}},
		{"exactly the rest", 90, 100, 10, Result{Limit: 100, Allowed: 10, Remaining: 0, ResetAfter: day}},
		{"one too many", 91, 100, 10, Result{Limit: 100, Remaining: 9, RetryAfter: day, ResetAfter: day}},
		{"used up", 100, 100, 1, Result{Limit: 100, Remaining: 0, RetryAfter: day, ResetAfter: day}},
		{"limit lowered below use", 150, 100, 0, Result{Limit: 100, Remaining: 0, ResetAfter: day}},
		{"zero limit", 0, 0, 1, Result{Limit: 0, Remaining: 0, RetryAfter: day, ResetAfter: day}},
	}
	for _, tt := range tests {
		if got := Decide(tt.used, tt.limit, tt.n, w); got != tt.want {
			t.Errorf("%s: Decide(%d, %d, %d) = %+v, want %+v", tt.name, tt.used, tt.limit, tt.n, got, tt.want)
		}
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return at
}
