package engine

import (
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/genderize-kong/genderize/schema"
)

// Info describes a loaded name database (the metrics' database info).
type Info struct {
	Path          string    // absolute path of the file
	SchemaVersion string    // meta.schema_version
	Built         string    // meta.built_at, RFC 3339 UTC as stored
	Keys          int64     // distinct name keys
	Countries     int64     // countries with data
	Loaded        time.Time // when this process loaded it
}

// readInfo reads e's facts. Counting the keys reads the whole names
// table, which also checks that every page of it is there and readable
// before the database serves.
func readInfo(e *Engine) (Info, error) {
	info := Info{Path: e.path, SchemaVersion: schema.VersionString}
	err := e.db.QueryRow("SELECT value FROM meta WHERE key = ?", schema.MetaBuiltAt).Scan(&info.Built)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return Info{}, fmt.Errorf("read meta: %w", err)
	}
	if err := e.db.QueryRow("SELECT count(*) FROM names WHERE country = '' AND form = ?", schema.FormExact).Scan(&info.Keys); err != nil {
		return Info{}, fmt.Errorf("read names: %w", err)
	}
	if err := e.db.QueryRow("SELECT count(*) FROM countries").Scan(&info.Countries); err != nil {
		return Info{}, fmt.Errorf("read countries: %w", err)
	}
	info.Loaded = time.Now()
	return info, nil
}

// SharedInfo describes the databases serving now in this process, one per
// path Shared opened, by path.
func SharedInfo() []Info {
	lives := sharedLives()
	infos := make([]Info, len(lives))
	for i, l := range lives {
		infos[i] = l.Info()
	}
	return infos
}
