package main

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genderize-kong/genderize/schema"
)

func writeCounts(t *testing.T, path, content string) {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(content))
	zw.Close()
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestBuildInfoQuery(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "fr_insee.tsv.gz")
	writeCounts(t, src, "Maria\tFR\tF\t98\nMaria\tFR\tM\t2\nJean\tFR\tM\t50\nJoão\tBR\tM\t7\nx1\tFR\tF\t3\n")
	db := filepath.Join(dir, "names.db")

	var stdout, stderr bytes.Buffer
	if err := run([]string{"build", "-o", db, src}, &stdout, &stderr); err != nil {
		t.Fatalf("build: %v\n%s", err, stderr.String())
	}
	if want := "fr_insee: read 5, kept 4, merged 0, dropped 1 (digits 1)"; !strings.Contains(stderr.String(), want) {
		t.Errorf("build output lacks %q:\n%s", want, stderr.String())
	}

	stdout.Reset()
	if err := run([]string{"info", db}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"schema_version: " + schema.VersionString, "fr_insee", "Licence Ouverte", "births 1900-2021", "countries: 2", "names: 3 distinct keys"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("info lacks %q:\n%s", want, stdout.String())
		}
	}

	tests := []struct {
		args []string
		want string
	}{
		{[]string{"query", db, "-country", "fr", "Maria"}, `{"name":"Maria","gender":"female","probability":0.98,"count":100,"country_id":"FR"}`},
		{[]string{"query", db, "MARIA"}, `{"name":"MARIA","gender":"female","probability":0.98,"count":100}`},
		{[]string{"query", db, "Jean", "Zed"}, `[{"name":"Jean","gender":"male","probability":1.0,"count":50},{"name":"Zed","gender":null,"probability":0.0,"count":0}]`},
		{[]string{"query", db, "-country", "BR", "Joao"}, `{"name":"Joao","gender":"male","probability":0.98,"count":7,"country_id":"BR"}`},
	}
	for _, tt := range tests {
		stdout.Reset()
		if err := run(tt.args, &stdout, &stderr); err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if got := strings.TrimSpace(stdout.String()); got != tt.want {
			t.Errorf("%v:\n got %s\nwant %s", tt.args, got, tt.want)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args  []string
		usage bool
		want  string
	}{
		{nil, true, ""},
		{[]string{"frobnicate"}, true, "unknown command"},
		{[]string{"build", "-o", filepath.Join(dir, "x.db")}, true, "no input files"},
		{[]string{"info"}, true, "want one database"},
		{[]string{"query", filepath.Join(dir, "x.db")}, true, "no names"},
		{[]string{"query", filepath.Join(dir, "x.db"), "Maria", "-country", "FR"}, true, "before the names"},
		{[]string{"query", filepath.Join(dir, "missing.db"), "Maria"}, false, "make db"},
		{[]string{"query", filepath.Join(dir, "missing.db"), "-country", "XK", "Maria"}, false, "not an ISO 3166-1"},
		{[]string{"info", filepath.Join(dir, "missing.db")}, false, "no such file"},
		{[]string{"build", "-o", filepath.Join(dir, "x.db"), filepath.Join(dir, "missing.tsv.gz")}, false, "no such file"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		err := run(tt.args, &stdout, &stderr)
		if err == nil {
			t.Errorf("%v: no error", tt.args)
			continue
		}
		if errors.Is(err, errUsage) != tt.usage || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v (usage error: %v), want %q", tt.args, err, errors.Is(err, errUsage), tt.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.db")); err == nil {
		t.Error("a failed build wrote x.db")
	}
}

