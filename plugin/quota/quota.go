// Package quota counts names against per-caller limits in fixed windows.
//
// Every policy answers the same question, in the style of go-redis/redis_rate:
// may this caller spend n more names in this window, and what is left? The
// plugin makes its rate-limit headers from the Result alone, and every
// policy computes it with Decide, so a policy is swapped by configuration
// without touching the request path. Policies are registered by name (Open,
// Register):
//
//   - local: counters of one node in a SQLite file (Local). The default.
//   - redis: counters shared by every node of a cluster in Redis (Redis):
//     one server, Sentinel or Cluster.
//
// # The redis policy
//
// A decision is one round trip: a Lua script reads the caller's counter for
// the window, consumes n only if it fits, and makes the counter expire at
// the window's end; a refused request and a peek (n == 0) write nothing.
// Counters are named genderize:quota:{KEY}:START:END (Unix seconds; the
// hash tag keeps a caller on one Cluster slot), KEY being "consumer:<id>" or
// "ip:<client ip>". Expiry follows Redis's clock: keep the nodes' clocks and
// Redis's in sync (NTP), or a counter may expire a little before or after
// the window the nodes compute.
//
// No request waits longer than the timeout for Redis (connecting included;
// no retries). When Redis fails or times out the store notices once, logs
// once, and from then on no request waits for Redis: a probe pings it once
// a second in the background.
//
// With fault tolerance off, every request of the outage fails with
// ErrUnavailable (the plugin answers 503) and consumes nothing.
//
// With fault tolerance on, the node counts alone meanwhile: per caller and
// window, in memory, from zero (it does not know what Redis held), with the
// same Decide. So during an outage each node grants a caller up to the
// whole limit again, at most (nodes + 1) x limit in the window across the
// cluster. When Redis answers again, what the node counted is added to
// Redis's counters (whatever the limit: those names were answered), so
// the names answered during the outage are paid for: the caller's
// remaining afterwards is what it would be had every node counted in Redis,
// or zero. Counters of windows that ended meanwhile are dropped. The node
// keeps at most 262144 counters during an outage; a new caller beyond that
// gets ErrUnavailable. Counts of a node that dies during an outage are lost
// with it.
//
// A request in flight when Redis fails may have been applied though its
// answer never came back (a hung server that resumes runs what it had
// received; a server shutting down drops the replies of its last commands):
// such a request is counted twice, once in Redis and once by the fallback,
// or by Redis though answered 503. This errs against the caller, by at most
// the requests in flight at that moment (testing/reliability measures it:
// a few hundred names with 16 clients sending up to 100 each).
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
