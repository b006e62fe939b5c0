package redisserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStopStartPause(t *testing.T) {
	s := Run(t, Options{Persist: true, Password: "s3cret"})
	if s.Port == 6379 || s.Port == 0 {
		t.Fatalf("port %d", s.Port)
	}
	if err := pingAs(s, "s3cret"); err != nil {
		t.Fatal(err)
	}
	if err := pingAs(s, ""); err == nil {
		t.Fatal("PING without the password answered")
	}
	s.Stop()
	if err := pingAs(s, "s3cret"); err == nil {
		t.Fatal("stopped server answers")
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if err := pingAs(s, "s3cret"); err != nil {
		t.Fatalf("after restart on the same port: %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), "appendonlydir")); err != nil {
		t.Errorf("Persist: no append-only files: %v", err)
	}
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := pingAs(s, "s3cret"); err == nil {
		t.Fatal("paused server answers")
	}
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := pingAs(s, "s3cret"); err != nil {
		t.Fatalf("after resume: %v", err)
	}
	s.Kill()
	if err := s.Pause(); err == nil {
		t.Fatal("Pause of a killed server succeeded")
	}
}

func TestCluster(t *testing.T) {
	s := Run(t, Options{Cluster: true})
	info, err := s.command("CLUSTER", "INFO")
	if err != nil || !strings.Contains(info, "cluster_state:ok") {
		t.Fatalf("CLUSTER INFO: %q %v", info, err)
	}
	s.Stop()
	if err := s.Start(); err != nil {
		t.Fatalf("cluster restart: %v", err)
	}
}

// pingAs pings s with another password than its own.
func pingAs(s *Server, password string) error {
	return (&Server{Addr: s.Addr, dir: s.dir, opts: Options{Password: password, TLS: s.opts.TLS}}).ping()
}

func TestTLS(t *testing.T) {
	s := Run(t, Options{TLS: true})
	if err := s.ping(); err != nil {
		t.Fatal(err)
	}
	// The port speaks TLS only.
	if err := (&Server{Addr: s.Addr}).ping(); err == nil {
		t.Fatal("plain-text PING answered on the TLS port")
	}
}

func TestSentinel(t *testing.T) {
	master := Run(t, Options{})
	s := Run(t, Options{SentinelFor: master})
	reply, err := s.command("SENTINEL", "get-master-addr-by-name", SentinelMaster)
	// An array reply: command reads its first line only.
	if err != nil || !strings.HasPrefix(reply, "*2") {
		t.Fatalf("SENTINEL get-master-addr-by-name: %q %v", reply, err)
	}
}
