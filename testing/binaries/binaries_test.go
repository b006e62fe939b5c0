package binaries

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestRootHoldsGoMod(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("Root() = %s: %v", root, err)
	}
}

func TestBuildRunsTheCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "genderize-db")
	if err := Build("schema/cmd/genderize-db", out); err != nil {
		t.Fatal(err)
	}
	// With no arguments the builder prints its usage and fails.
	msg, err := exec.Command(out).CombinedOutput()
	if err == nil || !strings.Contains(string(msg), "build") {
		t.Fatalf("built command: err %v, output %q", err, msg)
	}
}

func TestBuildNamesAMissingPackage(t *testing.T) {
	err := Build("no/such/package", filepath.Join(t.TempDir(), "x"))
	if err == nil || !strings.Contains(err.Error(), "build no/such/package") {
		t.Fatalf("Build of a missing package: %v", err)
	}
}
