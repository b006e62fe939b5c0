package plugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/Kong/go-pdk/entities"

	"github.com/genderize-kong/genderize/engine"
	"github.com/genderize-kong/genderize/plugin/quota"
)

// facts are what the PDK calls of one request returned: all the decision
// needs to know about the request and its caller.
type facts struct {
	// method and query come from the request line, the query still
	// percent-encoded and possibly not UTF-8 (raw bytes as the client
	// sent them).
	method string
	query  string
	// consumer is the one key-auth authenticated; the zero value when
	// none (a CORS preflight, or a route without key-auth).
	consumer entities.Consumer
	// clientIP is the forwarded client address, read only when the
	// caller is counted per IP (see needsClientIP).
	clientIP string
}

func (f *facts) hasConsumer() bool {
	return f.consumer.Id != "" || f.consumer.Username != ""
}

// needsClientIP reports whether the decision will need the client's
// address: for the anonymous consumer (counted per IP) and for a preflight
// without a consumer (answered on the IP's window). Keyed callers are
// spared the round trip.
func (c *Config) needsClientIP(f *facts) bool {
	if !f.hasConsumer() {
		return f.method == "OPTIONS"
	}
	return c.isAnonymous(f.consumer)
}

// reason says why a request was answered as it was, in a small set usable
// as a metrics label.
type reason uint8

const (
	reasonNone             reason = iota // answered: 200, or 204 for a preflight
	reasonMethod                         // 405
	reasonKey                            // 401
	reasonSubscription                   // 402
	reasonMissingName                    // 422, no name
	reasonInvalidName                    // 422, a bad name or batch
	reasonInvalidCountry                 // 422, a bad country_id
	reasonThrottled                      // 429, too fast
	reasonBatchTooLarge                  // 429, fewer names left than asked
	reasonQuotaExhausted                 // 429, none left
	reasonStoreUnavailable               // 503
	reasonInternal                       // 500
)

var reasonNames = [...]string{"none", "method", "key", "subscription", "missing_name", "invalid_name", "invalid_country", "throttled", "batch_too_large", "quota_exhausted", "store_unavailable", "internal"}

func (r reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", r)
}

// decision is the whole answer to one request: what Exit sends (status,
// body, and the headers made from rate and retryAfter) and what the
// adapter logs and counts.
type decision struct {
	status int
	body   []byte
	// pooledBody, when set, holds body for the pool of bodies: respond
	// gives it back once Exit has sent it.
	pooledBody *[]byte
	// rate is the caller's window as far as it is known: limit and reset
	// always once the caller is known, remaining once the store said it.
	rate quota.Result
	// retryAfter is the throttle's wait, sent as Retry-After; zero for
	// every other answer (a spent quota resets with the window, which
	// X-Rate-Limit-Reset says).
	retryAfter time.Duration
	reason     reason
	// names is the number of names answered (a 200's batch size).
	names int
	// problem, when set, is worth a line in the operator's log.
	problem *problem
}

// problem is a log line a decision asks for; key bounds repeats (see
// limitedLogger), so it must come from a small set.
type problem struct {
	key   string
	msg   string
	attrs []any
}

func refusal(e *apiError, r reason, rate quota.Result) decision {
	return decision{status: e.status, body: e.body, rate: rate, reason: r}
}

// failure is a 500, or a 503 when the quota store says it cannot be
// reached: either way nothing was consumed.
func failure(rate quota.Result, key, msg string, err error) decision {
	d := refusal(errInternal, reasonInternal, rate)
	if errors.Is(err, quota.ErrUnavailable) {
		d = refusal(errUnavailable, reasonStoreUnavailable, rate)
	}
	d.problem = &problem{key: key, msg: msg, attrs: []any{slog.Any("error", err)}}
	return d
}

// caller is who pays for a request: its quota key, limit and window.
type caller struct {
	key    string
	limit  int
	window quota.Window
}

