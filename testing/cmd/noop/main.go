// Command noop serves the no-op plugin (package testing/noop) on the
// plugin's own server (plugin/pluginserver), as genderize is served: the
// like-for-like floor of the protocol benchmark.
package main

import (
	"log"

	"github.com/genderize-kong/genderize/plugin/pluginserver"
	"github.com/genderize-kong/genderize/testing/noop"
)

func main() {
	if err := pluginserver.Main(noop.New, noop.Version, noop.Priority); err != nil {
		log.Fatal(err)
	}
}
