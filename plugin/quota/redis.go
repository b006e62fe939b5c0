package quota

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

const (
	// redisKeyPrefix namespaces every counter of this plugin in a Redis
	// shared with other applications.
	redisKeyPrefix = "genderize:quota:"
	// DefaultRedisTimeout is Kong's rate-limiting default (2000 ms).
	DefaultRedisTimeout = 2 * time.Second
	// redisProbeEvery is how often an unreachable Redis is tried again. No
	// request waits for a probe.
	redisProbeEvery = time.Second
	// maxFallbackCounters bounds the node-local counters kept during an
	// outage (one per caller and window): key-less callers are counted per
	// client IP, so an outage under a scan of many addresses must not grow
	// memory without end. About 100 bytes each.
	maxFallbackCounters = 1 << 18
	// reportEvery bounds the outage log lines of a flapping Redis.
	reportEvery = time.Minute
	// pushBatch is how many node-local counters one round trip pushes to
	// Redis when it is back.
	pushBatch = 512
)

// allowScript decides one request in Redis: it checks n against what is
// left of the limit, consumes n only if it fits (all or nothing) and makes
// the counter expire at the window's end. n == 0 reads and writes nothing.
// It answers {used before this request, 1 if n was consumed else 0}; the
// caller computes the Result with Decide from the same numbers.
//
// KEYS[1] is the counter of one caller in one window; ARGV: limit, n, the
// window's end in Unix milliseconds.
var allowScript = redis.NewScript(`
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local n = tonumber(ARGV[2])
if n > 0 and used + n <= tonumber(ARGV[1]) then
	redis.call('INCRBY', KEYS[1], n)
	redis.call('PEXPIREAT', KEYS[1], ARGV[3])
	return {used, 1}
end
return {used, 0}
`)

// pushScript adds what a node counted during an outage to a counter,
// whatever the limit (those names were answered), with the same expiry.
// KEYS[1] the counter; ARGV: the count, the window's end in Unix ms.
var pushScript = redis.NewScript(`
local used = redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('PEXPIREAT', KEYS[1], ARGV[2])
return used
`)

// Redis is the `redis` policy: counters shared by every node of a Kong
// cluster in one Redis (single node, Sentinel or Cluster).
//
// Each decision is one round trip (allowScript). When Redis cannot be
// reached or does not answer within the timeout, the store either fails
// with ErrUnavailable (FaultTolerant false) or counts on this node
// (FaultTolerant true) until a background probe finds Redis again; either
// way no request waits longer than the timeout, and during an outage none
// waits for Redis at all. What the node counted meanwhile is then added to
// Redis (see the package documentation).
type Redis struct {
	client        redis.UniversalClient
	timeout       time.Duration
	faultTolerant bool

	down atomic.Bool // Redis failed and the probe has not found it back

	mu          sync.Mutex // guards everything below and the transitions of down
	fallback    map[fallbackKey]int
	downSince   time.Time
	fullLogged  bool          // the fallback table filled up during this outage
	pushLogged  bool          // a push failed during this outage
	reported    bool          // this outage was logged
	lastReport  time.Time     // when an outage was last logged
	flaps       int           // outages not logged since lastReport
	stop        chan struct{} // closed by Close: ends the probe
	closed      bool
	probeActive bool
	maxFallback int // maxFallbackCounters; lowered by tests
	lastSweep   time.Time
}

// fallbackKey is one caller's counter in one window, as the Redis key names
// it.
type fallbackKey struct {
	key        string
	start, end int64 // Unix seconds
}

// OpenRedis returns the store for these options. It does not connect:
// connections are made on first use, so a node starts (and, fault
// tolerant, answers) while Redis is down.
func OpenRedis(o Options) (*Redis, error) {
	quietRedisLog.Do(func() { redis.SetLogger(redisLog{}) })
	client, timeout, err := newRedisClient(o.Redis)
	if err != nil {
		return nil, err
	}
	return &Redis{
		client:        client,
		timeout:       timeout,
		faultTolerant: o.FaultTolerant,
		fallback:      map[fallbackKey]int{},
		stop:          make(chan struct{}),
		maxFallback:   maxFallbackCounters,
	}, nil
}

var quietRedisLog sync.Once

// redisLog takes go-redis's own messages down to debug level: it would
// print every failed dial, once a second per probe during an outage, where
// the store logs the outage once.
type redisLog struct{}

func (redisLog) Printf(ctx context.Context, format string, v ...any) {
	slog.DebugContext(ctx, "go-redis: "+fmt.Sprintf(format, v...))
}

