// Package plugin is the genderize Kong plugin: it answers the whole
// genderize.io API from Kong's access phase, with quotas per plan and per
// client IP, without any upstream service.
//
// Kong talks to it through package pluginserver (see cmd/genderize). Every
// PDK call is a round trip to Kong, so a request costs at most four: the
// request line (method and raw query), the consumer, the client IP
// (callers counted per IP only) and the exit carrying status, body and
// every header. Access gathers those facts, decide answers from them, and
// respond sends the answer.
package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/genderize-kong/genderize/plugin/quota"
)

// Version and Priority are what Kong sees of the plugin. The priority is
// below key-auth's 1250 so that the consumer is known when Access runs.
const (
	Version  = "1.0.0"
	Priority = 1000
)

// Config is the plugin's configuration, the schema Kong loads through
// `genderize -dump`. go-pdk builds that schema from the exported fields; only
// strings, booleans, int, float64, maps, slices and nested structs
// survive, and no default reaches Kong: New sets them, validate checks them.
type Config struct {
	// DatabasePath is the SQLite name database built by genderize-db.
	DatabasePath string `json:"database_path"`
	// CacheSize is how many looked-up names the engine keeps in memory.
	CacheSize int `json:"cache_size"`
	// MaxBatch is the most names one request may carry.
	MaxBatch int `json:"max_batch"`
	// MaxNameLength is the most characters (Unicode code points) in a name.
	MaxNameLength int `json:"max_name_length"`
	// Plans maps a plan name (consumer tag plan:NAME) to its monthly quota.
	Plans Plans `json:"plans"`
	// DefaultPlan is the plan of consumers without a plan tag.
	DefaultPlan string `json:"default_plan"`
	// AnonymousConsumer is the username or id of the consumer key-auth maps
	// key-less callers to (key-auth's `anonymous`).
	AnonymousConsumer string `json:"anonymous_consumer"`
	// IPLimit is how many names a key-less client IP may look up per window.
	IPLimit int `json:"ip_limit"`
	// IPWindowSeconds is the length of the key-less window, aligned to the
	// Unix epoch: 86400 is the UTC day.
	IPWindowSeconds int `json:"ip_window_seconds"`
	// ThrottleRate is how many requests per second a caller may send on
	// average; ThrottleBurst how many at once.
	ThrottleRate  float64 `json:"throttle_rate"`
	ThrottleBurst int     `json:"throttle_burst"`
	// QuotaPolicy is where quota counters live, one of the policies
	// registered with package quota: "local" (a SQLite file on this node,
	// QuotaPath) or "redis" (shared by a cluster, Redis).
	QuotaPolicy string `json:"quota_policy"`
	// QuotaPath is the SQLite file of the local policy. Kong's plugin server
	// process must be able to create and write it.
	QuotaPath string `json:"quota_path"`
	// Redis is where the redis policy keeps its counters, in the shape of
	// the redis record of Kong's own rate-limiting plugin (3.6+).
	Redis RedisConfig `json:"redis"`
	// ConsumerCacheTTL is how many seconds the consumer key-auth found for
	// an API key is reused for that same key without asking Kong again (a
	// round trip saved per keyed request); 0 asks every time. It bounds
	// how long a removed key or a paused subscription may still be served.
	ConsumerCacheTTL int `json:"consumer_cache_ttl"`
	// FaultTolerant, with the redis policy, keeps answering with counts
	// on this node while Redis cannot be reached; off, such requests are
	// answered 503 and consume nothing.
	FaultTolerant bool `json:"fault_tolerant"`

	// state is per instance and invisible to Kong (unexported).
	state *instance
}

// RedisConfig is the redis record of the config. Host and port name one
// server; ClusterAddresses selects Redis Cluster; SentinelMaster with
// SentinelAddresses selects Sentinel.
type RedisConfig struct {
	Host       string `json:"host"`
	Port       int    `json:"port"`
	Username   string `json:"username"`
	Password   string `json:"password"`
	Database   int    `json:"database"`
	SSL        bool   `json:"ssl"`
	SSLVerify  bool   `json:"ssl_verify"`
	ServerName string `json:"server_name"`
	// Timeout bounds every round trip to Redis, connecting included, in
	// milliseconds; no request waits longer for its quota.
	Timeout           int      `json:"timeout"`
	ClusterAddresses  []string `json:"cluster_addresses"`
	SentinelMaster    string   `json:"sentinel_master"`
	SentinelAddresses []string `json:"sentinel_addresses"`
	SentinelUsername  string   `json:"sentinel_username"`
	SentinelPassword  string   `json:"sentinel_password"`
}

