package importer

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/genderize-kong/genderize/engine"
	"github.com/genderize-kong/genderize/schema"
)

func TestCleanName(t *testing.T) {
	tests := []struct {
		in, key, drop string
	}{
		{"Maria", "maria", ""},
		{"  MARIE-claire ", "marie-claire", ""},
		{"José", "josé", ""},
		{"O'Brien", "o'brien", ""},
		{"(Юпи)", "юпи", ""},
		{",Александр", "александр", ""},
		{"MARIA CARMEN", "maria carmen", ""},
		{"A Abigail", "abigail", ""},
		{"Charlotte B", "charlotte", ""},
		{"Mohamad A. M.", "mohamad", ""},
		{"A.j.", "a.j", ""},
		{"李伟", "李伟", ""},
		{"A", "", DropInitial},
		{"J. R.", "", DropInitial},
		{"http://example.com", "", DropURL},
		{"www.names.org", "", DropURL},
		{"http", "", DropURL},
		{"0леся", "", DropDigits},
		{"№3516-498", "", DropDigits},
		{"Goran (Горан)", "goran", ""},
		{"Farah ali (disambiguation)", "farah ali", ""},
		{"Rayna / Raina", "rayna", ""},
		{"Yelena/Elena", "yelena", ""},
		{"MA! GUADALUPE", "", DropStray},
		{"MARÃ?A CRISTINA", "", DropStray},
		{"Ann (Annie", "", DropStray},
		{"Unknown", "", DropPlaceholder},
		{"BABY GIRL", "", DropPlaceholder},
		{"Infant", "", DropPlaceholder},
		{"---", "", DropNoLetters},
		{"?", "", DropNoLetters},
		{strings.Repeat("Ab", 30), "", DropTooLong},
	}
	for _, tt := range tests {
		key, drop := cleanName(tt.in)
		if key != tt.key || drop != tt.drop {
			t.Errorf("cleanName(%q) = %q, %q; want %q, %q", tt.in, key, drop, tt.key, tt.drop)
		}
	}
}

func TestParseCount(t *testing.T) {
	tests := []struct {
		in   string
		n    int64
		drop string
	}{
		{"12", 12, ""},
		{" 7065 ", 7065, ""},
		{"11694738", 11694738, ""},
		{"0", 0, DropBadCount},
		{"-3", 0, DropBadCount},
		{"abc", 0, DropMalformed},
		{"1.5", 0, DropMalformed},
		{"", 0, DropMalformed},
		{"11111111", 0, DropAbsurdCount},
		{"9999999", 0, DropAbsurdCount},
		{"200000000", 0, DropAbsurdCount},
	}
	for _, tt := range tests {
		n, drop := parseCount(tt.in)
		if n != tt.n || drop != tt.drop {
			t.Errorf("parseCount(%q) = %d, %q; want %d, %q", tt.in, n, drop, tt.n, tt.drop)
		}
	}
}

