package plugin

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Kong/go-pdk"
	"github.com/Kong/go-pdk/entities"
	"github.com/Kong/go-pdk/server/kong_plugin_protocol"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/genderize-kong/genderize/engine"
	"github.com/genderize-kong/genderize/plugin/quota"
	"github.com/genderize-kong/genderize/plugin/throttle"
)

// storeTimeout bounds how long a request waits for the quota store before
// failing closed.
const storeTimeout = 5 * time.Second

// predictor is what the plugin needs of the name engine.
type predictor interface {
	Predict(names []string, country string) ([]engine.Prediction, error)
}

// dependencies are the process-wide parts an instance uses: shared by every
// instance naming the same files, opened once.
type dependencies struct {
	names    predictor
	store    quota.Store
	throttle *throttle.Limiter
}

// instance is the per-instance state go-pdk cannot see. Kong calls the
// handlers of one instance concurrently.
type instance struct {
	now  func() time.Time
	open func(*Config) (*dependencies, error)

	validateOnce sync.Once
	configErr    error

	deps     atomic.Pointer[dependencies]
	openMu   sync.Mutex
	lastLogs sync.Map // message -> time.Time of its last log line
}

func newInstance() *instance {
	return &instance{now: time.Now, open: openShared}
}

// openShared opens, or finds already open, what c names.
func openShared(c *Config) (*dependencies, error) {
	// cache_size 0 means no cache; the engine reads 0 as its default.
	entries := int64(c.CacheSize)
	if entries == 0 {
		entries = -1
	}
	names, err := engine.Shared(c.DatabasePath, engine.Options{CacheEntries: entries})
	if err != nil {
		return nil, fmt.Errorf("database_path: open name database %s: %w", c.DatabasePath, err)
	}
	store, err := quota.SharedLocal(c.QuotaPath)
	if err != nil {
		return nil, fmt.Errorf("quota_path: %w", err)
	}
	return &dependencies{names: names, store: store, throttle: throttle.Shared(c.ThrottleRate, c.ThrottleBurst)}, nil
}

// logOnce logs msg at most once a minute per instance and key, so that a
// misconfigured node does not write a line per request.
func (in *instance) logOnce(key, msg string, args ...any) {
	now := time.Now()
	if last, ok := in.lastLogs.Load(key); ok && now.Sub(last.(time.Time)) < time.Minute {
		return
	}
	in.lastLogs.Store(key, now)
	slog.Error(msg, append([]any{"plugin", "genderize"}, args...)...)
}

// ready validates the config on first use (go-pdk has no start hook) and
// opens the dependencies. A bad config stays bad for the instance's life; a
// failed open is retried by the next request.
func (c *Config) ready() (*dependencies, bool) {
	in := c.state
	in.validateOnce.Do(func() {
		if in.configErr = c.validate(); in.configErr != nil {
			slog.Error("genderize: bad plugin config, answering 500 until it is fixed", "plugin", "genderize", "error", in.configErr.Error())
		}
	})
	if in.configErr != nil {
		return nil, false
	}
	if d := in.deps.Load(); d != nil {
		return d, true
	}
	in.openMu.Lock()
	defer in.openMu.Unlock()
	if d := in.deps.Load(); d != nil {
		return d, true
	}
	d, err := in.open(c)
	if err != nil {
		in.logOnce("open", "genderize: cannot open its files, answering 500", "error", err.Error())
		return nil, false
	}
	in.deps.Store(d)
	return d, true
}

// exchange is one request: the PDK and what the answer will say.
type exchange struct {
	kong   *pdk.PDK
	exited bool
	// window is the caller's rate-limit state as far as it is known, for
	// an answer that has to be made before or without a better one.
	window quota.Result
}

func (x *exchange) exit(status int, body []byte, h *structpb.Struct) {
	x.exited = true
	exit(x.kong, status, body, h)
}

