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
package main

import (
	"fmt"
	"log"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/genderize-kong/genderize/engine"
	"github.com/genderize-kong/genderize/plugin"
	"github.com/genderize-kong/genderize/plugin/pluginserver"
)

func main() {
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
