package main

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/genderize-kong/genderize/engine"
	"github.com/genderize-kong/genderize/schema/evaluate"
	"github.com/genderize-kong/genderize/schema/namekey"
)

// evalBatch is how many names go to one Predict call: the largest batch the
// API accepts, looked up in one query as the plugin does for a request.
const evalBatch = 100

// maxGroupLines bounds the lines of the country grouping (180 countries);
// sources and scripts are listed in full.
const maxGroupLines = 30

// labelled is one row of the labelled file.
type labelled struct {
	name, country, source string
	script                string
	truth, pred           evaluate.Label
	probability           float64
	count                 int64
	// female and male are the records behind the label, when the file
	// has them (a held-out name): calibration then scores an answer by
	// the share of those records it is right for.
	female, male int64
}

// addTo scores the row in res.
func (r labelled) addTo(res *evaluate.Result) {
	if r.female+r.male == 0 || r.pred == evaluate.Unknown {
		res.Add(r.truth, r.pred, r.probability, r.count)
		return
	}
	right := r.female
	if r.pred == evaluate.Male {
		right = r.male
	}
	res.AddShare(r.truth, r.pred, r.probability, r.count, float64(right)/float64(r.female+r.male))
}

func eval(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	countryCol := fs.Bool("country-col", false, "send each row's country column as country_id (default: all countries pooled)")
	plotFile := fs.String("plot", "", "write the reliability diagram to this PNG file")
	target := fs.Float64("target", 0.03, "errorCodedWithoutNA the thresholds aim at")
	minRecords := fs.Int64("min-records", 0, "score only rows whose label stands for at least this many records (female + male columns)")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if fs.NArg() != 2 {
		return fmt.Errorf("eval: want a database and a labelled file: %w", errUsage)
	}
	if *target < 0 || *target > 1 {
		return fmt.Errorf("eval: -target %v: want a share between 0 and 1", *target)
	}
	dbPath, setPath := fs.Arg(0), fs.Arg(1)
	rows, cols, err := readLabelled(setPath)
	if err != nil {
		return err
	}
	if *countryCol && !cols.country {
		return fmt.Errorf("eval: -country-col: %s has no country column", setPath)
	}
	if *minRecords > 0 {
		if !cols.counts {
			return fmt.Errorf("eval: -min-records: %s has no female and male columns", setPath)
		}
		rows = slices.DeleteFunc(rows, func(r labelled) bool { return r.female+r.male < *minRecords })
		if len(rows) == 0 {
			return fmt.Errorf("eval: -min-records %d: no row left in %s", *minRecords, setPath)
		}
	}
	e, err := engine.Open(dbPath, engine.Options{CacheEntries: -1})
	if err != nil {
		return err
	}
	defer e.Close()
	if err := predictAll(e, rows, *countryCol); err != nil {
		return err
	}

	scope := "all countries pooled (no country_id)"
	if *countryCol {
		scope = "country_id from the country column"
	}
	fmt.Fprintf(stdout, "# %s against %s: %d rows, %s\n", setPath, dbPath, len(rows), scope)
	if *minRecords > 0 {
		fmt.Fprintf(stdout, "# only labels standing for at least %d records\n", *minRecords)
	}
	if cols.counts {
		fmt.Fprintln(stdout, "# observed accuracy: the share of the records behind each label (female, male) that have the predicted gender")
	}
	fmt.Fprintln(stdout)
	all := &evaluate.Result{}
	groups := map[string]map[string]*evaluate.Result{}
	add := func(kind, value string, r labelled) {
		if groups[kind] == nil {
			groups[kind] = map[string]*evaluate.Result{}
		}
		g := groups[kind][value]
		if g == nil {
			g = &evaluate.Result{}
			groups[kind][value] = g
		}
		r.addTo(g)
	}
	for _, r := range rows {
		r.addTo(all)
		add("script", r.script, r)
		if cols.source {
			add("source", r.source, r)
		}
		if cols.country {
			add("country", cmp.Or(r.country, "(none)"), r)
		}
	}
	printMetrics(stdout, all, groups, []string{"source", "script", "country"})
	fmt.Fprintln(stdout)
	printCalibration(stdout, "calibration by stated probability", all.ByProbability())
	fmt.Fprintln(stdout)
	byCount := all.ByCount()
	printCalibration(stdout, "calibration by count (records behind the answer)", byCount)
	if cols.source {
		fmt.Fprintln(stdout)
		printCountGaps(stdout, groups["source"])
	}
	fmt.Fprintln(stdout)
	printThresholds(stdout, all, *target)
	if *plotFile != "" {
		if err := plotReliability(*plotFile, setPath, all.ByProbability(), byCount); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nreliability diagram: %s\n", *plotFile)
	}
	return nil
}

// columns says which optional columns a labelled file has.
type columns struct {
	country, source bool
	counts          bool // female and male: the records behind each label
}

