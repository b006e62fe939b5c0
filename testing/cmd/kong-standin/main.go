// Command kong-standin serves the genderize plugin over HTTP the way Kong
// Gateway 3.x would: it starts the plugin server binary, speaks Kong's
// plugin-server protocol to it and applies key-auth from kong.yml in
// front of it. With -bench it instead measures the protocol layer under
// load against the plugin and against the no-op plugin.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/genderize-kong/genderize/testing/standin"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kong-standin:", err)
		os.Exit(1)
	}
}

type flags struct {
	listen, kongYML, plugin, db, state string
	trustedIPs, realIPHeader           string
	maxURIArgs                         int
	debugHeaders                       bool
	logLevel                           string
	standsFor                          string
	pluginArgs                         string

	bench       bool
	noop        string
	noopStock   string
	conns       int
	duration    time.Duration
	maxRequests int64
	cpuProfile  string
	compare     string
	compareYML  string
	cacheOff    bool
	compareArgs string
}

func run() error {
	var f flags
	flag.StringVar(&f.listen, "listen", "127.0.0.1:8000", "address of the HTTP proxy listener")
	flag.StringVar(&f.kongYML, "kong-yml", "kong/kong.yml", "Kong declarative configuration")
	flag.StringVar(&f.plugin, "plugin", "bin/genderize", "plugin server binary (its file name is the plugin name)")
	flag.StringVar(&f.db, "db", "", "names database; overrides database_path in the plugin config")
	flag.StringVar(&f.state, "state", ".state", "directory for quota files; sets quota_path=<state>/quota.db")
	flag.StringVar(&f.trustedIPs, "trusted-ips", "", "comma-separated CIDRs whose real-IP header is trusted (Kong trusted_ips)")
	flag.StringVar(&f.realIPHeader, "real-ip-header", "X-Forwarded-For", "header carrying the client address from trusted peers (Kong real_ip_header)")
	flag.IntVar(&f.maxURIArgs, "max-uri-args", 1000, "query arguments key-auth reads (Kong lua_max_uri_args)")
	flag.BoolVar(&f.debugHeaders, "debug-headers", false, "add "+standin.HeaderPDKCalls+" and "+standin.HeaderPDKMethods+" to responses")
	flag.StringVar(&f.pluginArgs, "plugin-args", "", "more arguments of the plugin server's start command, space-separated (e.g. '-metrics-listen 127.0.0.1:9542')")
	flag.StringVar(&f.compareArgs, "compare-args", "", "-bench: also measure the plugin started with these more arguments, next to it without (e.g. '-metrics-listen 127.0.0.1:0')")
	flag.StringVar(&f.standsFor, "stands-for", "", "name of the kong.yml plugin the -plugin binary replaces (default: its own name)")
	flag.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	flag.BoolVar(&f.bench, "bench", false, "measure the protocol layer instead of serving")
	flag.StringVar(&f.noop, "noop", "bin/noop", "-bench: no-op plugin on the plugin's own server, the protocol's floor")
	flag.StringVar(&f.noopStock, "noop-stock", "bin/noop-gopdk", "-bench: no-op plugin on go-pdk's stock server, what a typical Go plugin costs; empty skips it")
	flag.IntVar(&f.conns, "conns", 16, "-bench: concurrent connections")
	flag.DurationVar(&f.duration, "duration", 3*time.Second, "-bench: duration of each run")
	flag.Int64Var(&f.maxRequests, "max-requests", 200000, "-bench: request cap of each run")
	flag.StringVar(&f.compare, "compare", "", "-bench: an earlier genderize binary to measure in the same rounds (its rows are labelled \"before\")")
	flag.StringVar(&f.compareYML, "compare-kong-yml", "", "-bench: the kong.yml of the -compare binary (its schema may lack newer fields); default -kong-yml")
	flag.BoolVar(&f.cacheOff, "cache-off", false, "-bench: also measure single and batch with consumer_cache_ttl 0 in the same rounds")
	flag.StringVar(&f.cpuProfile, "cpuprofile", "", "-bench: write the stand-in's CPU profile of the measured rounds to this file")
	flag.Parse()

	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f.bench {
		return bench(ctx, f, log)
	}
	return serve(ctx, f, log)
}

