// Command pdkprobe is a plugin server for the stand-in's own tests: its
// access handler calls the PDK methods the query's "mode" asks for and
// answers with what they returned, so the tests see Kong's answers
// through the real go-pdk client.
package main

import (
	"encoding/json"
	"log"
	"os"
	"sync/atomic"

	"github.com/Kong/go-pdk"
	"github.com/Kong/go-pdk/server"
)

// Config takes two fields of the genderize config to show it arrives.
type Config struct {
	MaxBatch int    `json:"max_batch"`
	Default  string `json:"default_plan"`
	events   atomic.Int64
}

func New() any { return &Config{} }

func (c *Config) Access(kong *pdk.PDK) {
	n := c.events.Add(1)
	mode, _ := kong.Request.GetQueryArg("mode")
	out := map[string]any{"events": n, "max_batch": c.MaxBatch, "default_plan": c.Default, "pid": os.Getpid()}
	switch mode {
	case "noexit":
		return
	case "crash":
		os.Exit(3)
	case "badstatus":
		kong.Response.ExitStatus(0)
		return
	case "all":
		put := func(k string, v any, err error) {
			if err != nil {
				out[k] = "error: " + err.Error()
				return
			}
			out[k] = v
		}
		v, err := kong.Client.GetIp()
		put("ip", v, err)
		v, err = kong.Client.GetForwardedIp()
		put("forwarded_ip", v, err)
		cons, err := kong.Client.GetConsumer()
		put("consumer", cons, err)
		cred, err := kong.Client.GetCredential()
		put("credential", cred, err)
		lc, err := kong.Client.LoadConsumer("demo-pro", true)
		put("load_consumer", lc, err)
		v, err = kong.Request.GetRawQuery()
		put("raw_query", v, err)
		q, err := kong.Request.GetQuery(100)
		put("query", q, err)
		v, err = kong.Request.GetHeader("x-probe")
		put("header", v, err)
		h, err := kong.Request.GetHeaders(100)
		put("headers_x_probe", h["x-probe"], err)
		v, err = kong.Request.GetMethod()
		put("method", v, err)
		v, err = kong.Request.GetPath()
		put("path", v, err)
		v, err = kong.Request.GetScheme()
		put("scheme", v, err)
		p, err := kong.Request.GetPort()
		put("port", p, err)
		v, err = kong.Request.GetPathWithQuery()
		put("path_with_query", v, err)
		hv, err := kong.Request.GetHttpVersion()
		put("http_version", hv, err)
		rt, err := kong.Router.GetRoute()
		put("route_name", rt.Name, err)
		v, err = kong.Node.GetId()
		put("node_id", v, err)
		err = kong.Ctx.SetShared("k", "v")
		put("ctx_set", nil, err)
		sv, err := kong.Ctx.GetSharedString("k")
		put("ctx_get", sv, err)
		err = kong.Log.Err("probe log line ", 42)
		put("log", nil, err)
		t, err := kong.IP.IsTrusted("127.0.0.1")
		put("trusted", t, err)
		v, err = kong.Nginx.GetVar("request_method")
		put("nginx_var", v, err)
		err = kong.Response.SetHeader("X-Before-Exit", "kept")
		put("set_header", nil, err)
	}
	body, _ := json.Marshal(out)
	kong.Response.Exit(200, body, map[string][]string{"Content-Type": {"application/json"}, "X-Multi": {"a", "b"}})
}

func main() {
	if err := server.StartServer(New, "0.0.1", 1000); err != nil {
		log.Fatal(err)
	}
}
