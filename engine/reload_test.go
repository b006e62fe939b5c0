package engine

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/genderize-kong/genderize/schema"
)

// buildSmall writes a valid name database at path, by way of a temporary
// file renamed over it as genderize-db build does: "Maria" with the counts
// given, and filler names so the file spans several pages.
func buildSmall(t *testing.T, path string, female, male int64, built string) {
	t.Helper()
	tmp := path + ".tmp"
	os.Remove(tmp)
	stmts := []string{schema.SQL,
		"INSERT INTO meta VALUES ('schema_version', '" + schema.VersionString + "'), ('built_at', '" + built + "')",
		"INSERT INTO countries VALUES ('FR', 201, 1000, 1.0)",
		fmt.Sprintf("INSERT INTO names VALUES ('maria', '', 0, %d, %d, %g, 'FR', %d)", female, male, float64(female)/float64(female+male), female+male),
	}
	stmts = append(stmts, `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i+1 FROM n WHERE i < 199)
		INSERT INTO names SELECT printf('filler%03d', i) || '`+strings.Repeat("x", 40)+`', '', 0, 3, 1, 0.75, 'FR', 4 FROM n`)
	mustExec(t, tmp, stmts...)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// logCapture makes the default logger write to a buffer for the test.
type logCapture struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *logCapture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Write(p)
}

func (c *logCapture) lines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.FieldsFunc(c.buf.String(), func(r rune) bool { return r == '\n' })
}

func captureLogs(t *testing.T) *logCapture {
	c := &logCapture{}
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(c, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	return c
}

func maria(t *testing.T, l *Live) Prediction {
	t.Helper()
	ps, err := l.Predict([]string{"Maria"}, "")
	if err != nil {
		t.Fatal(err)
	}
	return ps[0]
}

func TestLiveReload(t *testing.T) {
	logs := captureLogs(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "names.db")
	buildSmall(t, path, 90, 10, "2026-01-01T00:00:00Z")
	l, err := openLive(path, Options{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.shutdown)
	if p := maria(t, l); p.Gender != Female || p.Count != 100 {
		t.Fatalf("first database: %+v", p)
	}
	info := l.Info()
	if info.Keys != 201 || info.Countries != 1 || info.Built != "2026-01-01T00:00:00Z" || info.SchemaVersion != schema.VersionString || info.Path != path {
		t.Errorf("info %+v", info)
	}
	if swapped, err := l.reload(false); swapped || err != nil {
		t.Fatalf("reload of an unchanged file: %v, %v", swapped, err)
	}

	// The answer was cached; the new database must answer anyway.
	buildSmall(t, path, 5, 45, "2026-02-01T00:00:00Z")
	if swapped, err := l.reload(false); !swapped || err != nil {
		t.Fatalf("reload of a new file: %v, %v", swapped, err)
	}
	if p := maria(t, l); p.Gender != Male || p.Count != 50 {
		t.Fatalf("after the swap: %+v", p)
	}
	if got := l.Info(); got.Built != "2026-02-01T00:00:00Z" || !got.Loaded.After(info.Loaded) && !got.Loaded.Equal(info.Loaded) {
		t.Errorf("info after the swap %+v", got)
	}
	if !strings.Contains(strings.Join(logs.lines(), "\n"), "names db loaded") {
		t.Errorf("no log line of the swap: %q", logs.lines())
	}
}

func TestLiveRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "names.db")
	good := filepath.Join(dir, "good.db")
	buildSmall(t, good, 90, 10, "2026-01-01T00:00:00Z")
	valid, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if len(valid) < 3*4096 {
		t.Fatalf("test database of %d bytes: too small to cut", len(valid))
	}
	buildSmall(t, path, 90, 10, "2026-01-01T00:00:00Z")
	l, err := openLive(path, Options{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.shutdown)

	oldVersion := filepath.Join(dir, "old.db")
	mustExec(t, oldVersion, schema.SQL, "INSERT INTO meta VALUES ('schema_version', '1')")
	noNames := filepath.Join(dir, "nonames.db")
	mustExec(t, noNames, "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)", "INSERT INTO meta VALUES ('schema_version', '"+schema.VersionString+"')")
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name    string
		content []byte
		want    string
	}{
		{"empty", nil, "not an SQLite database"},
		{"text", []byte(strings.Repeat("Maria\tFR\tF\t90\n", 1000)), "not an SQLite database"},
		{"cut at a page", valid[:2*4096], "truncated: 8192 bytes, its header says"},
		{"cut mid-page", valid[:len(valid)-100], "not a whole number of 4096-byte pages"},
		{"old schema", read(oldVersion), "schema version 1"},
		{"no names table", read(noNames), "no such table: names"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := captureLogs(t)
			tmp := path + ".new"
			if err := os.WriteFile(tmp, tt.content, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
			swapped, err := l.reload(false)
			if swapped || err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("reload: %v, %v; want a refusal saying %q", swapped, err, tt.want)
			}
			// Unchanged, the bad file is neither tried nor logged again.
			if swapped, err := l.reload(false); swapped || err != nil {
				t.Errorf("second reload: %v, %v", swapped, err)
			}
			lines := logs.lines()
			if len(lines) != 1 || !strings.Contains(lines[0], "refused") || !strings.Contains(lines[0], path) || !strings.Contains(lines[0], tt.want) {
				t.Errorf("want one log line of the refusal, got %q", lines)
			}
			for _, l := range lines {
				if strings.Contains(strings.ToLower(l), "maria") {
					t.Errorf("a log line carries a name: %s", l)
				}
			}
			if p := maria(t, l); p.Gender != Female || p.Count != 100 {
				t.Errorf("the old database stopped serving: %+v", p)
			}
		})
	}
	// A missing file is refused too, and the valid file back is loaded.
	os.Remove(path)
	if _, err := l.reload(false); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
	buildSmall(t, path, 1, 9, "2026-03-01T00:00:00Z")
	if swapped, err := l.reload(false); !swapped || err != nil {
		t.Fatalf("valid file after bad ones: %v, %v", swapped, err)
	}
	if p := maria(t, l); p.Gender != Male {
		t.Errorf("valid file after bad ones: %+v", p)
	}
}

