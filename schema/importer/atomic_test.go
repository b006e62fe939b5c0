package importer

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/genderize-kong/genderize/engine"
)

// TestBuildInPlaceIsAtomic: building over a database a server has open
// writes a new file and renames it over the old one. The open engine keeps
// reading the old file, whole; a new open reads the new one; the path
// never names a half-written file (the old inode is never written to).
func TestBuildInPlaceIsAtomic(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "names.db")
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	female := write("zz_a.tsv", "Swapname\tFR\tF\t90\nSwapname\tFR\tM\t10\n")
	male := write("zz_b.tsv", "Swapname\tFR\tF\t5\nSwapname\tFR\tM\t95\n")
	if _, err := Build(context.Background(), out, []string{female}, nil); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	old, err := engine.Open(out, engine.Options{CacheEntries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()

	if _, err := Build(context.Background(), out, []string{male}, nil); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(before, after) {
		t.Fatal("the build wrote into the existing file instead of renaming a new one over it")
	}
	if ps, err := old.Predict([]string{"Swapname"}, ""); err != nil || ps[0].Gender != engine.Female || ps[0].Count != 100 {
		t.Errorf("the engine open before the build: %+v, %v", ps, err)
	}
	e, err := engine.Open(out, engine.Options{CacheEntries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if ps, err := e.Predict([]string{"Swapname"}, ""); err != nil || ps[0].Gender != engine.Male {
		t.Errorf("the new database: %+v, %v", ps, err)
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(tmps) > 0 {
		t.Errorf("left behind: %v", tmps)
	}
}
