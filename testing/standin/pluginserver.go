package standin

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	pb "github.com/Kong/go-pdk/server/kong_plugin_protocol"
	"google.golang.org/protobuf/proto"
)

// PluginInfo is one plugin described by the server's -dump output, the
// way Kong's process.lua reads it.
type PluginInfo struct {
	Name     string
	Phases   []string
	Version  string
	Priority int
	Schema   map[string]any
}

type dumpInfo struct {
	Protocol   string
	SocketPath string
	Plugins    []PluginInfo
}

// callTimeout bounds one call, as Kong's default socket timeouts do.
const callTimeout = 60 * time.Second

// maxFrame bounds a frame the stand-in accepts from a plugin server; Kong
// has no such limit, but a runaway plugin should fail a test, not eat RAM.
const maxFrame = 64 << 20

// pluginServer runs one external plugin server the way Kong 3.x does
// (kong/runloop/plugin_servers): query it with -dump, start it with
// -kong-prefix, respawn it at most once a second when it dies, and speak
// ProtoBuf:1 to it over its unix socket, one call at a time per
// connection, connections kept alive in a pool between calls.
type pluginServer struct {
	path   string
	args   []string // of the start command, after -kong-prefix
	name   string
	prefix string
	socket string
	info   PluginInfo
	log    *slog.Logger

	pool chan *serverConn

	mu         sync.Mutex
	cmd        *exec.Cmd
	generation int
	ready      chan struct{} // closed when the current process accepts connections
	stopping   bool
	exited     chan struct{} // closed when the supervisor returns

	instMu    sync.Mutex
	instances map[string]*instance
	seq       int64 // Kong's plugins_iterator __seq__ counter
	msgID     int64
}

type instance struct {
	id         int32
	seq        int64
	generation int
	starting   chan struct{}
	err        error
}

type serverConn struct {
	net.Conn
	generation int
	// Kept with the connection: a pooled connection reuses them, and a
	// call makes no buffer of its own.
	r          *bufio.Reader
	rbuf, wbuf []byte
}

// readFrame reads one frame into the connection's buffer: it is valid
// until the next read, and every caller decodes (copies) it before.
func (c *serverConn) readFrame() ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
		return nil, closedErr(err)
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	if n > maxFrame {
		return nil, fmt.Errorf("frame of %d bytes exceeds %d", n, maxFrame)
	}
	if uint32(cap(c.rbuf)) < n || cap(c.rbuf) > 64<<10 {
		c.rbuf = make([]byte, n)
	}
	b := c.rbuf[:n]
	if _, err := io.ReadFull(c.r, b); err != nil {
		return nil, closedErr(err)
	}
	return b, nil
}

// writeFrame sends one frame in one write.
func (c *serverConn) writeFrame(data []byte) error {
	c.wbuf = binary.LittleEndian.AppendUint32(c.wbuf[:0], uint32(len(data)))
	c.wbuf = append(c.wbuf, data...)
	_, err := c.Write(c.wbuf)
	if cap(c.wbuf) > 64<<10 {
		c.wbuf = nil
	}
	return closedErr(err)
}

// startPluginServer queries and starts the binary. prefix is the directory
// given as -kong-prefix; the socket is prefix/<name>.socket as go-pdk
// opens it. args follow -kong-prefix in the start command.
func startPluginServer(ctx context.Context, path string, args []string, prefix string, poolSize int, log *slog.Logger) (*pluginServer, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("plugin server path %s: %w", path, err)
	}
	s := &pluginServer{
		path:      abs,
		args:      args,
		name:      filepath.Base(abs),
		prefix:    prefix,
		socket:    filepath.Join(prefix, filepath.Base(abs)+".socket"),
		log:       log,
		pool:      make(chan *serverConn, poolSize),
		instances: map[string]*instance{},
		exited:    make(chan struct{}),
	}
	if err := s.query(ctx); err != nil {
		return nil, err
	}
	s.ready = make(chan struct{})
	firstReady := s.ready
	go s.supervise()
	select {
	case <-firstReady:
		return s, nil
	case <-s.exited:
		return nil, fmt.Errorf("plugin server %s stopped before it listened on %s", s.path, s.socket)
	case <-ctx.Done():
		s.stop()
		return nil, fmt.Errorf("plugin server %s: waiting for socket %s: %w", s.path, s.socket, ctx.Err())
	}
}