// newRedisClient makes go-redis's universal client: Sentinel when a master
// name is given, Cluster when cluster addresses are, else one server.
func newRedisClient(o RedisOptions) (redis.UniversalClient, time.Duration, error) {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultRedisTimeout
	}
	u := &redis.UniversalOptions{
		Username: o.Username,
		Password: o.Password,
		DB:       o.Database,
		// RESP2 works with every Redis Kong's own plugins support; the
		// features of RESP3 are not used.
		Protocol: 2,
		// Every wait is bounded by the timeout, the context's deadline
		// included, so no request waits longer.
		DialTimeout:           timeout,
		ReadTimeout:           timeout,
		WriteTimeout:          timeout,
		PoolTimeout:           timeout,
		ContextTimeoutEnabled: true,
		// One dial attempt and no command retries: a retried script may
		// have run already (counting twice), and the timeout is the
		// whole budget of a request.
		DialerRetries:            1,
		MaxRetries:               -1,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
	switch {
	case o.SentinelMaster != "":
		u.MasterName = o.SentinelMaster
		u.Addrs = splitAddrs(o.SentinelAddresses)
		u.SentinelUsername = o.SentinelUsername
		u.SentinelPassword = o.SentinelPassword
		if len(u.Addrs) == 0 {
			return nil, 0, errors.New("redis: sentinel_master needs sentinel_addresses")
		}
	case o.ClusterAddresses != "":
		u.Addrs = splitAddrs(o.ClusterAddresses)
		u.IsClusterMode = true
		if len(u.Addrs) == 0 {
			return nil, 0, fmt.Errorf("redis: cluster_addresses %q: no address", o.ClusterAddresses)
		}
		if o.Database != 0 {
			return nil, 0, fmt.Errorf("redis: database %d: Redis Cluster has only database 0", o.Database)
		}
	default:
		if o.Host == "" {
			return nil, 0, errors.New("redis: host is empty (or set cluster_addresses or sentinel_master)")
		}
		port := o.Port
		if port == 0 {
			port = 6379
		}
		u.Addrs = []string{net.JoinHostPort(o.Host, strconv.Itoa(port))}
	}
	if o.SSL {
		u.TLSConfig = &tls.Config{
			MinVersion: tls.VersionTLS12,
			// Empty: the host of each address dialled, as Go's TLS does.
			ServerName:         o.ServerName,
			InsecureSkipVerify: !o.SSLVerify, // ssl_verify false, as in Kong
		}
	}
	return redis.NewUniversalClient(u), timeout, nil
}

