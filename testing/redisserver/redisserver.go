// Package redisserver runs a real redis-server for tests: on a free
// 127.0.0.1 port (never 6379 or a shared server), in a temporary directory,
// without persistence unless asked, stopped when the test ends. Stop, Start,
// Pause and Resume make outages and hangs for the tests of fault tolerance.
package redisserver

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Options shape the server.
type Options struct {
	// Persist keeps an append-only file (fsync on every write) in the
	// server's directory, so counts survive Stop, Kill and Start.
	Persist bool
	// Password, when set, is required from clients (requirepass, the
	// user "default").
	Password string
	// Cluster runs the server as a Redis Cluster of one master holding
	// every slot: clients speak the Cluster protocol to it.
	Cluster bool
	// TLS serves only TLS on the port, with a certificate for 127.0.0.1
	// and TLSServerName signed by a CA of its own (CAFile); clients are
	// not asked for certificates.
	TLS bool
	// SentinelFor, when set, runs a Sentinel (not a data server)
	// monitoring that server under the master name SentinelMaster.
	SentinelFor *Server
}

// SentinelMaster is the master name a Sentinel of this package monitors.
const SentinelMaster = "genderize"

// Server is one redis-server process, stopped and started again on the same
// port as tests need.
type Server struct {
	// Addr is "127.0.0.1:port".
	Addr string
	// Port is the TCP port, the same across Stop and Start.
	Port int

	bin  string
	dir  string
	opts Options

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Binary finds redis-server: $REDIS_SERVER, the PATH, /usr/bin.
func Binary() (string, error) {
	if p := os.Getenv("REDIS_SERVER"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, nil
	}
	const std = "/usr/bin/redis-server"
	if _, err := os.Stat(std); err == nil {
		return std, nil
	}
	return "", errors.New("redis-server not found (PATH, /usr/bin, $REDIS_SERVER); install it: apt-get install -y redis-server")
}

// Run starts a server for t and stops it when t ends. Without redis-server
// the test is skipped with the reason, except in CI (CI=true), where a
// missing server is a failure: CI installs it.
func Run(t testing.TB, o Options) *Server {
	t.Helper()
	s, err := New(t.TempDir(), o)
	if err != nil {
		var nf notFound
		if errors.As(err, &nf) && os.Getenv("CI") != "true" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

type notFound struct{ error }

// New starts a server keeping its files in dir (which must exist). Close
// stops it for good.
func New(dir string, o Options) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, notFound{err}
	}
	s := &Server{bin: bin, dir: dir, opts: o}
	if o.TLS {
		if err := writeTLSFiles(dir); err != nil {
			return nil, fmt.Errorf("redis-server TLS certificates: %w", err)
		}
	}
	// A free port is found by binding :0 and releasing it; another
	// process may take it before redis-server binds it, so try again.
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s.Port = port
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		err = s.Start()
		if err == nil {
			return s, nil
		}
		if attempt == 2 {
			return nil, err
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start starts the server on its port (again, after Stop or Kill) and waits
// until it answers.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return fmt.Errorf("redis-server on %s: already running", s.Addr)
	}
	port := []string{"--port", strconv.Itoa(s.Port)}
	if m := s.opts.SentinelFor; m != nil {
		// Sentinel rewrites its configuration file: it must be one.
		conf := filepath.Join(s.dir, "sentinel.conf")
		if _, err := os.Stat(conf); err != nil {
			text := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 1\nsentinel down-after-milliseconds %s 1000\n", SentinelMaster, m.Port, SentinelMaster)
			if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
				return err
			}
		}
		port = append([]string{conf, "--sentinel"}, port...)
	}
	if s.opts.TLS {
		port = []string{"--port", "0", "--tls-port", strconv.Itoa(s.Port),
			"--tls-cert-file", "server.crt", "--tls-key-file", "server.key",
			"--tls-ca-cert-file", "ca.crt", "--tls-auth-clients", "no"}
	}
	args := append(port,
		"--bind", "127.0.0.1",
		"--protected-mode", "yes",
		"--dir", s.dir,
		"--logfile", "redis.log",
		"--daemonize", "no",
		"--save", "",
	)
	switch {
	case s.opts.SentinelFor != nil:
	case s.opts.Persist:
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	default:
		args = append(args, "--appendonly", "no")
	}
	if s.opts.Password != "" {
		args = append(args, "--requirepass", s.opts.Password)
	}
	if s.opts.Cluster {
		args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	}
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = s.dir
	// Its own process group: a Ctrl-C of the test run reaches the test,
	// which stops the server itself.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done

	deadline := time.Now().Add(10 * time.Second)
	for {
		err := s.ping()
		if err == nil && s.opts.Cluster {
			err = s.clusterReady()
		}
		if err == nil {
			return nil
		}
		select {
		case <-done:
			s.cmd = nil
			return fmt.Errorf("redis-server on %s exited at start: %s", s.Addr, s.logTail())
		default:
		}
		if time.Now().After(deadline) {
			s.stopLocked(syscall.SIGKILL)
			return fmt.Errorf("redis-server on %s not answering after 10 s: %v; log: %s", s.Addr, err, s.logTail())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// clusterReady gives the lone master every slot (once: nodes.conf keeps
// them across restarts) and reports an error until the cluster is ok.
func (s *Server) clusterReady() error {
	info, err := s.command("CLUSTER", "INFO")
	if err != nil {
		return err
	}
	if strings.Contains(info, "cluster_state:ok") {
		return nil
	}
	if strings.Contains(info, "cluster_slots_assigned:0") {
		if _, err := s.command("CLUSTER", "ADDSLOTSRANGE", "0", "16383"); err != nil {
			return err
		}
	}
	return errors.New("cluster not ready")
}

// command sends one command and returns its reply's text: a simple string,
// an error (as an error) or a bulk string.
func (s *Server) command(args ...string) (string, error) {
	var c net.Conn
	var err error
	if s.opts.TLS {
		cfg, cerr := s.clientTLS()
		if cerr != nil {
			return "", cerr
		}
		c, err = tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", s.Addr, cfg)
	} else {
		c, err = net.DialTimeout("tcp", s.Addr, time.Second)
	}
	if err != nil {
		return "", err
	}
	password := s.opts.Password
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	r := bufio.NewReader(c)
	send := func(args ...string) (string, error) {
		fmt.Fprintf(c, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(c, "$%d\r\n%s\r\n", len(a), a)
		}
		line, err := r.ReadString('\n')
		if err != nil {
			return "", err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(line, "-"):
			return "", fmt.Errorf("%s: %s", args[0], line[1:])
		case strings.HasPrefix(line, "$"):
			n, err := strconv.Atoi(line[1:])
			if err != nil || n < 0 {
				return "", err
			}
			buf := make([]byte, n+2)
			if _, err := io.ReadFull(r, buf); err != nil {
				return "", err
			}
			return string(buf[:n]), nil
		}
		return strings.TrimPrefix(line, "+"), nil
	}
	if password != "" {
		if _, err := send("AUTH", password); err != nil {
			return "", err
		}
	}
	return send(args...)
}

// ping sends PING (after AUTH when a password is set).
func (s *Server) ping() error {
	reply, err := s.command("PING")
	if err != nil {
		return err
	}
	if reply != "PONG" {
		return fmt.Errorf("PING: %q", reply)
	}
	return nil
}

// Stop shuts the server down (SIGTERM: it closes its clients and, with
// Persist, has every write in its append-only file) and waits for it.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked(syscall.SIGTERM)
}

// Kill stops the server with SIGKILL, as a crash.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked(syscall.SIGKILL)
}

func (s *Server) stopLocked(sig syscall.Signal) {
	if s.cmd == nil {
		return
	}
	// A paused server would never act on SIGTERM.
	s.cmd.Process.Signal(syscall.SIGCONT)
	s.cmd.Process.Signal(sig)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

// Pause freezes the server (SIGSTOP): connections stay open and nothing is
// answered, as a hung or overloaded Redis.
func (s *Server) Pause() error { return s.signal(syscall.SIGSTOP) }

// Resume undoes Pause (SIGCONT).
func (s *Server) Resume() error { return s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return fmt.Errorf("redis-server on %s: not running", s.Addr)
	}
	return s.cmd.Process.Signal(sig)
}

// Close stops the server for good.
func (s *Server) Close() { s.Stop() }

// Dir is the server's working directory (its log and append-only file).
func (s *Server) Dir() string { return s.dir }

// logTail is the end of the server's log, for error messages.
func (s *Server) logTail() string {
	b, err := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