// TestLiveKeepsOldUntilReleased: a replaced database stays open while a
// lookup holds it and is closed by the last one out.
func TestLiveKeepsOldUntilReleased(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "names.db")
	buildSmall(t, path, 90, 10, "2026-01-01T00:00:00Z")
	l, err := openLive(path, Options{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.shutdown)
	held := l.acquire()
	buildSmall(t, path, 5, 45, "2026-02-01T00:00:00Z")
	if swapped, err := l.reload(false); !swapped || err != nil {
		t.Fatalf("reload: %v, %v", swapped, err)
	}
	ps, err := held.e.Predict([]string{"Maria"}, "")
	if err != nil || ps[0].Gender != Female {
		t.Fatalf("held generation after the swap: %+v, %v", ps, err)
	}
	if p := maria(t, l); p.Gender != Male {
		t.Fatalf("new lookups: %+v", p)
	}
	held.release()
	if err := held.e.db.PingContext(context.Background()); err == nil {
		t.Error("the replaced database is still open after its last lookup")
	}
}

// TestLiveConcurrentSwaps: lookups running through many swaps never fail
// and each batch is answered from one database.
func TestLiveConcurrentSwaps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "names.db")
	buildSmall(t, path, 90, 10, "2026-01-01T00:00:00Z")
	l, err := openLive(path, Options{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.shutdown)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	var answered [4]int
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			batch := []string{"Maria", "maria", "MARIA", "Filler001" + strings.Repeat("x", 40)}
			for i := 0; i < 1_000_000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ps, err := l.Predict(batch, "")
				if err != nil {
					errs <- err
					return
				}
				if ps[0].Gender != ps[1].Gender || ps[1].Gender != ps[2].Gender || ps[0].Gender == "" || ps[3].Gender != Female {
					errs <- fmt.Errorf("one batch, two databases: %+v", ps)
					return
				}
				answered[g]++
			}
		}()
	}
	for i := range 20 {
		if i%2 == 0 {
			buildSmall(t, path, 5, 45, fmt.Sprintf("2026-02-%02dT00:00:00Z", i+1))
		} else {
			buildSmall(t, path, 90, 10, fmt.Sprintf("2026-02-%02dT00:00:00Z", i+1))
		}
		if swapped, err := l.reload(false); !swapped || err != nil {
			t.Fatalf("swap %d: %v, %v", i, swapped, err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("lookups per goroutine during 20 swaps: %v", answered)
}

// TestLiveWatches: the watcher picks up a renamed file by itself.
func TestLiveWatches(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "names.db")
	buildSmall(t, path, 90, 10, "2026-01-01T00:00:00Z")
	l, err := openLive(path, Options{}, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.shutdown)
	buildSmall(t, path, 5, 45, "2026-02-01T00:00:00Z")
	waitFor(t, func() bool { return maria(t, l).Gender == Male }, "the watcher to load the new file")
}

// TestReloadOnSignal: SIGHUP reloads every shared database at once, even
// an unchanged file.
func TestReloadOnSignal(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "names.db")
	buildSmall(t, path, 90, 10, "2026-01-01T00:00:00Z")
	l, err := Shared(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		shared.Lock()
		delete(shared.lives, path)
		shared.Unlock()
		l.shutdown()
	})
	if infos := SharedInfo(); !containsInfo(infos, path) {
		t.Fatalf("SharedInfo lacks %s: %+v", path, infos)
	}
	first := l.cur.Load()
	ReloadOnSignal(syscall.SIGHUP)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return l.cur.Load() != first }, "SIGHUP to reload")
	if p := maria(t, l); p.Gender != Female {
		t.Errorf("after SIGHUP: %+v", p)
	}
}

func containsInfo(infos []Info, path string) bool {
	for _, i := range infos {
		if i.Path == path {
			return true
		}
	}
	return false
}

// waitFor polls cond for up to 10 seconds: a bound on a wait, not a
// measured time.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}
