package standin

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// LoadOptions shape a closed-loop load run against a stand-in's protocol
// layer (no HTTP): Conns workers, each sending its next request as soon as
// the previous one is answered, until Duration passes or MaxRequests have
// been sent.
type LoadOptions struct {
	Conns       int
	Duration    time.Duration
	MaxRequests int64
	// Request makes the i-th request; it must be safe for concurrent use.
	Request func(i int64) *Request
	// NamesPerRequest counts names for names/s.
	NamesPerRequest int
}

// LoadResult is what a load run measured.
type LoadResult struct {
	Requests int64
	Names    int64
	Elapsed  time.Duration
	Statuses map[int]int64
	P50, P99 time.Duration
	// MaxPDKCalls is the largest PDK call count of one request.
	MaxPDKCalls int

	latencies []time.Duration // sorted
}

// Add merges another run of the same load into r, so that loads can be
// measured in alternating rounds and drift on a shared machine hits
// every load alike.
func (r *LoadResult) Add(o LoadResult) {
	r.Requests += o.Requests
	r.Names += o.Names
	r.Elapsed += o.Elapsed
	if r.Statuses == nil {
		r.Statuses = map[int]int64{}
	}
	for st, n := range o.Statuses {
		r.Statuses[st] += n
	}
	r.MaxPDKCalls = max(r.MaxPDKCalls, o.MaxPDKCalls)
	r.latencies = append(r.latencies, o.latencies...)
	r.setPercentiles()
}

func (r *LoadResult) setPercentiles() {
	slices.Sort(r.latencies)
	if n := len(r.latencies); n > 0 {
		r.P50 = r.latencies[n*50/100]
		r.P99 = r.latencies[min(n-1, n*99/100)]
	}
}

// RequestsPerSecond is the throughput of the run.
func (r LoadResult) RequestsPerSecond() float64 {
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// NamesPerSecond is the name throughput of the run.
func (r LoadResult) NamesPerSecond() float64 {
	return float64(r.Names) / r.Elapsed.Seconds()
}

// Load runs the load and measures it.
func Load(ctx context.Context, s *Standin, o LoadOptions) LoadResult {
	ctx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()
	var next atomic.Int64
	type worker struct {
		lat      []time.Duration
		statuses map[int]int64
		maxCalls int
	}
	workers := make([]worker, o.Conns)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range workers {
		workers[w].statuses = map[int]int64{}
		wg.Add(1)
		go func(wk *worker) {
			defer wg.Done()
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if o.MaxRequests > 0 && i >= o.MaxRequests {
					return
				}
				req := o.Request(i)
				t := time.Now()
				resp := s.Handle(context.Background(), req)
				wk.lat = append(wk.lat, time.Since(t))
				wk.statuses[resp.Status]++
				wk.maxCalls = max(wk.maxCalls, len(resp.PDKCalls))
			}
		}(&workers[w])
	}
	wg.Wait()
	res := LoadResult{Elapsed: time.Since(start), Statuses: map[int]int64{}}
	var lat []time.Duration
	for _, wk := range workers {
		lat = append(lat, wk.lat...)
		for st, n := range wk.statuses {
			res.Statuses[st] += n
		}
		res.MaxPDKCalls = max(res.MaxPDKCalls, wk.maxCalls)
	}
	res.Requests = int64(len(lat))
	res.Names = res.Statuses[http.StatusOK] * int64(o.NamesPerRequest)
	res.latencies = lat
	res.setPercentiles()
	return res
}
