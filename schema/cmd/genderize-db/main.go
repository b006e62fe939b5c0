// Command genderize-db builds and inspects the genderize name database.
//
//	genderize-db build -o names.db FILES...        build from name statistics files
//	genderize-db build -holdout-share 0.1 -holdout-out heldout.tsv -o names-eval.db FILES...
//	                                               keep a share of each source's names out, labelled
//	genderize-db info names.db                     sources, licences, rows, countries
//	genderize-db query names.db [-country XX] NAME...
//	                                               print the JSON the API would return
//	genderize-db eval [-country-col] [-plot FILE] [-target 0.03] [-min-records N] names.db labelled.tsv
//	                                               score the answers against labelled names
//
// FILES are gzip'd or plain TSV in the long format (name, country, sex,
// count), lexicons (locale, sex, name), or the US SSA's yobYYYY.txt files
// or names.zip.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/genderize-kong/genderize/engine"
	"github.com/genderize-kong/genderize/schema"
	"github.com/genderize-kong/genderize/schema/importer"
	_ "github.com/mattn/go-sqlite3"
)

const usage = `usage:
  genderize-db build [-holdout-share 0.1 -holdout-out heldout.tsv] -o names.db FILES...
  genderize-db info names.db
  genderize-db query names.db [-country XX] NAME...
  genderize-db eval [-country-col] [-plot FILE] [-target 0.03] [-min-records N] names.db labelled.tsv
`

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "genderize-db:", err)
		if errors.Is(err, errUsage) {
			fmt.Fprint(os.Stderr, usage)
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("bad usage")

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errUsage
	}
	switch args[0] {
	case "build":
		return build(args[1:], stderr)
	case "info":
		return info(args[1:], stdout)
	case "query":
		return query(args[1:], stdout)
	case "eval":
		return eval(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return fmt.Errorf("unknown command %q: %w", args[0], errUsage)
}

func build(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "names.db", "database to write")
	share := fs.Float64("holdout-share", 0, "share of each source's names to keep out of the database (0: none)")
	heldOut := fs.String("holdout-out", "", "with -holdout-share: file to write the held-out names to, labelled")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("build: no input files: %w", errUsage)
	}
	if (*share != 0) != (*heldOut != "") {
		return fmt.Errorf("build: -holdout-share and -holdout-out go together: %w", errUsage)
	}
	// Ctrl-C stops the build and removes its temporary file.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *heldOut == "" {
		if _, err := importer.Build(ctx, *out, fs.Args(), stderr); err != nil {
			return fmt.Errorf("build %s: %w", *out, err)
		}
		return nil
	}
	f, err := os.Create(*heldOut)
	if err != nil {
		return fmt.Errorf("build: %w", err)
	}
	_, err = importer.BuildHoldout(ctx, *out, fs.Args(), stderr, &importer.Holdout{Share: *share, Out: f})
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		// No held-out file without the database it was held out of.
		os.Remove(*heldOut)
		return fmt.Errorf("build %s: %w", *out, err)
	}
	return nil
}

func info(args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return fmt.Errorf("info: want one database: %w", errUsage)
	}
	path := args[0]
	// Open through the engine first: it checks the file and its version.
	e, err := engine.Open(path, engine.Options{CacheEntries: -1})
	if err != nil {
		return err
	}
	e.Close()
	dsn, err := schema.DSN(path, "mode=ro")
	if err != nil {
		return err
	}
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()

	meta, err := db.Query("SELECT key, value FROM meta ORDER BY key")
	if err != nil {
		return fmt.Errorf("read meta: %w", err)
	}
	for meta.Next() {
		var k, v string
		if err := meta.Scan(&k, &v); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: %s\n", k, v)
	}
	meta.Close()

	fmt.Fprintln(stdout, "\nsources:")
	src, err := db.Query(`SELECT id, files, format, licence, counts, countries, rows_read, rows_kept,
		rows_merged, rows_dropped, dropped FROM sources ORDER BY id`)
	if err != nil {
		return fmt.Errorf("read sources: %w", err)
	}
	for src.Next() {
		var id, files, format, licence, counts, dropped string
		var countries, read, kept, merged, ndropped int64
		if err := src.Scan(&id, &files, &format, &licence, &counts, &countries, &read, &kept, &merged, &ndropped, &dropped); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "  %s (%s: %s)\n    licence: %s\n    counts: %s\n    countries %d; rows read %d, kept %d, merged %d, dropped %d %s\n",
			id, format, files, licence, counts, countries, read, kept, merged, ndropped, dropped)
	}
	src.Close()

	var keys, rows int64
	if err := db.QueryRow("SELECT count(*) FROM names WHERE country = '' AND form = ?", schema.FormExact).Scan(&keys); err != nil {
		return err
	}
	if err := db.QueryRow("SELECT count(*) FROM names").Scan(&rows); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nnames: %d distinct keys, %d rows\n", keys, rows)

	cs, err := db.Query("SELECT country, names, records, weight FROM countries ORDER BY records DESC")
	if err != nil {
		return fmt.Errorf("read countries: %w", err)
	}
	defer cs.Close()
	var lines []string
	for cs.Next() {
		var c string
		var n, rec int64
		var w float64
		if err := cs.Scan(&c, &n, &rec, &w); err != nil {
			return err
		}
		lines = append(lines, fmt.Sprintf("  %s %9d names %12d records  global weight %.3g", c, n, rec, w))
	}
	fmt.Fprintf(stdout, "countries: %d\n%s\n", len(lines), strings.Join(lines, "\n"))
	return cs.Err()
}

func query(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("query: want a database: %w", errUsage)
	}
	path := args[0]
	fs := flag.NewFlagSet("query", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	countryFlag := fs.String("country", "", "ISO 3166-1 alpha-2 country to scope the prediction to")
	if err := fs.Parse(args[1:]); err != nil {
		return fmt.Errorf("query: %v: %w", err, errUsage)
	}
	names := fs.Args()
	if len(names) == 0 {
		return fmt.Errorf("query: no names: %w", errUsage)
	}
	for _, n := range names {
		if n == "-country" || strings.HasPrefix(n, "-country=") || n == "--country" || strings.HasPrefix(n, "--country=") {
			return fmt.Errorf("query: -country goes before the names: %w", errUsage)
		}
	}
	country := ""
	if *countryFlag != "" {
		c, ok := engine.CountryCode(*countryFlag)
		if !ok {
			return fmt.Errorf("query: %q is not an ISO 3166-1 alpha-2 country code", *countryFlag)
		}
		country = c
	}
	e, err := engine.Open(path, engine.Options{CacheEntries: -1})
	if err != nil {
		return err
	}
	defer e.Close()
	ps, err := e.Predict(names, country)
	if err != nil {
		return err
	}
	// One name answers like `?name=`, several like `?name[]=`.
	var body []byte
	if len(ps) == 1 {
		body = ps[0].AppendJSON(nil)
	} else {
		body = engine.AppendJSONArray(nil, ps)
	}
	_, err = fmt.Fprintf(stdout, "%s\n", body)
	return err
}
