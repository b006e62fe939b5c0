package engine

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/genderize-kong/genderize/schema"
	"github.com/genderize-kong/genderize/schema/importer"
)

// TestSharedInfo describes a small database built here by the importer
// from known rows, through Shared as the plugin opens it.
func TestSharedInfo(t *testing.T) {
	dir := t.TempDir()
	src, path := filepath.Join(dir, "rows.tsv"), filepath.Join(dir, "small.db")
	// Three keys in three countries; anna in two of them.
	rows := "Anna\tFR\tF\t300\nAnna\tDE\tF\t10\nPeter\tFR\tM\t500\nLuca\tIT\tM\t200\n"
	if err := os.WriteFile(src, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	if _, err := importer.Build(context.Background(), path, []string{src}, io.Discard); err != nil {
		t.Fatal(err)
	}
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
	built, err := time.Parse(time.RFC3339, got.Built)
	if err != nil || built.Before(before.Truncate(time.Second)) || built.After(time.Now()) {
		t.Errorf("Built %q (%v), want the build's time, RFC 3339", got.Built, err)
	}
	got.Loaded, got.Built = time.Time{}, ""
	want := Info{Path: path, SchemaVersion: schema.VersionString, Keys: 3, Countries: 3}
	if *got != want {
		t.Errorf("SharedInfo() has %+v, want %+v", *got, want)
	}
}