// decide answers one request from its facts at now, with the process-wide
// deps. It makes no PDK call and sends nothing: the adapter (Access) does.
// The checks run in the order 405, 401, 402, 422, 429 (throttle, then
// quota); every refusal carries the caller's window as the store reports
// it and consumes nothing.
//
// decide recovers its own panics (the engine's included) into a 500 that
// still carries the caller's window as far as it was known.
func (c *Config) decide(deps *dependencies, f *facts, now time.Time) (d decision) {
	defer func() {
		if p := recover(); p != nil {
			d = refusal(errInternal, reasonInternal, quota.Result{Limit: d.rate.Limit, ResetAfter: d.rate.ResetAfter})
			d.problem = &problem{key: "panic", msg: "genderize: panic while answering", attrs: []any{"panic", fmt.Sprint(p), "stack", string(debug.Stack())}}
		}
	}()

	if !f.hasConsumer() {
		if f.method != "OPTIONS" {
			d = refusal(errInternal, reasonInternal, quota.Result{})
			d.problem = &problem{key: "no consumer", msg: "genderize: request without a consumer; key-auth with anonymous must run before genderize on this route", attrs: []any{"method", f.method}}
			return d
		}
		// A CORS preflight: key-auth's run_on_preflight is off.
		w := c.ipWindow(now)
		return c.answerMethod(deps, caller{key: "ip:" + f.clientIP, limit: c.IPLimit, window: w}, f.method)
	}

	q := parseQuery(f.query, c.MaxBatch, c.MaxNameLength)
	var (
		who      caller
		inactive bool
	)
	if c.isAnonymous(f.consumer) {
		who = caller{key: "ip:" + f.clientIP, limit: c.IPLimit, window: c.ipWindow(now)}
	} else {
		id := f.consumer.Id
		if id == "" {
			id = f.consumer.Username
		}
		who = caller{key: "consumer:" + id, window: quota.Month(now)}
		sub := subscriptionOf(f.consumer.Tags, c.Plans, c.DefaultPlan, now)
		var p *problem
		switch {
		case sub.bad != "":
			p = &problem{key: "tags " + f.consumer.Id + " " + sub.bad, msg: "genderize: consumer tags not understood", attrs: []any{"consumer_id", f.consumer.Id, "username", f.consumer.Username, "problem", sub.bad}}
		case !sub.known:
			p = &problem{key: "plan " + f.consumer.Id + " " + sub.planName, msg: "genderize: consumer has a plan that is not in the plugin config, refusing it", attrs: []any{"consumer_id", f.consumer.Id, "username", f.consumer.Username, "plan", sub.planName}}
		}
		defer func() {
			if d.problem == nil {
				d.problem = p
			}
		}()
		if !sub.known {
			if f.method != "GET" {
				// The method is refused first, on a window without a
				// limit.
				return c.answerMethod(deps, who, f.method)
			}
			// No plan, no limit to report, nothing to peek at.
			return refusal(errNotActive, reasonSubscription, quota.Result{ResetAfter: who.window.ResetAfter()})
		}
		who.limit = sub.plan.Quota
		inactive = sub.inactive != ""
	}
	d.rate = quota.Result{Limit: who.limit, ResetAfter: who.window.ResetAfter()}

	switch {
	case f.method != "GET":
		return c.answerMethod(deps, who, f.method)
	case c.isAnonymous(f.consumer) && q.apikey:
		// key-auth maps a key it does not know to the anonymous
		// consumer: a key was sent, so it was not recognised.
		return c.refuse(deps, who, errInvalidKey, reasonKey)
	case inactive:
		return c.refuse(deps, who, errNotActive, reasonSubscription)
	case q.problem != nil:
		return c.refuse(deps, who, q.problem, q.problemReason)
	}
	if t := deps.throttle.Allow(who.key, now); t.Allowed == 0 {
		d = c.refuse(deps, who, errTooLow, reasonThrottled)
		if d.reason == reasonThrottled {
			d.retryAfter = t.RetryAfter
		}
		return d
	}

	// Predict before counting: a request that fails consumes nothing, and
	// a prediction needs no undoing.
	predictions, err := deps.names.Predict(q.names, q.country)
	if err == nil && len(predictions) != len(q.names) {
		err = fmt.Errorf("%d predictions for %d names", len(predictions), len(q.names))
	}
	if err != nil {
		d = c.refuse(deps, who, errInternal, reasonInternal)
		if d.problem == nil {
			d.problem = &problem{key: "predict", msg: "genderize: prediction failed", attrs: []any{slog.Any("error", err), "names", len(q.names)}}
		}
		return d
	}

	ctx, cancel := context.WithTimeout(context.Background(), deps.storeTimeout)
	defer cancel()
	state, err := deps.store.AllowN(ctx, who.key, who.limit, who.window, len(q.names))
	switch {
	case err != nil:
		return failure(d.rate, "store", "genderize: quota store failed", err)
	case state.Allowed == 0 && state.Remaining == 0:
		return refusal(errLimitReached, reasonQuotaExhausted, state)
	case state.Allowed == 0:
		// Some names are left, fewer than asked for: retry with fewer.
		return refusal(errTooLow, reasonBatchTooLarge, state)
	}
	buf := newBody()
	if q.batch {
		*buf = engine.AppendJSONArray((*buf)[:0], predictions)
	} else {
		*buf = predictions[0].AppendJSON((*buf)[:0])
	}
	return decision{status: 200, body: *buf, pooledBody: buf, rate: state, names: len(predictions)}
}

// answerMethod answers a request that is not a GET: a CORS preflight
// (OPTIONS) with 204, anything else with 405. Both show the caller's
// window and consume nothing.
func (c *Config) answerMethod(deps *dependencies, who caller, method string) decision {
	if method != "OPTIONS" {
		return c.refuse(deps, who, errMethodNotAllowed, reasonMethod)
	}
	state, err := c.peek(deps, who)
	if err != nil {
		return failure(quota.Result{Limit: who.limit, ResetAfter: who.window.ResetAfter()}, "store", "genderize: quota store failed", err)
	}
	return decision{status: 204, rate: state}
}

// refuse answers e with the caller's window as it stands.
func (c *Config) refuse(deps *dependencies, who caller, e *apiError, r reason) decision {
	state, err := c.peek(deps, who)
	if err != nil {
		return failure(quota.Result{Limit: who.limit, ResetAfter: who.window.ResetAfter()}, "store", "genderize: quota store failed", err)
	}
	return refusal(e, r, state)
}

// peek reads the caller's window without consuming.
func (c *Config) peek(deps *dependencies, who caller) (quota.Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), deps.storeTimeout)
	defer cancel()
	return deps.store.AllowN(ctx, who.key, who.limit, who.window, 0)
}

func (c *Config) isAnonymous(consumer entities.Consumer) bool {
	return consumer.Username == c.AnonymousConsumer || consumer.Id == c.AnonymousConsumer
}

func (c *Config) ipWindow(now time.Time) quota.Window {
	return quota.Fixed(now, time.Duration(c.IPWindowSeconds)*time.Second)
}
