package plugin

import (
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/Kong/go-pdk"
	"github.com/Kong/go-pdk/server/kong_plugin_protocol"

	"github.com/genderize-kong/genderize/engine"
	"github.com/genderize-kong/genderize/plugin/quota"
	"github.com/genderize-kong/genderize/plugin/throttle"
)

// localStoreTimeout bounds how long a request waits for the local quota
// store (a group commit on a busy disk) before failing closed.
const localStoreTimeout = 5 * time.Second

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
	// storeTimeout bounds every store call of a request: the policy's
	// timeout, so that no request waits longer.
	storeTimeout time.Duration
}

// instance is the per-instance state go-pdk cannot see. Kong calls the
// handlers of one instance concurrently.
type instance struct {
	now  func() time.Time
	open func(*Config) (*dependencies, error)

	validateOnce sync.Once
	configErr    error
	log          *limitedLogger
	// consumers is this instance's consumer cache: a config change makes
	// a new instance, and with it an empty cache.
	consumers *consumerCache

	deps   atomic.Pointer[dependencies]
	openMu sync.Mutex
}

func newInstance() *instance {
	return &instance{now: time.Now, open: openShared, consumers: newConsumerCache()}
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
	store, err := quota.Open(c.QuotaPolicy, c.quotaOptions())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.quotaField(), err)
	}
	store = timeStore(c.QuotaPolicy, store)
	return &dependencies{
		names:        names,
		store:        store,
		throttle:     throttle.Shared(c.ThrottleRate, c.ThrottleBurst),
		storeTimeout: c.storeTimeout(),
	}, nil
}

