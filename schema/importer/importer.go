// Package importer builds the name database (package schema) from name
// statistics files: the long TSV format of ../shared/data/names, count-less
// lexicons, and the US SSA's own yobYYYY.txt / names.zip download.
//
// Cleaning, row by row (see cleanName and parseCount): the name is keyed
// with namekey.Key, the function the engine looks names up with. A
// bracketed note and alternative spellings are cut ("Goran (Горан)" ->
// goran, "Yelena/Elena" -> yelena) and initials removed ("Charlotte B" ->
// charlotte). Rows whose sex is not F or M, whose country is not an ISO
// 3166-1 code, whose count is not a positive integer or is absurd (above
// 100 million, or filler such as 11111111), and whose name is a URL, has
// digits, no letters, stray characters, only initials, is a register's
// placeholder ("Unknown", "Baby") or is too long are dropped and counted by
// reason. Rows of one source that normalise to the same (key, country, sex)
// are merged by summing their counts; sources are then summed per (key,
// country).
//
// Precomputed for the engine, so that a lookup is one indexed read: the
// accent-folded keys (namekey.Fold) with their summed counts, and the
// global model (country "") for both forms. See package engine for how the
// global model weighs countries.
package importer

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/genderize-kong/genderize/schema"
	"github.com/genderize-kong/genderize/schema/namekey"
	_ "github.com/mattn/go-sqlite3"
)

// SourceReport is what the build did with one source.
type SourceReport struct {
	ID        string
	Format    string
	Files     []string
	Info      SourceInfo
	Countries int
	Read      int64 // rows read
	Kept      int64 // rows that created a (key, country, sex) entry
	Merged    int64 // rows summed into an entry of the same source
	Dropped   int64
	Reasons   map[string]int64 // dropped rows by reason
}

// Report is what a build produced.
type Report struct {
	Sources   []SourceReport
	Keys      int   // distinct exact keys
	Countries int   // countries with data
	Rows      int64 // rows of the names table
}

