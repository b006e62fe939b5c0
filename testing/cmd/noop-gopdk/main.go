// Command noop-gopdk is the no-op plugin of testing/cmd/noop on go-pdk's
// stock plugin server (server.StartServer): what a typical Go plugin's
// protocol costs, the second baseline of the protocol benchmark.
package main

import (
	"log"

	"github.com/Kong/go-pdk"
	"github.com/Kong/go-pdk/server"
)

// Config mirrors no field: go-pdk decodes the instance config into it and
// ignores what it does not know.
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
	if err := server.StartServer(New, "0.1.0", 1000); err != nil {
		log.Fatal(err)
	}
}
