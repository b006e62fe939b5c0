package reliability

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/genderize-kong/genderize/testing/redisserver"
)

// exactQuota is the plan quota (and key-less limit) of the exactness runs:
// about 400 requests of 1-100 names use it up.
const exactQuota = 20000

// loadUntilRefused has clients send batches of random sizes (1-100) for c
// over the nodes, each client until its first refusal (429), and returns
// what they got. Bounded: at most maxPerClient requests each.
func loadUntilRefused(t *testing.T, nodes []*node, c who, clients int, seed uint64) *tally {
	t.Helper()
	const maxPerClient = 1000
	var ta tally
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for g := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			for i := range maxPerClient {
				n := 1 + rng.IntN(100)
				nd := nodes[rng.IntN(len(nodes))]
				r := nd.get(ctx, c, n, g*maxPerClient+i)
				ta.add(r, n)
				switch {
				case r.err != nil:
					t.Errorf("client %d: %v", g, r.err)
					return
				case r.status == 200:
					if err := checkAnswer(r.body, n); err != nil {
						t.Errorf("client %d: %v", g, err)
						return
					}
				case r.status == 429 && (string(r.body) == bodyLimitReached || string(r.body) == bodyTooLow):
					return
				default:
					t.Errorf("client %d: status %d %s", g, r.status, r.body)
					return
				}
			}
			t.Errorf("client %d never refused after %d requests", g, maxPerClient)
		}()
	}
	wg.Wait()
	return &ta
}

// drain sends single names to nd until refused and returns how many were
// answered.
func drain(t *testing.T, nd *node, c who, max int) int {
	t.Helper()
	for i := 0; i <= max; i++ {
		r := nd.get(context.Background(), c, 1, i)
		if r.err != nil {
			t.Fatalf("drain: %v", r.err)
		}
		switch r.status {
		case 200:
			continue
		case 429:
			if string(r.body) != bodyLimitReached || r.remaining != 0 {
				t.Fatalf("drain refused with %s, remaining %d", r.body, r.remaining)
			}
			return i
		default:
			t.Fatalf("drain: status %d %s", r.status, r.body)
		}
	}
	t.Fatalf("drain answered more than %d names", max)
	return 0
}

// checkExact runs the load over nodes and checks that the names answered
// and what a drain finds afterwards add up to the quota exactly, and that
// every node reports the same remaining.
func checkExact(t *testing.T, nodes []*node, c who) {
	start := time.Now()
	ta := loadUntilRefused(t, nodes, c, 64, uint64(time.Now().UnixNano()))
	if t.Failed() {
		return
	}
	left := make([]int, len(nodes))
	for i, nd := range nodes {
		left[i] = nd.remaining(t, c)
		if left[i] != left[0] {
			t.Errorf("node %d reports %d remaining, node 0 %d", i, left[i], left[0])
		}
	}
	if left[0] != exactQuota-ta.answered {
		t.Errorf("remaining %d after %d names answered of %d", left[0], ta.answered, exactQuota)
	}
	drained := drain(t, nodes[0], c, exactQuota)
	if got := ta.answered + drained; got != exactQuota {
		t.Errorf("answered %d + drained %d = %d, want exactly the quota %d", ta.answered, drained, got, exactQuota)
	}
	for i, nd := range nodes {
		if r := nd.remaining(t, c); r != 0 {
			t.Errorf("node %d: %d remaining after the drain", i, r)
		}
	}
	t.Logf("%d nodes, 64 clients: %d names answered in %d requests (%d refused), drain %d, quota %d; statuses %v, slowest %s, %s",
		len(nodes), ta.answered, sum(ta.statuses), ta.refused, drained, exactQuota, ta.statuses, ta.slowest.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

func sum(m map[int]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func TestExactLocal(t *testing.T) {
	for _, c := range []struct {
		name string
		who  who
	}{{"keyed", keyed}, {"keyless", keyless}} {
		t.Run(c.name, func(t *testing.T) {
			nd := startNode(t, nodeConfig{quota: exactQuota, policy: "local"})
			checkExact(t, []*node{nd}, c.who)
		})
	}
}

// Two Kong nodes (two plugin processes) share one Redis: the quota holds
// across them exactly.
func TestExactRedisTwoNodes(t *testing.T) {
	for _, c := range []struct {
		name string
		who  who
	}{{"keyed", keyed}, {"keyless", keyless}} {
		t.Run(c.name, func(t *testing.T) {
			srv := redisserver.Run(t, redisserver.Options{})
			cfg := nodeConfig{quota: exactQuota, policy: "redis", redisPort: srv.Port, faultTolerant: false}
			a, b := startNode(t, cfg), startNode(t, cfg)
			checkExact(t, []*node{a, b}, c.who)
		})
	}
}
