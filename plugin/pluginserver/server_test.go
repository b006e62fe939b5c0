package pluginserver

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Kong/go-pdk"
	pb "github.com/Kong/go-pdk/server/kong_plugin_protocol"
	"google.golang.org/protobuf/proto"
)

// testConfig is a plugin with a handler per behaviour under test: access
// reads the raw query and exits with it, log asks the method and returns
// without exiting, rewrite panics.
type testConfig struct {
	Greeting string `json:"greeting"`
}

func (c *testConfig) Access(kong *pdk.PDK) {
	q, err := kong.Request.GetRawQuery()
	if err != nil {
		return
	}
	kong.Response.Exit(200, []byte(c.Greeting+" "+q), map[string][]string{"X-Test": {"yes"}})
}

func (c *testConfig) Log(kong *pdk.PDK) {
	_, _ = kong.Request.GetMethod()
}

func (c *testConfig) Rewrite(kong *pdk.PDK) {
	panic("rewrite broke")
}

// countingListener counts the writes made on each accepted connection:
// each is one write syscall on the unix socket.
type countingListener struct {
	net.Listener
	mu     sync.Mutex
	writes []*atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	n := new(atomic.Int32)
	l.mu.Lock()
	l.writes = append(l.writes, n)
	l.mu.Unlock()
	return &countingConn{Conn: c, writes: n}, nil
}

// lastWrites is the write count of the latest connection.
func (l *countingListener) lastWrites() int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writes[len(l.writes)-1].Load()
}

type countingConn struct {
	net.Conn
	writes *atomic.Int32
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// syncBuffer collects log output written by the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type testServer struct {
	t    *testing.T
	srv  *Server
	ln   *countingListener
	path string
	logs *syncBuffer
}

func startServer(t *testing.T) *testServer {
	t.Helper()
	// A unix socket path must be short: t.TempDir's can be too long.
	dir, err := os.MkdirTemp("", "ps")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "p.socket")
	// A stale socket file from a previous process must not stop Listen.
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	raw, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	ln := &countingListener{Listener: raw}
	logs := &syncBuffer{}
	srv := New(func() any { return &testConfig{} }, slog.New(slog.NewTextHandler(logs, nil)))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return &testServer{t: t, srv: srv, ln: ln, path: path, logs: logs}
}

// kong is the test's side of one connection, speaking as Kong does.
type kong struct {
	t *testing.T
	c *net.UnixConn
}

