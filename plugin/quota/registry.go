package quota

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// ErrUnavailable is wrapped by a store's error when the counters cannot be
// reached (a Redis outage with fault_tolerant off): the plugin answers 503
// and consumes nothing.
var ErrUnavailable = errors.New("quota store unavailable")

// Options are everything a policy may need; each policy reads its part.
// Options is comparable: Open shares one store per (policy, options).
type Options struct {
	// Path is the SQLite file of the local policy.
	Path string
	// Redis is where the redis policy keeps its counters.
	Redis RedisOptions
	// FaultTolerant makes a policy whose backend is unreachable count on
	// this node instead of failing with ErrUnavailable.
	FaultTolerant bool
}

// RedisOptions mirror the redis record of Kong's own rate-limiting plugin
// (3.6+), plus Redis Cluster and Sentinel through go-redis's universal
// client.
type RedisOptions struct {
	Host       string
	Port       int
	Username   string
	Password   string
	Database   int
	SSL        bool
	SSLVerify  bool
	ServerName string
	// Timeout bounds every round trip, connecting included.
	Timeout time.Duration
	// ClusterAddresses ("host:port,host:port") selects Redis Cluster.
	ClusterAddresses string
	// SentinelMaster and SentinelAddresses ("host:port,...") select
	// Sentinel; SentinelUsername and SentinelPassword authenticate to the
	// sentinels.
	SentinelMaster    string
	SentinelAddresses string
	SentinelUsername  string
	SentinelPassword  string
}

// Opener opens a policy's store.
type Opener func(Options) (Store, error)

var (
	registryMu sync.Mutex
	registry   = map[string]Opener{}
	opened     = map[sharedKey]Store{}
)

type sharedKey struct {
	policy string
	opts   Options
}

// Register makes a policy available under name, as Kong's rate-limiting
// keys its policies by conf.policy. It panics on a duplicate name: that is
// a programming error caught at start-up.
func Register(name string, open Opener) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("quota: policy registered twice: " + name)
	}
	registry[name] = open
}

// Policies lists the registered policy names, sorted.
func Policies() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	names := make([]string, 0, len(registry))
	for name := range registry {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Known reports whether policy is registered.
func Known(policy string) bool {
	registryMu.Lock()
	defer registryMu.Unlock()
	_, ok := registry[policy]
	return ok
}

// Open returns the process-wide store of policy with these options,
// opening it on first use. Kong creates and drops plugin instances at will;
// counters and connections must outlive them, so shared stores are never
// closed. A failed open is not remembered: the next call tries again.
func Open(policy string, o Options) (Store, error) {
	registryMu.Lock()
	defer registryMu.Unlock()
	open, ok := registry[policy]
	if !ok {
		names := make([]string, 0, len(registry))
		for name := range registry {
			names = append(names, name)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("quota policy %q: not one of %s", policy, strings.Join(names, ", "))
	}
	key := sharedKey{policy, o}
	if s, ok := opened[key]; ok {
		return s, nil
	}
	s, err := open(o)
	if err != nil {
		return nil, fmt.Errorf("quota policy %s: %w", policy, err)
	}
	opened[key] = s
	return s, nil
}
