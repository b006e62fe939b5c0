package engine

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// PollInterval is how often a shared database's file is checked for
// replacement: a new file serves within this interval plus its loading
// time (a few hundred milliseconds for the default database).
const PollInterval = 2 * time.Second

// Live answers from the database file at a path and follows that file:
// when a new file is renamed over it, Live loads it, checks it and, if it
// is a valid name database, swaps it in; an invalid file is refused with
// one log line and the database loaded before keeps serving. It is safe
// for concurrent use.
//
// Each load is one generation: an Engine with its own cache, never
// changed once published. A call of Predict takes the generation current
// when it starts and keeps it to the end, so no answer mixes two
// databases, and the cache of the new one starts empty. An old generation
// is closed when the last Predict using it returns.
type Live struct {
	path string // absolute
	opts Options
	cur  atomic.Pointer[generation]

	mu      sync.Mutex  // serialises reloads
	seen    os.FileInfo // the file last tried, loaded or refused
	lastErr string      // the last refusal logged: a bad file is reported once
	stop    chan struct{}
}

// generation is one loaded database: engine, cache and its facts.
type generation struct {
	e       *Engine
	info    Info
	refs    atomic.Int64 // Predict calls using it
	retired atomic.Bool  // replaced: closed when refs drops to 0
	closed  sync.Once
}

func (g *generation) release() {
	if g.refs.Add(-1) == 0 && g.retired.Load() {
		g.close()
	}
}

// retire marks g replaced and closes it unless a Predict still uses it;
// the last one to release it closes it then.
func (g *generation) retire() {
	g.retired.Store(true)
	if g.refs.Load() == 0 {
		g.close()
	}
}

func (g *generation) close() {
	g.closed.Do(func() {
		if err := g.e.Close(); err != nil {
			slog.Warn("genderize: close replaced names db", "path", g.info.Path, "error", err.Error())
		}
	})
}

// acquire returns the current generation, counted as in use until its
// release. The second load catches a swap that happened between the
// first and the count: that generation may be closing, so take the new.
func (l *Live) acquire() *generation {
	for {
		g := l.cur.Load()
		g.refs.Add(1)
		if l.cur.Load() == g {
			return g
		}
		g.release()
	}
}

// Predict is Engine.Predict on the database current when it is called.
func (l *Live) Predict(names []string, country string) ([]Prediction, error) {
	g := l.acquire()
	defer g.release()
	return g.e.Predict(names, country)
}

// Info describes the database serving now.
func (l *Live) Info() Info { return l.cur.Load().info }

// Close does nothing: a Live from Shared lives as long as the process,
// shared by every plugin instance.
func (l *Live) Close() error { return nil }

// openLive loads the database at path and, when interval > 0, checks the
// file every interval until l.stop is closed.
func openLive(path string, opts Options, interval time.Duration) (*Live, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open names db %s: %w", path, err)
	}
	l := &Live{path: abs, opts: opts, stop: make(chan struct{})}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("open names db %s: %w (build it with `genderize-db build` or `make db`)", path, err)
	}
	g, err := load(abs, opts)
	if err != nil {
		return nil, err
	}
	l.seen = fi
	l.cur.Store(g)
	if interval > 0 {
		go l.watch(interval)
	}
	return l, nil
}

func (l *Live) watch(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.reload(false)
		}
	}
}

// shutdown stops watching and closes the database once unused (tests).
func (l *Live) shutdown() {
	close(l.stop)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cur.Load().retire()
}

// reload loads the file at l.path when it is not the file last tried (a
// new inode, size or modification time), or always when force is set. It
// reports whether a new database now serves; err is why a file was
// refused.
func (l *Live) reload(force bool) (swapped bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fi, err := os.Stat(l.path)
	if err != nil {
		// A missing file is tried again when it is back, even unchanged.
		l.seen = nil
		return false, l.refuse(fmt.Errorf("names db %s: %w", l.path, err))
	}
	if !force && l.seen != nil && sameFile(fi, l.seen) {
		return false, nil
	}
	// Remembered before loading: a refused file is not tried again (and
	// not logged again) until it changes.
	l.seen = fi
	g, err := load(l.path, l.opts)
	if err != nil {
		return false, l.refuse(err)
	}
	l.lastErr = ""
	old := l.cur.Swap(g)
	old.retire()
	slog.Info("genderize: names db loaded, cache emptied", "path", l.path, "schema_version", g.info.SchemaVersion,
		"keys", g.info.Keys, "countries", g.info.Countries, "built", g.info.Built, "replaced_built", old.info.Built)
	return true, nil
}

