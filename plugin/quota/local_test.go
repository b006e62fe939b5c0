package quota

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var testNow = time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)

func openTestStore(t *testing.T, path string) *Local {
	t.Helper()
	s, err := OpenLocal(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func allow(t *testing.T, s Store, key string, limit int, w Window, n int) Result {
	t.Helper()
	r, err := s.AllowN(context.Background(), key, limit, w, n)
	if err != nil {
		t.Fatalf("AllowN(%q, %d, n=%d): %v", key, limit, n, err)
	}
	return r
}

func TestLocalPrunesEndedWindows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "quota.db")
	s := openTestStore(t, path)
	old := Month(testNow.AddDate(0, -2, 0))
	allow(t, s, "consumer:a", 10, old, 4)
	// The first commit prunes; the next one an hour of request time later.
	allow(t, s, "consumer:b", 10, Month(testNow.AddDate(0, -2, 0).Add(2*time.Hour)), 1)
	allow(t, s, "consumer:b", 10, Month(testNow), 1)
	var rows int
	if err := s.reader.QueryRow(`SELECT count(*) FROM quota_counters WHERE window_end <= ?`, testNow.Unix()).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 0 {
		t.Fatalf("%d counters of ended windows left", rows)
	}
}

func TestLocalSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "dir", "quota.db")
	w := Month(testNow)
	s, err := OpenLocal(path)
	if err != nil {
		t.Fatal(err)
	}
	allow(t, s, "consumer:a", 100, w, 42)
	allow(t, s, "ip:2001:db8::1", 100, w, 7)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AllowN(context.Background(), "consumer:a", 100, w, 1); err == nil {
		t.Fatal("AllowN on a closed store succeeded")
	}

	s = openTestStore(t, path)
	if r := allow(t, s, "consumer:a", 100, w, 0); r.Remaining != 58 {
		t.Fatalf("after reopen consumer:a remaining %d, want 58", r.Remaining)
	}
	if r := allow(t, s, "ip:2001:db8::1", 100, w, 0); r.Remaining != 93 {
		t.Fatalf("after reopen ip remaining %d, want 93", r.Remaining)
	}
}

// Many goroutines racing for the last units of one key: exactly limit units
// are granted, never more, and the file agrees after a reopen.
func TestLocalConcurrentNeverOverGrants(t *testing.T) {
	path := filepath.Join(t.TempDir(), "quota.db")
	s, err := OpenLocal(path)
	if err != nil {
		t.Fatal(err)
	}
	w := Month(testNow)
	const limit, workers, perWorker = 500, 16, 60
	var granted, refused atomic.Int64
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				n := 1 + (g+i)%3
				r, err := s.AllowN(context.Background(), "consumer:race", limit, w, n)
				if err != nil {
					t.Error(err)
					return
				}
				if r.Allowed != 0 && r.Allowed != n {
					t.Errorf("partial grant %d of %d", r.Allowed, n)
				}
				granted.Add(int64(r.Allowed))
				if r.Allowed == 0 {
					refused.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// 16*60 requests of 1-3 units ask for about 1900 > 500.
	if granted.Load() > limit || granted.Load() < limit-2 || refused.Load() == 0 {
		t.Fatalf("granted %d (refused %d requests), want %d..%d", granted.Load(), refused.Load(), limit-2, limit)
	}
	s = openTestStore(t, path)
	if r := allow(t, s, "consumer:race", limit, w, 0); int64(limit-r.Remaining) != granted.Load() {
		t.Fatalf("file says %d used, goroutines were granted %d", limit-r.Remaining, granted.Load())
	}
}

// childEnv makes the test binary act as a process that consumes quota and
// reports each grant on stdout, until it is killed.
const childEnv = "GENDERIZE_QUOTA_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		os.Exit(runChild(path))
	}
	os.Exit(m.Run())
}

