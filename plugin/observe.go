package plugin

import (
	"context"
	"time"

	"github.com/genderize-kong/genderize/plugin/metrics"
	"github.com/genderize-kong/genderize/plugin/quota"
)

// This file connects the adapter to plugin/metrics: Access records each
// answer once, and every quota store call is timed. Both do nothing unless
// the plugin server was started with -metrics-listen.

// started is when the request's first PDK answer came, the start of its
// duration; the zero time when metrics are off.
func started() time.Time {
	if !metrics.On() {
		return time.Time{}
	}
	return time.Now()
}

// observe records the answer d, about to be sent, of a request whose first
// PDK answer came at start (zero if it never came: a failure before it).
func observe(d *decision, start time.Time) {
	if !metrics.On() {
		return
	}
	var took time.Duration
	if !start.IsZero() {
		took = time.Since(start)
	}
	metrics.Request(d.status, d.names, refusalReason(d), took)
}

// refusalReason is the metrics' name for why d refuses; NoReason for an
// answer, a 405 and a failure.
func refusalReason(d *decision) metrics.Reason {
	switch d.reason {
	case reasonKey:
		return metrics.InvalidKey
	case reasonSubscription:
		return metrics.InactiveSubscription
	case reasonMissingName:
		return metrics.MissingName
	case reasonInvalidName:
		return metrics.InvalidName
	case reasonInvalidCountry:
		return metrics.InvalidCountry
	case reasonThrottled:
		return metrics.Throttled
	case reasonBatchTooLarge:
		return metrics.BatchOverRemaining
	case reasonQuotaExhausted:
		return metrics.LimitReached
	}
	return metrics.NoReason
}

// timedStore times every call of a quota store for the metrics, by policy.
type timedStore struct {
	quota.Store
	policy string
}

// timeStore wraps s when metrics are on; otherwise it is s.
func timeStore(policy string, s quota.Store) quota.Store {
	if !metrics.On() {
		return s
	}
	return timedStore{Store: s, policy: policy}
}

func (s timedStore) AllowN(ctx context.Context, key string, limit int, w quota.Window, n int) (quota.Result, error) {
	start := time.Now()
	r, err := s.Store.AllowN(ctx, key, limit, w, n)
	metrics.Store(s.policy, time.Since(start), err)
	return r, err
}
