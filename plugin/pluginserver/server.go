// Package pluginserver is the Kong plugin server of a Go plugin: the
// ProtoBuf:1 event loop Kong 3.x talks to over the plugin's unix socket,
// with the RPCs and semantics of go-pdk v0.11.2's server (StartInstance,
// GetInstanceStatus, CloseInstance, HandleEvent, GetPluginNames and
// GetPluginInfo), handlers called with go-pdk's *pdk.PDK.
//
// It differs from go-pdk's server where that one costs every request:
// writes are coalesced into one syscall per PDK call, nothing is written
// on a connection the handler closed with kong.response.exit (go-pdk
// writes there anyway and logs "use of closed network connection" on every
// request), and a panicking handler is recovered instead of killing every
// request in flight. The -dump output, the schema Kong loads, stays
// go-pdk's own: Main hands -dump to go-pdk's server.
//
// The contract with a handler (plugin.Config.Access keeps it, and
// plugin's TestPluginServerContract checks it over this server):
//
//   - Exit then close. A handler that answers the request calls
//     kong.response.exit and then closes the PDK's connection
//     (Response.Close), making no PDK call in between or after: Kong
//     never answers an Exit in the access phase. The server sees the
//     connection closed and writes nothing more on it, neither the end
//     of the event nor its return.
//   - Panics. The handler recovers its own panics and still answers (the
//     plugin answers 500 with the API's body and headers). The server's
//     recover is the last resort for a handler that does not: it logs
//     the panic and closes the connection, which Kong answers with its
//     own 500 and no rate headers. A recovered panic never stops the
//     process or other requests.
package pluginserver

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/Kong/go-pdk"
	pb "github.com/Kong/go-pdk/server/kong_plugin_protocol"
	"google.golang.org/protobuf/proto"
)

// maxFrame bounds a frame read from Kong: Kong's calls are small (an
// instance config is the largest), a larger length is a broken peer.
const maxFrame = 64 << 20

// instanceTimeout is how long go-pdk keeps an instance that neither
// started nor handled an event recently once Kong closes another one.
const instanceTimeout = 60 * time.Second

// Server serves the instances of one plugin.
type Server struct {
	constructor func() any
	log         *slog.Logger

	mu        sync.RWMutex
	instances map[int32]*instance
}

// instance is one plugin config Kong started, with its phase handlers.
type instance struct {
	id        int32
	config    any
	handlers  map[string]func(*pdk.PDK)
	startTime time.Time
	lastEvent atomic.Int64 // Unix nanoseconds of the last event started
}

// New returns a server whose instances are made by constructor (go-pdk's
// plugin constructor: a pointer to a config struct with phase methods)
// and which logs to log.
func New(constructor func() any, log *slog.Logger) *Server {
	return &Server{constructor: constructor, log: log, instances: map[int32]*instance{}}
}

// Serve accepts Kong's connections on ln until it fails.
//
// Kong closes the connection after every request that exits, so a
// connection is a request. Each is served by a goroutine that has served
// one before if one waits: a fresh goroutine would grow its stack again
// for every request. There are never more goroutines than connections at
// the busiest moment.
func (s *Server) Serve(ln net.Listener) error {
	idle := make(chan net.Conn) // unbuffered: only to a goroutine waiting
	defer close(idle)
	for {
		c, err := ln.Accept()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return fmt.Errorf("accept on %s: %w", ln.Addr(), err)
		}
		select {
		case idle <- c:
		default:
			go s.serveConns(c, idle)
		}
	}
}

// serveConns serves c, then whatever connection Serve hands over next.
func (s *Server) serveConns(c net.Conn, next <-chan net.Conn) {
	for ok := true; ok; c, ok = <-next {
		s.ServeConn(c)
	}
}