// refuse logs why a file was refused, once per distinct reason.
func (l *Live) refuse(err error) error {
	if msg := err.Error(); msg != l.lastErr {
		l.lastErr = msg
		cur := l.cur.Load().info
		slog.Error("genderize: new names db refused, the loaded one keeps serving", "path", l.path,
			"error", msg, "serving_built", cur.Built, "serving_since", cur.Loaded.UTC().Format(time.RFC3339))
	}
	return err
}

func sameFile(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// load opens and checks the database at path: an SQLite file as long as
// its header says, of this schema version, whose tables read to the end.
func load(path string, opts Options) (*generation, error) {
	if err := checkSQLiteFile(path); err != nil {
		return nil, fmt.Errorf("open names db %s: %w", path, err)
	}
	e, err := Open(path, opts)
	if err != nil {
		return nil, err
	}
	info, err := readInfo(e)
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("open names db %s: %w", path, err)
	}
	return &generation{e: e, info: info}, nil
}

// sqliteMagic starts every SQLite 3 database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// checkSQLiteFile reads the database header: a file cut short (a copy
// still running, a full disk) is refused here, before SQLite reads past
// its end in the middle of a request.
func checkSQLiteFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var h [100]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return errors.New("not an SQLite database (shorter than its header)")
		}
		return err
	}
	if !bytes.Equal(h[:16], sqliteMagic) {
		return errors.New("not an SQLite database")
	}
	pageSize := int64(binary.BigEndian.Uint16(h[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	if pageSize < 512 || size%pageSize != 0 {
		return fmt.Errorf("truncated: %d bytes is not a whole number of %d-byte pages", size, pageSize)
	}
	// The header's page count is valid when its version-valid-for number
	// matches the change counter (always, for files SQLite 3.7+ wrote).
	pages := int64(binary.BigEndian.Uint32(h[28:32]))
	if pages > 0 && bytes.Equal(h[24:28], h[92:96]) && size < pages*pageSize {
		return fmt.Errorf("truncated: %d bytes, its header says %d", size, pages*pageSize)
	}
	return nil
}

var shared struct {
	sync.Mutex
	lives map[string]*Live
}

// Shared returns the process-wide Live for path, opening it on first use;
// later calls with the same file get the same Live (and the options of
// the first call). Kong creates and drops plugin instances at will: they
// all share one engine and its cache, and the file is watched for
// replacement every PollInterval. A failed open is not remembered, so a
// later call retries.
func Shared(path string, opts Options) (*Live, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open names db %s: %w", path, err)
	}
	shared.Lock()
	defer shared.Unlock()
	if l := shared.lives[abs]; l != nil {
		return l, nil
	}
	l, err := openLive(abs, opts, PollInterval)
	if err != nil {
		return nil, err
	}
	if shared.lives == nil {
		shared.lives = map[string]*Live{}
	}
	shared.lives[abs] = l
	return l, nil
}

// sharedLives returns the Lives Shared opened, by path.
func sharedLives() []*Live {
	shared.Lock()
	defer shared.Unlock()
	lives := make([]*Live, 0, len(shared.lives))
	for _, l := range shared.lives {
		lives = append(lives, l)
	}
	slices.SortFunc(lives, func(a, b *Live) int { return cmp.Compare(a.path, b.path) })
	return lives
}

// ReloadShared reloads every database Shared opened, now, even when its
// file looks unchanged (SIGHUP). A refused file is logged and its old
// database keeps serving; the error joins the refusals.
func ReloadShared() error {
	var errs []error
	for _, l := range sharedLives() {
		if _, err := l.reload(true); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ReloadOnSignal calls ReloadShared whenever the process receives one of
// sigs; the plugin server passes SIGHUP.
func ReloadOnSignal(sigs ...os.Signal) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	go func() {
		for range ch {
			ReloadShared()
		}
	}()
}