// readLabelled reads a TSV file (gzip'd when its name ends in .gz) whose
// first line names the columns: name, or first, middle and last; gender
// (or sex) f, m or u; optionally country, source, and female and male (the
// records a label stands for). Other columns are ignored.
func readLabelled(path string) ([]labelled, columns, error) {
	var cols columns
	f, err := os.Open(path)
	if err != nil {
		return nil, cols, fmt.Errorf("eval: %w", err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, cols, fmt.Errorf("eval: %s: %w", path, err)
		}
		r = zr
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	if !sc.Scan() {
		return nil, cols, fmt.Errorf("eval: %s: empty file, want a header line", path)
	}
	index := map[string]int{}
	for i, h := range strings.Split(strings.TrimRight(sc.Text(), "\r"), "\t") {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "sex" {
			h = "gender"
		}
		if _, dup := index[h]; dup {
			return nil, cols, fmt.Errorf("eval: %s: header: column %q twice", path, h)
		}
		index[h] = i
	}
	_, hasName := index["name"]
	_, hasFirst := index["first"]
	if _, ok := index["gender"]; !ok || hasName == hasFirst {
		return nil, cols, fmt.Errorf("eval: %s: header %q: want columns gender and either name or first (with optional middle, last), tab separated", path, sc.Text())
	}
	_, cols.country = index["country"]
	_, cols.source = index["source"]
	_, hasFemale := index["female"]
	_, hasMale := index["male"]
	cols.counts = hasFemale && hasMale
	field := func(fields []string, col string) string {
		if i, ok := index[col]; ok && i < len(fields) {
			return strings.TrimSpace(fields[i])
		}
		return ""
	}
	var rows []labelled
	for line := 2; sc.Scan(); line++ {
		text := strings.TrimRight(sc.Text(), "\r")
		if text == "" {
			continue
		}
		fields := strings.Split(text, "\t")
		if len(fields) < len(index) {
			return nil, cols, fmt.Errorf("eval: %s:%d: %d fields, the header has %d", path, line, len(fields), len(index))
		}
		truth, err := evaluate.ParseLabel(field(fields, "gender"))
		if err != nil {
			return nil, cols, fmt.Errorf("eval: %s:%d: %w", path, line, err)
		}
		name := field(fields, "name")
		if hasFirst {
			var parts []string
			for _, col := range []string{"first", "middle", "last"} {
				if p := field(fields, col); p != "" {
					parts = append(parts, p)
				}
			}
			name = strings.Join(parts, " ")
		}
		r := labelled{name: name, truth: truth, script: scriptOf(name),
			source: field(fields, "source"), country: field(fields, "country")}
		if cols.counts {
			var errF, errM error
			r.female, errF = strconv.ParseInt(field(fields, "female"), 10, 64)
			r.male, errM = strconv.ParseInt(field(fields, "male"), 10, 64)
			if err := cmp.Or(errF, errM); err != nil || r.female < 0 || r.male < 0 {
				return nil, cols, fmt.Errorf("eval: %s:%d: female and male must be counts (%q, %q)", path, line, field(fields, "female"), field(fields, "male"))
			}
		}
		if r.country != "" {
			c, ok := namekey.CountryCode(r.country)
			if !ok {
				return nil, cols, fmt.Errorf("eval: %s:%d: country %q is not an ISO 3166-1 alpha-2 code", path, line, r.country)
			}
			r.country = c
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		return nil, cols, fmt.Errorf("eval: %s: %w", path, err)
	}
	if len(rows) == 0 {
		return nil, cols, fmt.Errorf("eval: %s: no rows after the header", path)
	}
	return rows, cols, nil
}

// predictAll asks the engine as the plugin does: Predict on batches of
// names of one country scope.
func predictAll(e *engine.Engine, rows []labelled, countryCol bool) error {
	byCountry := map[string][]int{}
	for i, r := range rows {
		c := ""
		if countryCol {
			c = r.country
		}
		byCountry[c] = append(byCountry[c], i)
	}
	for c, idx := range byCountry {
		for start := 0; start < len(idx); start += evalBatch {
			batch := idx[start:min(start+evalBatch, len(idx))]
			names := make([]string, len(batch))
			for j, i := range batch {
				names[j] = rows[i].name
			}
			ps, err := e.Predict(names, c)
			if err != nil {
				return fmt.Errorf("eval: %w", err)
			}
			for j, p := range ps {
				r := &rows[batch[j]]
				r.pred = evaluate.Unknown
				switch p.Gender {
				case engine.Female:
					r.pred = evaluate.Female
				case engine.Male:
					r.pred = evaluate.Male
				}
				r.probability, r.count = p.Probability, p.Count
			}
		}
	}
	return nil
}

// scripts are the writing systems a name is grouped by, first match wins.
var scripts = []struct {
	name  string
	table *unicode.RangeTable
}{
	{"Latin", unicode.Latin}, {"Cyrillic", unicode.Cyrillic}, {"Greek", unicode.Greek},
	{"Arabic", unicode.Arabic}, {"Hebrew", unicode.Hebrew}, {"Armenian", unicode.Armenian},
	{"Georgian", unicode.Georgian}, {"Han", unicode.Han}, {"Kana", unicode.Hiragana},
	{"Kana", unicode.Katakana}, {"Hangul", unicode.Hangul}, {"Thai", unicode.Thai},
	{"Devanagari", unicode.Devanagari},
}

// scriptOf names the script of a name's first letter.
func scriptOf(name string) string {
	for _, r := range name {
		if !unicode.IsLetter(r) {
			continue
		}
		for _, s := range scripts {
			if unicode.Is(s.table, r) {
				return s.name
			}
		}
		return "other"
	}
	return "none"
}

func pct(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.3f", x)
}

func printMetrics(w io.Writer, all *evaluate.Result, groups map[string]map[string]*evaluate.Result, kinds []string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "group\tscored\tanswered\terrorCoded\terrorCodedWithoutNA\tnaCoded\terrorGenderBias\t")
	line := func(label string, r *evaluate.Result) {
		m := r.Confusion.Metrics()
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t\n", label, m.Scored, m.Answered,
			pct(m.ErrorCoded), pct(m.ErrorCodedWithoutNA), pct(m.NACoded), pct(m.ErrorGenderBias))
	}
	line("all", all)
	for _, kind := range kinds {
		g := groups[kind]
		if len(g) < 1 || (len(g) == 1 && kind != "source") {
			continue
		}
		values := make([]string, 0, len(g))
		for v := range g {
			values = append(values, v)
		}
		size := func(v string) int64 { return g[v].Confusion.Metrics().Scored }
		slices.SortFunc(values, func(a, b string) int { return cmp.Or(cmp.Compare(size(b), size(a)), strings.Compare(a, b)) })
		if kind == "country" && len(values) > maxGroupLines {
			fmt.Fprintf(tw, "(%s: the %d largest of %d)\t\t\t\t\t\t\t\n", kind, maxGroupLines, len(values))
			values = values[:maxGroupLines]
		}
		for _, v := range values {
			line(kind+" "+v, g[v])
		}
	}
	tw.Flush()
}

