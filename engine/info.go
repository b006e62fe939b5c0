package engine

import (
	"cmp"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/genderize-kong/genderize/schema"
)

// This file stands in for the hot swap's engine/info.go (branch ops), which
// reads the same facts when it loads a database; merging that branch
// replaces this file with it.

// Info describes a loaded name database (the metrics' database info).
type Info struct {
	Path          string    // absolute path of the file
	SchemaVersion string    // meta.schema_version
	Built         string    // meta.built_at, RFC 3339 UTC as stored
	Keys          int64     // distinct name keys
	Countries     int64     // countries with data
	Loaded        time.Time // when this process loaded it
}

// readInfo reads e's facts. Counting the keys reads the whole names table.
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

// infos keeps each shared engine's Info, read when first asked for.
var infos sync.Map // *Engine -> Info

// SharedInfo describes the databases serving now in this process, one per
// path Shared opened, by path. A database whose facts cannot be read is
// logged and left out.
func SharedInfo() []Info {
	shared.Lock()
	engines := make([]*Engine, 0, len(shared.engines))
	for _, e := range shared.engines {
		engines = append(engines, e)
	}
	shared.Unlock()
	out := make([]Info, 0, len(engines))
	for _, e := range engines {
		i, ok := infos.Load(e)
		if !ok {
			read, err := readInfo(e)
			if err != nil {
				slog.Error("genderize: names db: cannot describe it", "path", e.path, "error", err.Error())
				continue
			}
			i, _ = infos.LoadOrStore(e, read)
		}
		out = append(out, i.(Info))
	}
	slices.SortFunc(out, func(a, b Info) int { return cmp.Compare(a.Path, b.Path) })
	return out
}