// Plan is one subscription plan.
type Plan struct {
	// Quota is the number of names per UTC calendar month.
	Quota int `json:"quota"`
}

// Plans maps plan names to plans. Decoding a configured table replaces the
// defaults instead of merging into them, so an operator can remove a plan.
type Plans map[string]Plan

// UnmarshalJSON replaces p with the decoded table; JSON null (a field Kong
// sends when it has no value) keeps the defaults.
func (p *Plans) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var m map[string]Plan
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*p = m
	return nil
}

// New returns a Config holding the defaults; Kong's configuration is decoded
// over it. It is the constructor given to the plugin server.
func New() any {
	return &Config{
		DatabasePath:      "/usr/local/share/genderize/names.db",
		CacheSize:         100000,
		MaxBatch:          100,
		MaxNameLength:     100,
		Plans:             Plans{"free": {Quota: 2500}, "basic": {Quota: 100000}, "pro": {Quota: 1000000}},
		DefaultPlan:       "free",
		AnonymousConsumer: "anonymous",
		IPLimit:           100,
		IPWindowSeconds:   86400,
		ThrottleRate:      10,
		ThrottleBurst:     50,
		QuotaPolicy:       "local",
		QuotaPath:         "/var/lib/genderize/quota.db",
		Redis:             RedisConfig{Port: 6379, Timeout: 2000},
		FaultTolerant:     true,
		ConsumerCacheTTL:  1,
		state:             newInstance(),
	}
}

// maxIPWindowSeconds bounds the key-less window at a year: longer windows
// are no longer "per IP per period" but a lifetime cap.
const maxIPWindowSeconds = 366 * 86400

// maxConsumerCacheTTL bounds how stale a consumer may be: a minute, well
// above Kong's own db_update_frequency (5 s) for its credential cache.
const maxConsumerCacheTTL = 60

// validate reports the first bad field, naming it as Kong's config does.
func (c *Config) validate() error {
	switch {
	case c.DatabasePath == "":
		return errors.New("database_path: must not be empty")
	case c.CacheSize < 0:
		return fmt.Errorf("cache_size: %d, must be 0 or more", c.CacheSize)
	case c.MaxBatch < 1:
		return fmt.Errorf("max_batch: %d, must be at least 1", c.MaxBatch)
	case c.MaxNameLength < 1:
		return fmt.Errorf("max_name_length: %d, must be at least 1", c.MaxNameLength)
	case len(c.Plans) == 0:
		return errors.New("plans: at least one plan is needed")
	}
	names := make([]string, 0, len(c.Plans))
	for name := range c.Plans {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if name == "" || strings.TrimSpace(name) != name {
			return fmt.Errorf("plans: plan name %q is empty or has surrounding spaces", name)
		}
		if q := c.Plans[name].Quota; q < 0 {
			return fmt.Errorf("plans.%s.quota: %d, must be 0 or more", name, q)
		}
	}
	switch {
	case c.DefaultPlan == "":
		return errors.New("default_plan: must not be empty")
	case !hasPlan(c.Plans, c.DefaultPlan):
		return fmt.Errorf("default_plan: %q is not one of plans (%s)", c.DefaultPlan, strings.Join(names, ", "))
	case c.AnonymousConsumer == "":
		return errors.New("anonymous_consumer: must not be empty (key-auth's anonymous consumer)")
	case c.IPLimit < 0:
		return fmt.Errorf("ip_limit: %d, must be 0 or more", c.IPLimit)
	case c.IPWindowSeconds < 1 || c.IPWindowSeconds > maxIPWindowSeconds:
		return fmt.Errorf("ip_window_seconds: %d, must be between 1 and %d", c.IPWindowSeconds, maxIPWindowSeconds)
	case !(c.ThrottleRate > 0) || math.IsInf(c.ThrottleRate, 0):
		return fmt.Errorf("throttle_rate: %v, must be a positive number of requests per second", c.ThrottleRate)
	case c.ThrottleBurst < 1:
		return fmt.Errorf("throttle_burst: %d, must be at least 1", c.ThrottleBurst)
	case c.ConsumerCacheTTL < 0 || c.ConsumerCacheTTL > maxConsumerCacheTTL:
		return fmt.Errorf("consumer_cache_ttl: %d, must be between 0 and %d seconds", c.ConsumerCacheTTL, maxConsumerCacheTTL)
	}
	if !quota.Known(c.QuotaPolicy) {
		return fmt.Errorf("quota_policy: %q, must be one of %s", c.QuotaPolicy, strings.Join(quota.Policies(), ", "))
	}
	switch c.QuotaPolicy {
	case "local":
		if c.QuotaPath == "" {
			return errors.New("quota_path: must not be empty with quota_policy local")
		}
	case "redis":
		return c.Redis.validate()
	}
	return nil
}

