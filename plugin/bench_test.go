package plugin

import (
	"testing"
	"time"

	"github.com/Kong/go-pdk"
	"github.com/Kong/go-pdk/bridge/bridgetest"
	"github.com/Kong/go-pdk/server/kong_plugin_protocol"

	"github.com/genderize-kong/genderize/plugin/quota"
)

// exitOnly is the baseline: a handler that makes the one unavoidable PDK
// call, an Exit with a body and the full header set, through the same bridge.
type exitOnly struct{}

var exitOnlyBody = []byte(`{"name":"peter","gender":"male","probability":1.0,"count":1}`)

func (exitOnly) Access(kong *pdk.PDK) {
	respond(kong, decision{status: 200, body: exitOnlyBody, rate: quota.Result{Limit: 2500, Remaining: 2499, ResetAfter: time.Hour}})
}

type accessor interface{ Access(*pdk.PDK) }

func runAccess(b *testing.B, h accessor, consumer *kong_plugin_protocol.Consumer, rawQuery string, wantStatus int) {
	b.Helper()
	b.ReportAllocs()
	for b.Loop() {
		f := &fakeKong{request: request{consumer: consumer, method: "GET", rawQuery: rawQuery, ip: clientIP}}
		conn := bridgetest.MockFunc(f)
		h.Access(pdk.Init(conn))
		conn.Close()
		if f.exit == nil || f.exit.status != wantStatus {
			b.Fatalf("exit %+v, want status %d", f.exit, wantStatus)
		}
	}
}

// BenchmarkAccess measures one request through the handler and go-pdk's
// bridge against the exit-only baseline of the same run; compare the ns/op
// as ratios. Quota and throttle are set so that nothing is refused.
func BenchmarkAccess(b *testing.B) {
	clk := &clock{now: t0}
	c := testConfig(b, clk)
	c.Plans["bench"] = Plan{Quota: 1 << 30}
	c.IPLimit = 1 << 30
	c.ThrottleRate, c.ThrottleBurst = 1e9, 1<<30
	keyed := consumerWith("plan:bench")
	b.Run("baseline-exit-only", func(b *testing.B) { runAccess(b, exitOnly{}, keyed, "", 200) })
	b.Run("keyed-one-name", func(b *testing.B) { runAccess(b, c, keyed, "name=peter", 200) })
	b.Run("keyless-one-name", func(b *testing.B) { runAccess(b, c, anonymous, "name=peter", 200) })
	b.Run("keyed-batch-100", func(b *testing.B) { runAccess(b, c, keyed, "country_id=DE&"+batchQuery(100), 200) })
	b.Run("keyed-422", func(b *testing.B) { runAccess(b, c, keyed, "name=", 422) })
}
