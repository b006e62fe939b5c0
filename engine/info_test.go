package engine

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/genderize-kong/genderize/schema"
)

// TestSharedInfo describes a small database written here with known
// contents, through Shared as the plugin opens it.
func TestSharedInfo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "small.db")
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	stmts := []string{
		schema.SQL,
		"INSERT INTO meta VALUES ('schema_version', '" + schema.VersionString + "'), ('built_at', '2026-01-02T03:04:05Z'), ('global_model', 'test')",
		"INSERT INTO countries VALUES ('DE', 2, 30, 1), ('FR', 1, 5, 1), ('US', 1, 7, 1)",
		// Three keys in the global model, one with a folded form too, and
		// rows of countries: only the global exact rows are keys.
		`INSERT INTO names VALUES
			('anna', '', 0, 20, 0, 1, NULL), ('anna', 'DE', 0, 10, 0, 1, NULL), ('anna', 'US', 0, 7, 0, 1, NULL),
			('jose', '', 0, 0, 5, 0, 'FR'), ('jose', '', 1, 0, 6, 0, 'FR'),
			('jurgen', '', 0, 0, 10, 0, 'DE')`,
	}
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	db.Close()

	before := time.Now()
	if _, err := Shared(path, Options{}); err != nil {
		t.Fatal(err)
	}
	var got *Info
	for _, i := range SharedInfo() {
		if i.Path == path {
			got = &i
		}
	}
	if got == nil {
		t.Fatalf("SharedInfo() = %+v, no %s", SharedInfo(), path)
	}
	if got.Loaded.Before(before) || got.Loaded.After(time.Now()) {
		t.Errorf("Loaded %v, want during the test (after %v)", got.Loaded, before)
	}
	got.Loaded = time.Time{}
	want := Info{Path: path, SchemaVersion: schema.VersionString, Built: "2026-01-02T03:04:05Z", Keys: 3, Countries: 3}
	if *got != want {
		t.Errorf("SharedInfo() has %+v, want %+v", *got, want)
	}
}
