// Command genderize is the genderize Kong plugin server. Kong starts it as
// its pluginserver_genderize_start_cmd and asks its schema with -dump; the
// binary's file name is the plugin's name, so it must stay "genderize".
//
//	genderize -kong-prefix /usr/local/kong   serve on /usr/local/kong/genderize.socket
//	genderize -dump                          print the plugin's info and schema
package main

import (
	"log"

	"github.com/genderize-kong/genderize/plugin"
	"github.com/genderize-kong/genderize/plugin/pluginserver"
)

func main() {
	if err := pluginserver.Main(plugin.New, plugin.Version, plugin.Priority); err != nil {
		log.Fatalf("genderize plugin server: %v", err)
	}
}