// exit is go-pdk's kong.Response.Exit with the headers already in the
// form Kong receives them.
func exit(kong *pdk.PDK, status int, body []byte, h *structpb.Struct) {
	// Kong does not answer an Exit in the access phase: the error is the
	// connection closing, as with go-pdk's Exit, which ignores it too.
	_ = kong.Response.Ask("kong.response.exit", &kong_plugin_protocol.ExitArgs{Status: int32(status), Body: body, Headers: h}, nil)
	// Exit closes the connection to Kong: nothing may follow it.
	kong.Response.Close()
}

func (x *exchange) fail(e *apiError, r quota.Result) {
	x.exit(e.status, e.body, headers(r))
}

// Access answers the request. It is the plugin's only phase: the route has
// no service, every request ends here with an Exit.
func (c *Config) Access(kong *pdk.PDK) {
	x := &exchange{kong: kong}
	defer func() {
		if p := recover(); p != nil {
			slog.Error("genderize: panic while answering", "plugin", "genderize", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			if !x.exited {
				x.fail(errInternal, x.window)
			}
		}
	}()
	c.access(x)
}

func (c *Config) access(x *exchange) {
	if c.state == nil {
		slog.Error("genderize: config not made by New", "plugin", "genderize")
		x.fail(errInternal, quota.Result{})
		return
	}
	in := c.state
	deps, ok := c.ready()
	if !ok {
		x.fail(errInternal, quota.Result{})
		return
	}

	consumer, err := x.kong.Client.GetConsumer()
	if err != nil {
		in.logOnce("get_consumer", "genderize: kong.client.get_consumer failed", "error", err.Error())
		x.fail(errInternal, quota.Result{})
		return
	}
	now := in.now()
	if consumer.Id == "" && consumer.Username == "" {
		c.noConsumer(x, deps, now)
		return
	}

	raw, err := x.kong.Request.GetRawQuery()
	if err != nil {
		in.logOnce("get_raw_query", "genderize: kong.request.get_raw_query failed", "error", err.Error())
		x.fail(errInternal, quota.Result{})
		return
	}
	q := parseQuery(raw, c.MaxBatch, c.MaxNameLength)

	// Who pays: the client IP for the anonymous consumer, the consumer
	// otherwise.
	var (
		key, throttleKey string
		limit            int
		window           quota.Window
	)
	if c.isAnonymous(consumer) {
		ip, err := x.kong.Client.GetForwardedIp()
		if err != nil {
			in.logOnce("get_forwarded_ip", "genderize: kong.client.get_forwarded_ip failed", "error", err.Error())
			x.fail(errInternal, quota.Result{})
			return
		}
		key, throttleKey = "ip:"+ip, "ip:"+ip
		limit, window = c.IPLimit, c.ipWindow(now)
		x.window = quota.Result{Limit: limit, ResetAfter: window.ResetAfter()}
		if q.apikey {
			// key-auth maps a key it does not know to the anonymous
			// consumer: a key was sent, so it was not recognised.
			c.refuse(x, deps, errInvalidKey, key, limit, window)
			return
		}
	} else {
		id := consumer.Id
		if id == "" {
			id = consumer.Username
		}
		key, throttleKey = "consumer:"+id, "consumer:"+id
		window = quota.Month(now)
		sub := subscriptionOf(consumer.Tags, c.Plans, c.DefaultPlan, now)
		if sub.bad != "" {
			in.logOnce("tags "+consumer.Id+sub.bad, "genderize: consumer tags not understood", "consumer_id", consumer.Id, "username", consumer.Username, "problem", sub.bad)
		}
		if !sub.known {
			if sub.bad == "" {
				in.logOnce("plan "+consumer.Id+sub.planName, "genderize: consumer has a plan that is not in the plugin config, refusing it", "consumer_id", consumer.Id, "username", consumer.Username, "plan", sub.planName)
			}
			x.fail(errNotActive, quota.Result{ResetAfter: window.ResetAfter()})
			return
		}
		limit = sub.plan.Quota
		x.window = quota.Result{Limit: limit, ResetAfter: window.ResetAfter()}
		if sub.inactive != "" {
			c.refuse(x, deps, errNotActive, key, limit, window)
			return
		}
	}

	if q.problem != nil {
		c.refuse(x, deps, q.problem, key, limit, window)
		return
	}
	if ok, retryAfter := deps.throttle.Allow(throttleKey, now); !ok {
		state, ok := c.peek(x, deps, key, limit, window)
		if ok {
			x.exit(errTooLow.status, errTooLow.body, throttledHeaders(state, retryAfter))
		}
		return
	}

	// Predict before counting: a request that fails consumes nothing, and
	// a prediction needs no undoing.
	predictions, err := deps.names.Predict(q.names, q.country)
	if err != nil || len(predictions) != len(q.names) {
		in.logOnce("predict", "genderize: prediction failed", "error", fmt.Sprint(err), "names", len(q.names), "predictions", len(predictions))
		c.refuse(x, deps, errInternal, key, limit, window)
		return
	}

	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	state, err := deps.store.AllowN(ctx, key, limit, window, len(q.names))
	if err != nil {
		in.logOnce("store", "genderize: quota store failed", "error", err.Error())
		x.fail(errInternal, x.window)
		return
	}
	switch {
	case state.Allowed == 0 && state.Remaining == 0:
		x.fail(errLimitReached, state)
		return
	case state.Allowed == 0:
		// Some names are left, fewer than asked for: retry with fewer.
		x.fail(errTooLow, state)
		return
	}

	var body []byte
	if q.batch {
		body = engine.AppendJSONArray(make([]byte, 0, 80*len(predictions)), predictions)
	} else {
		body = predictions[0].AppendJSON(make([]byte, 0, 80))
	}
	x.exit(200, body, headers(state))
}

// noConsumer answers a request key-auth let through without a consumer: a
// CORS preflight (key-auth's run_on_preflight is off) or a route that lacks
// key-auth.
func (c *Config) noConsumer(x *exchange, deps *dependencies, now time.Time) {
	in := c.state
	method, err := x.kong.Request.GetMethod()
	if err != nil {
		in.logOnce("get_method", "genderize: kong.request.get_method failed", "error", err.Error())
		x.fail(errInternal, quota.Result{})
		return
	}
	if method != "OPTIONS" {
		in.logOnce("no consumer", "genderize: request without a consumer; key-auth with anonymous must run before genderize on this route", "method", method)
		x.fail(errInternal, quota.Result{})
		return
	}
	ip, err := x.kong.Client.GetForwardedIp()
	if err != nil {
		in.logOnce("get_forwarded_ip", "genderize: kong.client.get_forwarded_ip failed", "error", err.Error())
		x.fail(errInternal, quota.Result{})
		return
	}
	window := c.ipWindow(now)
	x.window = quota.Result{Limit: c.IPLimit, ResetAfter: window.ResetAfter()}
	state, ok := c.peek(x, deps, "ip:"+ip, c.IPLimit, window)
	if !ok {
		return
	}
	x.exit(204, nil, preflightHeaders(state))
}

// refuse answers e with the caller's window as it stands.
func (c *Config) refuse(x *exchange, deps *dependencies, e *apiError, key string, limit int, w quota.Window) {
	state, ok := c.peek(x, deps, key, limit, w)
	if ok {
		x.fail(e, state)
	}
}

// peek reads the caller's window without consuming; if the store cannot
// say, it answers 500 itself and returns false.
func (c *Config) peek(x *exchange, deps *dependencies, key string, limit int, w quota.Window) (quota.Result, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	state, err := deps.store.AllowN(ctx, key, limit, w, 0)
	if err != nil {
		c.state.logOnce("store", "genderize: quota store failed", "error", err.Error())
		x.fail(errInternal, x.window)
		return quota.Result{}, false
	}
	return state, true
}

func (c *Config) isAnonymous(consumer entities.Consumer) bool {
	return consumer.Username == c.AnonymousConsumer || consumer.Id == c.AnonymousConsumer
}

func (c *Config) ipWindow(now time.Time) quota.Window {
	return quota.Fixed(now, time.Duration(c.IPWindowSeconds)*time.Second)
}
