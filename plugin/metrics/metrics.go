// Package metrics counts what the genderize plugin server does and serves
// it to Prometheus. One plugin-server process serves every Kong worker of a
// node, so the figures are the node's.
//
// The request path records through the package functions Request and
// Store. They do nothing until Enable installs a Recorder; then they cost a
// few atomic adds: every labelled child is resolved once, when the
// Recorder is made, never per request.
package metrics

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/genderize-kong/genderize/engine"
	"github.com/genderize-kong/genderize/plugin/quota"
)

// Reason is why a request was refused; NoReason for an answer that is not
// a refusal (a 200, a preflight, an internal error).
type Reason uint8

// The refusal reasons, the values of genderize_refusals_total's reason.
const (
	NoReason Reason = iota
	InvalidKey
	InactiveSubscription
	MissingName
	InvalidName
	InvalidCountry
	LimitReached
	Throttled
	BatchOverRemaining
	numReasons
)

var reasonNames = [numReasons]string{
	NoReason:             "",
	InvalidKey:           "invalid_key",
	InactiveSubscription: "inactive_subscription",
	MissingName:          "missing_name",
	InvalidName:          "invalid_name",
	InvalidCountry:       "invalid_country",
	LimitReached:         "limit_reached",
	Throttled:            "throttled",
	BatchOverRemaining:   "batch_over_remaining",
}

func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return "reason(" + strconv.Itoa(int(r)) + ")"
}

// statuses are the answers the plugin makes (see SPEC.md); their series
// exist, at 0, from the start. Another status gets its series when first
// seen.
var statuses = []int{200, 204, 401, 402, 405, 422, 429, 500, 503}

// Buckets of the duration histograms, in seconds: the plugin answers in
// tens of microseconds to a few milliseconds; a quota store that hangs is
// cut at 5 s.
var (
	requestBuckets = []float64{25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 1}
	storeBuckets   = []float64{25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 1, 5}
)

// Options are where a Recorder reads what it does not count itself; the
// zero value reads the engine's process-wide figures.
type Options struct {
	// CacheStats returns the engine cache's hits and misses
	// (default engine.CacheStats).
	CacheStats func() (hits, misses uint64)
	// Databases describes the name databases being answered from
	// (default engine.SharedInfo).
	Databases func() []engine.Info
	// Policies are the quota policies whose series exist from the start
	// (default quota.Policies()); another gets its series when first seen.
	Policies []string
}

// Recorder holds the metrics of one process in its own registry.
type Recorder struct {
	reg *prometheus.Registry

	byStatus   [600]atomic.Pointer[prometheus.Counter] // index: HTTP status
	requests   *prometheus.CounterVec
	names      prometheus.Counter
	refusals   [numReasons]prometheus.Counter // NoReason's is nil
	duration   prometheus.Histogram
	storeErrs  *prometheus.CounterVec
	storeTimes *prometheus.HistogramVec
	policies   sync.Map // policy name -> *policy
	newMu      sync.Mutex
}

// policy is one quota policy's resolved children.
type policy struct {
	errs     prometheus.Counter
	duration prometheus.Observer
}

// New makes a Recorder with every genderize metric, the Go collector and
// the process collector registered in a registry of its own.
func New(opts Options) (*Recorder, error) {
	if opts.CacheStats == nil {
		opts.CacheStats = engine.CacheStats
	}
	if opts.Databases == nil {
		opts.Databases = engine.SharedInfo
	}
	if opts.Policies == nil {
		opts.Policies = quota.Policies()
	}
	r := &Recorder{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "genderize_requests_total",
			Help: "Answers of the genderize plugin, by HTTP status.",
		}, []string{"status"}),
		names: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "genderize_names_total",
			Help: "Names answered: every name of a 200 answer, null predictions included (the unit quotas count).",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "genderize_request_duration_seconds",
			Help:    "Time inside the plugin from its first PDK answer to its Exit.",
			Buckets: requestBuckets,
		}),
		storeErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "genderize_quota_store_errors_total",
			Help: "Quota store calls that failed (the request was answered 500 or 503), by policy.",
		}, []string{"policy"}),
		storeTimes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "genderize_quota_store_duration_seconds",
			Help:    "Duration of quota store calls, failed ones included, by policy.",
			Buckets: storeBuckets,
		}, []string{"policy"}),
	}
	refusals := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "genderize_refusals_total",
		Help: "Requests refused, by reason.",
	}, []string{"reason"})
	for reason := NoReason + 1; reason < numReasons; reason++ {
		r.refusals[reason] = refusals.WithLabelValues(reason.String())
	}
	for _, s := range statuses {
		r.status(s)
	}
	for _, p := range opts.Policies {
		r.policy(p)
	}
	cacheHits := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "genderize_cache_hits_total",
		Help: "Names the engine found in its answer cache.",
	}, func() float64 { h, _ := opts.CacheStats(); return float64(h) })
	cacheMisses := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "genderize_cache_misses_total",
		Help: "Names the engine looked up in the database because its cache did not have them.",
	}, func() float64 { _, m := opts.CacheStats(); return float64(m) })

	for _, c := range []prometheus.Collector{
		r.requests, r.names, refusals, r.duration, r.storeErrs, r.storeTimes,
		cacheHits, cacheMisses, databaseCollector{opts.Databases},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := r.reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: register: %w", err)
		}
	}
	return r, nil
}