func (s *testServer) dial() *kong {
	s.t.Helper()
	c, err := net.Dial("unix", s.path)
	if err != nil {
		s.t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	s.t.Cleanup(func() { c.Close() })
	return &kong{t: s.t, c: c.(*net.UnixConn)}
}

func (k *kong) send(data []byte) {
	k.t.Helper()
	buf := binary.LittleEndian.AppendUint32(nil, uint32(len(data)))
	if _, err := k.c.Write(append(buf, data...)); err != nil {
		k.t.Fatalf("send: %v", err)
	}
}

func (k *kong) sendMsg(m proto.Message) {
	k.t.Helper()
	data, err := proto.Marshal(m)
	if err != nil {
		k.t.Fatal(err)
	}
	k.send(data)
}

func (k *kong) call(seq int64, rc *pb.RpcCall) {
	k.t.Helper()
	rc.Sequence = seq
	k.sendMsg(rc)
}

// recv reads a frame; ok is false when the server closed the connection.
func (k *kong) recv() (data []byte, ok bool) {
	k.t.Helper()
	var hdr [4]byte
	if _, err := io.ReadFull(k.c, hdr[:]); err != nil {
		if err == io.EOF {
			return nil, false
		}
		k.t.Fatalf("recv: %v", err)
	}
	data = make([]byte, binary.LittleEndian.Uint32(hdr[:]))
	if _, err := io.ReadFull(k.c, data); err != nil {
		k.t.Fatalf("recv body: %v", err)
	}
	return data, true
}

func (k *kong) recvReturn() *pb.RpcReturn {
	k.t.Helper()
	data, ok := k.recv()
	if !ok {
		k.t.Fatal("connection closed, want an RpcReturn")
	}
	var r pb.RpcReturn
	if err := proto.Unmarshal(data, &r); err != nil {
		k.t.Fatalf("decode return: %v", err)
	}
	return &r
}

// expectClosed reads until the server closes and fails on any byte.
func (k *kong) expectClosed() {
	k.t.Helper()
	rest, err := io.ReadAll(k.c)
	if err != nil {
		k.t.Fatalf("read to close: %v", err)
	}
	if len(rest) != 0 {
		k.t.Fatalf("server sent %d bytes, want none: %q", len(rest), rest)
	}
}

func (k *kong) startInstance(seq int64, config string) *pb.InstanceStatus {
	k.t.Helper()
	k.call(seq, &pb.RpcCall{Call: &pb.RpcCall_CmdStartInstance{CmdStartInstance: &pb.CmdStartInstance{Name: "test", Config: []byte(config)}}})
	r := k.recvReturn()
	if r.Sequence != seq {
		k.t.Fatalf("return sequence %d, want %d", r.Sequence, seq)
	}
	return r.GetInstanceStatus()
}

func event(id int32, phase string) *pb.RpcCall {
	return &pb.RpcCall{Call: &pb.RpcCall_CmdHandleEvent{CmdHandleEvent: &pb.CmdHandleEvent{InstanceId: id, EventName: phase}}}
}

func TestInstanceLifecycle(t *testing.T) {
	s := startServer(t)
	k := s.dial()

	st := k.startInstance(2, `{"__seq__":7,"greeting":"hi"}`)
	if st.InstanceId != 7 || st.Name != "test" || st.StartedAt == 0 {
		t.Fatalf("start: %v, want id 7 (the __seq__), name test, a start time", st)
	}
	noSeq := k.startInstance(4, `{"greeting":"hi"}`)
	if noSeq.InstanceId == 0 || noSeq.InstanceId == 7 {
		t.Fatalf("start without __seq__: id %d, want a fresh random id", noSeq.InstanceId)
	}

	for _, tc := range []struct {
		name string
		call *pb.RpcCall
		id   int32
	}{
		{"status", &pb.RpcCall{Call: &pb.RpcCall_CmdGetInstanceStatus{CmdGetInstanceStatus: &pb.CmdGetInstanceStatus{InstanceId: 7}}}, 7},
		{"close", &pb.RpcCall{Call: &pb.RpcCall_CmdCloseInstance{CmdCloseInstance: &pb.CmdCloseInstance{InstanceId: 7}}}, 7},
		{"other instance still there", &pb.RpcCall{Call: &pb.RpcCall_CmdGetInstanceStatus{CmdGetInstanceStatus: &pb.CmdGetInstanceStatus{InstanceId: noSeq.InstanceId}}}, noSeq.InstanceId},
	} {
		k.call(10, tc.call)
		r := k.recvReturn()
		if got := r.GetInstanceStatus(); got == nil || got.InstanceId != tc.id || got.Name != "---" || r.Sequence != 10 {
			t.Fatalf("%s: %v, want instance %d named --- with sequence 10", tc.name, r, tc.id)
		}
	}

	// A closed instance is gone: go-pdk closes the connection and Kong
	// starts the instance again.
	k.call(12, &pb.RpcCall{Call: &pb.RpcCall_CmdGetInstanceStatus{CmdGetInstanceStatus: &pb.CmdGetInstanceStatus{InstanceId: 7}}})
	k.expectClosed()
	if !strings.Contains(s.logs.String(), "no plugin instance 7") {
		t.Fatalf("log %q does not name the missing instance", s.logs.String())
	}
}

func TestIdleInstancesExpireOnClose(t *testing.T) {
	s := startServer(t)
	k := s.dial()
	idle := k.startInstance(2, `{"__seq__":1}`).InstanceId
	busy := k.startInstance(4, `{"__seq__":2}`).InstanceId
	closed := k.startInstance(6, `{"__seq__":3}`).InstanceId

	old := time.Now().Add(-2 * instanceTimeout)
	s.srv.mu.Lock()
	for _, id := range []int32{idle, busy} {
		s.srv.instances[id].startTime = old
		s.srv.instances[id].lastEvent.Store(old.UnixNano())
	}
	s.srv.mu.Unlock()
	// An event keeps an old instance alive.
	k.call(8, event(busy, "log"))
	k.recv() // kong.request.get_method
	k.recv()
	k.sendMsg(&pb.String{V: "GET"})
	if end, _ := k.recv(); len(end) != 0 {
		t.Fatalf("event end frame %q, want empty", end)
	}
	k.recvReturn()

	k.call(10, &pb.RpcCall{Call: &pb.RpcCall_CmdCloseInstance{CmdCloseInstance: &pb.CmdCloseInstance{InstanceId: closed}}})
	k.recvReturn()
	s.srv.mu.RLock()
	_, idleLeft := s.srv.instances[idle]
	_, busyLeft := s.srv.instances[busy]
	s.srv.mu.RUnlock()
	if idleLeft || !busyLeft {
		t.Fatalf("after close: idle instance kept %v (want false), busy kept %v (want true)", idleLeft, busyLeft)
	}
}

func TestEvents(t *testing.T) {
	for _, tc := range []struct {
		name  string
		phase string
		// run plays Kong's side of the event after the call was sent.
		run func(t *testing.T, k *kong)
		// writes is how many write syscalls the server makes on the
		// connection for the instance start and the event.
		writes int32
		// closes is whether the server closes the connection after the
		// event.
		closes bool
		// log is a piece of the server's log, "" for no log at all.
		log string
	}{
		{
			name:  "exit: one write per PDK call, nothing after",
			phase: "access",
			run: func(t *testing.T, k *kong) {
				if m, _ := k.recv(); string(m) != "kong.request.get_raw_query" {
					t.Fatalf("first call %q", m)
				}
				if args, _ := k.recv(); len(args) != 0 {
					t.Fatalf("get_raw_query args %q, want none", args)
				}
				k.sendMsg(&pb.String{V: "name=anna"})
				if m, _ := k.recv(); string(m) != "kong.response.exit" {
					t.Fatalf("second call %q", m)
				}
				data, _ := k.recv()
				var exit pb.ExitArgs
				if err := proto.Unmarshal(data, &exit); err != nil {
					t.Fatal(err)
				}
				if exit.Status != 200 || string(exit.Body) != "hi name=anna" || exit.Headers.AsMap()["X-Test"] == nil {
					t.Fatalf("exit %v", &exit)
				}
				// Kong never answers an exit in the access phase: it
				// stops reading. A half close lets the test see that the
				// server sends nothing more.
				if err := k.c.CloseWrite(); err != nil {
					t.Fatal(err)
				}
				k.expectClosed()
			},
			writes: 3, // the start's return, get_raw_query, exit
			closes: true,
		},
		{
			name:  "no exit: end frame and return in one write",
			phase: "log",
			run: func(t *testing.T, k *kong) {
				if m, _ := k.recv(); string(m) != "kong.request.get_method" {
					t.Fatalf("call %q", m)
				}
				k.recv()
				k.sendMsg(&pb.String{V: "GET"})
				if end, _ := k.recv(); len(end) != 0 {
					t.Fatalf("end frame %q, want empty", end)
				}
				if r := k.recvReturn(); r.Sequence != 4 {
					t.Fatalf("return sequence %d, want 4", r.Sequence)
				}
				// The connection stays usable for the next call.
				k.call(6, &pb.RpcCall{Call: &pb.RpcCall_CmdGetPluginNames{CmdGetPluginNames: &pb.CmdGetPluginNames{}}})
				if data, ok := k.recv(); !ok || len(data) != 0 {
					t.Fatalf("GetPluginNames: %q %v, want an empty frame as go-pdk answers", data, ok)
				}
			},
			writes: 4, // the start's return, get_method, end+return, names
		},
		{
			name:  "panic: recovered, connection closed, logged",
			phase: "rewrite",
			run: func(t *testing.T, k *kong) {
				k.expectClosed()
			},
			writes: 1,
			closes: true,
			log:    "rewrite broke",
		},
		{
			name:  "unknown phase",
			phase: "certificate",
			run: func(t *testing.T, k *kong) {
				k.expectClosed()
			},
			writes: 1,
			closes: true,
			log:    "undefined method certificate",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t)
			k := s.dial()
			id := k.startInstance(2, `{"__seq__":3,"greeting":"hi"}`).InstanceId
			k.call(4, event(id, tc.phase))
			tc.run(t, k)
			if tc.closes {
				// Writes happen before the close the test saw.
				if got := s.ln.lastWrites(); got != tc.writes {
					t.Errorf("%d writes, want %d", got, tc.writes)
				}
			} else {
				k.c.Close()
				deadline := time.Now().Add(5 * time.Second)
				for s.ln.lastWrites() != tc.writes && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
				if got := s.ln.lastWrites(); got != tc.writes {
					t.Errorf("%d writes, want %d", got, tc.writes)
				}
			}
			logs := s.logs.String()
			if tc.log == "" && strings.Contains(logs, "level=ERROR") {
				t.Errorf("error logged: %s", logs)
			}
			if tc.log != "" && !strings.Contains(logs, tc.log) {
				t.Errorf("log %q lacks %q", logs, tc.log)
			}
			// The server goes on serving other connections.
			k2 := s.dial()
			if st := k2.startInstance(2, `{"__seq__":9}`); st.InstanceId != 9 {
				t.Errorf("after the event: start gave %v", st)
			}
		})
	}
}