// maxRedisTimeout is a minute: longer, and a Redis outage would hold
// requests past any client's patience.
const maxRedisTimeout = 60000

// validate checks the redis record, naming fields as Kong does.
func (r *RedisConfig) validate() error {
	switch {
	case r.Host == "" && len(r.ClusterAddresses) == 0 && (r.SentinelMaster == "" || len(r.SentinelAddresses) == 0):
		return errors.New("redis: quota_policy redis needs redis.host, redis.cluster_addresses, or redis.sentinel_master with redis.sentinel_addresses")
	case r.Host != "" && (r.Port < 1 || r.Port > 65535):
		return fmt.Errorf("redis.port: %d, must be between 1 and 65535", r.Port)
	case r.Database < 0:
		return fmt.Errorf("redis.database: %d, must be 0 or more", r.Database)
	case r.Timeout < 1 || r.Timeout > maxRedisTimeout:
		return fmt.Errorf("redis.timeout: %d, must be between 1 and %d milliseconds", r.Timeout, maxRedisTimeout)
	}
	for _, list := range []struct {
		field string
		addrs []string
	}{{"redis.cluster_addresses", r.ClusterAddresses}, {"redis.sentinel_addresses", r.SentinelAddresses}} {
		for _, a := range list.addrs {
			if _, _, err := net.SplitHostPort(a); err != nil || strings.Contains(a, ",") {
				return fmt.Errorf("%s: %q is not host:port", list.field, a)
			}
		}
	}
	return nil
}

// quotaOptions are what the configured policy reads. The local policy gets
// its path alone, so that instances differing only in redis settings share
// one store (quota.Open shares per policy and options).
func (c *Config) quotaOptions() quota.Options {
	if c.QuotaPolicy == "local" {
		return quota.Options{Path: c.QuotaPath}
	}
	r := c.Redis
	return quota.Options{
		Path: c.QuotaPath,
		Redis: quota.RedisOptions{
			Host:              r.Host,
			Port:              r.Port,
			Username:          r.Username,
			Password:          r.Password,
			Database:          r.Database,
			SSL:               r.SSL,
			SSLVerify:         r.SSLVerify,
			ServerName:        r.ServerName,
			Timeout:           time.Duration(r.Timeout) * time.Millisecond,
			ClusterAddresses:  strings.Join(r.ClusterAddresses, ","),
			SentinelMaster:    r.SentinelMaster,
			SentinelAddresses: strings.Join(r.SentinelAddresses, ","),
			SentinelUsername:  r.SentinelUsername,
			SentinelPassword:  r.SentinelPassword,
		},
		FaultTolerant: c.FaultTolerant,
	}
}

// quotaField names the config field an open failure of the store is about.
func (c *Config) quotaField() string {
	if c.QuotaPolicy == "local" {
		return "quota_path"
	}
	return c.QuotaPolicy
}

// storeTimeout is the policy's own bound on a request's wait.
func (c *Config) storeTimeout() time.Duration {
	if c.QuotaPolicy == "redis" {
		return time.Duration(c.Redis.Timeout) * time.Millisecond
	}
	return localStoreTimeout
}

func hasPlan(plans Plans, name string) bool {
	_, ok := plans[name]
	return ok
}