// query runs the query command (the binary with -dump), as Kong does at
// start to learn the plugin's name, priority, phases and schema.
func (s *pluginServer) query(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, s.path, "-dump", "-kong-prefix", s.prefix)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("query plugin server %s -dump: %w: %s", s.path, err, strings.TrimSpace(stderr.String()))
	}
	var d dumpInfo
	if err := json.Unmarshal(out, &d); err != nil {
		return fmt.Errorf("query plugin server %s -dump: not a plugin info table: %w", s.path, err)
	}
	if d.Protocol != "ProtoBuf:1" {
		return fmt.Errorf("plugin server %s speaks %q; the stand-in speaks ProtoBuf:1", s.path, d.Protocol)
	}
	for _, p := range d.Plugins {
		if p.Name == s.name {
			s.info = p
		}
	}
	if s.info.Name == "" {
		return fmt.Errorf("plugin server %s -dump does not describe a plugin named %q", s.path, s.name)
	}
	if d.SocketPath != s.socket {
		s.log.Warn("plugin server reports another socket", "reported", d.SocketPath, "using", s.socket)
	}
	return nil
}

// supervise is Kong's pluginserver_timer: spawn, log the output, wait,
// respawn no sooner than a second after the previous spawn.
func (s *pluginServer) supervise() {
	defer close(s.exited)
	var nextSpawn time.Time
	for {
		if d := time.Until(nextSpawn); d > 0 {
			time.Sleep(d)
		}
		s.mu.Lock()
		if s.stopping {
			s.mu.Unlock()
			return
		}
		cmd := exec.Command(s.path, append([]string{"-kong-prefix", s.prefix}, s.args...)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out, err := cmd.StdoutPipe()
		if err == nil {
			cmd.Stderr = cmd.Stdout
			err = cmd.Start()
		}
		if err != nil {
			s.mu.Unlock()
			s.log.Error("start plugin server", "path", s.path, "err", err)
			nextSpawn = time.Now().Add(time.Second)
			continue
		}
		s.cmd = cmd
		s.generation++
		ready := s.ready
		if ready == nil {
			ready = make(chan struct{})
			s.ready = ready
		}
		s.mu.Unlock()
		nextSpawn = time.Now().Add(time.Second)
		s.log.Info("started plugin server", "name", s.name, "pid", cmd.Process.Pid)

		procDone := make(chan struct{})
		go s.waitSocket(procDone, ready)
		s.grabLogs(out, cmd.Process.Pid)
		err = cmd.Wait()
		close(procDone)

		s.mu.Lock()
		s.cmd = nil
		s.ready = nil
		stopping := s.stopping
		s.mu.Unlock()
		s.drainPool()
		if stopping {
			return
		}
		s.log.Error("plugin server terminated, respawning", "name", s.name, "err", err)
	}
}

func (s *pluginServer) waitSocket(procDone, ready chan struct{}) {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		select {
		case <-procDone:
			return
		default:
		}
		c, err := net.Dial("unix", s.socket)
		if err == nil {
			c.Close()
			close(ready)
			return
		}
	}
	s.log.Error("plugin server never listened", "socket", s.socket)
}

// grabLogs forwards the server's output, as Kong writes it to its error
// log prefixed with [name:pid].
func (s *pluginServer) grabLogs(r io.Reader, pid int) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		level := slog.LevelInfo
		// go-pdk logs every connection Kong closes after an Exit, and
		// the stand-in's readiness probe: noise at this level.
		if strings.HasSuffix(line, "use of closed network connection") || strings.HasSuffix(line, " EOF") {
			level = slog.LevelDebug
		}
		s.log.Log(nil, level, line, "pluginserver", fmt.Sprintf("%s:%d", s.name, pid))
	}
}

