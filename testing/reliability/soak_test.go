package reliability

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/genderize-kong/genderize/testing/redisserver"
	"github.com/genderize-kong/genderize/testing/standin"
)

// TestSoak drives mixed traffic through one node for SOAK_DURATION (`make
// soak DURATION=10m`; skipped without it, so never in CI) and prints the
// plugin process's RSS, goroutines, open files and the p99 latency every
// 10 s. It fails when they grow: a leak. SOAK_POLICY=redis counts in a
// redis-server of its own instead of the local file.
func TestSoak(t *testing.T) {
	durText := os.Getenv("SOAK_DURATION")
	if durText == "" {
		t.Skip("soak runs only with SOAK_DURATION set (make soak DURATION=...)")
	}
	duration, err := time.ParseDuration(durText)
	if err != nil || duration <= 0 {
		t.Fatalf("SOAK_DURATION=%q: %v", durText, err)
	}
	const interval = 10 * time.Second

	// A burst the load never reaches that refills within a millisecond:
	// the throttle's idle buckets are swept (every minute) as in
	// production, so its memory is part of what must stay flat.
	cfg := nodeConfig{quota: crashQuota, policy: "local", throttleBurst: 1000}
	if os.Getenv("SOAK_POLICY") == "redis" {
		srv := redisserver.Run(t, redisserver.Options{})
		cfg.policy, cfg.redisPort, cfg.faultTolerant = "redis", srv.Port, true
	}
	// Goroutines come from the plugin's metrics endpoint (go_goroutines).
	metricsAddr := freeAddr(t)
	nd := startNodeWith(t, cfg, []string{"-metrics-listen", metricsAddr}, func(d *standin.Declarative) {
		for i := range 8 {
			d.AddConsumer(standin.Consumer{Username: fmt.Sprintf("soak-%d", i), Tags: []string{"plan:free"},
				KeyauthCredentials: []standin.Credential{{Key: fmt.Sprintf("soak-key-%d", i)}}})
		}
		d.AddConsumer(standin.Consumer{Username: "soak-paused", Tags: []string{"plan:free", "subscription:paused"},
			KeyauthCredentials: []standin.Credential{{Key: "soak-paused-key"}}})
	})

	var (
		mu        sync.Mutex
		latencies []time.Duration
		statuses  = map[int]int{}
		requests  atomic.Int64
		stop      atomic.Bool
		wg        sync.WaitGroup
	)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(g)))
			for i := 0; !stop.Load(); i++ {
				method, q, ip := soakRequest(rng, i)
				start := time.Now()
				status := nd.do(method, q, ip)
				took := time.Since(start)
				requests.Add(1)
				mu.Lock()
				latencies = append(latencies, took)
				statuses[status]++
				mu.Unlock()
			}
		}()
	}

	var samples []soakSample
	start := time.Now()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for time.Since(start) < duration {
		<-tick.C
		mu.Lock()
		lat := latencies
		st := statuses
		latencies, statuses = nil, map[int]int{}
		mu.Unlock()
		s := sample(t, nd.s.PluginPID(), metricsAddr, lat)
		samples = append(samples, s)
		fmt.Printf("soak %6s: %7d req (%5.0f/s)  p99 %-9s RSS %6.1f MB  goroutines %-5d open files %-4d statuses %v\n",
			time.Since(start).Round(time.Second), len(lat), float64(len(lat))/interval.Seconds(), s.p99.Round(10*time.Microsecond),
			float64(s.rssKB)/1024, s.goroutines, s.fds, st)
	}
	stop.Store(true)
	wg.Wait()
	if len(samples) < 3 {
		t.Logf("%d samples: too short to judge growth (DURATION >= 30s)", len(samples))
		return
	}
	// The first interval warms caches and pools up; from the second on the
	// numbers must stay flat.
	base, last := samples[1], samples[len(samples)-1]
	if last.rssKB > 2*base.rssKB+50*1024 {
		t.Errorf("RSS grew from %d kB to %d kB", base.rssKB, last.rssKB)
	}
	if base.goroutines < 0 || last.goroutines < 0 {
		t.Errorf("goroutines unknown: the metrics endpoint did not answer")
	} else if last.goroutines > 2*base.goroutines+50 {
		t.Errorf("goroutines grew from %d to %d", base.goroutines, last.goroutines)
	}
	if last.fds > base.fds+20 {
		t.Errorf("open files grew from %d to %d", base.fds, last.fds)
	}
	t.Logf("%d requests in %s", requests.Load(), time.Since(start).Round(time.Second))
}

// soakRequest is one request of the mix: mostly keyed batches and key-less
// names from many addresses, some refusals of every kind.
func soakRequest(rng *rand.Rand, i int) (method, query, ip string) {
	ip = fmt.Sprintf("10.%d.%d.%d", rng.IntN(4), rng.IntN(256), rng.IntN(256))
	key := fmt.Sprintf("&apikey=soak-key-%d", rng.IntN(8))
	names := func(n int) string {
		var b strings.Builder
		for j := range n {
			if j > 0 {
				b.WriteByte('&')
			}
			b.WriteString("name%5B%5D=" + nameList[(i+j)%len(nameList)])
		}
		return b.String()
	}
	switch p := rng.IntN(100); {
	case p < 45:
		return "GET", names(1+rng.IntN(20)) + key, ip
	case p < 75:
		return "GET", "name=" + nameList[i%len(nameList)], ip // key-less
	case p < 80:
		return "GET", "name=peter&country_id=" + []string{"DE", "US", "FR", "xx"}[rng.IntN(4)] + key, ip
	case p < 85:
		return "GET", "name=" + key, ip // 422
	case p < 88:
		return "GET", "name=peter&apikey=no-such-key", ip // 401
	case p < 91:
		return "GET", "name=peter&apikey=soak-paused-key", ip // 402
	case p < 94:
		return "POST", "name=peter" + key, ip // 405
	case p < 97:
		return "OPTIONS", "", ip // preflight
	default:
		return "GET", names(101) + key, ip // 422, too many
	}
}

// do sends one request and returns its status (0 when none came).
func (n *node) do(method, query, ip string) int {
	req, err := http.NewRequest(method, n.base, nil)
	if err != nil {
		return 0
	}
	req.URL.RawQuery = query
	req.Header.Set("X-Forwarded-For", ip)
	if method == "OPTIONS" {
		req.Header.Set("Origin", "https://example.com")
		req.Header.Set("Access-Control-Request-Method", "GET")
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

type soakSample struct {
	p99        time.Duration
	rssKB      int
	goroutines int // -1 when the metrics endpoint did not answer
	fds        int
}

// sample reads the plugin process's numbers from /proc and its metrics.
func sample(t *testing.T, pid int, metricsAddr string, lat []time.Duration) soakSample {
	s := soakSample{goroutines: -1}
	if len(lat) > 0 {
		slices.Sort(lat)
		s.p99 = lat[min(len(lat)-1, len(lat)*99/100)]
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			switch f[0] {
			case "VmRSS:":
				s.rssKB, _ = strconv.Atoi(f[1])
			}
		}
	}
	if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		s.fds = len(fds)
	}
	if resp, err := http.Get("http://" + metricsAddr + "/metrics"); err == nil {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
				s.goroutines, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		resp.Body.Close()
	}
	return s
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