func TestBadCalls(t *testing.T) {
	for _, tc := range []struct {
		name string
		send func(k *kong)
		log  string
	}{
		{"config not JSON", func(k *kong) {
			k.call(2, &pb.RpcCall{Call: &pb.RpcCall_CmdStartInstance{CmdStartInstance: &pb.CmdStartInstance{Name: "test", Config: []byte("{")}}})
		}, "decoding config"},
		{"event for no instance", func(k *kong) { k.call(2, event(42, "access")) }, "no plugin instance 42"},
		{"frame not protobuf", func(k *kong) { k.send([]byte{0xff, 0xff, 0xff}) }, "decode call"},
		{"frame too long", func(k *kong) {
			if _, err := k.c.Write([]byte{0xff, 0xff, 0xff, 0xff}); err != nil {
				t.Fatal(err)
			}
		}, "exceeds"},
		{"call without a command", func(k *kong) { k.call(2, &pb.RpcCall{}) }, "unexpected type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t)
			k := s.dial()
			tc.send(k)
			k.expectClosed()
			if !strings.Contains(s.logs.String(), tc.log) {
				t.Fatalf("log %q lacks %q", s.logs.String(), tc.log)
			}
		})
	}
}

// TestPeerCloseIsQuiet: Kong closes pooled connections at will; that is
// not an error worth a log line.
func TestPeerCloseIsQuiet(t *testing.T) {
	s := startServer(t)
	k := s.dial()
	k.startInstance(2, `{"__seq__":1}`)
	k.c.Close()
	k2 := s.dial()
	k2.startInstance(4, `{"__seq__":2}`)
	time.Sleep(10 * time.Millisecond)
	if logs := s.logs.String(); logs != "" {
		t.Fatalf("logged %q", logs)
	}
}

