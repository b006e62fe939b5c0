// Package noop is a Kong Go plugin whose access handler only calls
// kong.response.exit: the floor the plugin-server protocol imposes, the
// baseline of the protocol benchmark. Its config accepts and ignores the
// genderize plugin's fields, so the same kong.yml drives both. The
// commands testing/cmd/noop and testing/cmd/noop-gopdk serve it on the
// plugin's own server and on go-pdk's stock one.
package noop

import "github.com/Kong/go-pdk"

// Version and Priority are what Kong sees of the plugin.
const (
	Version  = "0.1.0"
	Priority = 1000
)

// Config mirrors no field: the server decodes the instance config into it
// and ignores what it does not know.
type Config struct{}

// New is the go-pdk constructor.
func New() any { return &Config{} }

var (
	body    = []byte(`{"name":"noop","gender":null,"probability":0.0,"count":0}`)
	headers = map[string][]string{"Content-Type": {"application/json; charset=utf-8"}}
)

// Access answers at once.
func (c *Config) Access(kong *pdk.PDK) {
	kong.Response.Exit(200, body, headers)
}