// ServeConn answers Kong's calls on one connection, one at a time, until
// Kong or a handler closes it.
func (s *Server) ServeConn(nc net.Conn) {
	c := newConn(nc)
	// The PDK holds nothing but the connection: one serves every event.
	kong := pdk.Init(c)
	defer c.release()
	for {
		frame, err := readFrame(c)
		if err != nil {
			if !isClosed(err) {
				s.log.Error("plugin server: read call", "error", err.Error())
			}
			return
		}
		var call pb.RpcCall
		if err := proto.Unmarshal(frame, &call); err != nil {
			s.log.Error("plugin server: decode call", "error", err.Error())
			return
		}
		ret, err := s.handle(c, kong, &call)
		if err != nil {
			// go-pdk closes the connection on a failed call: Kong reads
			// that as a lost instance and starts it again.
			s.log.Error("plugin server: call failed", "error", err.Error())
			return
		}
		if c.isClosed() {
			// The handler answered the request and closed the
			// connection; Kong expects nothing more on it.
			return
		}
		if err := writeFrame(c, ret); err != nil {
			s.log.Error("plugin server: write return", "error", err.Error())
			return
		}
	}
}

// handle runs one call and returns the encoded RpcReturn, empty where
// go-pdk answers with an empty frame (GetPluginNames, GetPluginInfo: Kong
// learns those from -dump).
func (s *Server) handle(c *conn, kong *pdk.PDK, call *pb.RpcCall) ([]byte, error) {
	var ret *pb.RpcReturn
	switch m := call.Call.(type) {
	case *pb.RpcCall_CmdGetPluginNames, *pb.RpcCall_CmdGetPluginInfo:
		return nil, nil
	case *pb.RpcCall_CmdStartInstance:
		in, err := s.startInstance(m.CmdStartInstance.Config)
		if err != nil {
			return nil, err
		}
		ret = &pb.RpcReturn{Sequence: call.Sequence, Return: status(m.CmdStartInstance.Name, in)}
	case *pb.RpcCall_CmdGetInstanceStatus:
		in, err := s.instance(m.CmdGetInstanceStatus.InstanceId)
		if err != nil {
			return nil, err
		}
		ret = &pb.RpcReturn{Sequence: call.Sequence, Return: status("---", in)}
	case *pb.RpcCall_CmdCloseInstance:
		in, err := s.closeInstance(m.CmdCloseInstance.InstanceId)
		if err != nil {
			return nil, err
		}
		ret = &pb.RpcReturn{Sequence: call.Sequence, Return: status("---", in)}
	case *pb.RpcCall_CmdHandleEvent:
		if err := s.handleEvent(c, kong, m.CmdHandleEvent); err != nil {
			return nil, err
		}
		if c.isClosed() {
			return nil, nil
		}
		// An empty frame ends the event's PDK calls, the return follows.
		if err := writeFrame(c, nil); err != nil {
			return nil, err
		}
		ret = &pb.RpcReturn{Sequence: call.Sequence}
	default:
		return nil, fmt.Errorf("RPC call has unexpected type %T", m)
	}
	data, err := proto.Marshal(ret)
	if err != nil {
		return nil, fmt.Errorf("encode return: %w", err)
	}
	return data, nil
}

// status is the InstanceStatus go-pdk answers: the name Kong gave at
// start, "---" afterwards.
func status(name string, in *instance) *pb.RpcReturn_InstanceStatus {
	return &pb.RpcReturn_InstanceStatus{InstanceStatus: &pb.InstanceStatus{
		Name:       name,
		InstanceId: in.id,
		StartedAt:  in.startTime.Unix(),
	}}
}

// startInstance decodes config as go-pdk does: Kong's __seq__ is the
// instance id (a random free id when Kong sends none), the rest decodes
// into a fresh config from the constructor.
func (s *Server) startInstance(config []byte) (*instance, error) {
	var meta struct {
		Seq int `json:"__seq__"`
	}
	if err := json.Unmarshal(config, &meta); err != nil {
		return nil, fmt.Errorf("decoding config metadata: %w", err)
	}
	conf := s.constructor()
	if err := json.Unmarshal(config, conf); err != nil {
		return nil, fmt.Errorf("decoding config: %w", err)
	}
	in := &instance{config: conf, handlers: handlers(conf), startTime: time.Now()}
	in.lastEvent.Store(in.startTime.UnixNano())

	s.mu.Lock()
	defer s.mu.Unlock()
	in.id = int32(meta.Seq)
	if meta.Seq == 0 {
		for {
			in.id = rand.Int32()
			if _, taken := s.instances[in.id]; !taken && in.id != 0 {
				break
			}
		}
	}
	s.instances[in.id] = in
	return in, nil
}

