// Package quota counts names against per-caller limits in fixed windows.
//
// Every policy answers the same question, in the style of go-redis/redis_rate:
// may this caller spend n more names in this window, and what is left? The
// plugin makes its rate-limit headers from the Result alone, so a policy is
// swapped by configuration (local SQLite today, Redis for a cluster later)
// without touching the request path.
package quota

import (
	"context"
	"time"
)

// Store is a quota policy. Implementations are safe for concurrent use.
type Store interface {
	// AllowN atomically checks whether n more units fit into key's count for
	// window w (at most limit) and, if they do, consumes them. It either
	// consumes all n or nothing. When it returns with a nil error the
	// consumption is durable. n == 0 is a peek: it reports the state and
	// changes nothing.
	AllowN(ctx context.Context, key string, limit int, w Window, n int) (Result, error)
	// Close releases the store's resources.
	Close() error
}

// Result is a store's answer to one AllowN.
type Result struct {
	// Limit is the limit the request was checked against.
	Limit int
	// Allowed is the number of units consumed: n or 0.
	Allowed int
	// Remaining is what is left in the window after this request.
	Remaining int
	// RetryAfter is how long until a refused request could succeed: zero
	// when the request was allowed, the time to the window's end otherwise
	// (counts only go down when the window resets).
	RetryAfter time.Duration
	// ResetAfter is how long until the window resets.
	ResetAfter time.Duration
}

// Window is the counting period a request falls in, with the instant the
// request is decided at. Counters of different windows never mix: a key's
// count starts from zero in every new window.
type Window struct {
	Start time.Time // inclusive
	End   time.Time // exclusive
	Now   time.Time // Start <= Now < End
}

// Month returns the UTC calendar month containing t. Its length is the real
// month's, so the reset of 31 January and of 28 February differ.
func Month(t time.Time) Window {
	t = t.UTC()
	start := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	return Window{Start: start, End: start.AddDate(0, 1, 0), Now: t}
}

// Fixed returns the window of length d containing t, windows being aligned to
// the Unix epoch: with d = 24h, the UTC day. d must be positive.
func Fixed(t time.Time, d time.Duration) Window {
	t = t.UTC()
	// time.Time.Truncate counts from year 1, not from the Unix epoch; for a
	// window that does not divide a day the two disagree.
	ns := t.UnixNano()
	offset := ns % int64(d)
	if offset < 0 {
		offset += int64(d)
	}
	start := time.Unix(0, ns-offset).UTC()
	return Window{Start: start, End: start.Add(d), Now: t}
}

// ResetAfter is the time left in w.
func (w Window) ResetAfter() time.Duration {
	return w.End.Sub(w.Now)
}

// Decide computes the answer for a request of n units against limit when
// used units are already counted in w. It is the one decision every policy
// makes, whatever it stores counts in.
func Decide(used, limit, n int, w Window) Result {
	r := Result{Limit: limit, ResetAfter: w.ResetAfter()}
	remaining := max(limit-used, 0)
	if n > 0 && n <= remaining {
		r.Allowed = n
		remaining -= n
	} else if n > 0 {
		r.RetryAfter = r.ResetAfter
	}
	r.Remaining = remaining
	return r
}