// String is the summary line the CLI prints for a source.
func (s SourceReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: read %d, kept %d, merged %d, dropped %d", s.ID, s.Read, s.Kept, s.Merged, s.Dropped)
	reasons := make([]string, 0, len(s.Reasons))
	for r := range s.Reasons {
		reasons = append(reasons, r)
	}
	slices.SortFunc(reasons, func(a, b string) int {
		return cmp.Or(cmp.Compare(s.Reasons[b], s.Reasons[a]), strings.Compare(a, b))
	})
	for i, r := range reasons {
		if i == 0 {
			b.WriteString(" (")
		} else {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", r, s.Reasons[r])
	}
	if len(reasons) > 0 {
		b.WriteString(")")
	}
	return b.String()
}

type entry struct{ key, country string }

// tally is what the sources say about an entry: records by sex, and the
// evidence they are worth (see trust).
type tally struct {
	female, male int64
	evidence     float64
}

type seenKey struct {
	entry
	female bool
}

// Build reads files and writes the database to out. It writes a temporary
// file next to out and renames it into place, so out is either the old
// database or a complete new one, also when ctx is cancelled (Ctrl-C).
// Progress goes to progress (nil: none).
func Build(ctx context.Context, out string, files []string, progress io.Writer) (*Report, error) {
	return BuildHoldout(ctx, out, files, progress, nil)
}

// BuildHoldout is Build keeping the names that holdout selects out of the
// database and writing them, labelled, to holdout.Out once the database
// is in place. A nil holdout is Build.
func BuildHoldout(ctx context.Context, out string, files []string, progress io.Writer, holdout *Holdout) (*Report, error) {
	if len(files) == 0 {
		return nil, errors.New("no input files")
	}
	if holdout != nil && !(holdout.Share > 0 && holdout.Share < 1) {
		return nil, fmt.Errorf("holdout share %v: want a share strictly between 0 and 1", holdout.Share)
	}
	held := map[heldEntry]tally{}
	st := newStatus(progress)
	type source struct {
		id, format string
		files      []string
	}
	var sources []*source
	byID := map[string]*source{}
	for _, f := range files {
		id, format, err := sourceOf(f)
		if err != nil {
			return nil, err
		}
		s := byID[id]
		if s == nil {
			s = &source{id: id, format: format}
			byID[id] = s
			sources = append(sources, s)
		} else if s.format != format {
			return nil, fmt.Errorf("%s: format %s, but source %s was read as %s", f, format, id, s.format)
		}
		s.files = append(s.files, f)
	}

	data := map[entry]tally{}
	report := &Report{}
	for _, s := range sources {
		sr := SourceReport{ID: s.id, Format: s.format, Files: s.files, Reasons: map[string]int64{}}
		info, known := knownSources[s.id]
		if !known {
			info = SourceInfo{Licence: "unknown: check the publisher's terms", Counts: "unknown"}
			st.line("warning: %s is not a known source; its licence is recorded as unknown", s.id)
		}
		sr.Info = info
		seen := map[seenKey]struct{}{}
		countries := map[string]struct{}{}
		drop := func(reason string) {
			sr.Dropped++
			sr.Reasons[reason]++
		}
		for _, f := range s.files {
			err := readRows(f, s.format, func(r row) {
				sr.Read++
				if sr.Read%250_000 == 0 {
					st.progress("%s: %d rows", s.id, sr.Read)
				}
				if r.drop != "" {
					drop(r.drop)
					return
				}
				female, ok := parseSex(r.sex)
				if !ok {
					drop(DropSex)
					return
				}
				country, ok := parseCountry(r.country)
				if !ok {
					drop(DropCountry)
					return
				}
				n, reason := parseCount(r.count)
				if reason != "" {
					drop(reason)
					return
				}
				key, reason := cleanName(r.name)
				if reason != "" {
					drop(reason)
					return
				}
				e := entry{key, country}
				if holdout.keeps(s.id, key) {
					drop(DropHeldOut)
					held[heldEntry{e, s.id}] = held[heldEntry{e, s.id}].add(female, n, 0)
					return
				}
				sk := seenKey{e, female}
				if _, dup := seen[sk]; dup {
					sr.Merged++
				} else {
					seen[sk] = struct{}{}
					sr.Kept++
				}
				countries[country] = struct{}{}
				data[e] = data[e].add(female, n, float64(n)*trust(s.id, s.format))
			})
			if err != nil {
				return nil, err
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		sr.Countries = len(countries)
		st.line("%s", sr)
		report.Sources = append(report.Sources, sr)
	}
	if len(data) == 0 {
		return nil, errors.New("no rows kept: nothing to build")
	}

	rows, weights, totals := precompute(data)
	report.Countries = len(totals)
	report.Rows = int64(len(rows))
	for _, r := range rows {
		if r.form == schema.FormExact && r.country == "" {
			report.Keys++
		}
	}
	if err := write(ctx, out, report, rows, weights, totals, st); err != nil {
		return nil, err
	}
	st.line("wrote %s: %d keys, %d countries, %d rows", out, report.Keys, report.Countries, report.Rows)
	if holdout != nil {
		if err := writeHeldOut(holdout.Out, held); err != nil {
			return nil, fmt.Errorf("write held-out names: %w", err)
		}
		st.line("held out %d (name, country, source) entries", len(held))
	}
	return report, nil
}

// nameRow is one row of the names table.
type nameRow struct {
	key, country string
	form         int
	female, male int64
	share        float64
	sole         string // global rows of a key found in one country only
	evidence     float64
}

// countryWeight is the factor a country's counts get in the global model:
// 1/sqrt(total records of the country), so a country weighs sqrt(total).
// Raw counts are not one unit across sources (US births over 145 years,
// Swiss population stocks summed over years, a few hundred Wikidata
// persons): pooling them raw would let whichever office publishes the
// largest numbers decide every name shared between countries, while giving
// every country the same weight would let a handful of noisy Wikidata
// records outvote a national register. The square root sits between the
// two: more data still counts for more, but not linearly.
func countryWeight(records int64) float64 { return 1 / math.Sqrt(float64(records)) }

// precompute turns the merged counts into the rows of the names table:
// exact keys per country and pooled, folded keys per country and pooled.
func precompute(data map[entry]tally) (rows []nameRow, weights map[string]float64, totals map[string][2]int64) {
	totals = map[string][2]int64{} // country -> distinct keys, records
	for e, t := range data {
		c := totals[e.country]
		c[0]++
		c[1] += t.female + t.male
		totals[e.country] = c
	}
	weights = make(map[string]float64, len(totals))
	for c, t := range totals {
		weights[c] = countryWeight(t[1])
	}

	// pooled is a key's global row: every country summed, raw and
	// weighted. sole is the country when there is only one. For an exact
	// key, fold is its folded key; for a folded key, variants counts the
	// exact keys folding to it and differs says one of them is not itself.
	type pooled struct {
		tally
		wf, wm    float64
		countries int
		sole      string
		fold      string
		variants  int
		differs   bool
	}
	exactGlobal := map[string]*pooled{}
	folded := map[entry]tally{}
	foldedGlobal := map[string]*pooled{}
	add := func(m map[string]*pooled, key, country string, t tally, newCountry bool) *pooled {
		p := m[key]
		if p == nil {
			p = &pooled{}
			m[key] = p
		}
		w := weights[country]
		p.female += t.female
		p.male += t.male
		p.evidence += t.evidence
		p.wf += float64(t.female) * w
		p.wm += float64(t.male) * w
		if newCountry {
			p.countries++
			p.sole = country
		}
		return p
	}
	// Sums of weighted counts depend on their order in the last bit: walk
	// the entries sorted, so that the same input builds the same database.
	sorted := make([]entry, 0, len(data))
	for e := range data {
		sorted = append(sorted, e)
	}
	slices.SortFunc(sorted, func(a, b entry) int {
		return cmp.Or(strings.Compare(a.key, b.key), strings.Compare(a.country, b.country))
	})
	for _, e := range sorted {
		t := data[e]
		p := add(exactGlobal, e.key, e.country, t, true)
		if p.fold == "" {
			p.fold = namekey.Fold(e.key)
			fp := foldedGlobal[p.fold]
			if fp == nil {
				fp = &pooled{}
				foldedGlobal[p.fold] = fp
			}
			fp.variants++
			fp.differs = fp.differs || e.key != p.fold
		}
		fe := entry{p.fold, e.country}
		ft, seen := folded[fe]
		ft.female += t.female
		ft.male += t.male
		ft.evidence += t.evidence
		folded[fe] = ft
		add(foldedGlobal, p.fold, e.country, t, !seen)
	}

	// A key found in one country only (four keys in five) has no country
	// row: its global row says which country it is (sole) and has the
	// same counts. A folded key with a single variant equal to itself
	// would repeat the exact rows; readers fall back to the exact row.
	needed := func(f string) bool { p := foldedGlobal[f]; return p.variants > 1 || p.differs }
	rows = make([]nameRow, 0, len(exactGlobal)+len(data)/2)
	global := func(key string, form int, p *pooled) nameRow {
		r := nameRow{key: key, form: form, female: p.female, male: p.male, share: share(p.wf, p.wm), evidence: p.evidence}
		if p.countries == 1 {
			r.sole = p.sole
			r.share = share(float64(p.female), float64(p.male))
		}
		return r
	}
	for e, t := range data {
		if exactGlobal[e.key].countries > 1 {
			rows = append(rows, nameRow{e.key, e.country, schema.FormExact, t.female, t.male, share(float64(t.female), float64(t.male)), "", t.evidence})
		}
	}
	for k, p := range exactGlobal {
		rows = append(rows, global(k, schema.FormExact, p))
	}
	for e, t := range folded {
		if needed(e.key) && foldedGlobal[e.key].countries > 1 {
			rows = append(rows, nameRow{e.key, e.country, schema.FormFolded, t.female, t.male, share(float64(t.female), float64(t.male)), "", t.evidence})
		}
	}
	for k, p := range foldedGlobal {
		if needed(k) {
			rows = append(rows, global(k, schema.FormFolded, p))
		}
	}
	slices.SortFunc(rows, func(a, b nameRow) int {
		return cmp.Or(strings.Compare(a.key, b.key), strings.Compare(a.country, b.country), cmp.Compare(a.form, b.form))
	})
	return rows, weights, totals
}

func share(female, male float64) float64 { return female / (female + male) }

// write creates the database in a temporary file beside out and renames it.
func write(ctx context.Context, out string, report *Report, rows []nameRow, weights map[string]float64, totals map[string][2]int64, st *status) (err error) {
	dir := filepath.Dir(out)
	tmp, err := os.CreateTemp(dir, filepath.Base(out)+"-*.tmp")
	if err != nil {
		return fmt.Errorf("create database in %s: %w", dir, err)
	}
	tmpPath := tmp.Name()
	tmp.Close()
	defer func() {
		if err != nil {
			os.Remove(tmpPath)
		}
	}()
	dsn, err := schema.DSN(tmpPath, "_journal_mode=OFF&_synchronous=OFF")
	if err != nil {
		return err
	}
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return fmt.Errorf("open %s: %w", tmpPath, err)
	}
	defer func() {
		if cerr := db.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close %s: %w", tmpPath, cerr)
		}
	}()
	db.SetMaxOpenConns(1)
	for _, stmt := range []string{"PRAGMA page_size=4096", "PRAGMA cache_size=-200000", "PRAGMA temp_store=MEMORY"} {
		if _, err := db.Exec(stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	if _, err := db.Exec(schema.SQL); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	meta := [][2]string{
		{schema.MetaVersion, schema.VersionString},
		{schema.MetaBuiltAt, time.Now().UTC().Format(time.RFC3339)},
		{schema.MetaGlobalModel, "countries pooled, each country's counts weighted by 1/sqrt(its total records)"},
	}
	for _, m := range meta {
		if _, err := tx.Exec("INSERT INTO meta(key, value) VALUES (?, ?)", m[0], m[1]); err != nil {
			return fmt.Errorf("write meta: %w", err)
		}
	}
	for _, s := range report.Sources {
		reasons, _ := json.Marshal(s.Reasons)
		_, err := tx.Exec(`INSERT INTO sources(id, files, format, licence, counts, countries,
			rows_read, rows_kept, rows_merged, rows_dropped, dropped) VALUES (?,?,?,?,?,?,?,?,?,?,?)`,
			s.ID, strings.Join(baseNames(s.Files), " "), s.Format, s.Info.Licence, s.Info.Counts, s.Countries,
			s.Read, s.Kept, s.Merged, s.Dropped, string(reasons))
		if err != nil {
			return fmt.Errorf("write source %s: %w", s.ID, err)
		}
	}
	for c, t := range totals {
		if _, err := tx.Exec("INSERT INTO countries(country, names, records, weight) VALUES (?,?,?,?)", c, t[0], t[1], weights[c]); err != nil {
			return fmt.Errorf("write country %s: %w", c, err)
		}
	}
	if err := insertNames(ctx, tx, rows, st); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit %s: %w", tmpPath, err)
	}
	// No ANALYZE: its average of two rows per key would make the planner
	// seek on the key alone and filter countries, and the key Maria has
	// three hundred rows. Without statistics it seeks (key, country).
	if err := db.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmpPath, err)
	}
	if err := os.Chmod(tmpPath, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmpPath, out); err != nil {
		return fmt.Errorf("move database into place: %w", err)
	}
	return nil
}