// splitAddrs splits "host:port, host:port" into addresses.
func splitAddrs(s string) []string {
	var addrs []string
	for a := range strings.SplitSeq(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// redisKey names key's counter in window w. The hash tag ({key}) puts every
// window of a caller on one Cluster slot; the script touches one key only.
func redisKey(key string, start, end int64) string {
	b := make([]byte, 0, len(redisKeyPrefix)+len(key)+26)
	b = append(b, redisKeyPrefix...)
	b = append(b, '{')
	b = append(b, key...)
	b = append(b, '}', ':')
	b = strconv.AppendInt(b, start, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, end, 10)
	return string(b)
}

// AllowN implements Store.
func (s *Redis) AllowN(ctx context.Context, key string, limit int, w Window, n int) (Result, error) {
	if n < 0 || limit < 0 {
		return Result{}, fmt.Errorf("redis quota: invalid request n=%d limit=%d", n, limit)
	}
	// Twice at most: a request that finds Redis down just as the probe
	// brought it back goes to Redis instead.
	for range 2 {
		if !s.down.Load() {
			r, err := s.allowRedis(ctx, key, limit, w, n)
			if err == nil {
				return r, nil
			}
			if errors.Is(ctx.Err(), context.Canceled) {
				// The caller gave up (Kong closed the request): not
				// Redis's failure. A deadline of the caller's, though,
				// is Redis being too slow, as the store's own timeout.
				return Result{}, fmt.Errorf("redis quota: %w", ctx.Err())
			}
			s.markDown(err)
			if !s.faultTolerant {
				return Result{}, fmt.Errorf("redis quota: %w: %w", ErrUnavailable, err)
			}
		}
		if r, err, ok := s.allowFallback(key, limit, w, n); ok {
			return r, err
		}
	}
	return Result{}, fmt.Errorf("redis quota: %w: store flapping", ErrUnavailable)
}

// allowRedis decides in Redis, within the timeout.
func (s *Redis) allowRedis(ctx context.Context, key string, limit int, w Window, n int) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	k := redisKey(key, w.Start.Unix(), w.End.Unix())
	vals, err := allowScript.Run(ctx, s.client, []string{k}, limit, n, w.End.UnixMilli()).Int64Slice()
	if err != nil {
		return Result{}, err
	}
	if len(vals) != 2 {
		return Result{}, fmt.Errorf("redis quota script answered %d values, want 2", len(vals))
	}
	r := Decide(int(vals[0]), limit, n, w)
	if (r.Allowed > 0) != (vals[1] == 1) {
		// The script and Decide are the same rule; if they ever
		// disagree the answer cannot be trusted either way.
		return Result{}, fmt.Errorf("redis quota script consumed=%d where the rule says allowed=%d", vals[1], r.Allowed)
	}
	return r, nil
}

// allowFallback decides on this node's counters while Redis is down. ok is
// false when Redis came back meanwhile: the caller goes to Redis.
func (s *Redis) allowFallback(key string, limit int, w Window, n int) (_ Result, _ error, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.down.Load() {
		return Result{}, nil, false
	}
	if !s.faultTolerant {
		return Result{}, fmt.Errorf("redis quota: %w", ErrUnavailable), true
	}
	k := fallbackKey{key, w.Start.Unix(), w.End.Unix()}
	used, known := s.fallback[k]
	if !known && n > 0 && len(s.fallback) >= s.maxFallback {
		// A full table is swept for ended windows at most once a second:
		// every new caller of a flood must not cost a sweep under mu.
		if now := time.Now(); now.Sub(s.lastSweep) >= time.Second {
			s.lastSweep = now
			for c := range s.fallback {
				if c.end <= w.Now.Unix() {
					delete(s.fallback, c)
				}
			}
		}
		if len(s.fallback) >= s.maxFallback {
			if !s.fullLogged {
				s.fullLogged = true
				slog.Warn("redis quota: node-local counters full during the outage; new callers get 503 until Redis is back",
					"counters", len(s.fallback))
			}
			return Result{}, fmt.Errorf("redis quota: %w: node-local counters full", ErrUnavailable), true
		}
	}
	r := Decide(used, limit, n, w)
	if r.Allowed > 0 {
		s.fallback[k] = used + r.Allowed
	}
	return r, nil, true
}

// markDown records that Redis failed: the first failure of an outage starts
// the probe and logs, at most once a minute: a Redis that answers PING and
// fails every script (out of memory, say) would make an outage a second.
func (s *Redis) markDown(cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down.Load() || s.closed {
		return
	}
	s.down.Store(true)
	s.downSince = time.Now()
	s.fullLogged, s.pushLogged = false, false
	if !s.probeActive {
		s.probeActive = true
		go s.probe()
	}
	s.reported = s.lastReport.IsZero() || s.downSince.Sub(s.lastReport) >= reportEvery
	if !s.reported {
		s.flaps++
		return
	}
	answer := "counting on this node (fault_tolerant)"
	if !s.faultTolerant {
		answer = "answering 503 (fault_tolerant off)"
	}
	slog.Warn("redis quota: Redis unreachable, "+answer+" until it answers again", "error", cause, "outages_not_logged", s.flaps)
	s.lastReport, s.flaps = s.downSince, 0
}

// probe pings Redis once a second until it answers, then hands the node's
// counts to Redis and sends requests there again.
func (s *Redis) probe() {
	t := time.NewTicker(redisProbeEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		err := s.client.Ping(ctx).Err()
		cancel()
		if err != nil {
			continue
		}
		if s.recover() {
			return
		}
	}
}

// recover switches back to Redis and pushes what this node counted during
// the outage. It reports false (still down) when the push failed.
func (s *Redis) recover() bool {
	s.mu.Lock()
	pending := s.fallback
	s.fallback = map[fallbackKey]int{}
	since := s.downSince
	// From here requests go to Redis; the ones deciding on the fallback
	// hold mu, so none counts into the map just taken.
	s.down.Store(false)
	s.mu.Unlock()

	pushed, err := s.push(pending)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		// Not pushed yet: kept for the next attempt. A push that timed
		// out may have been applied; counting it again errs against the
		// caller by at most what the outage let through.
		for k, v := range pending {
			s.fallback[k] += v
		}
		s.down.Store(true)
		if s.reported && !s.pushLogged {
			s.pushLogged = true
			slog.Warn("redis quota: Redis answers but the node's outage counts could not be pushed; still counting on this node", "error", err)
		}
		return false
	}
	s.probeActive = false
	if s.reported {
		slog.Info("redis quota: Redis reachable again, deciding there", "outage", time.Since(since).Round(time.Millisecond), "counters_pushed", pushed)
	}
	return true
}

// push adds the node's outage counts to Redis, skipping windows that have
// ended (their keys have expired). Counters pushed by a batch that
// succeeded are removed from pending.
func (s *Redis) push(pending map[fallbackKey]int) (int, error) {
	now := time.Now().Unix()
	pushed := 0
	batch := make([]fallbackKey, 0, pushBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		defer cancel()
		pipe := s.client.Pipeline()
		for _, k := range batch {
			// EVAL, not EVALSHA: a pipeline cannot fall back on NOSCRIPT,
			// and pushes are rare.
			pushScript.Eval(ctx, pipe, []string{redisKey(k.key, k.start, k.end)}, pending[k], k.end*1000)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("push outage counts: %w", err)
		}
		for _, k := range batch {
			delete(pending, k)
		}
		pushed += len(batch)
		batch = batch[:0]
		return nil
	}
	for k := range pending {
		if k.end <= now {
			delete(pending, k)
			continue
		}
		batch = append(batch, k)
		if len(batch) == pushBatch {
			if err := flush(); err != nil {
				return pushed, err
			}
		}
	}
	return pushed, flush()
}

// Close stops the probe and closes the connections. Counts of an ongoing
// outage that were not pushed are lost with the process, as the local
// counts of a node that dies.
func (s *Redis) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.stop)
	s.mu.Unlock()
	return s.client.Close()
}

func init() {
	Register("redis", func(o Options) (Store, error) { return OpenRedis(o) })
}