func options(f flags, plugin, state string, log *slog.Logger) (standin.Options, error) {
	decl, err := standin.LoadDeclarative(f.kongYML)
	if err != nil {
		return standin.Options{}, err
	}
	overrides := map[string]any{}
	if f.db != "" {
		abs, err := filepath.Abs(f.db)
		if err != nil {
			return standin.Options{}, fmt.Errorf("-db: %w", err)
		}
		if _, err := os.Stat(abs); err != nil {
			return standin.Options{}, fmt.Errorf("-db: %w", err)
		}
		overrides["database_path"] = abs
	}
	if state != "" {
		abs, err := filepath.Abs(state)
		if err != nil {
			return standin.Options{}, fmt.Errorf("-state: %w", err)
		}
		if err := os.MkdirAll(abs, 0o755); err != nil {
			return standin.Options{}, fmt.Errorf("-state: %w", err)
		}
		overrides["quota_path"] = filepath.Join(abs, "quota.db")
	}
	var trusted []netip.Prefix
	for _, s := range strings.Split(f.trustedIPs, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return standin.Options{}, fmt.Errorf("-trusted-ips %q: %w", s, err)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		trusted = append(trusted, p)
	}
	return standin.Options{
		Declarative:     decl,
		PluginPath:      plugin,
		PluginArgs:      strings.Fields(f.pluginArgs),
		ConfigOverrides: overrides,
		TrustedIPs:      trusted,
		RealIPHeader:    f.realIPHeader,
		MaxURIArgs:      f.maxURIArgs,
		Logger:          log,
		DebugHeaders:    f.debugHeaders,
		StandsFor:       f.standsFor,
	}, nil
}

