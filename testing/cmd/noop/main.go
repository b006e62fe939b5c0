// Command noop is a Kong Go plugin server whose access handler only calls
// kong.response.exit: the floor the plugin-server protocol imposes, the
// baseline of the protocol benchmark. It runs on the plugin's own server
// (plugin/pluginserver), as genderize does; noop-gopdk is the same plugin
// on go-pdk's stock server. Its config accepts and ignores the genderize
// plugin's fields, so the same kong.yml drives both.
package main

import (
	"log"

	"github.com/Kong/go-pdk"

	"github.com/genderize-kong/genderize/plugin/pluginserver"
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

func main() {
	if err := pluginserver.Main(New, "0.1.0", 1000); err != nil {
		log.Fatal(err)
	}
}