// TestEval scores a labelled file against a tiny database: Maria right,
// Jean wrong (labelled f), Zed unknown (no answer), Camille u (not scored).
func TestEval(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "fr_insee.tsv.gz")
	writeCounts(t, src, "Maria\tFR\tF\t98\nMaria\tFR\tM\t2\nJean\tFR\tM\t50\n")
	db := filepath.Join(dir, "names.db")
	var stdout, stderr bytes.Buffer
	if err := run([]string{"build", "-o", db, src}, &stdout, &stderr); err != nil {
		t.Fatalf("build: %v\n%s", err, stderr.String())
	}
	set := filepath.Join(dir, "set.tsv")
	os.WriteFile(set, []byte("first\tlast\tgender\tcountry\nMaria\tDupont\tf\tFR\nJean\tMartin\tf\tFR\nZed\t\tm\tFR\nCamille\t\tu\tFR\n"), 0o644)
	plot := filepath.Join(dir, "r.png")
	stdout.Reset()
	if err := run([]string{"eval", "-country-col", "-plot", plot, db, set}, &stdout, &stderr); err != nil {
		t.Fatalf("eval: %v\n%s", err, stderr.String())
	}
	// 3 scored, 2 answered: errorCoded 2/3, without NA 1/2, naCoded 1/3,
	// bias (mf - fm)/answered = (0 - 1)/2.
	for _, want := range []string{
		"all       3         2       0.667                0.500    0.333           -0.500",
		"[0.99,1.00]        1   1.000     0.000  -1.000", // Jean, wrong at 1.0
		"minimum probability: not reachable",             // the wrong answer is the surest
		"minimum count 100: errorCodedWithoutNA 0.000",   // Maria's 100 records
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("eval output lacks %q:\n%s", want, stdout.String())
		}
	}
	if fi, err := os.Stat(plot); err != nil || fi.Size() == 0 {
		t.Errorf("no reliability diagram: %v", err)
	}
	for _, bad := range []string{"name\tgender\nMaria\tx\n", "name\tcountry\nMaria\tFR\n", "name\tgender\tcountry\nMaria\tf\tUK\n"} {
		os.WriteFile(set, []byte(bad), 0o644)
		if err := run([]string{"eval", db, set}, &stdout, &stderr); err == nil {
			t.Errorf("eval accepted %q", bad)
		}
	}
}

// TestEvalPipeline runs what `make eval` runs on a tiny input: a build
// holding out half of the names, the full-name set made from them by
// schema/evalsets/fullnames.awk, and eval on it.
func TestEvalPipeline(t *testing.T) {
	awk, err := exec.LookPath("awk")
	if err != nil {
		t.Skip("no awk on PATH")
	}
	dir := t.TempDir()
	var rows strings.Builder
	for _, n := range []string{"Anna", "Maria", "Olga", "Emma", "Julia", "Sofia", "Laura", "Clara"} {
		fmt.Fprintf(&rows, "%s\tFR\tF\t40\n%s\tFR\tM\t1\n", n, n)
	}
	for _, n := range []string{"Jean", "Paul", "Louis", "Marc", "Pierre", "Hugo", "Leo", "Jules"} {
		fmt.Fprintf(&rows, "%s\tFR\tM\t30\n", n)
	}
	src := filepath.Join(dir, "fr_insee.tsv.gz")
	writeCounts(t, src, rows.String())
	db, heldOut := filepath.Join(dir, "eval.db"), filepath.Join(dir, "heldout.tsv")
	var stdout, stderr bytes.Buffer
	if err := run([]string{"build", "-holdout-share", "0.5", "-holdout-out", heldOut, "-o", db, src}, &stdout, &stderr); err != nil {
		t.Fatalf("build: %v\n%s", err, stderr.String())
	}
	if err := run([]string{"build", "-holdout-share", "0.5", "-o", db, src}, &stdout, &stderr); !errors.Is(err, errUsage) {
		t.Errorf("-holdout-share without -holdout-out: %v", err)
	}
	cmd := exec.Command(awk, "-f", filepath.Join("..", "..", "evalsets", "fullnames.awk"), "-", heldOut)
	cmd.Stdin = strings.NewReader("# comment\nMartin\tFR\nBernard\tFR\n")
	full, err := cmd.Output()
	if err != nil {
		t.Fatalf("fullnames.awk: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(full)), "\n")
	held, _ := os.ReadFile(heldOut)
	if want := strings.Count(string(held), "\n"); len(lines) != want || want < 2 {
		t.Fatalf("fullnames.awk wrote %d lines for %d held-out lines:\n%s", len(lines), want, full)
	}
	for _, l := range lines[1:] {
		if f := strings.Split(l, "\t"); len(f) != 7 || (f[1] != "Martin" && f[1] != "Bernard") {
			t.Errorf("full name line %q: want first, a surname of FR, gender, country, female, male, source", l)
		}
	}
	set := filepath.Join(dir, "fullnames.tsv")
	os.WriteFile(set, full, 0o644)
	stdout.Reset()
	if err := run([]string{"eval", "-country-col", db, set}, &stdout, &stderr); err != nil {
		t.Fatalf("eval: %v\n%s", err, stderr.String())
	}
	// The held-out names are not in the database: every one is unanswered.
	if want := fmt.Sprintf("all  %6d         0       1.000", len(lines)-1); !strings.Contains(stdout.String(), want) {
		t.Errorf("eval output lacks %q:\n%s", want, stdout.String())
	}
}
