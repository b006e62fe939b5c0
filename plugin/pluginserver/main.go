package pluginserver

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	"github.com/Kong/go-pdk/server"
)

// Main is a plugin binary's main, with go-pdk's command line: -dump (and
// -help) go to go-pdk's own server, so the plugin info and schema Kong
// loads are exactly go-pdk's; otherwise it serves on
// <-kong-prefix>/<binary name>.socket until it fails.
func Main(constructor func() any, version string, priority int) error {
	// go-pdk's server package registers -kong-prefix, -dump and -help.
	flag.Parse()
	dump, err := boolFlag("dump")
	if err != nil {
		return err
	}
	help, err := boolFlag("help")
	if err != nil {
		return err
	}
	if dump || help {
		return server.StartServer(constructor, version, priority)
	}
	prefix := flag.Lookup("kong-prefix")
	if prefix == nil {
		return fmt.Errorf("go-pdk's server registers no -kong-prefix flag")
	}
	path, err := SocketPath(prefix.Value.String())
	if err != nil {
		return err
	}
	ln, err := Listen(path)
	if err != nil {
		return err
	}
	defer ln.Close()
	log := slog.Default()
	log.Info("plugin server listening", "socket", path)
	return New(constructor, log).Serve(ln)
}

func boolFlag(name string) (bool, error) {
	f := flag.Lookup(name)
	if f == nil {
		return false, fmt.Errorf("go-pdk's server registers no -%s flag", name)
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return false, fmt.Errorf("-%s is not a boolean flag", name)
	}
	b, ok := g.Get().(bool)
	if !ok {
		return false, fmt.Errorf("-%s is not a boolean flag", name)
	}
	return b, nil
}

// SocketPath is where Kong looks for the plugin server: prefix/<name of
// the running binary>.socket, as go-pdk names it.
func SocketPath(prefix string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("plugin server socket: %w", err)
	}
	return filepath.Join(prefix, filepath.Base(exe)+".socket"), nil
}

// Listen listens on the unix socket path, replacing a stale socket a
// previous process left.
func Listen(path string) (net.Listener, error) {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	return ln, nil
}
