package reliability

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/genderize-kong/genderize/testing/redisserver"
)

// outageTimeout is redis.timeout of the outage runs, in milliseconds.
const outageTimeout = 300

// hangBound is how long any request may take while Redis is down or hung:
// the timeout plus generous room for a noisy machine. Without the bound a
// hung Redis would hold requests for the stand-in's 60 s.
const hangBound = outageTimeout*time.Millisecond + 1500*time.Millisecond

// background is a load that runs until stopped: clients sending random
// batches for the keyed caller whatever the answers.
type background struct {
	ta   tally
	stop atomic.Bool
	wg   sync.WaitGroup
	// bad collects answers outside what the test allows.
	mu  sync.Mutex
	bad []string
}

func startBackground(nd *node, clients int, allowed func(reply) bool) *background {
	b := &background{}
	for g := range clients {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(g)))
			// Bounded: far more than the few seconds of a run need.
			for i := 0; i < 50000 && !b.stop.Load(); i++ {
				n := 1 + rng.IntN(100)
				r := nd.get(context.Background(), keyed, n, i)
				b.ta.add(r, n)
				if !allowed(r) {
					b.mu.Lock()
					if len(b.bad) < 10 {
						b.bad = append(b.bad, strings.TrimSpace(string(r.body))+" status "+strconv.Itoa(r.status)+" err "+errString(r.err))
					}
					b.mu.Unlock()
				}
				if r.status == 503 {
					// Answered at once during the outage: do not spin.
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	return b
}

func (b *background) answered() int {
	b.ta.mu.Lock()
	defer b.ta.mu.Unlock()
	return b.ta.answered
}

// waitAnswered waits (bounded) until the load has had n more names answered.
func (b *background) waitAnswered(t *testing.T, n int) {
	t.Helper()
	target := b.answered() + n
	deadline := time.Now().Add(30 * time.Second)
	for b.answered() < target {
		if time.Now().After(deadline) {
			b.finish()
			t.Fatalf("load stalled: %d names answered, waiting for %d", b.answered(), target)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (b *background) finish() {
	b.stop.Store(true)
	b.wg.Wait()
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

// logLines collects log lines to count.
type logLines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logLines) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// Redis stops (or hangs) under load and comes back. Fault tolerant, every
// request is answered 200 from the node's own counts meanwhile, which are
// added to Redis when it returns; not fault tolerant, the outage's requests
// are answered 503 and consume nothing. Either way no request waits much
// longer than the timeout, the outage is logged once, and afterwards the
// recorded usage is at least what was answered.
func TestRedisOutage(t *testing.T) {
	for _, tc := range []struct {
		name          string
		faultTolerant bool
		hang          bool // SIGSTOP instead of a shutdown
	}{
		{"fault-tolerant/stop", true, false},
		{"fault-tolerant/hang", true, true},
		{"not-fault-tolerant/stop", false, false},
		{"not-fault-tolerant/hang", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const clients = 16
			srv := redisserver.Run(t, redisserver.Options{Persist: true})
			var logs logLines
			nd := startNode(t, nodeConfig{quota: crashQuota, policy: "redis", redisPort: srv.Port,
				redisTimeout: outageTimeout, faultTolerant: tc.faultTolerant, logs: &logs})
			before := crashQuota - nd.remaining(t, keyed)

			b := startBackground(nd, clients, func(r reply) bool {
				switch {
				case r.err != nil || r.took > hangBound:
					return false
				case r.status == 200:
					return true
				case r.status == 503:
					// Only without fault tolerance, with SPEC's body
					// and the rate headers.
					return !tc.faultTolerant && string(r.body) == bodyUnavailable && r.remaining >= 0
				}
				return false
			})
			b.waitAnswered(t, 5000)
			answeredBefore := b.answered()
			if tc.hang {
				if err := srv.Pause(); err != nil {
					t.Fatal(err)
				}
			} else {
				srv.Stop()
			}
			time.Sleep(1500 * time.Millisecond)
			answeredDuring := b.answered() - answeredBefore
			if tc.hang {
				if err := srv.Resume(); err != nil {
					t.Fatal(err)
				}
			} else if err := srv.Start(); err != nil {
				t.Fatal(err)
			}
			// The probe finds Redis within a second or two.
			deadline := time.Now().Add(10 * time.Second)
			for logs.count("Redis reachable again") == 0 {
				if time.Now().After(deadline) {
					b.finish()
					t.Fatal("no recovery logged 10 s after Redis came back")
				}
				time.Sleep(20 * time.Millisecond)
			}
			b.waitAnswered(t, 5000)
			b.finish()

			// After the recovery every request is decided in Redis again.
			for i := range 20 {
				if r := nd.get(context.Background(), keyed, 1, i); r.status != 200 {
					t.Fatalf("after recovery: %d %s", r.status, r.body)
				}
			}
			used := crashQuota - nd.remaining(t, keyed) - before - 20
			ta := &b.ta
			t.Logf("%d clients; outage 1.5 s; names answered %d (%d during the outage); recorded %d; statuses %v; slowest %s",
				clients, ta.answered, answeredDuring, used, ta.statuses, ta.slowest.Round(time.Millisecond))
			for _, s := range b.bad {
				t.Errorf("unexpected answer: %s", s)
			}
			if ta.slowest > hangBound {
				t.Errorf("a request took %s, more than %s", ta.slowest, hangBound)
			}
			if tc.faultTolerant && answeredDuring == 0 {
				t.Errorf("nothing answered during the outage")
			}
			if !tc.faultTolerant && ta.statuses[503] == 0 {
				t.Errorf("no 503 during the outage")
			}
			// Requests in flight when Redis failed may be counted though
			// not answered (their script ran, the answer was lost).
			if used < ta.answered || used > ta.answered+clients*100 {
				t.Errorf("recorded %d, answered %d: want answered <= recorded <= answered + %d in flight",
					used, ta.answered, clients*100)
			}
			if n := logs.count("Redis unreachable"); n != 1 {
				t.Errorf("outage logged %d times, want once", n)
			}
		})
	}
}