// insertNames inserts rows many at a time: one cgo call per row would
// dominate the build.
func insertNames(ctx context.Context, tx *sql.Tx, rows []nameRow, st *status) error {
	const perStmt = 200
	prepare := func(n int) (*sql.Stmt, error) {
		q := "INSERT INTO names(key, country, form, female, male, female_share, sole, evidence) VALUES " +
			strings.TrimSuffix(strings.Repeat("(?,?,?,?,?,?,?,?),", n), ",")
		return tx.Prepare(q)
	}
	full, err := prepare(perStmt)
	if err != nil {
		return fmt.Errorf("prepare insert: %w", err)
	}
	defer full.Close()
	args := make([]any, 0, perStmt*8)
	for start := 0; start < len(rows); start += perStmt {
		if err := ctx.Err(); err != nil {
			return err
		}
		chunk := rows[start:min(start+perStmt, len(rows))]
		args = args[:0]
		for _, r := range chunk {
			var sole any // NULL
			if r.sole != "" {
				sole = r.sole
			}
			// Full trust, the usual case, is stored as NULL (schema.sql).
			var evidence any = r.evidence
			if r.evidence == float64(r.female+r.male) {
				evidence = nil
			}
			args = append(args, r.key, r.country, r.form, r.female, r.male, r.share, sole, evidence)
		}
		stmt := full
		if len(chunk) < perStmt {
			if stmt, err = prepare(len(chunk)); err != nil {
				return fmt.Errorf("prepare insert: %w", err)
			}
			defer stmt.Close()
		}
		if _, err := stmt.Exec(args...); err != nil {
			return fmt.Errorf("insert names: %w", err)
		}
		if start%(perStmt*2500) == 0 {
			st.progress("writing names: %d/%d rows", start, len(rows))
		}
	}
	return nil
}

func baseNames(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return out
}
