// Command noop-gopdk serves the no-op plugin (package testing/noop) on
// go-pdk's stock plugin server (server.StartServer): what a typical Go
// plugin's protocol costs, the second baseline of the protocol benchmark.
package main

import (
	"log"

	"github.com/Kong/go-pdk/server"

	"github.com/genderize-kong/genderize/testing/noop"
)

func main() {
	if err := server.StartServer(noop.New, noop.Version, noop.Priority); err != nil {
		log.Fatal(err)
	}
}
