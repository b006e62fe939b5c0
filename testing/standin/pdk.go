package standin

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/Kong/go-pdk/bridge"
	pb "github.com/Kong/go-pdk/server/kong_plugin_protocol"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// Request is one client request as Kong's PDK sees it.
type Request struct {
	Method   string
	Scheme   string // "http" or "https"
	Host     string
	Port     int
	Path     string
	RawQuery string // as sent, still percent-encoded, possibly not UTF-8
	// Target is the request target exactly as sent (nginx's
	// $request_uri); Path?RawQuery when empty.
	Target      string
	Header      http.Header
	Body        []byte
	HTTPVersion float64
	// RemoteAddr is the TCP peer (kong.client.get_ip).
	RemoteAddr netip.AddrPort
	StartTime  time.Time
}

// Response is what the client receives.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	// PDKCalls lists the PDK methods the plugin called, in order.
	PDKCalls []string
}

// errExited ends the bridge loop: the plugin called kong.response.exit.
var errExited = errors.New("kong.response.exit")

// Exchange is the state of one request inside Kong while a plugin runs:
// what the PDK methods read and write. Its call method answers one PDK
// call with Kong 3.x semantics.
type Exchange struct {
	req          *Request
	rawQuery     string
	forwardedIP  netip.Addr
	trusted      func(netip.Addr) bool
	consumer     *Consumer
	credential   *Credential
	route        *Route
	loadConsumer func(string, bool) *Consumer
	nodeID       string
	log          *slog.Logger

	status    int
	header    http.Header
	body      []byte
	exited    bool
	shared    map[string]any
	ngxCtx    map[string]any
	serialize map[string]any

	calls []string
}

func (x *Exchange) call(method string, args []byte) ([]byte, error) {
	x.calls = append(x.calls, method)
	out, err := x.dispatch(method, args)
	if err != nil {
		return nil, err
	}
	if out == nil {
		// Lua nil: pb_rpc.lua sends an empty frame, which go-pdk decodes
		// as the zero message.
		return nil, nil
	}
	if s, ok := out.(*pb.String); ok {
		return rawString(s.V), nil
	}
	return proto.Marshal(out)
}

func str(s string) proto.Message { return &pb.String{V: s} }

