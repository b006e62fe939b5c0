package quota

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// scanCount is the COUNT hint of SCAN: keys looked at per round trip.
const scanCount = 1000

var _ Inspector = (*Redis)(nil)

// Usage implements Inspector: the counters of every caller whose key starts
// with keyPrefix ("" for all), read with SCAN on every master (Cluster) so
// that Redis never blocks on one big command. Windows that have ended are
// gone: Redis expired their counters at the window's end.
func (s *Redis) Usage(ctx context.Context, keyPrefix string) ([]Usage, error) {
	var mu sync.Mutex
	var usage []Usage
	err := s.scan(ctx, redisKeyPrefix+"{"+globEscape(keyPrefix)+"*", func(ctx context.Context, c redis.Cmdable, names []string) error {
		pipe := c.Pipeline()
		gets := make([]*redis.StringCmd, len(names))
		for i, name := range names {
			gets[i] = pipe.Get(ctx, name)
		}
		// A counter that expired between SCAN and GET answers nil.
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for i, name := range names {
			u, ok := parseRedisKey(name)
			if !ok {
				continue // not one of ours, though under our prefix
			}
			used, err := gets[i].Int()
			if err == redis.Nil {
				continue
			}
			if err != nil {
				return fmt.Errorf("counter %s: %w", name, err)
			}
			u.Used = used
			usage = append(usage, u)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("redis quota usage: %w", err)
	}
	sort.Slice(usage, func(i, j int) bool {
		if usage[i].Key != usage[j].Key {
			return usage[i].Key < usage[j].Key
		}
		return usage[i].WindowStart.Before(usage[j].WindowStart)
	})
	return usage, nil
}

// Reset implements Inspector: it deletes every window's counter of key (a
// caller starts from zero) and says how many it deleted.
func (s *Redis) Reset(ctx context.Context, key string) (int, error) {
	var mu sync.Mutex
	removed := 0
	err := s.scan(ctx, redisKeyPrefix+"{"+globEscape(key)+"}:*", func(ctx context.Context, c redis.Cmdable, names []string) error {
		pipe := c.Pipeline()
		dels := make([]*redis.IntCmd, 0, len(names))
		for _, name := range names {
			if u, ok := parseRedisKey(name); ok && u.Key == key {
				dels = append(dels, pipe.Del(ctx, name))
			}
		}
		if len(dels) == 0 {
			return nil
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for _, d := range dels {
			removed += int(d.Val())
		}
		return nil
	})
	if err != nil {
		return removed, fmt.Errorf("redis quota reset: %w", err)
	}
	return removed, nil
}

// scan calls fn with each batch of key names matching pattern, on every
// master of a Cluster or on the one server.
func (s *Redis) scan(ctx context.Context, pattern string, fn func(context.Context, redis.Cmdable, []string) error) error {
	each := func(ctx context.Context, c redis.Cmdable) error {
		var cursor uint64
		for {
			names, next, err := c.Scan(ctx, cursor, pattern, scanCount).Result()
			if err != nil {
				return err
			}
			if len(names) > 0 {
				if err := fn(ctx, c, names); err != nil {
					return err
				}
			}
			if next == 0 {
				return nil
			}
			cursor = next
		}
	}
	if cc, ok := s.client.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return each(ctx, c) })
	}
	return each(ctx, s.client)
}

// parseRedisKey reads a counter's name as redisKey writes it.
func parseRedisKey(name string) (Usage, bool) {
	rest, ok := strings.CutPrefix(name, redisKeyPrefix+"{")
	if !ok {
		return Usage{}, false
	}
	// The caller's key may itself hold ':' (IPv6) or even '}'; the two
	// numbers after the last "}:" are the window.
	i := strings.LastIndex(rest, "}:")
	if i < 0 {
		return Usage{}, false
	}
	start, end, ok := strings.Cut(rest[i+2:], ":")
	if !ok {
		return Usage{}, false
	}
	s, err1 := strconv.ParseInt(start, 10, 64)
	e, err2 := strconv.ParseInt(end, 10, 64)
	if err1 != nil || err2 != nil {
		return Usage{}, false
	}
	return Usage{Key: rest[:i], WindowStart: time.Unix(s, 0).UTC(), WindowEnd: time.Unix(e, 0).UTC()}, true
}

// globEscape quotes the characters SCAN's MATCH pattern treats specially.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