// TestManyConnections: connections one after another and side by side, as
// Kong opens one per request, each get their own answer: buffers and
// goroutines passed from one connection to the next carry nothing over.
func TestManyConnections(t *testing.T) {
	s := startServer(t)
	k := s.dial()
	id := k.startInstance(2, `{"__seq__":5,"greeting":"hi"}`).InstanceId
	const workers, perWorker = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				query := fmt.Sprintf("w=%d&i=%d&pad=%s", w, i, strings.Repeat("x", (w*perWorker+i)*37%3000))
				if err := exitOnce(s.path, id, query); err != nil {
					errs <- fmt.Errorf("worker %d request %d: %w", w, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if logs := s.logs.String(); strings.Contains(logs, "level=ERROR") {
		t.Errorf("errors logged: %s", logs)
	}
}

// exitOnce plays one access event on a fresh connection and checks that
// the exit carries this request's query.
func exitOnce(path string, id int32, query string) error {
	c, err := net.Dial("unix", path)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	send := func(m proto.Message) error {
		data, err := proto.Marshal(m)
		if err != nil {
			return err
		}
		_, err = c.Write(append(binary.LittleEndian.AppendUint32(nil, uint32(len(data))), data...))
		return err
	}
	recv := func() ([]byte, error) {
		var hdr [4]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return nil, err
		}
		data := make([]byte, binary.LittleEndian.Uint32(hdr[:]))
		_, err := io.ReadFull(c, data)
		return data, err
	}
	if err := send(&pb.RpcCall{Sequence: 1, Call: &pb.RpcCall_CmdHandleEvent{CmdHandleEvent: &pb.CmdHandleEvent{InstanceId: id, EventName: "access"}}}); err != nil {
		return err
	}
	if m, err := recv(); err != nil || string(m) != "kong.request.get_raw_query" {
		return fmt.Errorf("first call %q: %v", m, err)
	}
	if _, err := recv(); err != nil {
		return err
	}
	if err := send(&pb.String{V: query}); err != nil {
		return err
	}
	if m, err := recv(); err != nil || string(m) != "kong.response.exit" {
		return fmt.Errorf("second call %q: %v", m, err)
	}
	data, err := recv()
	if err != nil {
		return err
	}
	var exit pb.ExitArgs
	if err := proto.Unmarshal(data, &exit); err != nil {
		return err
	}
	if want := "hi " + query; string(exit.Body) != want {
		return fmt.Errorf("exit body %.40q..., want %.40q...", exit.Body, want)
	}
	return nil
}