// stop terminates the server: SIGTERM, then SIGKILL after a grace period.
func (s *pluginServer) stop() {
	s.mu.Lock()
	s.stopping = true
	cmd := s.cmd
	s.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(3 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-s.exited
		}
	} else {
		<-s.exited
	}
	s.drainPool()
	_ = os.Remove(s.socket)
}

// pid is the running server's process id, 0 when none runs.
func (s *pluginServer) pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

func (s *pluginServer) currentGeneration() (int, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.generation, s.ready
}

func (s *pluginServer) drainPool() {
	for {
		select {
		case c := <-s.pool:
			c.Close()
		default:
			return
		}
	}
}

// conn takes a pooled connection to the current process or dials one.
func (s *pluginServer) conn(ctx context.Context) (*serverConn, error) {
	gen, ready := s.currentGeneration()
	for {
		select {
		case c := <-s.pool:
			if c.generation == gen {
				return c, nil
			}
			c.Close()
			continue
		default:
		}
		break
	}
	if ready != nil {
		select {
		case <-ready:
		default:
			// A respawned server is not listening yet; Kong would fail
			// the request, but a short wait keeps tests of restarts
			// deterministic.
			t := time.NewTimer(2 * time.Second)
			select {
			case <-ready:
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			}
			t.Stop()
		}
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", s.socket)
	if err != nil {
		return nil, fmt.Errorf("trying to connect: %w", err)
	}
	return &serverConn{Conn: c, generation: gen, r: bufio.NewReaderSize(c, 4096)}, nil
}

func (s *pluginServer) release(c *serverConn) {
	select {
	case s.pool <- c:
	default:
		c.Close()
	}
}

func (s *pluginServer) nextMsgID() int64 {
	s.instMu.Lock()
	defer s.instMu.Unlock()
	// pb_rpc.lua increments twice per call; the server only echoes it.
	s.msgID += 2
	return s.msgID
}

// call sends one RpcCall and, for events, runs the bridge loop: the
// server asks PDK methods (a frame with the method name, one with the
// arguments), the stand-in answers each, an empty method frame ends the
// event, then the RpcReturn follows.
func (s *pluginServer) call(ctx context.Context, rc *pb.RpcCall, x *Exchange) (*pb.RpcReturn, error) {
	c, err := s.conn(ctx)
	if err != nil {
		return nil, err
	}
	// Kong's cosockets time out after 60 s; a request whose client went
	// away ends its call at once.
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(callTimeout)
	}
	_ = c.SetDeadline(dl)
	stopCancel := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stopCancel()
	rc.Sequence = s.nextMsgID()
	msg, err := proto.Marshal(rc)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("encode rpc call: %w", err)
	}
	if err := c.writeFrame(msg); err != nil {
		c.Close()
		return nil, err
	}
	for x != nil {
		method, err := c.readFrame()
		if err != nil {
			c.Close()
			return nil, err
		}
		if len(method) == 0 {
			break
		}
		name := string(method)
		args, err := c.readFrame()
		if err != nil {
			c.Close()
			return nil, err
		}
		reply, err := x.call(name, args)
		if errors.Is(err, errExited) {
			// kong.response.exit in the access phase stores the response
			// and yields the plugin's coroutine for good: Kong never
			// answers the call, and the socket closes with the request.
			c.Close()
			return nil, nil
		}
		if err != nil {
			c.Close()
			return nil, err
		}
		if err := c.writeFrame(reply); err != nil {
			c.Close()
			return nil, err
		}
	}
	data, err := c.readFrame()
	if err != nil {
		c.Close()
		return nil, err
	}
	if c.r.Buffered() > 0 {
		c.Close()
		return nil, fmt.Errorf("plugin server sent %d bytes after its return", c.r.Buffered())
	}
	var ret pb.RpcReturn
	if err := proto.Unmarshal(data, &ret); err != nil {
		c.Close()
		return nil, fmt.Errorf("decode rpc return: %w", err)
	}
	if ret.Sequence != rc.Sequence {
		c.Close()
		return nil, fmt.Errorf("rpc return sequence %d, want %d", ret.Sequence, rc.Sequence)
	}
	if !stopCancel() {
		// The request was cancelled meanwhile: its deadline is on the
		// connection, which is no use to the next call.
		c.Close()
		return &ret, nil
	}
	s.release(c)
	return &ret, nil
}

