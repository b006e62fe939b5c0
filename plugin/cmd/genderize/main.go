// Command genderize is the genderize Kong plugin server. Kong starts it as
// its pluginserver_genderize_start_cmd and asks its schema with -dump; the
// binary's file name is the plugin's name, so it must stay "genderize".
//
//	genderize -kong-prefix /usr/local/kong   serve on /usr/local/kong/genderize.socket
//	genderize -dump                          print the plugin's info and schema
//
// SIGHUP reloads the name database at once; a database renamed over the
// file is picked up by itself within seconds too.
//
// GENDERIZE_CPUPROFILE=<path> writes a CPU profile to <path>.<pid> when the
// process is stopped with SIGTERM or SIGINT, as Kong and the stand-in stop
// it (Kong passes its environment to plugin servers).
//
// -metrics-listen host:port also serves Prometheus metrics at /metrics on
// that address (off when absent); Kong's start command carries it:
//
//	pluginserver_genderize_start_cmd = /usr/local/bin/genderize -kong-prefix /usr/local/kong -metrics-listen 127.0.0.1:9542
package main

import (
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/genderize-kong/genderize/engine"
	"github.com/genderize-kong/genderize/plugin"
	"github.com/genderize-kong/genderize/plugin/metrics"
	"github.com/genderize-kong/genderize/plugin/pluginserver"
)

// Registered next to go-pdk's -kong-prefix, -dump and -help on the default
// FlagSet, which pluginserver.Main parses.
var metricsListen = flag.String("metrics-listen", "", "serve Prometheus metrics at /metrics on this host:port (off when empty)")

func main() {
	flag.Parse()
	// -dump's output is what Kong parses: nothing else starts or logs.
	if *metricsListen != "" && !flagSet("dump") && !flagSet("help") {
		// A taken or bad address stops the process before it serves: Kong
		// respawns a plugin server that exits, once a second and with the
		// error in its log, so a port still held by the previous process
		// heals within seconds and a wrong address cannot go unnoticed, as
		// a server that went on without its metrics would.
		if err := serveMetrics(*metricsListen); err != nil {
			log.Fatalf("genderize plugin server: %v", err)
		}
	}
	if path := os.Getenv("GENDERIZE_CPUPROFILE"); path != "" {
		discard, err := profileUntilStopped(fmt.Sprintf("%s.%d", path, os.Getpid()))
		if err != nil {
			log.Fatalf("genderize plugin server: %v", err)
		}
		// Main returns only after -dump: no profile worth keeping.
		defer discard()
	}
	// SIGHUP reloads the name database now (it is also reloaded by itself
	// within seconds of being replaced).
	engine.ReloadOnSignal(syscall.SIGHUP)
	if err := pluginserver.Main(plugin.New, plugin.Version, plugin.Priority); err != nil {
		log.Fatalf("genderize plugin server: %v", err)
	}
}

// serveMetrics listens on addr and serves the metrics there in the
// background, recording from now on.
func serveMetrics(addr string) error {
	r, err := metrics.New(metrics.Options{})
	if err != nil {
		return err
	}
	ln, err := metrics.Listen(addr)
	if err != nil {
		return err
	}
	metrics.Enable(r)
	logger := slog.Default()
	logger.Info("metrics listening", "address", ln.Addr().String(), "path", "/metrics")
	go func() {
		// Serve returns only if the listener breaks: the plugin keeps
		// answering, without metrics.
		err := r.Serve(ln, logger)
		metrics.Enable(nil)
		logger.Error("metrics server stopped; no metrics until the plugin server restarts", "address", ln.Addr().String(), "error", err.Error())
	}()
	return nil
}

// flagSet reports whether the boolean flag name (one of go-pdk's) is set.
func flagSet(name string) bool {
	f := flag.Lookup(name)
	return f != nil && f.Value.String() == "true"
}

// profileUntilStopped profiles the CPU until a stop signal, then writes the
// profile and exits. discard stops profiling and removes the file.
func profileUntilStopped(path string) (discard func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("cpu profile %s: %w", path, err)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		pprof.StopCPUProfile()
		f.Close()
		os.Exit(0)
	}()
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		os.Remove(path)
	}, nil
}