// status returns the counter of status, making it on first use.
func (r *Recorder) status(status int) prometheus.Counter {
	if status < 0 || status >= len(r.byStatus) {
		return r.requests.WithLabelValues(strconv.Itoa(status))
	}
	if c := r.byStatus[status].Load(); c != nil {
		return *c
	}
	c := r.requests.WithLabelValues(strconv.Itoa(status))
	r.byStatus[status].CompareAndSwap(nil, &c)
	return c
}

// policy returns the children of a quota policy, making them on first use.
func (r *Recorder) policy(name string) *policy {
	if p, ok := r.policies.Load(name); ok {
		return p.(*policy)
	}
	r.newMu.Lock()
	defer r.newMu.Unlock()
	if p, ok := r.policies.Load(name); ok {
		return p.(*policy)
	}
	p := &policy{errs: r.storeErrs.WithLabelValues(name), duration: r.storeTimes.WithLabelValues(name)}
	r.policies.Store(name, p)
	return p
}

// Request records one answer: its status, the names answered (counted
// for a 200 only), why it was refused (NoReason if it was not), and the
// time the plugin spent on it.
func (r *Recorder) Request(status, names int, reason Reason, d time.Duration) {
	r.status(status).Inc()
	if status == http.StatusOK && names > 0 {
		r.names.Add(float64(names))
	}
	if reason > NoReason && reason < numReasons {
		r.refusals[reason].Inc()
	}
	r.duration.Observe(d.Seconds())
}

// Store records one call to the quota store of policy.
func (r *Recorder) Store(policy string, d time.Duration, err error) {
	p := r.policy(policy)
	p.duration.Observe(d.Seconds())
	if err != nil {
		p.errs.Inc()
	}
}

// Gatherer is the Recorder's registry, for tests and other exporters.
func (r *Recorder) Gatherer() prometheus.Gatherer { return r.reg }

// Handler serves the metrics in Prometheus' formats. A collector that
// fails is logged and left out; the rest is served.
func (r *Recorder) Handler(log *slog.Logger) http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{
		ErrorLog:            slogPrintln{log},
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
	})
}

type slogPrintln struct{ log *slog.Logger }

func (l slogPrintln) Println(v ...any) { l.log.Error("metrics: " + fmt.Sprint(v...)) }

// Listen opens the metrics address, so that a bad or taken address is
// known before the plugin server starts.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listen %s: %w", addr, err)
	}
	return ln, nil
}

// Serve serves /metrics on ln until it fails.
func (r *Recorder) Serve(ln net.Listener, log *slog.Logger) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", r.Handler(log))
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return srv.Serve(ln)
}

// active is the Recorder the package functions record into; nil when
// metrics are off.
var active atomic.Pointer[Recorder]

// Enable makes r the process's Recorder (nil turns recording off) and
// has the engine count its cache hits and misses while one is set.
func Enable(r *Recorder) {
	active.Store(r)
	engine.CountCache(r != nil)
}

// Request records one answer into the process's Recorder, if any; see
// Recorder.Request.
func Request(status, names int, reason Reason, d time.Duration) {
	if r := active.Load(); r != nil {
		r.Request(status, names, reason, d)
	}
}

// Store records one quota store call into the process's Recorder, if any.
func Store(policy string, d time.Duration, err error) {
	if r := active.Load(); r != nil {
		r.Store(policy, d, err)
	}
}

// On reports whether a Recorder is enabled, for callers that would
// otherwise read the clock only to record.
func On() bool { return active.Load() != nil }
