// Package plugin is the genderize Kong plugin: it answers the whole
// genderize.io API from Kong's access phase, with quotas per plan and per
// client IP, without any upstream service.
//
// Kong talks to it through package pluginserver (see cmd/genderize). Every
// PDK call is a round trip to Kong, so a request costs at most four: the
// consumer, the raw query, the client IP (key-less callers only) and the
// exit carrying status, body and every header.
package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Version and Priority are what Kong sees of the plugin. The priority is
// below key-auth's 1250 so that the consumer is known when Access runs.
const (
	Version  = "1.0.0"
	Priority = 1000
)

// Config is the plugin's configuration, the schema Kong loads through
// `genderize -dump`. go-pdk builds that schema from the exported fields; only
// strings, booleans, int, float64, maps and nested structs survive, and no
// default reaches Kong: New sets them, validate checks them.
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
	// QuotaPolicy is where quota counters live: "local" (a SQLite file on
	// this node, QuotaPath). "redis" is planned.
	QuotaPolicy string `json:"quota_policy"`
	// QuotaPath is the SQLite file of the local policy. Kong's plugin server
	// process must be able to create and write it.
	QuotaPath string `json:"quota_path"`

	// state is per instance and invisible to Kong (unexported).
	state *instance
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
		state:             newInstance(),
	}
}

// maxIPWindowSeconds bounds the key-less window at a year: longer windows
// are no longer "per IP per period" but a lifetime cap.
const maxIPWindowSeconds = 366 * 86400

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
	}
	switch c.QuotaPolicy {
	case "local":
		if c.QuotaPath == "" {
			return errors.New("quota_path: must not be empty with quota_policy local")
		}
	case "redis":
		return errors.New(`quota_policy: "redis" is not available in this version, use "local"`)
	default:
		return fmt.Errorf(`quota_policy: %q, must be "local"`, c.QuotaPolicy)
	}
	return nil
}

func hasPlan(plans Plans, name string) bool {
	_, ok := plans[name]
	return ok
}