// ready validates the config on first use (go-pdk has no start hook) and
// opens the dependencies. A bad config stays bad for the instance's life; a
// failed open is retried by the next request.
func (c *Config) ready() (*dependencies, bool) {
	in := c.state
	in.validateOnce.Do(func() {
		// The logger is made here rather than in New so that it is the
		// default logger of the moment the instance first serves.
		in.log = newLimitedLogger(slog.Default().With("plugin", "genderize"))
		if in.configErr = c.validate(); in.configErr != nil {
			in.log.Error("genderize: bad plugin config, answering 500 until it is fixed", slog.Any("error", in.configErr))
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
		in.log.once(in.now(), "open", "genderize: cannot open its files, answering 500", slog.Any("error", err))
		return nil, false
	}
	in.deps.Store(d)
	return d, true
}

// Access answers the request. It is the plugin's only phase: the route has
// no service, every request ends here with one Exit.
//
// It is a thin adapter in the manner of Kong's rate-limiting handler: it
// gathers the facts with at most three PDK calls, decide answers, and
// respond makes the headers and calls Exit. The calls, in order:
//
//  1. kong.nginx.get_var("request"): the request line, read as bytes. It
//     carries the method and the raw query in one round trip (the method
//     decides 405 and preflights for every caller, key-less ones
//     included, who also need their IP), and raw bytes that are not
//     UTF-8 arrive intact, where get_raw_query's protobuf string would
//     be refused by Go's decoder.
//  2. kong.client.get_consumer: who key-auth says the caller is, with the
//     tags that carry plan and subscription; skipped when the request's
//     API key was recognised less than consumer_cache_ttl ago (see
//     consumerCache), so that a repeated key costs two calls.
//  3. kong.client.get_forwarded_ip: only for callers counted per IP (the
//     anonymous consumer, a preflight without a consumer).
//  4. kong.response.exit, which ends the request.
//
// Contract with the plugin server (plugin/pluginserver): Access answers
// every request with exactly one Exit and then closes the connection
// (Response.Close), making no PDK call after it; the server then writes
// nothing more on it. Panics are recovered here, first inside decide (the
// answer keeps the caller's window) and then around the PDK calls (a 500
// with empty rate headers if nothing was sent yet); the server's own
// recover is the last resort for handlers that do not, and it can only
// close the connection, which Kong answers with its own 500.
func (c *Config) Access(kong *pdk.PDK) {
	exited := false
	var start time.Time // the first PDK answer, for the metrics
	defer func() {
		if p := recover(); p != nil {
			slog.Error("genderize: panic while answering", "plugin", "genderize", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			if !exited {
				d := refusal(errInternal, reasonInternal, quota.Result{})
				observe(&d, start)
				respond(kong, d)
			}
		}
	}()
	d := c.access(kong, &start)
	exited = true
	observe(&d, start)
	respond(kong, d)
}

// access gathers the facts and decides; it answers nothing itself.
func (c *Config) access(kong *pdk.PDK, start *time.Time) decision {
	if c.state == nil {
		slog.Error("genderize: config not made by New", "plugin", "genderize")
		return refusal(errInternal, reasonInternal, quota.Result{})
	}
	in := c.state
	deps, ok := c.ready()
	if !ok {
		return refusal(errInternal, reasonInternal, quota.Result{})
	}
	var f facts
	line, err := requestLine(kong)
	*start = started()
	if err != nil {
		return in.log.failed(in.now(), "get_var request", err)
	}
	f.method, f.query = splitRequestLine(line)
	if err := c.identify(kong, &f); err != nil {
		return in.log.failed(in.now(), "get_consumer", err)
	}
	if c.needsClientIP(&f) {
		if f.clientIP, err = kong.Client.GetForwardedIp(); err != nil {
			return in.log.failed(in.now(), "get_forwarded_ip", err)
		}
	}
	return c.answer(deps, &f)
}

// identify sets f.consumer: from the consumer cache when the request's API
// key was recognised within consumer_cache_ttl, from Kong otherwise.
func (c *Config) identify(kong *pdk.PDK, f *facts) error {
	if c.ConsumerCacheTTL <= 0 || f.method == "OPTIONS" {
		// key-auth skips preflights: whatever key they carry, there is
		// no consumer to reuse.
		var err error
		f.consumer, err = kong.Client.GetConsumer()
		return err
	}
	in := c.state
	key, position, cacheable := apikeyArgument(f.query)
	if cacheable {
		if consumer, ok := in.consumers.get(key, position, in.now()); ok {
			f.consumer = consumer
			return nil
		}
	}
	consumer, err := kong.Client.GetConsumer()
	if err != nil {
		return err
	}
	f.consumer = consumer
	if cacheable && f.hasConsumer() && !c.isAnonymous(consumer) {
		in.consumers.put(key, position, consumer, in.now(), time.Duration(c.ConsumerCacheTTL)*time.Second)
	}
	return nil
}

// answer decides at the instance's time and logs what the decision asks.
func (c *Config) answer(deps *dependencies, f *facts) decision {
	in := c.state
	now := in.now()
	d := c.decide(deps, f, now)
	if d.problem != nil {
		in.log.once(now, d.problem.key, d.problem.msg, d.problem.attrs...)
	}
	return d
}

// requestVar is the argument of the request-line call, made once.
var requestVar = &kong_plugin_protocol.String{V: "request"}

// requestLine is nginx's $request, the request line exactly as the client
// sent it ("GET /?name=x HTTP/1.1"). Kong sends it in a protobuf string
// field without checking it is UTF-8; declaring the answer as bytes (same
// field number) keeps Go's decoder from refusing raw bytes.
func requestLine(kong *pdk.PDK) (string, error) {
	var out kong_plugin_protocol.ByteString
	if err := kong.Nginx.Ask("kong.nginx.get_var", requestVar, &out); err != nil {
		return "", err
	}
	// The decoder made out.V for this answer alone and nothing writes to
	// it again: viewing it as a string saves a copy of up to the whole
	// query (kilobytes for a batch).
	return unsafe.String(unsafe.SliceData(out.V), len(out.V)), nil
}

// splitRequestLine returns the method and the raw query of a request line
// as nginx's $args, which key-auth reads: the target starts after any run
// of spaces, the query after its first '?', and a fragment ('#' on) is
// not part of it. Reading more than $args would let names and keys that
// Kong never saw into the answer and the consumer cache.
func splitRequestLine(line string) (method, query string) {
	method, target, _ := strings.Cut(line, " ")
	target = strings.TrimLeft(target, " ")
	target, _, _ = strings.Cut(target, " ")
	target, _, _ = strings.Cut(target, "#")
	_, query, _ = strings.Cut(target, "?")
	return method, query
}

// respond is the one place an answer leaves: the headers made from the
// decision, then go-pdk's kong.Response.Exit with them already in the
// form Kong receives.
func respond(kong *pdk.PDK, d decision) {
	// Kong does not answer an Exit in the access phase: the error is the
	// connection closing, as with go-pdk's Exit, which ignores it too.
	_ = kong.Response.Ask("kong.response.exit", exitArgs(&d), nil)
	// Ask has encoded the body into the frame it sent: the buffer is free.
	releaseBody(d.pooledBody)
	// Exit closes the connection to Kong: nothing may follow it.
	kong.Response.Close()
}