func runChild(path string) int {
	s, err := OpenLocal(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var total int
	for i := 0; i < 100000; i++ {
		r, err := s.AllowN(context.Background(), "consumer:killed", 1<<30, Month(testNow), 2)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		total += r.Allowed
		// Reported only after AllowN returned: this is "the response sent".
		fmt.Println(total)
	}
	return 0
}

// A grant that was reported is never lost, even when the process is killed
// with SIGKILL right after.
func TestLocalDurableAcrossKill(t *testing.T) {
	path := filepath.Join(t.TempDir(), "quota.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(out)
	var reported int
	for lines.Scan() {
		n, err := strconv.Atoi(lines.Text())
		if err != nil {
			t.Fatalf("child said %q", lines.Text())
		}
		reported = n
		if reported >= 400 {
			break
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if reported < 400 {
		t.Fatalf("child reported only %d before stopping", reported)
	}

	s := openTestStore(t, path)
	r := allow(t, s, "consumer:killed", 1<<30, Month(testNow), 0)
	if used := 1<<30 - r.Remaining; used < reported {
		t.Fatalf("after kill the file counts %d, but %d were reported granted", used, reported)
	}
}

func TestSharedLocalOncePerPath(t *testing.T) {
	dir := t.TempDir()
	a, err := SharedLocal(filepath.Join(dir, "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := SharedLocal(filepath.Join(dir, ".", "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatal("same path opened twice")
	}
	c, err := SharedLocal(filepath.Join(dir, "other.db"))
	if err != nil {
		t.Fatal(err)
	}
	if c == a {
		t.Fatal("different paths share a store")
	}
	if _, err := SharedLocal(filepath.Join(dir, "q.db", "not-a-dir", "x.db")); err == nil {
		t.Fatal("opening under a file succeeded")
	}
}

// BenchmarkLocalAllowN compares consuming (a durable write per request,
// grouped when concurrent) with the peek baseline of the same run.
func BenchmarkLocalAllowN(b *testing.B) {
	s, err := OpenLocal(filepath.Join(b.TempDir(), "quota.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	w := Month(testNow)
	ctx := context.Background()
	b.Run("baseline-peek", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.AllowN(ctx, "consumer:bench", 1<<30, w, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("consume-serial", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.AllowN(ctx, "consumer:bench", 1<<30, w, 1); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("consume-parallel-16", func(b *testing.B) {
		b.SetParallelism(8) // 8 x GOMAXPROCS goroutines
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := s.AllowN(ctx, "consumer:bench", 1<<30, w, 1); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// The quota file holds client IPs: new files and directories are private to
// the plugin's user, and older files made readable by others are tightened.
func TestLocalFilesPrivate(t *testing.T) {
	perm := func(p string) os.FileMode {
		t.Helper()
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	root := t.TempDir()
	path := filepath.Join(root, "new", "dir", "quota.db")
	s := openTestStore(t, path)
	allow(t, s, "ip:192.0.2.1", 10, Month(testNow), 1)
	for _, d := range []string{filepath.Join(root, "new"), filepath.Join(root, "new", "dir")} {
		if got := perm(d); got != 0o700 {
			t.Errorf("directory %s: %o, want 700", d, got)
		}
	}
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		if got := perm(f); got != 0o600 {
			t.Errorf("%s: %o, want 600", f, got)
		}
	}

	// A file an older version created 0644 (with its WAL) in a directory
	// that is shared: the file is tightened, the directory left alone.
	shared := filepath.Join(root, "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(shared, "quota.db")
	for _, f := range []string{old, old + "-wal"} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chmod(f, 0o644) // whatever the umask
	}
	s = openTestStore(t, old)
	allow(t, s, "ip:192.0.2.1", 10, Month(testNow), 1)
	for _, f := range []string{old, old + "-wal", old + "-shm"} {
		if got := perm(f); got != 0o600 {
			t.Errorf("%s: %o, want 600", f, got)
		}
	}
	if got := perm(shared); got != 0o755 {
		t.Errorf("existing directory changed to %o", got)
	}
}