// rawString encodes a String message as Kong's lua-protobuf does: the Lua
// string's bytes in field 1 whatever they are. Go's encoder would refuse a
// string that is not UTF-8 (raw bytes of a request line, say), and Go's
// decoder on the plugin's side refuses them too unless the plugin reads
// the field as bytes: exactly what happens in Kong.
func rawString(s string) []byte {
	if s == "" {
		return nil // proto3 omits an empty field
	}
	b := protowire.AppendTag(make([]byte, 0, len(s)+8), 1, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func decode[T any, P interface {
	*T
	proto.Message
}](args []byte) (P, error) {
	m := P(new(T))
	if err := proto.Unmarshal(args, m); err != nil {
		return nil, fmt.Errorf("decode arguments: %w", err)
	}
	return m, nil
}

// maxArgs reads the max_args argument of get_query and get_headers; none
// (or a non-positive one) means Kong's default, 100.
func maxArgs(args []byte) (int, error) {
	max, err := decode[pb.Int](args)
	if err != nil {
		return 0, err
	}
	if max.V <= 0 {
		return 100, nil
	}
	return int(max.V), nil
}

// setKV stores a KV argument in *m, creating the map on first use: the
// per-request tables of kong.ctx.shared, ngx.ctx and the log serializer.
func setKV(m *map[string]any, args []byte) (proto.Message, error) {
	kv, err := decode[pb.KV](args)
	if err != nil {
		return nil, err
	}
	if *m == nil {
		*m = map[string]any{}
	}
	(*m)[kv.K] = kv.V.AsInterface()
	return nil, nil
}

// getKV answers the value stored under a String argument, nil (Lua nil)
// when there is none.
func getKV(m map[string]any, args []byte) (proto.Message, error) {
	k, err := decode[pb.String](args)
	if err != nil {
		return nil, err
	}
	v, ok := m[k.V]
	if !ok {
		return nil, nil
	}
	return structpb.NewValue(v)
}

func consumerMessage(c *Consumer) proto.Message {
	if c == nil {
		return nil
	}
	return &pb.Consumer{Id: c.ID, CreatedAt: c.CreatedAt, Username: c.Username, CustomId: c.CustomID, Tags: c.Tags}
}

// headerStruct builds what kong.request.get_headers returns: lower-case
// names, a string for one value, a list for several.
func headerStruct(h http.Header, max int) (*structpb.Struct, error) {
	m := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(h)) {
		if max > 0 && len(m) >= max {
			break
		}
		vs := h[k]
		if len(vs) == 1 {
			m[strings.ToLower(k)] = vs[0]
			continue
		}
		l := make([]any, len(vs))
		for i, v := range vs {
			l[i] = v
		}
		m[strings.ToLower(k)] = l
	}
	return structpb.NewStruct(m)
}

func (x *Exchange) dispatch(method string, args []byte) (proto.Message, error) {
	r := x.req
	switch method {
	// kong.client
	case "kong.client.get_ip":
		return str(r.RemoteAddr.Addr().String()), nil
	case "kong.client.get_forwarded_ip":
		return str(x.forwardedIP.String()), nil
	case "kong.client.get_port", "kong.client.get_forwarded_port":
		port := int32(r.RemoteAddr.Port())
		if method == "kong.client.get_forwarded_port" && x.trusted(r.RemoteAddr.Addr()) {
			if p, err := strconv.Atoi(r.Header.Get("X-Forwarded-Port")); err == nil {
				port = int32(p)
			}
		}
		return &pb.Int{V: port}, nil
	case "kong.client.get_credential":
		if x.credential == nil {
			return nil, nil
		}
		// Kong's credential row links the consumer as consumer.id, so the
		// protocol's consumer_id stays empty.
		return &pb.AuthenticatedCredential{Id: x.credential.ID}, nil
	case "kong.client.load_consumer":
		spec, err := decode[pb.ConsumerSpec](args)
		if err != nil {
			return nil, err
		}
		return consumerMessage(x.loadConsumer(spec.Id, spec.ByUsername)), nil
	case "kong.client.get_consumer":
		return consumerMessage(x.consumer), nil
	case "kong.client.authenticate":
		a, err := decode[pb.AuthenticateArgs](args)
		if err != nil {
			return nil, err
		}
		if a.Consumer == nil && a.Credential == nil {
			return nil, errors.New("kong.client.authenticate: either credential or consumer must be provided")
		}
		x.consumer, x.credential = nil, nil
		if a.Consumer != nil {
			x.consumer = &Consumer{ID: a.Consumer.Id, Username: a.Consumer.Username, CustomID: a.Consumer.CustomId, Tags: a.Consumer.Tags, CreatedAt: a.Consumer.CreatedAt}
		}
		if a.Credential != nil {
			x.credential = &Credential{ID: a.Credential.Id}
		}
		return nil, nil
	case "kong.client.get_protocol":
		allow, err := decode[pb.Bool](args)
		if err != nil {
			return nil, err
		}
		proto := r.Scheme
		if allow.V && x.trusted(r.RemoteAddr.Addr()) {
			if fp := strings.ToLower(r.Header.Get("X-Forwarded-Proto")); fp == "https" || fp == "http" {
				proto = fp
			}
		}
		return str(proto), nil

	// kong.ctx
	case "kong.ctx.shared.set":
		return setKV(&x.shared, args)
	case "kong.ctx.shared.get":
		return getKV(x.shared, args)

	// kong.ip
	case "kong.ip.is_trusted":
		a, err := decode[pb.String](args)
		if err != nil {
			return nil, err
		}
		ip, err := netip.ParseAddr(a.V)
		return &pb.Bool{V: err == nil && x.trusted(ip)}, nil

	// kong.log
	case "kong.log.alert", "kong.log.crit", "kong.log.err", "kong.log.warn",
		"kong.log.notice", "kong.log.info", "kong.log.debug":
		l, err := decode[structpb.ListValue](args)
		if err != nil {
			return nil, err
		}
		var sb strings.Builder
		for _, v := range l.AsSlice() {
			fmt.Fprint(&sb, v)
		}
		x.log.Log(nil, kongLogLevel(method), sb.String(), "plugin", "genderize", "kong_level", method[len("kong.log."):])
		return nil, nil
	case "kong.log.set_serialize_value":
		return setKV(&x.serialize, args)
	case "kong.log.serialize":
		b, err := json.Marshal(x.serialized())
		if err != nil {
			return nil, err
		}
		return str(string(b)), nil

	// kong.nginx
	case "kong.nginx.get_var":
		a, err := decode[pb.String](args)
		if err != nil {
			return nil, err
		}
		v, ok := x.ngxVar(a.V)
		if !ok {
			return nil, nil
		}
		return str(v), nil
	case "kong.nginx.get_tls1_version_str":
		return nil, nil
	case "kong.nginx.set_ctx":
		return setKV(&x.ngxCtx, args)
	case "kong.nginx.get_ctx":
		return getKV(x.ngxCtx, args)
	case "kong.nginx.req_start_time":
		return &pb.Number{V: float64(r.StartTime.UnixMilli()) / 1000}, nil
	case "kong.nginx.get_subsystem":
		return str("http"), nil

	// kong.node
	case "kong.node.get_id":
		return str(x.nodeID), nil
	case "kong.node.get_memory_stats":
		return &pb.MemoryStats{
			LuaSharedDicts: &pb.MemoryStats_LuaSharedDicts{
				Kong:        &pb.MemoryStats_LuaSharedDicts_DictStats{Capacity: 5 << 20},
				KongDbCache: &pb.MemoryStats_LuaSharedDicts_DictStats{Capacity: 128 << 20},
			},
		}, nil

	// kong.request
	case "kong.request.get_scheme":
		return str(r.Scheme), nil
	case "kong.request.get_host":
		return str(r.Host), nil
	case "kong.request.get_port":
		return &pb.Int{V: int32(r.Port)}, nil
	case "kong.request.get_forwarded_scheme":
		return str(x.forwarded("X-Forwarded-Proto", r.Scheme)), nil
	case "kong.request.get_forwarded_host":
		return str(x.forwarded("X-Forwarded-Host", r.Host)), nil
	case "kong.request.get_forwarded_port":
		port := r.Port
		if p, err := strconv.Atoi(x.forwarded("X-Forwarded-Port", "")); err == nil {
			port = p
		}
		return &pb.Int{V: int32(port)}, nil
	case "kong.request.get_http_version":
		return &pb.Number{V: r.HTTPVersion}, nil
	case "kong.request.get_method":
		return str(r.Method), nil
	case "kong.request.get_path":
		return str(r.Path), nil
	case "kong.request.get_path_with_query":
		if x.rawQuery == "" {
			return str(r.Path), nil
		}
		return str(r.Path + "?" + x.rawQuery), nil
	case "kong.request.get_raw_query":
		return str(x.rawQuery), nil
	case "kong.request.get_query_arg":
		a, err := decode[pb.String](args)
		if err != nil {
			return nil, err
		}
		vs := ngxURIArgs(x.rawQuery, 100)[a.V]
		if len(vs) == 0 {
			return nil, nil
		}
		// A repeated argument is a table in Lua; the String wrapper
		// carries its first value.
		return str(vs[0].value), nil
	case "kong.request.get_query":
		limit, err := maxArgs(args)
		if err != nil {
			return nil, err
		}
		m := map[string]any{}
		for k, vs := range ngxURIArgs(x.rawQuery, limit) {
			l := make([]any, len(vs))
			for i, v := range vs {
				if v.set {
					l[i] = v.value
				} else {
					l[i] = true
				}
			}
			if len(l) == 1 {
				m[k] = l[0]
			} else {
				m[k] = l
			}
		}
		return structpb.NewStruct(m)
	case "kong.request.get_header":
		a, err := decode[pb.String](args)
		if err != nil {
			return nil, err
		}
		vs := r.Header.Values(strings.ReplaceAll(a.V, "_", "-"))
		if len(vs) == 0 {
			return nil, nil
		}
		return str(vs[0]), nil
	case "kong.request.get_headers":
		limit, err := maxArgs(args)
		if err != nil {
			return nil, err
		}
		return headerStruct(r.Header, limit)
	case "kong.request.get_raw_body":
		return &pb.RawBodyResult{Kind: &pb.RawBodyResult_Content{Content: r.Body}}, nil
	case "kong.request.get_uri_captures":
		res := &pb.UriCapturesResult{Named: map[string][]byte{}}
		for _, re := range x.route.pathRegexps {
			m := re.FindStringSubmatch(r.Path)
			if m == nil {
				continue
			}
			for i, name := range re.SubexpNames() {
				if i == 0 {
					continue
				}
				if name != "" {
					res.Named[name] = []byte(m[i])
				} else {
					res.Unnamed = append(res.Unnamed, []byte(m[i]))
				}
			}
			break
		}
		return res, nil

	// kong.response (access phase: nothing has come from a service)
	case "kong.response.get_status":
		return &pb.Int{V: int32(x.status)}, nil
	case "kong.response.get_header":
		a, err := decode[pb.String](args)
		if err != nil {
			return nil, err
		}
		v := x.header.Get(a.V)
		if v == "" {
			return nil, nil
		}
		return str(v), nil
	case "kong.response.get_headers":
		max, err := decode[pb.Int](args)
		if err != nil {
			return nil, err
		}
		return headerStruct(x.header, int(max.V))
	case "kong.response.get_source":
		return str("error"), nil
	case "kong.response.set_status":
		a, err := decode[pb.Int](args)
		if err != nil {
			return nil, err
		}
		if a.V < 100 || a.V > 599 {
			return nil, fmt.Errorf("kong.response.set_status: code must be a number between 100 and 599, got %d", a.V)
		}
		x.status = int(a.V)
		return nil, nil
	case "kong.response.set_header", "kong.response.add_header":
		kv, err := decode[pb.KV](args)
		if err != nil {
			return nil, err
		}
		v, err := headerValue(kv.V)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", method, kv.K, err)
		}
		if method == "kong.response.set_header" {
			x.header.Set(kv.K, v)
		} else {
			x.header.Add(kv.K, v)
		}
		return nil, nil
	case "kong.response.clear_header":
		a, err := decode[pb.String](args)
		if err != nil {
			return nil, err
		}
		x.header.Del(a.V)
		return nil, nil
	case "kong.response.set_headers":
		st, err := decode[structpb.Struct](args)
		if err != nil {
			return nil, err
		}
		for k, vs := range bridge.UnwrapHeaders(st) {
			x.header[http.CanonicalHeaderKey(k)] = vs
		}
		return nil, nil
	case "kong.response.exit":
		a, err := decodeExitArgs(args)
		if err != nil {
			return nil, err
		}
		if a.status < 100 || a.status > 599 {
			return nil, fmt.Errorf("kong.response.exit: code must be a number between 100 and 599, got %d", a.status)
		}
		x.status = int(a.status)
		x.body = a.body
		for _, h := range a.headers {
			x.header[http.CanonicalHeaderKey(h.name)] = h.values
		}
		x.exited = true
		return nil, errExited

	// kong.router
	case "kong.router.get_route":
		rt := x.route
		var strip bool
		if rt.StripPath != nil {
			strip = *rt.StripPath
		} else {
			strip = true
		}
		return &pb.Route{Id: rt.ID, Name: rt.Name, Protocols: []string{"http", "https"}, Methods: rt.Methods, Paths: rt.Paths, StripPath: strip, Tags: rt.Tags, RegexPriority: 0, HttpsRedirectStatusCode: 426}, nil
	case "kong.router.get_service":
		// The genderize route has no service.
		return nil, nil

	// kong.service: the route has no service, so what a plugin sets here
	// goes nowhere; Kong accepts the calls all the same.
	case "kong.service.set_upstream":
		return nil, errors.New("kong.service.set_upstream: could not find an Upstream")
	case "kong.service.set_target",
		"kong.service.request.set_scheme", "kong.service.request.set_path",
		"kong.service.request.set_raw_query", "kong.service.request.set_method",
		"kong.service.request.set_query", "kong.service.request.set_header",
		"kong.service.request.add_header", "kong.service.request.clear_header",
		"kong.service.request.set_headers", "kong.service.request.set_raw_body":
		return nil, nil
	case "kong.service.response.get_status", "kong.service.response.get_header",
		"kong.service.response.get_headers", "kong.service.response.get_raw_body":
		return nil, fmt.Errorf("%s: only available in the header_filter, body_filter and log phases", method)
	}
	return nil, fmt.Errorf("method %q not found", method)
}