func printCalibration(w io.Writer, title string, table []evaluate.Bucket) {
	fmt.Fprintf(w, "%s (expected calibration error %s)\n", title, pct(evaluate.ECE(table)))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "bucket\tanswers\tstated\tobserved\tgap\t")
	for _, b := range table {
		if b.N == 0 {
			fmt.Fprintf(tw, "%s\t0\t-\t-\t-\t\n", b.Label)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%+.3f\t\n", b.Label, b.N, b.Stated, b.Observed, b.Gap())
	}
	tw.Flush()
}

// printCountGaps prints, per source, the gap (observed - stated) in each
// count bucket: where the probability claims too much or too little.
func printCountGaps(w io.Writer, bySource map[string]*evaluate.Result) {
	fmt.Fprintln(w, "calibration gap (observed - stated, answers) by count, per source")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "source\t")
	for _, b := range (&evaluate.Result{}).ByCount() {
		fmt.Fprintf(tw, "%s\t", b.Label)
	}
	fmt.Fprintln(tw)
	sources := make([]string, 0, len(bySource))
	for s := range bySource {
		sources = append(sources, s)
	}
	slices.Sort(sources)
	for _, s := range sources {
		fmt.Fprintf(tw, "%s\t", s)
		for _, b := range bySource[s].ByCount() {
			if b.N == 0 {
				fmt.Fprint(tw, "-\t")
				continue
			}
			fmt.Fprintf(tw, "%+.3f (%d)\t", b.Gap(), b.N)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

func printThresholds(w io.Writer, all *evaluate.Result, target float64) {
	fmt.Fprintf(w, "thresholds for errorCodedWithoutNA <= %.3f (answers below them become null)\n", target)
	for _, t := range []struct {
		what, format string
		th           evaluate.Threshold
	}{
		{"minimum probability", "%.2f", all.ProbabilityThreshold(target)},
		{"minimum count", "%.0f", all.CountThreshold(target)},
	} {
		if !t.th.Reached {
			fmt.Fprintf(w, "  %s: not reachable\n", t.what)
			continue
		}
		m := t.th.Metrics
		fmt.Fprintf(w, "  %s "+t.format+": errorCodedWithoutNA %s, naCoded %s, errorCoded %s, errorGenderBias %s\n",
			t.what, t.th.Min, pct(m.ErrorCodedWithoutNA), pct(m.NACoded), pct(m.ErrorCoded), pct(m.ErrorGenderBias))
	}
}
