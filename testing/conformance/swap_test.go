package conformance

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/genderize-kong/genderize/engine"
	"github.com/genderize-kong/genderize/testing/binaries"
)

// buildTool builds one of the module's commands into a test directory.
func buildTool(t *testing.T, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	if err := binaries.Build(pkg, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// The two databases of the swap: Swapname female in A, male in B.
const (
	swapTSVA = "Swapname\tFR\tF\t900\nSwapname\tFR\tM\t100\nPeter\tFR\tM\t500\nAnna\tFR\tF\t300\n"
	swapTSVB = "Swapname\tFR\tF\t50\nSwapname\tFR\tM\t950\nPeter\tFR\tM\t400\nAnna\tFR\tF\t200\n"
)

// swapAnswer is the body of the load's request from one database.
func swapAnswer(t *testing.T, path string) []byte {
	t.Helper()
	e, err := engine.Open(path, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ps, err := e.Predict([]string{"Swapname", "Peter", "Anna"}, "")
	if err != nil {
		t.Fatal(err)
	}
	return engine.AppendJSONArray(nil, ps)
}

// swapResult is one request of the load.
type swapResult struct {
	start, end time.Time
	db         byte // 'A', 'B', or 0 for a failure
	err        string
}

// TestDatabaseSwap replaces the name database under concurrent load: with
// `genderize-db build` in place (a rename), with a broken file (refused,
// the old one keeps serving) and with SIGHUP. No request may fail, every
// answer must come whole from one database, and requests started after
// the first answer from the new database must get the new database.
func TestDatabaseSwap(t *testing.T) {
	tool := buildTool(t, "schema/cmd/genderize-db")
	dir := t.TempDir()
	aPath, bPath, live := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db"), filepath.Join(dir, "names.db")
	binaries.NamesDB(t, tool, aPath, swapTSVA)
	binaries.NamesDB(t, tool, bPath, swapTSVB)
	bodyA, bodyB := swapAnswer(t, aPath), swapAnswer(t, bPath)
	if bytes.Equal(bodyA, bodyB) {
		t.Fatalf("the two databases answer alike: %s", bodyA)
	}
	binaries.NamesDB(t, tool, live, swapTSVA)

	logs := &logBuffer{}
	e := newEnv(t, envConfig{logs: logs, overrides: map[string]any{
		"database_path": live,
		"ip_limit":      100_000_000,
		"throttle_rate": 1_000_000, "throttle_burst": 1_000_000,
	}})
	pid := e.s.PluginPID()

	const workers = 8
	query := batchQuery("Swapname", "Peter", "Anna")
	stop := make(chan struct{})
	var mu sync.Mutex
	var results []swapResult
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ip := fmt.Sprintf("10.99.0.%d", w+1)
			// Bounded: at most 200k requests a worker.
			for i := 0; i < 200_000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				r := swapRequest(e, query, ip, bodyA, bodyB)
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
			}
		}()
	}
	// firstFrom waits (at most 10 s, the promise) for the first answer
	// from db that started after since.
	firstFrom := func(db byte, since time.Time, what string) time.Time {
		for deadline := since.Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			mu.Lock()
			for _, r := range results {
				if r.db == db && r.start.After(since) {
					mu.Unlock()
					return r.end
				}
			}
			mu.Unlock()
		}
		close(stop)
		wg.Wait()
		t.Fatalf("%s: no answer from database %c within 10 s", what, db)
		return time.Time{}
	}
	settle := func() { time.Sleep(500 * time.Millisecond) }

	settle()
	building := time.Now()
	binaries.NamesDB(t, tool, live, swapTSVB) // in place: temporary file, then rename
	renamed := time.Now()
	switchedB := firstFrom('B', building, "rename")

	// A broken file renamed over it is refused; B keeps serving.
	settle()
	broken := live + ".new"
	if err := os.WriteFile(broken, []byte("SQLite format 3\x00 but nothing after"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(broken, live); err != nil {
		t.Fatal(err)
	}
	refusedAt := time.Now()
	for !logs.contains("refused", live) && time.Since(refusedAt) < 10*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	if !logs.contains("refused", live) {
		t.Error("no log line refusing the broken file")
	}
	settle()

	// SIGHUP: back to A at once (the file is rebuilt elsewhere and renamed
	// in after the signal handler is known to be there).
	tmp := filepath.Join(dir, "next.db")
	binaries.NamesDB(t, tool, tmp, swapTSVA)
	if err := os.Rename(tmp, live); err != nil {
		t.Fatal(err)
	}
	hup := time.Now()
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	switchedA := firstFrom('A', hup, "SIGHUP")
	settle()
	close(stop)
	wg.Wait()

	if got := e.s.PluginPID(); got != pid {
		t.Errorf("the plugin process changed from %d to %d: the swap restarted it", pid, got)
	}
	failed := 0
	for _, r := range results {
		if r.db == 0 {
			failed++
			if failed <= 5 {
				t.Errorf("request at %s: %s", r.start.Format("15:04:05.000"), r.err)
			}
		}
	}
	// Requests started after the new database answered once must all get
	// it (before the broken file, and after SIGHUP).
	brokenAt := refusedAt.Add(-time.Millisecond)
	stale := 0
	for _, r := range results {
		if r.db == 'A' && r.start.After(switchedB) && r.start.Before(brokenAt) ||
			r.db == 'B' && r.start.After(switchedA) {
			stale++
		}
	}
	if stale > 0 {
		t.Errorf("%d requests started after the switch got the old database", stale)
	}
	if failed > 0 || len(results) == 0 {
		t.Errorf("%d of %d requests failed", failed, len(results))
	}
	lat := func(from, to time.Time) (n int, p50, p99, worst time.Duration) {
		var ds []time.Duration
		for _, r := range results {
			if r.start.After(from) && r.start.Before(to) {
				ds = append(ds, r.end.Sub(r.start))
			}
		}
		if len(ds) == 0 {
			return 0, 0, 0, 0
		}
		slices.Sort(ds)
		return len(ds), ds[len(ds)/2], ds[min(len(ds)-1, len(ds)*99/100)], ds[len(ds)-1]
	}
	t0 := results[0].start
	n, p50, p99, worst := lat(t0, renamed)
	t.Logf("swap under load: %d requests, %d failed, %d workers; rename -> first answer from the new db %v, SIGHUP -> first answer %v",
		len(results), failed, workers, switchedB.Sub(renamed).Round(time.Millisecond), switchedA.Sub(hup).Round(time.Millisecond))
	t.Logf("latency before the swap: %d requests, p50 %v, p99 %v, max %v", n, p50, p99, worst)
	n, p50, p99, worst = lat(switchedB.Add(-500*time.Millisecond), switchedB.Add(500*time.Millisecond))
	t.Logf("latency within 0.5 s of the switch: %d requests, p50 %v, p99 %v, max %v", n, p50, p99, worst)
}

func swapRequest(e *env, query, ip string, bodyA, bodyB []byte) (r swapResult) {
	r.start = time.Now()
	defer func() { r.end = time.Now() }()
	req, err := http.NewRequest(http.MethodGet, e.base+"?"+query, nil)
	if err != nil {
		r.err = err.Error()
		return r
	}
	req.Header.Set("X-Forwarded-For", ip)
	resp, err := e.client.Do(req)
	if err != nil {
		r.err = err.Error()
		return r
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	switch {
	case err != nil:
		r.err = err.Error()
	case resp.StatusCode != http.StatusOK:
		r.err = fmt.Sprintf("status %d: %.200s", resp.StatusCode, body)
	case bytes.Equal(body, bodyA):
		r.db = 'A'
	case bytes.Equal(body, bodyB):
		r.db = 'B'
	default:
		r.err = fmt.Sprintf("an answer from neither database (mixed?): %.300s", body)
	}
	return r
}
