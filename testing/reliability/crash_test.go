package reliability

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/genderize-kong/genderize/testing/redisserver"
)

// crashQuota is large enough that the load is never refused.
const crashQuota = 10_000_000

// The plugin process is killed with SIGKILL under load. After the stand-in
// has started it again, the recorded usage is at least every name that was
// answered and at most those plus the names in flight at the kill.
func TestCrashUnderLoad(t *testing.T) {
	for _, policy := range []string{"local", "redis"} {
		t.Run(policy, func(t *testing.T) {
			cfg := nodeConfig{quota: crashQuota, policy: policy}
			if policy == "redis" {
				srv := redisserver.Run(t, redisserver.Options{})
				cfg.redisPort, cfg.faultTolerant = srv.Port, false
			}
			nd := startNode(t, cfg)
			for round := range 2 {
				checkCrash(t, nd, round)
			}
		})
	}
}

func checkCrash(t *testing.T, nd *node, round int) {
	const clients = 16
	before := crashQuota - nd.remaining(t, keyed)
	var ta tally
	var stop atomic.Bool
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for g := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(round), uint64(g)))
			for i := 0; i < 5000 && !stop.Load(); i++ {
				n := 1 + rng.IntN(100)
				r := nd.get(ctx, keyed, n, i)
				ta.add(r, n)
				if r.err != nil || r.status != 200 {
					return
				}
			}
		}()
	}
	// Kill once the load has been answered a while.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ta.mu.Lock()
		answered := ta.answered
		ta.mu.Unlock()
		if answered >= 20000 {
			break
		}
		if time.Now().After(deadline) {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("only %d names answered in 30 s", answered)
		}
		time.Sleep(5 * time.Millisecond)
	}
	pid := nd.s.PluginPID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	stop.Store(true)
	wg.Wait()

	// The stand-in starts the plugin again as Kong does (at most once a
	// second); its store finds the counts where the dead one left them.
	var left int
	for {
		r := nd.get(context.Background(), keyed, 0, 0)
		if r.err == nil && r.status == 422 && r.remaining >= 0 {
			left = r.remaining
			break
		}
		if time.Since(killed) > 20*time.Second {
			t.Fatalf("plugin not back 20 s after the kill: %d %s %v", r.status, r.body, r.err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if nd.s.PluginPID() == pid {
		t.Fatalf("plugin process %d still serving after SIGKILL", pid)
	}
	used := crashQuota - left - before
	t.Logf("round %d: killed pid %d under %d clients; %d names answered, %d in flight (no answer), recorded %d; statuses %v",
		round, pid, clients, ta.answered, ta.failed, used, ta.statuses)
	if ta.failed == 0 {
		t.Errorf("no request was in flight at the kill: the crash was not under load")
	}
	if used < ta.answered {
		t.Errorf("recorded %d < %d names answered: answered names were lost", used, ta.answered)
	}
	if used > ta.answered+ta.failed {
		t.Errorf("recorded %d > %d answered + %d in flight: names counted that were never asked", used, ta.answered, ta.failed)
	}
}