func headerValue(v *structpb.Value) (string, error) {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		return k.StringValue, nil
	case *structpb.Value_NumberValue:
		return strconv.FormatFloat(k.NumberValue, 'f', -1, 64), nil
	case *structpb.Value_BoolValue:
		return strconv.FormatBool(k.BoolValue), nil
	}
	return "", fmt.Errorf("invalid header value %v", v.AsInterface())
}

func headerValues(v *structpb.Value) ([]string, error) {
	if l := v.GetListValue(); l != nil {
		out := make([]string, 0, len(l.Values))
		for _, e := range l.Values {
			s, err := headerValue(e)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	s, err := headerValue(v)
	if err != nil {
		return nil, err
	}
	return []string{s}, nil
}

func kongLogLevel(method string) slog.Level {
	switch method {
	case "kong.log.debug":
		return slog.LevelDebug
	case "kong.log.info", "kong.log.notice":
		return slog.LevelInfo
	case "kong.log.warn":
		return slog.LevelWarn
	}
	return slog.LevelError
}

// target is the request target as the client sent it.
func (r *Request) target() string {
	switch {
	case r.Target != "":
		return r.Target
	case r.RawQuery == "":
		return r.Path
	}
	return r.Path + "?" + r.RawQuery
}

// httpVersion is the protocol of nginx's $request: HTTP/1.0, HTTP/1.1,
// HTTP/2.0.
func httpVersion(v float64) string {
	if v == 0 {
		v = 1.1
	}
	return "HTTP/" + strconv.FormatFloat(v, 'f', 1, 64)
}

// forwarded reads an X-Forwarded-* header when the peer is trusted.
func (x *Exchange) forwarded(name, fallback string) string {
	if x.trusted(x.req.RemoteAddr.Addr()) {
		if v := x.req.Header.Get(name); v != "" {
			return v
		}
	}
	return fallback
}

func (x *Exchange) ngxVar(name string) (string, bool) {
	r := x.req
	switch name {
	case "request_method":
		return r.Method, true
	case "uri":
		return r.Path, true
	case "args", "query_string":
		return x.rawQuery, x.rawQuery != ""
	case "request_uri":
		return r.target(), true
	case "request":
		// The request line as the client sent it: key-auth's
		// hide_credentials does not change it.
		return r.Method + " " + r.target() + " " + httpVersion(r.HTTPVersion), true
	case "scheme":
		return r.Scheme, true
	case "host":
		return r.Host, true
	case "server_port":
		return strconv.Itoa(r.Port), true
	case "remote_addr":
		return x.forwardedIP.String(), true
	case "realip_remote_addr":
		return r.RemoteAddr.Addr().String(), true
	case "remote_port":
		return strconv.Itoa(int(r.RemoteAddr.Port())), true
	}
	if h, ok := strings.CutPrefix(name, "http_"); ok {
		v := r.Header.Get(strings.ReplaceAll(h, "_", "-"))
		return v, v != ""
	}
	if a, ok := strings.CutPrefix(name, "arg_"); ok {
		vs := ngxURIArgs(x.rawQuery, 100)[a]
		if len(vs) == 0 {
			return "", false
		}
		return vs[0].value, true
	}
	return "", false
}

// serialized is a reduced kong.log.serialize(): the request, the route,
// the consumer and the plugin's own values.
func (x *Exchange) serialized() map[string]any {
	m := map[string]any{
		"client_ip":  x.forwardedIP.String(),
		"started_at": x.req.StartTime.UnixMilli(),
		"request": map[string]any{
			"method": x.req.Method,
			"uri":    x.req.Path,
			"querystring": func() map[string]any {
				q := map[string]any{}
				for k, vs := range ngxURIArgs(x.rawQuery, 100) {
					q[k] = vs[len(vs)-1].value
				}
				return q
			}(),
		},
		"route": map[string]any{"id": x.route.ID, "name": x.route.Name},
	}
	if x.consumer != nil {
		m["consumer"] = map[string]any{"id": x.consumer.ID, "username": x.consumer.Username}
	}
	for k, v := range x.serialize {
		m[k] = v
	}
	return m
}
