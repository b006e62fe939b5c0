// Package standin plays Kong Gateway 3.x around an external Go plugin
// server: it starts the real plugin binary as Kong does, speaks Kong's
// ProtoBuf:1 plugin-server protocol to it, applies key-auth from a
// declarative kong.yml in front of it, and answers every PDK call with
// Kong's semantics. Kong itself cannot run on the development machines;
// this is the closest real thing for `make run`, the conformance suite
// and the protocol benchmark.
package standin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a stand-in.
type Options struct {
	// Declarative is the parsed kong.yml.
	Declarative *Declarative
	// PluginPath is the plugin server binary; its file name is the
	// plugin's name, as for Kong's pluginserver_names.
	PluginPath string
	// PluginArgs are added to the plugin server's start command after
	// -kong-prefix, as in Kong's pluginserver_<name>_start_cmd (say
	// -metrics-listen 127.0.0.1:9542); the -dump query gets none.
	PluginArgs []string
	// StandsFor is the name of the kong.yml plugin the server's plugin
	// takes the place of; default its own name. The benchmark runs the
	// no-op plugin in place of genderize this way.
	StandsFor string
	// ConfigOverrides replaces fields of the plugin's config from
	// kong.yml (the paths of the database and the quota files, say).
	ConfigOverrides map[string]any
	// TrustedIPs are Kong's trusted_ips: only requests from these peers
	// have RealIPHeader honoured for the client address.
	TrustedIPs []netip.Prefix
	// RealIPHeader is Kong's real_ip_header (real_ip_recursive off: the
	// last address of the header is the client). Default X-Forwarded-For.
	RealIPHeader string
	// MaxURIArgs is Kong's lua_max_uri_args, the number of query
	// arguments key-auth sees. Default 1000, as the shipped kong.conf.
	MaxURIArgs int
	// PoolSize bounds the idle connections kept to the plugin server.
	PoolSize int
	// Prefix is the -kong-prefix directory for the socket; a new
	// temporary directory when empty.
	Prefix string
	// Logger receives the stand-in's and the plugin's logs.
	Logger *slog.Logger
	// DebugHeaders adds X-Standin-Pdk-Calls and X-Standin-Pdk-Methods to
	// HTTP responses the plugin made.
	DebugHeaders bool
	// OnResponse, when set, sees every response the stand-in makes.
	OnResponse func(*Request, *Response)
}

// Headers of the opt-in PDK call count on HTTP responses.
const (
	HeaderPDKCalls   = "X-Standin-Pdk-Calls"
	HeaderPDKMethods = "X-Standin-Pdk-Methods"
)

// Stand-in is one Kong node with one worker.
type Standin struct {
	opts      Options
	log       *slog.Logger
	server    *pluginServer
	authMu    sync.RWMutex        // guards keyAuth: ReplaceConsumers swaps it
	keyAuth   map[string]*keyAuth // per route id
	configs   map[string]map[string]any
	keys      map[string]string // __key__ per route id
	nodeID    string
	ownPrefix string

	maxCalls atomic.Int64
	events   atomic.Int64
	closing  sync.Once
}