func serve(ctx context.Context, f flags, log *slog.Logger) error {
	opts, err := options(f, f.plugin, f.state, log)
	if err != nil {
		return err
	}
	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	s, err := standin.Start(startCtx, opts)
	cancel()
	if err != nil {
		return err
	}
	defer s.Close()

	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	base := "http://" + ln.Addr().String() + "/"
	fmt.Printf("kong-standin: %s plugin %s (pid %d) on %s\n", s.Plugin().Name, s.Plugin().Version, s.PluginPID(), base)
	fmt.Printf("  curl '%s?name=peter'\n", base)
	for _, k := range s.DemoKeys() {
		fmt.Printf("  curl -g '%s?name[]=anna&name[]=luca&apikey=%s'   # %s %s\n", base, url.QueryEscape(k.Key), k.Username, strings.Join(k.Tags, " "))
	}
	if addr := flagValue(opts.PluginArgs, "metrics-listen"); addr != "" {
		fmt.Printf("  curl %s/metrics   # the plugin's Prometheus metrics\n", addr)
	}
	fmt.Println("Ctrl-C stops.")

	select {
	case <-ctx.Done():
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	}
	fmt.Println("kong-standin: stopping")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// flagValue returns the value of -name (or --name) in args, "" if absent.
func flagValue(args []string, name string) string {
	for i, a := range args {
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// benchNames are common names of several countries and scripts; single
// requests cycle through them, batches take 100 in turn.
var benchNames = strings.Fields(`peter anna luca maria john mary james linda robert patricia michael
jennifer william elizabeth david barbara richard susan joseph jessica thomas sarah charles karen
daniel nancy matthew lisa anthony betty mark margaret donald sandra steven ashley paul kimberly
andrew emily joshua donna kenneth michelle kevin dorothy brian carol george amanda timothy melissa
ronald deborah edward stephanie jason rebecca jeffrey sharon ryan laura jacob cynthia gary kathleen
nicholas amy eric angela jonathan shirley stephen anna larry brenda justin pamela scott emma
brandon nicole benjamin helen samuel samantha gregory katherine alexander christine frank debra
patrick rachel raymond carolyn jack janet dennis catherine jerry heather tyler diane aaron ruth
jose julie adam olivia henry joyce nathan virginia douglas victoria zachary kelly kyle lauren
noah christina ethan joan jeremy evelyn walter judith christian megan keith andrea roger cheryl
terry hannah austin jacqueline sean martha gerald gloria carl teresa harold ann dylan sara arthur
madison lawrence frances jordan kathryn jesse janice bryan jean billy abigail bruce alice gabriel
judy joe sophia logan grace albert denise willie amber alan doris eugene marilyn russell danielle
vincent beverly philip isabella bobby theresa johnny diana bradley natalie roy brittany ralph
charlotte louis marie kim`)

func bench(ctx context.Context, f flags, log *slog.Logger) error {
	// The plugin logs every request it refuses; keep the measured path
	// free of a busy terminal.
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	state, err := os.MkdirTemp("", "kong-standin-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)

	key := "demo-pro-key"
	single := func(i int64) *standin.Request {
		return benchRequest("name=" + benchNames[i%int64(len(benchNames))] + "&apikey=" + key)
	}
	// The batch queries are made before the measured rounds: building
	// one costs the stand-in's side a hundred formatted writes, which
	// Kong does not pay.
	batchQueries := make([]string, len(benchNames))
	for i := range batchQueries {
		var q strings.Builder
		for j := range 100 {
			fmt.Fprintf(&q, "name%%5B%%5D=%s&", benchNames[(i+j)%len(benchNames)])
		}
		q.WriteString("apikey=" + key)
		batchQueries[i] = q.String()
	}
	batch := func(i int64) *standin.Request {
		return benchRequest(batchQueries[i%int64(len(batchQueries))])
	}

	type run struct {
		label  string
		plugin string
		args   []string // more start-command arguments (-compare-args)
		make   func(int64) *standin.Request
		names  int
		cap    int64
		s      *standin.Standin
		result standin.LoadResult
		// CPU time of the plugin server and of the stand-in (Kong's
		// side) during the measured rounds.
		pluginCPU, standinCPU time.Duration
		// yml replaces -kong-yml for this run.
		yml string
		// overrides are set over the plugin config for this run.
		overrides map[string]any
	}
	noop := &run{label: "noop (own server)", plugin: f.noop, make: single, names: 1, cap: f.maxRequests}
	single1 := &run{label: "genderize single", plugin: f.plugin, make: single, names: 1, cap: f.maxRequests}
	batch100 := &run{label: "genderize batch 100", plugin: f.plugin, make: batch, names: 100, cap: f.maxRequests / 20}
	// The same PDK calls as a single name, without the quota and the
	// engine: what the protocol alone costs the plugin.
	refused := &run{label: "genderize 422 (diag.)", plugin: f.plugin, make: func(int64) *standin.Request { return benchRequest("name=&apikey=" + key) }, names: 0, cap: f.maxRequests}
	runs := []*run{noop}
	var noopStock *run
	if f.noopStock != "" {
		noopStock = &run{label: "noop (go-pdk server)", plugin: f.noopStock, make: single, names: 1, cap: f.maxRequests}
		runs = append(runs, noopStock)
	}
	var before []*run
	if f.compare != "" {
		before = []*run{
			{label: "before single", plugin: f.compare, make: single, names: 1, cap: f.maxRequests, yml: f.compareYML},
			{label: "before batch 100", plugin: f.compare, make: batch, names: 100, cap: f.maxRequests / 20, yml: f.compareYML},
		}
		runs = append(runs, before...)
	}
	var cacheOff []*run
	if f.cacheOff {
		off := map[string]any{"consumer_cache_ttl": 0}
		cacheOff = []*run{
			{label: "single, cache off", plugin: f.plugin, make: single, names: 1, cap: f.maxRequests, overrides: off},
			{label: "batch 100, cache off", plugin: f.plugin, make: batch, names: 100, cap: f.maxRequests / 20, overrides: off},
		}
		runs = append(runs, cacheOff...)
	}
	var single1With, batch100With *run
	if compare := strings.Fields(f.compareArgs); len(compare) > 0 {
		// Each right after its counterpart: the two see the same moment
		// of a shared machine.
		single1With = &run{label: "genderize single +args", plugin: f.plugin, args: compare, make: single, names: 1, cap: f.maxRequests}
		batch100With = &run{label: "genderize batch 100 +args", plugin: f.plugin, args: compare, make: batch, names: 100, cap: f.maxRequests / 20}
		runs = append(runs, single1, single1With, batch100, batch100With, refused)
	} else {
		runs = append(runs, single1, batch100, refused)
	}
	defer func() {
		for _, r := range runs {
			if r.s != nil {
				r.s.Close()
			}
		}
	}()
	for _, r := range runs {
		rf := f
		if r.yml != "" {
			rf.kongYML = r.yml
		}
		opts, err := options(rf, r.plugin, state, quiet)
		if err != nil {
			return err
		}
		opts.StandsFor = "genderize"
		if r.plugin != f.plugin {
			opts.PluginArgs = nil // -plugin-args are the plugin's, not the no-ops'
		}
		opts.PluginArgs = append(opts.PluginArgs, r.args...)
		// The bench measures the protocol, not the limits: lift the
		// throttle and give the key's plan room for the whole run.
		opts.ConfigOverrides["throttle_rate"] = 1000000
		opts.ConfigOverrides["throttle_burst"] = 1000000
		opts.ConfigOverrides["plans"] = map[string]any{"pro": map[string]any{"quota": 1000000000}, "free": map[string]any{"quota": 2500}, "basic": map[string]any{"quota": 100000}}
		maps.Copy(opts.ConfigOverrides, r.overrides)
		if r.s, err = standin.Start(ctx, opts); err != nil {
			return fmt.Errorf("%s: %w", r.label, err)
		}
		// Warm up: instance start, connection pool, caches.
		standin.Load(ctx, r.s, standin.LoadOptions{Conns: f.conns, Duration: 300 * time.Millisecond, MaxRequests: 2000, Request: r.make, NamesPerRequest: r.names})
	}
	// Alternate short rounds so that load from elsewhere on a shared
	// machine falls on every run alike.
	const rounds = 5
	if f.cpuProfile != "" {
		stop, err := startCPUProfile(f.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	for range rounds {
		for _, r := range runs {
			left := r.cap - r.result.Requests
			if left <= 0 {
				continue
			}
			pluginBefore, selfBefore := processCPU(r.s.PluginPID()), selfCPU()
			r.result.Add(standin.Load(ctx, r.s, standin.LoadOptions{Conns: f.conns, Duration: f.duration / rounds, MaxRequests: left, Request: r.make, NamesPerRequest: r.names}))
			r.pluginCPU += processCPU(r.s.PluginPID()) - pluginBefore
			r.standinCPU += selfCPU() - selfBefore
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	fmt.Printf("protocol benchmark: %d connections, %v per run in %d alternating rounds, key %s, no HTTP in the measured path\n", f.conns, f.duration, rounds, key)
	fmt.Printf("%-25s %10s %10s %12s %10s %10s %6s %12s %12s  %s\n", "run", "requests", "req/s", "names/s", "p50", "p99", "pdk", "plugin cpu", "kong cpu", "statuses")
	for _, r := range runs {
		res := r.result
		statuses := make([]string, 0, len(res.Statuses))
		for st, n := range res.Statuses {
			statuses = append(statuses, fmt.Sprintf("%d:%d", st, n))
		}
		slices.Sort(statuses)
		fmt.Printf("%-25s %10d %10.0f %12.0f %10v %10v %6d %10.0fµs %10.0fµs  %s\n", r.label, res.Requests, res.RequestsPerSecond(), res.NamesPerSecond(),
			res.P50.Round(time.Microsecond), res.P99.Round(time.Microsecond), res.MaxPDKCalls,
			perRequest(r.pluginCPU, res.Requests), perRequest(r.standinCPU, res.Requests), strings.Join(statuses, " "))
	}
	floor := noop.result.RequestsPerSecond()
	ratio := single1.result.RequestsPerSecond() / floor
	verdict := "meets"
	if ratio < 0.6 {
		verdict = "MISSES"
	}
	fmt.Printf("single-name throughput = %.0f%% of the no-op baseline on the same server (target >= 60%%: %s)\n", ratio*100, verdict)
	if noopStock != nil {
		fmt.Printf("single-name throughput = %.0f%% of the no-op on go-pdk's stock server\n", single1.result.RequestsPerSecond()/noopStock.result.RequestsPerSecond()*100)
	}
	fmt.Printf("batch-100 names/s = %.1fx the no-op baseline's requests/s (batch-100 requests/s = %.0f%% of it)\n", batch100.result.NamesPerSecond()/floor, batch100.result.RequestsPerSecond()/floor*100)
	if cacheOff != nil {
		fmt.Printf("consumer cache off: single %.0f%%, batch-100 %.0f%% of the no-op; on/off: single %.2f, batch-100 %.2f\n",
			cacheOff[0].result.RequestsPerSecond()/floor*100, cacheOff[1].result.RequestsPerSecond()/floor*100,
			single1.result.RequestsPerSecond()/cacheOff[0].result.RequestsPerSecond(), batch100.result.RequestsPerSecond()/cacheOff[1].result.RequestsPerSecond())
	}
	if before != nil {
		fmt.Printf("before: single %.0f%%, batch-100 %.0f%% of the no-op; now/before: single %.2f, batch-100 %.2f\n",
			before[0].result.RequestsPerSecond()/floor*100, before[1].result.RequestsPerSecond()/floor*100,
			single1.result.RequestsPerSecond()/before[0].result.RequestsPerSecond(), batch100.result.RequestsPerSecond()/before[1].result.RequestsPerSecond())
	}
	fmt.Printf("protocol alone (%d PDK calls, request refused before quota and engine) = %.0f%% of the no-op baseline\n", refused.result.MaxPDKCalls, refused.result.RequestsPerSecond()/floor*100)
	checked := append([]*run{single1, batch100}, cacheOff...)
	if single1With != nil {
		fmt.Printf("with %s: single-name req/s = %.1f%%, batch-100 names/s = %.1f%% of the plugin without\n", f.compareArgs,
			single1With.result.RequestsPerSecond()/single1.result.RequestsPerSecond()*100,
			batch100With.result.NamesPerSecond()/batch100.result.NamesPerSecond()*100)
		checked = append(checked, single1With, batch100With)
	}
	for _, r := range checked {
		if r.result.Statuses[http.StatusOK] != r.result.Requests {
			return fmt.Errorf("%s: not every request succeeded: %v", r.label, r.result.Statuses)
		}
	}
	return nil
}

// startCPUProfile profiles the stand-in until stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	out, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		out.Close()
		return nil, fmt.Errorf("-cpuprofile %s: %w", path, err)
	}
	return func() {
		pprof.StopCPUProfile()
		out.Close()
	}, nil
}

func benchRequest(rawQuery string) *standin.Request {
	return &standin.Request{
		Method:      http.MethodGet,
		Scheme:      "http",
		Host:        "127.0.0.1",
		Port:        8000,
		Path:        "/",
		RawQuery:    rawQuery,
		Header:      http.Header{"User-Agent": {"kong-standin-bench"}},
		HTTPVersion: 1.1,
		RemoteAddr:  netip.MustParseAddrPort("127.0.0.1:40000"),
	}
}

func perRequest(d time.Duration, n int64) float64 {
	if n == 0 {
		return 0
	}
	return float64(d.Microseconds()) / float64(n)
}

// processCPU is the user and system time a process used so far, from
// /proc (Linux); 0 where that is not available.
func processCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name may hold spaces: fields start after its ")".
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	// USER_HZ is 100 on Linux.
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// selfCPU is the stand-in's own user and system time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
