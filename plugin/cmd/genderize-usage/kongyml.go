package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/genderize-kong/genderize/plugin"
	"github.com/genderize-kong/genderize/plugin/quota"
	"go.yaml.in/yaml/v3"
)

// kongConfig is what genderize-usage needs of a declarative kong.yml.
type kongConfig struct {
	path      string
	plugin    *plugin.Config // with the plugin's defaults under it
	consumers []consumer
}

type consumer struct {
	ID       string   `yaml:"id"`
	Username string   `yaml:"username"`
	Tags     []string `yaml:"tags"`
}

type pluginEntry struct {
	Name   string         `yaml:"name"`
	Config map[string]any `yaml:"config"`
}

func loadKongYML(path string) (*kongConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("kong.yml: %w (give the declarative config with -kong-yml)", err)
	}
	var doc struct {
		Routes []struct {
			Plugins []pluginEntry `yaml:"plugins"`
		} `yaml:"routes"`
		Services []struct {
			Plugins []pluginEntry `yaml:"plugins"`
			Routes  []struct {
				Plugins []pluginEntry `yaml:"plugins"`
			} `yaml:"routes"`
		} `yaml:"services"`
		Plugins   []pluginEntry `yaml:"plugins"`
		Consumers []consumer    `yaml:"consumers"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("kong.yml %s: %w", path, err)
	}
	all := doc.Plugins
	for _, r := range doc.Routes {
		all = append(all, r.Plugins...)
	}
	for _, s := range doc.Services {
		all = append(all, s.Plugins...)
		for _, r := range s.Routes {
			all = append(all, r.Plugins...)
		}
	}
	cfg := &kongConfig{path: path, consumers: doc.Consumers}
	for _, p := range all {
		if p.Name != "genderize" {
			continue
		}
		// Decoded over the plugin's own defaults, as Kong's config is.
		c := plugin.New().(*plugin.Config)
		b, err := json.Marshal(p.Config)
		if err == nil {
			err = json.Unmarshal(b, c)
		}
		if err != nil {
			return nil, fmt.Errorf("kong.yml %s: genderize plugin config: %w", path, err)
		}
		cfg.plugin = c
		return cfg, nil
	}
	return nil, fmt.Errorf("kong.yml %s: no genderize plugin", path)
}

// consumerID resolves -consumer: a username with an id in kong.yml, else
// the id as given.
func (c *kongConfig) consumerID(idOrName string) (string, error) {
	for _, k := range c.consumers {
		if k.ID == idOrName {
			return k.ID, nil
		}
	}
	for _, k := range c.consumers {
		if k.Username == idOrName {
			if k.ID == "" {
				return "", fmt.Errorf("consumer %q has no id in %s: counters are kept by consumer id; give the id (Admin API: GET /consumers/%s)", idOrName, c.path, idOrName)
			}
			return k.ID, nil
		}
	}
	return idOrName, nil
}

// describe turns a counter into a row with the caller's plan and limit
// when kong.yml says them.
func (c *kongConfig) describe(u quota.Usage, now time.Time) row {
	r := row{Used: u.Used, Start: u.WindowStart, End: u.WindowEnd, Ended: !now.Before(u.WindowEnd)}
	kind, id, _ := strings.Cut(u.Key, ":")
	limit := -1
	switch kind {
	case "ip":
		r.Caller, r.IP, r.Plan = "ip", id, "key-less"
		limit = c.plugin.IPLimit
	case "consumer":
		r.Caller, r.ConsumerID = "consumer", id
		for _, k := range c.consumers {
			if k.ID == id {
				r.Username = k.Username
				r.Plan = planOf(k.Tags, c.plugin.DefaultPlan)
				if p, ok := c.plugin.Plans[r.Plan]; ok && r.Plan != "" {
					limit = p.Quota
				}
				break
			}
		}
	default:
		r.Caller = kind
	}
	if limit >= 0 {
		remaining := max(limit-u.Used, 0)
		r.Limit, r.Remaining = &limit, &remaining
	}
	return r
}

// planOf reads the plan:NAME tag as the plugin does: none means the
// default plan, two different ones mean none (the plugin refuses such a
// consumer).
func planOf(tags []string, defaultPlan string) string {
	plan := ""
	for _, t := range tags {
		if name, ok := strings.CutPrefix(t, "plan:"); ok {
			if plan != "" && plan != name {
				return ""
			}
			plan = name
		}
	}
	if plan == "" {
		return defaultPlan
	}
	return plan
}

// storeOptions are the quota options of a policy other than local: the
// plugin's redis record as the plugin reads it (plugin.Config's
// quotaOptions, which is not exported), without fault tolerance: an
// administrator wants an error, not this process's own empty counts.
func (c *kongConfig) storeOptions() quota.Options {
	r := c.plugin.Redis
	return quota.Options{Redis: quota.RedisOptions{
		Host: r.Host, Port: r.Port, Username: r.Username, Password: r.Password,
		Database: r.Database, SSL: r.SSL, SSLVerify: r.SSLVerify, ServerName: r.ServerName,
		Timeout:          time.Duration(r.Timeout) * time.Millisecond,
		ClusterAddresses: strings.Join(r.ClusterAddresses, ","), SentinelMaster: r.SentinelMaster,
		SentinelAddresses: strings.Join(r.SentinelAddresses, ","), SentinelUsername: r.SentinelUsername,
		SentinelPassword: r.SentinelPassword,
	}}
}