func (s *Server) instance(id int32) (*instance, error) {
	s.mu.RLock()
	in, ok := s.instances[id]
	s.mu.RUnlock()
	if !ok {
		// Kong matches this text to start the instance again.
		return nil, fmt.Errorf("no plugin instance %d", id)
	}
	return in, nil
}

// closeInstance forgets the instance, and with it every instance that
// has been idle for instanceTimeout, as go-pdk does: Kong closes an
// instance when its config changes and may never close the others.
func (s *Server) closeInstance(id int32) (*instance, error) {
	in, err := s.instance(id)
	if err != nil {
		return nil, err
	}
	cutoff := time.Now().Add(-instanceTimeout).UnixNano()
	var expired []int32
	s.mu.Lock()
	delete(s.instances, id)
	for other, o := range s.instances {
		if o.startTime.UnixNano() < cutoff && o.lastEvent.Load() < cutoff {
			delete(s.instances, other)
			expired = append(expired, other)
		}
	}
	s.mu.Unlock()
	s.log.Info("plugin server: closed instance", "instance_id", id)
	for _, other := range expired {
		s.log.Info("plugin server: closed idle instance", "instance_id", other)
	}
	return in, nil
}

// handleEvent runs the instance's handler for the event's phase. A panic
// is recovered: the connection is closed, which Kong answers with a 500,
// and the other requests go on.
func (s *Server) handleEvent(c *conn, kong *pdk.PDK, e *pb.CmdHandleEvent) (err error) {
	in, err := s.instance(e.InstanceId)
	if err != nil {
		return err
	}
	h, ok := in.handlers[e.EventName]
	if !ok {
		return fmt.Errorf("undefined method %s", e.EventName)
	}
	in.lastEvent.Store(time.Now().UnixNano())
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("plugin server: panic in handler", "phase", e.EventName, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			_ = c.Close()
		}
	}()
	h(kong)
	return nil
}

// The phase handlers go-pdk recognises, by event name.
type (
	certificater interface{ Certificate(*pdk.PDK) }
	rewriter     interface{ Rewrite(*pdk.PDK) }
	accesser     interface{ Access(*pdk.PDK) }
	responser    interface{ Response(*pdk.PDK) }
	prereader    interface{ Preread(*pdk.PDK) }
	logger       interface{ Log(*pdk.PDK) }
)

func handlers(config any) map[string]func(*pdk.PDK) {
	h := map[string]func(*pdk.PDK){}
	if p, ok := config.(certificater); ok {
		h["certificate"] = p.Certificate
	}
	if p, ok := config.(rewriter); ok {
		h["rewrite"] = p.Rewrite
	}
	if p, ok := config.(accesser); ok {
		h["access"] = p.Access
	}
	if p, ok := config.(responser); ok {
		h["response"] = p.Response
	}
	if p, ok := config.(prereader); ok {
		h["preread"] = p.Preread
	}
	if p, ok := config.(logger); ok {
		h["log"] = p.Log
	}
	return h
}

// readFrame reads one ProtoBuf:1 frame: a little-endian uint32 length,
// then that many bytes.
func readFrame(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	if n > maxFrame {
		return nil, fmt.Errorf("frame of %d bytes exceeds %d", n, maxFrame)
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, err
	}
	return data, nil
}

// writeFrame queues one frame; w is a conn, which sends it with the next
// read.
func writeFrame(w io.Writer, data []byte) error {
	var hdr [4]byte
	binary.LittleEndian.PutUint32(hdr[:], uint32(len(data)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	if len(data) == 0 {
		return nil
	}
	_, err := w.Write(data)
	return err
}

// isClosed reports an error that only says the peer went away: Kong
// closes connections it no longer pools, and after an Exit.
func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