// Start starts the plugin server and prepares the routes.
func Start(ctx context.Context, opts Options) (*Standin, error) {
	if opts.Declarative == nil {
		return nil, fmt.Errorf("stand-in: no declarative config")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.RealIPHeader == "" {
		opts.RealIPHeader = "X-Forwarded-For"
	}
	if opts.MaxURIArgs == 0 {
		opts.MaxURIArgs = 1000
	}
	if opts.PoolSize == 0 {
		opts.PoolSize = 64
	}
	s := &Standin{
		opts:    opts,
		log:     opts.Logger,
		keyAuth: map[string]*keyAuth{},
		configs: map[string]map[string]any{},
		keys:    map[string]string{},
		nodeID:  stableID("node", fmt.Sprint(os.Getpid(), time.Now().UnixNano())),
	}
	if opts.Prefix == "" {
		// Unix socket paths are short (108 bytes): keep the directory
		// near the root of the temporary directory.
		dir, err := os.MkdirTemp("", "kong-standin-")
		if err != nil {
			return nil, fmt.Errorf("stand-in prefix directory: %w", err)
		}
		s.opts.Prefix, s.ownPrefix = dir, dir
	}
	srv, err := startPluginServer(ctx, opts.PluginPath, opts.PluginArgs, s.opts.Prefix, opts.PoolSize, opts.Logger)
	if err != nil {
		s.removePrefix()
		return nil, err
	}
	s.server = srv
	if err := s.prepareRoutes(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Standin) removePrefix() {
	if s.ownPrefix != "" {
		_ = os.RemoveAll(s.ownPrefix)
	}
}

// prepareRoutes checks each route's plugins against what the stand-in can
// run and builds the plugin config as Kong hands it to the server.
func (s *Standin) prepareRoutes() error {
	name := s.server.name
	if s.opts.StandsFor != "" {
		name = s.opts.StandsFor
	}
	fields := schemaFields(s.server.info.Schema)
	for i := range s.opts.Declarative.Routes {
		r := &s.opts.Declarative.Routes[i]
		for _, p := range r.Plugins {
			switch p.Name {
			case "key-auth":
				conf, err := keyAuthConfig(p.Config)
				if err != nil {
					return fmt.Errorf("route %q: %w", r.Name, err)
				}
				s.keyAuth[r.ID] = newKeyAuth(conf, s.opts.Declarative.Consumers, s.opts.MaxURIArgs)
			case name:
				conf := map[string]any{}
				for _, f := range fields {
					conf[f] = nil // Kong fills absent fields with their default, here null
				}
				for k, v := range p.Config {
					if fields != nil && !slices.Contains(fields, k) {
						return fmt.Errorf("route %q plugin %s: schema violation (config.%s: unknown field)", r.Name, name, k)
					}
					conf[k] = v
				}
				maps.Copy(conf, s.opts.ConfigOverrides)
				conf["route_id"] = r.ID
				conf["__plugin_id"] = p.ID
				key := fmt.Sprintf("plugins:%s:%s::::%s", name, r.ID, defaultWorkspace)
				conf["__key__"] = key
				s.configs[r.ID] = conf
				s.keys[r.ID] = key
			default:
				return fmt.Errorf("route %q: plugin %q is neither key-auth nor the plugin server's %q", r.Name, p.Name, name)
			}
		}
	}
	return nil
}

// ReplaceConsumers swaps the consumers and their key-auth credentials for
// the next requests, as a declarative rollout does (POST /config in DB-less
// mode, or decK with a database): the plugin's instances are kept, as Kong
// keeps them when the plugin's own config does not change.
func (s *Standin) ReplaceConsumers(consumers []Consumer) error {
	d := *s.opts.Declarative
	d.Consumers = slices.Clone(consumers)
	if err := d.completeConsumers(); err != nil {
		return err
	}
	s.authMu.Lock()
	defer s.authMu.Unlock()
	for id, ka := range s.keyAuth {
		s.keyAuth[id] = newKeyAuth(ka.conf, d.Consumers, s.opts.MaxURIArgs)
	}
	return nil
}

// keyAuthPriority is key-auth's PRIORITY in Kong 3.x.
const keyAuthPriority = 1250

// defaultWorkspace is the id of Kong's default workspace in this node.
var defaultWorkspace = stableID("workspaces", "default")

// schemaFields lists the config fields of a go-pdk schema dump.
func schemaFields(schema map[string]any) []string {
	fs, _ := schema["fields"].([]any)
	for _, f := range fs {
		cfg, _ := f.(map[string]any)["config"].(map[string]any)
		if cfg == nil {
			continue
		}
		var out []string
		list, _ := cfg["fields"].([]any)
		for _, e := range list {
			for k := range e.(map[string]any) {
				out = append(out, k)
			}
		}
		return out
	}
	return nil
}

// Close stops the plugin server (SIGTERM, then SIGKILL) and removes the
// socket directory the stand-in made.
func (s *Standin) Close() error {
	s.closing.Do(func() {
		if s.server != nil {
			s.server.stop()
		}
		s.removePrefix()
	})
	return nil
}

// Plugin describes the plugin the server reported with -dump.
func (s *Standin) Plugin() PluginInfo { return s.server.info }

// PluginPID is the plugin server's process id (0 while respawning).
func (s *Standin) PluginPID() int { return s.server.pid() }

// MaxPDKCalls is the largest number of PDK calls one request has made.
func (s *Standin) MaxPDKCalls() int { return int(s.maxCalls.Load()) }

// Events is the number of plugin events run.
func (s *Standin) Events() int64 { return s.events.Load() }

// DemoKey is a key-auth credential of the declarative config.
type DemoKey struct {
	Username string
	Key      string
	Tags     []string
}

// DemoKeys lists the consumers' key-auth keys.
func (s *Standin) DemoKeys() []DemoKey {
	var out []DemoKey
	for _, c := range s.opts.Declarative.Consumers {
		for _, cr := range c.KeyauthCredentials {
			out = append(out, DemoKey{Username: c.Username, Key: cr.Key, Tags: c.Tags})
		}
	}
	return out
}

func (s *Standin) trusted(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range s.opts.TrustedIPs {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// forwardedIP is the client address after nginx's realip module with
// real_ip_recursive off: from a trusted peer the last address of the
// real-IP header, else the peer.
func (s *Standin) forwardedIP(r *Request) netip.Addr {
	peer := r.RemoteAddr.Addr().Unmap()
	if !s.trusted(peer) {
		return peer
	}
	vs := r.Header.Values(s.opts.RealIPHeader)
	if len(vs) == 0 {
		return peer
	}
	parts := strings.Split(vs[len(vs)-1], ",")
	ip, err := netip.ParseAddr(strings.TrimSpace(parts[len(parts)-1]))
	if err != nil {
		return peer
	}
	return ip.Unmap()
}

// Handle runs one request through Kong: router, key-auth, the plugin's
// access phase, and Kong's answer when nothing else answered.
func (s *Standin) Handle(ctx context.Context, r *Request) *Response {
	if r.StartTime.IsZero() {
		r.StartTime = time.Now()
	}
	if r.Header == nil {
		r.Header = http.Header{}
	}
	resp := s.handle(ctx, r)
	if resp.Header == nil {
		resp.Header = http.Header{}
	}
	resp.Header.Set("X-Kong-Response-Latency", strconv.FormatInt(time.Since(r.StartTime).Milliseconds(), 10))
	resp.Header.Set("Server", "kong/3.9.1 (stand-in)")
	if s.opts.OnResponse != nil {
		s.opts.OnResponse(r, resp)
	}
	return resp
}

func kongMessage(status int, message string, header http.Header) *Response {
	if header == nil {
		header = http.Header{}
	}
	body, _ := json.Marshal(map[string]string{"message": message})
	header.Set("Content-Type", "application/json; charset=utf-8")
	return &Response{Status: status, Header: header, Body: body}
}

func (s *Standin) handle(ctx context.Context, r *Request) *Response {
	var route *Route
	for i := range s.opts.Declarative.Routes {
		if s.opts.Declarative.Routes[i].matches(r.Method, r.Path) {
			route = &s.opts.Declarative.Routes[i]
			break
		}
	}
	if route == nil {
		return kongMessage(http.StatusNotFound, "no Route matched with those values", nil)
	}
	x := &Exchange{
		req:          r,
		rawQuery:     r.RawQuery,
		forwardedIP:  s.forwardedIP(r),
		trusted:      s.trusted,
		route:        route,
		nodeID:       s.nodeID,
		log:          s.log,
		header:       http.Header{},
		calls:        make([]string, 0, 4),
		loadConsumer: func(string, bool) *Consumer { return nil },
	}
	// Kong runs plugins by descending priority: a plugin server above
	// key-auth's 1250 sees no consumer.
	s.authMu.RLock()
	ka := s.keyAuth[route.ID]
	s.authMu.RUnlock()
	if ka != nil && s.server.info.Priority <= keyAuthPriority {
		x.loadConsumer = ka.loadConsumer
		out := ka.authenticate(r)
		if out.wwwAuthenticate != "" {
			x.header.Set("WWW-Authenticate", out.wwwAuthenticate)
		}
		if out.status != 0 {
			return kongMessage(out.status, out.message, x.header)
		}
		if out.rawQuery != nil {
			x.rawQuery = *out.rawQuery
		}
		x.consumer, x.credential = out.consumer, out.credential
	}
	conf := s.configs[route.ID]
	if conf == nil {
		return kongMessage(http.StatusServiceUnavailable, "no Service found with those values", x.header)
	}
	if !slices.Contains(s.server.info.Phases, "access") {
		return kongMessage(http.StatusServiceUnavailable, "no Service found with those values", x.header)
	}
	s.events.Add(1)
	err := s.server.handleEvent(ctx, s.keys[route.ID], conf, "access", x)
	calls := int64(len(x.calls))
	for {
		m := s.maxCalls.Load()
		if calls <= m || s.maxCalls.CompareAndSwap(m, calls) {
			break
		}
	}
	var resp *Response
	switch {
	case x.exited:
		resp = &Response{Status: x.status, Header: x.header, Body: x.body}
	case err != nil:
		s.log.Error("pluginserver error", "plugin", s.server.name, "err", err)
		resp = kongMessage(http.StatusInternalServerError, "An unexpected error occurred", x.header)
	default:
		// The plugin let the request through; the route has no service.
		resp = kongMessage(http.StatusServiceUnavailable, "no Service found with those values", x.header)
	}
	resp.PDKCalls = x.calls
	return resp
}

// nginxArgs is nginx's $args for a request target: after the first '?',
// up to a fragment. Go's server keeps a fragment in URL.RawQuery, so
// key-auth here would otherwise read arguments nginx drops.
func nginxArgs(target string) string {
	target, _, _ = strings.Cut(target, "#")
	_, args, _ := strings.Cut(target, "?")
	return args
}

// ServeHTTP is Kong's proxy listener.
func (s *Standin) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	body, err := io.ReadAll(io.LimitReader(hr.Body, 1<<20))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	r := &Request{
		Method:      hr.Method,
		Scheme:      "http",
		Path:        hr.URL.Path,
		RawQuery:    nginxArgs(hr.RequestURI),
		Target:      hr.RequestURI,
		Header:      hr.Header,
		Body:        body,
		HTTPVersion: float64(hr.ProtoMajor) + float64(hr.ProtoMinor)/10,
		StartTime:   time.Now(),
	}
	r.Host = hr.Host
	if h, _, err := net.SplitHostPort(hr.Host); err == nil {
		r.Host = h
	}
	if la, ok := hr.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if ap, err := netip.ParseAddrPort(la.String()); err == nil {
			r.Port = int(ap.Port())
		}
	}
	if ap, err := netip.ParseAddrPort(hr.RemoteAddr); err == nil {
		r.RemoteAddr = ap
	}
	resp := s.Handle(hr.Context(), r)
	h := w.Header()
	for k, vs := range resp.Header {
		h[k] = vs
	}
	if s.opts.DebugHeaders && resp.PDKCalls != nil {
		h.Set(HeaderPDKCalls, strconv.Itoa(len(resp.PDKCalls)))
		h.Set(HeaderPDKMethods, strings.Join(resp.PDKCalls, ","))
	}
	if resp.Status != http.StatusNoContent && resp.Status != http.StatusNotModified {
		h.Set("Content-Length", strconv.Itoa(len(resp.Body)))
	}
	w.WriteHeader(resp.Status)
	if hr.Method != http.MethodHead && resp.Status != http.StatusNoContent {
		_, _ = w.Write(resp.Body)
	}
}
