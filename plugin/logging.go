package plugin

import (
	"log/slog"
	"sync"
	"time"

	"github.com/genderize-kong/genderize/plugin/quota"
)

const (
	// logEvery is how often one kind of problem may be logged: a
	// misconfigured node must not write a line per request.
	logEvery = time.Minute
	// maxLogKeys bounds the kinds remembered. Keys are fixed strings,
	// or a consumer id with its problem (bad tags, unknown plan): one
	// line per consumer is worth having, but not an unbounded map. Past
	// the bound, new kinds are dropped until old ones expire.
	maxLogKeys = 256
)

// limitedLogger is the instance's logger: slog with the plugin's
// attributes set once, and repeats of one kind of problem limited to one
// line a minute.
type limitedLogger struct {
	*slog.Logger

	mu   sync.Mutex
	last map[string]time.Time
}

func newLimitedLogger(l *slog.Logger) *limitedLogger {
	return &limitedLogger{Logger: l, last: make(map[string]time.Time)}
}

// once logs msg at error level unless a line of the same key was logged
// less than logEvery before now.
func (l *limitedLogger) once(now time.Time, key, msg string, args ...any) {
	if !l.allow(now, key) {
		return
	}
	l.Error(msg, args...)
}

func (l *limitedLogger) allow(now time.Time, key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if last, ok := l.last[key]; ok && now.Sub(last) < logEvery && now.Sub(last) >= 0 {
		return false
	}
	if _, ok := l.last[key]; !ok && len(l.last) >= maxLogKeys {
		for k, t := range l.last {
			if now.Sub(t) >= logEvery {
				delete(l.last, k)
			}
		}
		if len(l.last) >= maxLogKeys {
			return false
		}
	}
	l.last[key] = now
	return true
}

// failed logs a failed PDK call and answers 500: without the fact it
// should have brought, nothing can be decided.
func (l *limitedLogger) failed(now time.Time, call string, err error) decision {
	l.once(now, call, "genderize: PDK call failed", "call", call, slog.Any("error", err))
	return refusal(errInternal, reasonInternal, quota.Result{})
}
