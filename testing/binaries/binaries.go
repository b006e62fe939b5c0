// Package binaries builds the module's commands for tests that run them as
// Kong and operators do: as separate processes, from the current code.
package binaries

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Root returns the module's root directory.
func Root() (string, error) {
	out, err := exec.Command(goTool(), "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("go env GOMOD: not inside the module")
	}
	return filepath.Dir(gomod), nil
}

// Build compiles the module's package pkg (a path from the module root,
// such as "plugin/cmd/genderize") into the file out. A plugin server's
// file name is its plugin's name, as Kong requires: choose out to match.
func Build(pkg, out string) error {
	root, err := Root()
	if err != nil {
		return err
	}
	cmd := exec.Command(goTool(), "build", "-o", out, "./"+strings.TrimPrefix(pkg, "./"))
	cmd.Dir = root
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s: %w\n%s", pkg, err, output)
	}
	return nil
}

// goTool is the go command of the toolchain running the tests, so that a
// test builds with the same Go as `go test`, whatever PATH says.
func goTool() string {
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return "go"
}

// NamesDB builds a name database at out from long-format TSV rows with
// genderize-db (tool, built by Build), the way an operator does: the
// result is renamed over out.
func NamesDB(t testing.TB, tool, out, tsv string) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "rows.tsv")
	if err := os.WriteFile(src, []byte(tsv), 0o644); err != nil {
		t.Fatal(err)
	}
	if output, err := exec.Command(tool, "build", "-o", out, src).CombinedOutput(); err != nil {
		t.Fatalf("genderize-db build: %v\n%s", err, output)
	}
}
