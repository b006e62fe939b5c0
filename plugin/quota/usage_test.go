package quota

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLocalCounters(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "quota.db")
	s := openTestStore(t, path)
	month, prevMonth := Month(testNow), Month(testNow.AddDate(0, -1, 0))
	day := Fixed(testNow, 24*time.Hour)
	// The current window first: the store prunes ended windows on its
	// first write, and then hourly in request time.
	allow(t, s, "consumer:a", 100, month, 7)
	allow(t, s, "consumer:a", 100, prevMonth, 40)
	allow(t, s, "consumer:ab", 100, month, 3)
	allow(t, s, "ip:10.0.0.1", 10, day, 5)
	allow(t, s, "ip:10.0.0.10", 10, day, 1)
	allow(t, s, "ip:10.0.0.2", 10, day, 0) // a peek stores nothing

	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := OpenLocalCounters(path, false)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		prefix string
		want   []Usage
	}{
		{"", []Usage{
			{"consumer:a", prevMonth.Start, prevMonth.End, 40},
			{"consumer:a", month.Start, month.End, 7},
			{"consumer:ab", month.Start, month.End, 3},
			{"ip:10.0.0.1", day.Start, day.End, 5},
			{"ip:10.0.0.10", day.Start, day.End, 1},
		}},
		{"consumer:", []Usage{
			{"consumer:a", prevMonth.Start, prevMonth.End, 40},
			{"consumer:a", month.Start, month.End, 7},
			{"consumer:ab", month.Start, month.End, 3},
		}},
		{"ip:10.0.0.10", []Usage{{"ip:10.0.0.10", day.Start, day.End, 1}}},
		{"ip:%", nil}, // not a LIKE pattern
		{"nobody:", nil},
	}
	for _, tt := range tests {
		got, err := ro.Usage(ctx, tt.prefix)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(tt.want) {
			t.Errorf("Usage(%q) = %+v, want %+v", tt.prefix, got, tt.want)
			continue
		}
		for i := range got {
			g, w := got[i], tt.want[i]
			if g.Key != w.Key || !g.WindowStart.Equal(w.WindowStart) || !g.WindowEnd.Equal(w.WindowEnd) || g.Used != w.Used {
				t.Errorf("Usage(%q)[%d] = %+v, want %+v", tt.prefix, i, g, w)
			}
		}
	}
	if _, err := ro.Reset(ctx, "consumer:a"); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("Reset on a read-only store: %v", err)
	}
	ro.Close()
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("reading the counters changed the quota file")
	}

	// Reset while the plugin's store has the file open: the caller starts
	// from zero, the others keep their counts.
	rw, err := OpenLocalCounters(path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	for _, bad := range []string{"", "a"} {
		if _, err := rw.Reset(ctx, bad); err == nil {
			t.Errorf("Reset(%q) succeeded", bad)
		}
	}
	if n, err := rw.Reset(ctx, "consumer:a"); err != nil || n != 2 {
		t.Fatalf("Reset: %d, %v; want 2 windows removed", n, err)
	}
	if r := allow(t, s, "consumer:a", 100, month, 0); r.Remaining != 100 {
		t.Errorf("after reset the store says %d remaining, want 100", r.Remaining)
	}
	if r := allow(t, s, "consumer:ab", 100, month, 0); r.Remaining != 97 {
		t.Errorf("another consumer's count changed: %d remaining, want 97", r.Remaining)
	}
	if n, err := rw.Reset(ctx, "consumer:a"); err != nil || n != 0 {
		t.Errorf("second Reset: %d, %v", n, err)
	}
}

func TestOpenLocalCountersErrors(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other.db")
	if _, err := OpenLocal(filepath.Join(dir, "made.db")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(other, []byte(strings.Repeat("not sqlite ", 100)), 0o644)
	for _, tt := range []struct{ path, want string }{
		{filepath.Join(dir, "missing.db"), "no such file"},
		{dir, "not a regular file"},
		{other, "not a database"},
	} {
		if _, err := OpenLocalCounters(tt.path, false); err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.path) {
			t.Errorf("OpenLocalCounters(%s): %v, want %q", tt.path, err, tt.want)
		}
	}
	// A missing file is not created by looking.
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); err == nil {
		t.Error("opening a missing file created it")
	}
}