// instanceID is get_instance_id in kong/runloop/plugin_servers/init.lua:
// one instance per config key (__key__), started on first use, restarted
// when the config's __seq__ changes or the server was respawned, the old
// one closed afterwards.
func (s *pluginServer) instanceID(ctx context.Context, key string, config map[string]any) (int32, error) {
	gen, _ := s.currentGeneration()
	for {
		s.instMu.Lock()
		inst := s.instances[key]
		if inst != nil && inst.starting != nil {
			wait := inst.starting
			s.instMu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
		if inst != nil && inst.err == nil && inst.generation == gen {
			s.instMu.Unlock()
			return inst.id, nil
		}
		// An instance of an older generation died with its process:
		// nothing to close, start a new one.
		next := &instance{starting: make(chan struct{}), generation: gen}
		s.instances[key] = next
		s.instMu.Unlock()

		id, err := s.startInstance(ctx, config)
		s.instMu.Lock()
		next.id, next.err = id, err
		close(next.starting)
		next.starting = nil
		if err != nil {
			delete(s.instances, key)
		}
		s.instMu.Unlock()
		if err != nil {
			return 0, err
		}
		return id, nil
	}
}

// resetInstance forgets the instance for key (reset_instance in Kong).
func (s *pluginServer) resetInstance(key string) {
	s.instMu.Lock()
	if inst := s.instances[key]; inst != nil && inst.starting == nil {
		delete(s.instances, key)
	}
	s.instMu.Unlock()
}

// startInstance sends CmdStartInstance with the config encoded as Kong
// does (cjson of the config table plus Kong's metadata keys).
func (s *pluginServer) startInstance(ctx context.Context, config map[string]any) (int32, error) {
	s.instMu.Lock()
	s.seq++
	seq := s.seq
	s.instMu.Unlock()
	conf := make(map[string]any, len(config)+1)
	for k, v := range config {
		conf[k] = v
	}
	conf["__seq__"] = seq
	data, err := json.Marshal(conf)
	if err != nil {
		return 0, fmt.Errorf("encode plugin config: %w", err)
	}
	ret, err := s.call(ctx, &pb.RpcCall{Call: &pb.RpcCall_CmdStartInstance{CmdStartInstance: &pb.CmdStartInstance{Name: s.name, Config: data}}}, nil)
	if err != nil {
		return 0, fmt.Errorf("starting instance: %w", err)
	}
	st := ret.GetInstanceStatus()
	if st == nil {
		return 0, fmt.Errorf("starting instance: no instance status in the return")
	}
	return st.InstanceId, nil
}

// handleEvent runs one phase handler for the exchange. It follows the
// newer pb_rpc.lua: a connection closed (or "no plugin instance") before
// the plugin answered resets the instance and runs the event again, once
// here rather than without bound.
func (s *pluginServer) handleEvent(ctx context.Context, key string, config map[string]any, phase string, x *Exchange) error {
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		var id int32
		id, err = s.instanceID(ctx, key, config)
		if err != nil {
			return err
		}
		before := len(x.calls)
		_, err = s.call(ctx, &pb.RpcCall{Call: &pb.RpcCall_CmdHandleEvent{CmdHandleEvent: &pb.CmdHandleEvent{InstanceId: id, EventName: phase}}}, x)
		if err == nil || x.exited || len(x.calls) > before || ctx.Err() != nil {
			return err
		}
		s.log.Warn("plugin server event failed, restarting the instance", "err", err)
		s.resetInstance(key)
	}
	return err
}

// closedErr words a peer close as ngx cosockets do ("closed"), which is
// what Kong matches on.
func closedErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
		return fmt.Errorf("closed: %w", err)
	}
	return err
}
