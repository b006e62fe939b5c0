package quota

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"
)

// Usage is one caller's count in one window.
type Usage struct {
	Key                    string // "consumer:<consumer id>" or "ip:<client ip>"
	WindowStart, WindowEnd time.Time
	Used                   int
}

// Inspector is a store that can list and reset its counters (genderize-usage).
type Inspector interface {
	// Usage lists the counters whose key starts with keyPrefix ("" for
	// all), current and past windows still stored, by key then window.
	Usage(ctx context.Context, keyPrefix string) ([]Usage, error)
	// Reset deletes every window's counter of key: the caller starts from
	// zero. It reports how many counters it deleted.
	Reset(ctx context.Context, key string) (removed int, err error)
}

// LocalCounters reads the local policy's quota file for an administrator,
// beside the plugin servers that write it. Opened read-only it never
// changes the file; Reset needs it opened writable.
type LocalCounters struct {
	path     string
	db       *sql.DB
	writable bool
}

var _ Inspector = (*LocalCounters)(nil)

// OpenLocalCounters opens the quota file at path, which must exist:
// read-only unless writable (to reset counters).
func OpenLocalCounters(path string, writable bool) (*LocalCounters, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("open quota store %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("open quota store %s: not a regular file", path)
	}
	mode := "&mode=ro&_query_only=1"
	if writable {
		mode = "&mode=rw&_txlock=immediate"
	}
	// No journal_mode here: the file is already in WAL mode (the plugin
	// set it) and a read-only connection may not change it.
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?_busy_timeout=5000" + mode
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, fmt.Errorf("open quota store %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	var n int
	err = db.QueryRow("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'quota_counters'").Scan(&n)
	if err == nil && n == 0 {
		err = errors.New("no quota_counters table: not a genderize quota file")
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open quota store %s: %w", path, err)
	}
	return &LocalCounters{path: path, db: db, writable: writable}, nil
}

// Usage implements Inspector. Windows that have ended stay in the file
// until the plugin prunes them (hourly).
func (c *LocalCounters) Usage(ctx context.Context, keyPrefix string) ([]Usage, error) {
	rows, err := c.db.QueryContext(ctx, `SELECT key, window_start, window_end, used FROM quota_counters
		WHERE substr(key, 1, length(?1)) = ?1 ORDER BY key, window_start`, keyPrefix)
	if err != nil {
		return nil, fmt.Errorf("quota store %s: read counters: %w", c.path, err)
	}
	defer rows.Close()
	var out []Usage
	for rows.Next() {
		var u Usage
		var start, end int64
		if err := rows.Scan(&u.Key, &start, &end, &u.Used); err != nil {
			return nil, fmt.Errorf("quota store %s: read counters: %w", c.path, err)
		}
		u.WindowStart, u.WindowEnd = time.Unix(start, 0).UTC(), time.Unix(end, 0).UTC()
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("quota store %s: read counters: %w", c.path, err)
	}
	return out, nil
}

// Reset implements Inspector.
func (c *LocalCounters) Reset(ctx context.Context, key string) (int, error) {
	if !c.writable {
		return 0, fmt.Errorf("quota store %s: opened read-only, cannot reset", c.path)
	}
	if key == "" || !strings.Contains(key, ":") {
		return 0, fmt.Errorf("quota store %s: reset: %q is not a caller's key", c.path, key)
	}
	res, err := c.db.ExecContext(ctx, "DELETE FROM quota_counters WHERE key = ?", key)
	if err != nil {
		return 0, fmt.Errorf("quota store %s: reset: %w", c.path, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("quota store %s: reset: %w", c.path, err)
	}
	return int(n), nil
}

// Close releases the file.
func (c *LocalCounters) Close() error {
	if err := c.db.Close(); err != nil {
		return fmt.Errorf("close quota store %s: %w", c.path, err)
	}
	return nil
}
