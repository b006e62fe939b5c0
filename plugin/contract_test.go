package plugin

import (
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Kong/go-pdk/bridge"
	pb "github.com/Kong/go-pdk/server/kong_plugin_protocol"
	"google.golang.org/protobuf/proto"

	"github.com/genderize-kong/genderize/plugin/pluginserver"
)

// TestPluginServerContract plays Kong against the plugin served by
// plugin/pluginserver, over the real protocol, to pin the contract between
// the two: the handler answers with exactly one Exit and closes the
// connection; the server then writes nothing more; a panic is recovered
// by the plugin (with the API's 500 and headers), never left to the
// server, whose last-resort recover would only close the connection.
func TestPluginServerContract(t *testing.T) {
	tests := []struct {
		name      string
		rig       func(*Config)
		status    int
		limit     string
		remaining string
	}{
		{"answer", func(*Config) {}, 200, "2500", "2499"},
		{"panic in the engine, recovered by decide", func(c *Config) {
			open := c.state.open
			c.state.open = func(c *Config) (*dependencies, error) {
				d, err := open(c)
				if err == nil {
					d.names = panickingNames{}
				}
				return d, err
			}
		}, 500, "2500", "0"},
		{"panic in the adapter, recovered by Access", func(c *Config) {
			calls := 0
			c.state.now = func() time.Time {
				if calls++; calls > 0 {
					panic("clock broke")
				}
				return t0
			}
		}, 500, "0", "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			captureLogs(t)
			var serverLogs syncBuffer
			srv := pluginserver.New(func() any {
				c := testConfig(t, &clock{now: t0})
				tt.rig(c)
				return c
			}, slog.New(slog.NewTextHandler(&serverLogs, nil)))
			kongSide, pluginSide := unixPair(t)
			done := make(chan struct{})
			go func() {
				defer close(done)
				srv.ServeConn(pluginSide)
			}()
			defer func() { kongSide.Close(); <-done }()
			_ = kongSide.SetDeadline(time.Now().Add(20 * time.Second))
			k := &pipeKong{t: t, c: kongSide}

			k.sendMsg(&pb.RpcCall{Sequence: 1, Call: &pb.RpcCall_CmdStartInstance{CmdStartInstance: &pb.CmdStartInstance{Name: "genderize", Config: []byte(`{"__seq__":7}`)}}})
			var ret pb.RpcReturn
			k.recvMsg(&ret)
			if ret.GetInstanceStatus().GetInstanceId() != 7 {
				t.Fatalf("start: %v", &ret)
			}
			k.sendMsg(&pb.RpcCall{Sequence: 2, Call: &pb.RpcCall_CmdHandleEvent{CmdHandleEvent: &pb.CmdHandleEvent{InstanceId: 7, EventName: "access"}}})
			var exit pb.ExitArgs
			for calls := 0; ; calls++ {
				if calls > maxCalls {
					t.Fatalf("more than %d PDK calls", maxCalls)
				}
				method := string(k.recv())
				args := k.recv()
				var answer proto.Message
				switch method {
				case "kong.nginx.get_var":
					answer = &pb.String{V: "GET /?name=peter&apikey=demo-free-key HTTP/1.1"}
				case "kong.client.get_consumer":
					answer = demoFree
				case "kong.response.exit":
					if err := proto.Unmarshal(args, &exit); err != nil {
						t.Fatal(err)
					}
				default:
					t.Fatalf("unexpected PDK call %s", method)
				}
				if answer == nil {
					break
				}
				k.sendMsg(answer)
			}
			// Exit, then close: Kong never answers the exit (the request
			// is over; here Kong's side stops writing), and the server
			// writes nothing more on the connection.
			if err := kongSide.CloseWrite(); err != nil {
				t.Fatal(err)
			}
			if rest, err := io.ReadAll(kongSide); err != nil || len(rest) != 0 {
				t.Errorf("after the exit: %d bytes %q, %v; want the connection closed", len(rest), rest, err)
			}
			h := bridge.UnwrapHeaders(exit.Headers)
			if int(exit.Status) != tt.status || strings.Join(h["X-Rate-Limit-Limit"], ",") != tt.limit || strings.Join(h["X-Rate-Limit-Remaining"], ",") != tt.remaining {
				t.Errorf("exit %d %s limit %v remaining %v, want %d, %s, %s", exit.Status, exit.Body, h["X-Rate-Limit-Limit"], h["X-Rate-Limit-Remaining"], tt.status, tt.limit, tt.remaining)
			}
			if strings.Contains(serverLogs.String(), "panic") {
				t.Errorf("the panic reached the server:\n%s", serverLogs.String())
			}
		})
	}
}

// pipeKong is Kong's side of a connection to the plugin server.
type pipeKong struct {
	t *testing.T
	c net.Conn
}

// unixPair is a connected pair of unix sockets, as between Kong and the
// plugin server; Kong's side can half-close.
func unixPair(t *testing.T) (*net.UnixConn, net.Conn) {
	t.Helper()
	dir, err := os.MkdirTemp("", "contract")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ln, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	kong, err := net.Dial("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	plugin, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	return kong.(*net.UnixConn), plugin
}

func (k *pipeKong) sendMsg(m proto.Message) {
	k.t.Helper()
	data, err := proto.Marshal(m)
	if err != nil {
		k.t.Fatal(err)
	}
	if _, err := k.c.Write(append(binary.LittleEndian.AppendUint32(nil, uint32(len(data))), data...)); err != nil {
		k.t.Fatal(err)
	}
}

func (k *pipeKong) recv() []byte {
	k.t.Helper()
	var hdr [4]byte
	if _, err := io.ReadFull(k.c, hdr[:]); err != nil {
		k.t.Fatalf("recv: %v", err)
	}
	data := make([]byte, binary.LittleEndian.Uint32(hdr[:]))
	if _, err := io.ReadFull(k.c, data); err != nil {
		k.t.Fatalf("recv: %v", err)
	}
	return data
}

func (k *pipeKong) recvMsg(m proto.Message) {
	k.t.Helper()
	if err := proto.Unmarshal(k.recv(), m); err != nil {
		k.t.Fatal(err)
	}
}