func TestLocaleCountry(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"af_ZA", "ZA", true}, {"fa", "IR", true}, {"he", "IL", true}, {"pt_BR", "BR", true},
		{"en", "US", true}, {"sr_RS_latin", "RS", true}, {"en_AU_ocker", "AU", true},
		{"eo", "", false}, {"", "", false}, {"!!", "", false},
	}
	for _, tt := range tests {
		got, ok := localeCountry(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("localeCountry(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func writeGzip(t *testing.T, path, content string) {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(content))
	zw.Close()
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fixtures writes one small file of every format into dir.
func fixtures(t *testing.T, dir string) []string {
	t.Helper()
	counts := filepath.Join(dir, "test_counts.tsv.gz")
	writeGzip(t, counts, strings.Join([]string{
		"Maria\tFR\tF\t90",
		"MARIA\tFR\tF\t10",   // merged with Maria
		"Maria\tFR\tM\t1",    // the same key, other sex: kept
		"José\tES\tM\t40",    // folds to jose
		"Jose\tES\tM\t60",    // a second spelling of jose
		"Josè\tES\tF\t1",     // a third
		"Camille\tFR\tF\t50", // a tie with the row below
		"Camille\tFR\tM\t50",
		"Kim\tSE\tM\t900",
		"Zed\tSE\tM\t99100", // makes SE large: 100,000 records in all
		"Kim\tKR\tF\t100",   // KR has 100 records in all
		"A Abigail\tCA\tF\t3",
		"Abigail\tCA\tF\t7",
		"-Ольга\tRU\tF\t5",
		"Ольга\tRU\t?\t1",
		"http\tHU\tM\t11111111",
		"Zoë\tXX\tF\t3",
		"Ann (Annie\tGB\tF\t2",
		"Bad\tGB\tF",
		"Twelve\tGB\tF\ttwelve",
		"",
	}, "\n"))

	lexicon := filepath.Join(dir, "test_lexicon.tsv")
	os.WriteFile(lexicon, []byte("he\tM\tאבי\nhe\tF\tשרה\nzz\tF\tNobody\nhe\tM\n"), 0o644)

	yob := filepath.Join(dir, "yob2020.txt")
	os.WriteFile(yob, []byte("Olivia,F,17641\nLiam,M,19659\nLiam,F,5\nBroken line\n"), 0o644)

	zipPath := filepath.Join(dir, "names.zip")
	f, _ := os.Create(zipPath)
	zw := zip.NewWriter(f)
	for name, body := range map[string]string{
		"yob2021.txt":        "Olivia,F,17728\nLiam,M,20272\n",
		"NationalReadMe.pdf": "not names",
	} {
		w, _ := zw.Create(name)
		w.Write([]byte(body))
	}
	zw.Close()
	f.Close()
	return []string{counts, lexicon, yob, zipPath}
}

func TestBuild(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "names.db")
	var progress bytes.Buffer
	report, err := Build(context.Background(), out, fixtures(t, dir), &progress)
	if err != nil {
		t.Fatal(err)
	}

	byID := map[string]SourceReport{}
	for _, s := range report.Sources {
		byID[s.ID] = s
		if s.Read != s.Kept+s.Merged+s.Dropped {
			t.Errorf("%s: read %d != kept %d + merged %d + dropped %d", s.ID, s.Read, s.Kept, s.Merged, s.Dropped)
		}
		if !strings.Contains(progress.String(), s.String()) {
			t.Errorf("progress does not report %s:\n%s", s.ID, progress.String())
		}
	}
	counts := byID["test_counts"]
	wantDrops := map[string]int64{
		DropSex: 1, DropAbsurdCount: 1, DropCountry: 1, DropStray: 1, DropMalformed: 2,
	}
	if counts.Read != 20 || counts.Merged != 2 || !reflect.DeepEqual(counts.Reasons, wantDrops) {
		t.Errorf("test_counts: %+v, want read 20, merged 2 (MARIA, A Abigail), dropped %v", counts, wantDrops)
	}
	if counts.Info.Licence == "" || !strings.HasPrefix(counts.Info.Licence, "unknown") {
		t.Errorf("an unknown source's licence: %q", counts.Info.Licence)
	}
	if lex := byID["test_lexicon"]; lex.Format != FormatLexicon || lex.Kept != 2 || lex.Reasons[DropNoCountry] != 1 || lex.Reasons[DropMalformed] != 1 {
		t.Errorf("test_lexicon: %+v", lex)
	}
	if ssa := byID["us_ssa"]; ssa.Format != FormatSSA || len(ssa.Files) != 2 || ssa.Read != 6 || ssa.Merged != 2 || ssa.Reasons[DropMalformed] != 1 {
		t.Errorf("us_ssa: %+v", ssa)
	}

	e, err := engine.Open(out, engine.Options{CacheEntries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	check := func(name, country string, want engine.Prediction) {
		t.Helper()
		want.Name, want.CountryID = name, country
		ps, err := e.Predict([]string{name}, country)
		if err != nil {
			t.Fatal(err)
		}
		if ps[0] != want {
			t.Errorf("%s in %q: got %+v, want %+v", name, country, ps[0], want)
		}
	}
	check("Maria", "FR", engine.Prediction{Gender: engine.Female, Probability: 0.99, Count: 101})
	check("Camille", "FR", engine.Prediction{Probability: 0.5, Count: 100})
	// Probabilities are calibrated by the evidence (engine/calibrate.go):
	// (share*E + 0.15) / (E + 0.3), E the records at their source's trust.
	check("Abigail", "CA", engine.Prediction{Gender: engine.Female, Probability: 0.99, Count: 10}) // 10.15 / 10.3
	check("Ольга", "RU", engine.Prediction{Gender: engine.Female, Probability: 0.97, Count: 5})    // 5.15 / 5.3
	check("Olivia", "US", engine.Prediction{Gender: engine.Female, Probability: 1, Count: 17641 + 17728})
	check("Liam", "US", engine.Prediction{Gender: engine.Male, Probability: 1, Count: 19659 + 20272 + 5})
	// One lexicon entry is half a record of evidence: 0.65 / 0.8.
	check("אבי", "IL", engine.Prediction{Gender: engine.Male, Probability: 0.81, Count: 1})
	check("http", "HU", engine.Prediction{})
	// José and Jose are each answered exactly; Jôse from their folded sum.
	check("José", "ES", engine.Prediction{Gender: engine.Male, Probability: 1, Count: 40}) // 40.15 / 40.3
	check("Jose", "ES", engine.Prediction{Gender: engine.Male, Probability: 1, Count: 60})
	check("Jôse", "ES", engine.Prediction{Gender: engine.Male, Probability: 0.99, Count: 101})
	check("Jôse", "", engine.Prediction{Gender: engine.Male, Probability: 0.99, Count: 101})

	// The global model weighs each country by sqrt(its records): SE's 900
	// male Kims out of 100,000 records against KR's 100 female Kims out of
	// 100. Raw pooling would say male 0.9.
	wSE, wKR := 1/math.Sqrt(100_000), 1/math.Sqrt(100)
	female := 100 * wKR / (100*wKR + 900*wSE)
	check("Kim", "", engine.Prediction{Gender: engine.Female, Probability: math.Round(female*100) / 100, Count: 1000})
	check("Kim", "SE", engine.Prediction{Gender: engine.Male, Probability: 1, Count: 900})

	// The sources table records what the build did.
	db, err := openRO(t, out)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Evidence at full trust is stored as NULL (schema.sql); a lexicon
	// entry, half a record, is stored as it is.
	for _, tt := range []struct {
		key, country string
		want         sql.NullFloat64
	}{
		{"maria", "FR", sql.NullFloat64{}},
		{"אבי", "", sql.NullFloat64{Float64: 0.5, Valid: true}},
	} {
		var got sql.NullFloat64
		err := db.QueryRow("SELECT evidence FROM names WHERE key = ? AND form = 0 AND (country = ? OR (country = '' AND sole = ?))",
			tt.key, tt.country, tt.country).Scan(&got)
		if err != nil || got != tt.want {
			t.Errorf("evidence of %s in %q: %+v (%v), want %+v", tt.key, tt.country, got, err, tt.want)
		}
	}
	var read, kept, merged, dropped int64
	var reasons, licence string
	err = db.QueryRow("SELECT rows_read, rows_kept, rows_merged, rows_dropped, dropped, licence FROM sources WHERE id = 'test_counts'").
		Scan(&read, &kept, &merged, &dropped, &reasons, &licence)
	if err != nil {
		t.Fatal(err)
	}
	var gotReasons map[string]int64
	json.Unmarshal([]byte(reasons), &gotReasons)
	if read != counts.Read || kept != counts.Kept || merged != counts.Merged || dropped != counts.Dropped || !reflect.DeepEqual(gotReasons, wantDrops) {
		t.Errorf("sources row: %d %d %d %d %s, report %+v", read, kept, merged, dropped, reasons, counts)
	}
}

func TestBuildFailureKeepsOldDatabase(t *testing.T) {
	dir := t.TempDir()
	files := fixtures(t, dir)
	out := filepath.Join(dir, "names.db")
	if _, err := Build(context.Background(), out, files[:1], nil); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(out)
	dirTarget := filepath.Join(dir, "taken.db")
	os.MkdirAll(filepath.Join(dirTarget, "inside"), 0o755)

	bad := filepath.Join(dir, "bad.tsv.gz")
	writeGzip(t, bad, "only\ttwo\n")
	truncated := filepath.Join(dir, "truncated.tsv.gz")
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(bytes.Repeat([]byte("Maria\tFR\tF\t90\n"), 10000))
	zw.Close()
	os.WriteFile(truncated, b.Bytes()[:b.Len()/2], 0o644)

	for _, tt := range []struct {
		name  string
		out   string
		files []string
		want  string
	}{
		{"no files", out, nil, "no input files"},
		{"missing file", out, []string{filepath.Join(dir, "missing.tsv.gz")}, "no such file"},
		{"bad format", out, []string{files[0], bad}, "tab-separated fields"},
		{"truncated gzip", out, []string{files[0], truncated}, "unexpected EOF"},
		{"nothing kept", out, []string{writeLexicon(t, dir)}, "no rows kept"},
		{"target is a directory", dirTarget, files[:1], "move database into place"},
	} {
		_, err := Build(context.Background(), tt.out, tt.files, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
	after, _ := os.ReadFile(out)
	if !bytes.Equal(before, after) {
		t.Error("a failed build changed the existing database")
	}
	// A cancelled build (Ctrl-C) stops and cleans up too.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Build(ctx, out, files, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled build: %v", err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, "*.tmp"))
	if len(leftovers) > 0 {
		t.Errorf("a failed build left %v", leftovers)
	}
}

func writeLexicon(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "empty_lexicon.tsv")
	os.WriteFile(path, []byte("zz\tF\tNobody\n"), 0o644)
	return path
}

// openRO opens the database at path read-only for a test's own queries.
func openRO(tb testing.TB, path string) (*sql.DB, error) {
	tb.Helper()
	dsn, err := schema.DSN(path, "mode=ro")
	if err != nil {
		return nil, err
	}
	return sql.Open("sqlite3", dsn)
}

// TestBuildOddPath: a '?' or '#' in the path is part of the file name, not
// the start of SQLite parameters.
func TestBuildOddPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "odd ?#%20")
	os.MkdirAll(dir, 0o755)
	files := fixtures(t, dir)
	out := filepath.Join(dir, "names?.db")
	if _, err := Build(context.Background(), out, files[:1], nil); err != nil {
		t.Fatal(err)
	}
	e, err := engine.Open(out, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if ps, err := e.Predict([]string{"Maria"}, "FR"); err != nil || ps[0].Gender != engine.Female {
		t.Fatalf("%+v, %v", ps, err)
	}
	entries, _ := os.ReadDir(dir)
	for _, en := range entries {
		if strings.HasSuffix(en.Name(), ".tmp") || strings.Contains(en.Name(), "journal") {
			t.Errorf("left behind: %s", en.Name())
		}
	}
}

// TestBuildReproducible: the same input builds the same names table.
func TestBuildReproducible(t *testing.T) {
	dir := t.TempDir()
	// Names shared by many countries of different sizes: their weighted
	// global sums depend on the order they are added in.
	var b strings.Builder
	for i := range 300 {
		for j, c := range []string{"FR", "DE", "US", "BR", "JP", "SE", "IT"} {
			fmt.Fprintf(&b, "Name%s\t%s\tF\t%d\n", strings.Repeat("a", i%7+1)+strings.Repeat("b", i/7+1), c, 1+(i*7919+j*104729)%100003)
			fmt.Fprintf(&b, "Name%s\t%s\tM\t%d\n", strings.Repeat("a", i%7+1)+strings.Repeat("b", i/7+1), c, 1+(i*104729+j*7919)%1009)
		}
	}
	multi := filepath.Join(dir, "multi.tsv.gz")
	writeGzip(t, multi, b.String())
	files := append(fixtures(t, dir), multi)
	var dumps [2]string
	for i := range dumps {
		out := filepath.Join(dir, fmt.Sprintf("names%d.db", i))
		if _, err := Build(context.Background(), out, files, nil); err != nil {
			t.Fatal(err)
		}
		db, err := openRO(t, out)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := db.Query("SELECT key, country, form, female, male, female_share, coalesce(sole, '') FROM names ORDER BY key, country, form")
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for rows.Next() {
			var key, country, sole string
			var form, female, male int64
			var share float64
			rows.Scan(&key, &country, &form, &female, &male, &share, &sole)
			fmt.Fprintf(&b, "%s|%s|%d|%d|%d|%x|%s\n", key, country, form, female, male, math.Float64bits(share), sole)
		}
		rows.Close()
		db.Close()
		dumps[i] = b.String()
	}
	if dumps[0] != dumps[1] || dumps[0] == "" {
		t.Fatalf("two builds differ:\n%s\n%s", dumps[0], dumps[1])
	}
}
