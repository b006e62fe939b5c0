package plugin

import (
	"testing"
	"time"

	"github.com/genderize-kong/genderize/testing/redisserver"
)

// TestRedisPolicyUnavailable wires the plugin to the real redis policy and
// a real redis-server, fault_tolerant off: while Redis is down every answer
// is 503 with the caller's limit and reset, and consumes nothing, so that
// the count goes on from where it was once Redis is back.
func TestRedisPolicyUnavailable(t *testing.T) {
	srv := redisserver.Run(t, redisserver.Options{Persist: true}) // counts survive Stop and Start
	c := New().(*Config)
	c.DatabasePath = testNamesDB(t)
	c.QuotaPolicy = "redis"
	c.Redis.Host, c.Redis.Port, c.Redis.Timeout = "127.0.0.1", srv.Port, 300
	c.FaultTolerant = false
	captureLogs(t)
	limit := c.Plans["free"].Quota

	check(t, "up", get(demoFree, "name=peter").do(t, c), want{200, string(predict(t, c, false, "", "peter")), limit, limit - 1, ""})

	srv.Stop()
	unavailable := want{503, jsonError("Service temporarily unavailable"), limit, 0, ""}
	for _, q := range []string{"name=peter", "name=", batchQuery(3)} {
		got := get(demoFree, q).do(t, c)
		check(t, "down "+q, got, unavailable)
		if got.header("X-Rate-Limit-Reset") == "0" {
			t.Errorf("down %s: no reset", q)
		}
	}

	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	// The store finds Redis again by itself; bounded wait.
	var got *exitResult
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if got = get(demoFree, "name=").do(t, c); got.status == 422 {
			break
		}
	}
	check(t, "back", got, want{422, jsonError("Invalid 'name' parameter"), limit, limit - 1, ""})
}
