package standin

import (
	"crypto/sha1"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Declarative is the part of a Kong declarative configuration (kong.yml,
// _format_version 3.0) the stand-in acts on: routes with their plugins,
// and consumers with their key-auth credentials.
type Declarative struct {
	FormatVersion string     `yaml:"_format_version"`
	Routes        []Route    `yaml:"routes"`
	Consumers     []Consumer `yaml:"consumers"`
	// Plugins at the top level; only those attached to a route (by name or
	// id) are applied, since the stand-in has no services and no globals
	// are expected in front of a plugin that answers by itself.
	Plugins []Plugin `yaml:"plugins"`
}

// Route is a Kong route. The stand-in matches paths (prefix or "~" regex)
// and methods; hosts, headers and protocols are not used by kong.yml.
type Route struct {
	ID        string   `yaml:"id"`
	Name      string   `yaml:"name"`
	Paths     []string `yaml:"paths"`
	Methods   []string `yaml:"methods"`
	StripPath *bool    `yaml:"strip_path"`
	Tags      []string `yaml:"tags"`
	Plugins   []Plugin `yaml:"plugins"`

	pathRegexps []*regexp.Regexp
	pathPrefix  []string
}

// Plugin is one plugin entry with its raw configuration.
type Plugin struct {
	ID      string         `yaml:"id"`
	Name    string         `yaml:"name"`
	Route   string         `yaml:"route"`
	Enabled *bool          `yaml:"enabled"`
	Config  map[string]any `yaml:"config"`
}

// Consumer is a Kong consumer as GetConsumer delivers it.
type Consumer struct {
	ID                 string       `yaml:"id"`
	Username           string       `yaml:"username"`
	CustomID           string       `yaml:"custom_id"`
	Tags               []string     `yaml:"tags"`
	KeyauthCredentials []Credential `yaml:"keyauth_credentials"`
	CreatedAt          int64        `yaml:"-"`
}

// Credential is a key-auth credential.
type Credential struct {
	ID   string   `yaml:"id"`
	Key  string   `yaml:"key"`
	Tags []string `yaml:"tags"`
}

// LoadDeclarative reads and checks a kong.yml.
func LoadDeclarative(path string) (*Declarative, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read kong declarative config: %w", err)
	}
	d, err := ParseDeclarative(data)
	if err != nil {
		return nil, fmt.Errorf("kong declarative config %s: %w", path, err)
	}
	return d, nil
}

// ParseDeclarative parses a kong.yml and completes it the way Kong's
// declarative loader does: every entity without an id gets one, derived
// from its endpoint key so that it is stable across restarts (Kong uses
// UUIDv5 for the same reason), and top-level plugins are attached to their
// route.
func ParseDeclarative(data []byte) (*Declarative, error) {
	var d Declarative
	if err := yaml.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("parse yaml: %w", err)
	}
	if d.FormatVersion != "" && !strings.HasPrefix(d.FormatVersion, "3.") && !strings.HasPrefix(d.FormatVersion, "2.") {
		return nil, fmt.Errorf("unsupported _format_version %q", d.FormatVersion)
	}
	if err := d.complete(); err != nil {
		return nil, err
	}
	return &d, nil
}

func (d *Declarative) complete() error {
	if err := d.completeConsumers(); err != nil {
		return err
	}
	return d.completeRoutes()
}

// AddConsumer adds a consumer as if kong.yml declared it; tests use it to
// give each case its own quota and throttle.
func (d *Declarative) AddConsumer(c Consumer) error {
	d.Consumers = append(d.Consumers, c)
	if err := d.completeConsumers(); err != nil {
		d.Consumers = d.Consumers[:len(d.Consumers)-1]
		return err
	}
	return nil
}

func (d *Declarative) completeConsumers() error {
	created := time.Now().Unix()
	seenKeys := map[string]string{}
	seenUsers := map[string]bool{}
	for i := range d.Consumers {
		c := &d.Consumers[i]
		if c.Username == "" && c.CustomID == "" {
			return fmt.Errorf("consumer %d: at least one of username or custom_id is required", i)
		}
		if c.Username != "" {
			if seenUsers[c.Username] {
				return fmt.Errorf("consumer %q: duplicate username", c.Username)
			}
			seenUsers[c.Username] = true
		}
		if c.ID == "" {
			c.ID = stableID("consumers", c.Username+"\x00"+c.CustomID)
		}
		if c.CreatedAt == 0 {
			c.CreatedAt = created
		}
		for j := range c.KeyauthCredentials {
			cr := &c.KeyauthCredentials[j]
			if cr.Key == "" {
				return fmt.Errorf("consumer %q credential %d: empty key", c.Username, j)
			}
			if other, dup := seenKeys[cr.Key]; dup {
				return fmt.Errorf("consumers %q and %q share a key-auth key", other, c.Username)
			}
			seenKeys[cr.Key] = c.Username
			if cr.ID == "" {
				cr.ID = stableID("keyauth_credentials", cr.Key)
			}
		}
	}
	return nil
}

func (d *Declarative) completeRoutes() error {
	for i := range d.Routes {
		r := &d.Routes[i]
		if r.ID == "" {
			r.ID = stableID("routes", r.Name)
		}
		if len(r.Paths) == 0 {
			return fmt.Errorf("route %q: no paths (the stand-in routes by path)", r.Name)
		}
		for _, p := range r.Paths {
			if rx, ok := strings.CutPrefix(p, "~"); ok {
				// Kong anchors regex paths at the start of the path.
				re, err := regexp.Compile("^" + rx)
				if err != nil {
					return fmt.Errorf("route %q path %q: %w", r.Name, p, err)
				}
				r.pathRegexps = append(r.pathRegexps, re)
			} else {
				r.pathPrefix = append(r.pathPrefix, p)
			}
		}
		for j := range r.Plugins {
			if r.Plugins[j].ID == "" {
				r.Plugins[j].ID = stableID("plugins", r.ID+"\x00"+r.Plugins[j].Name)
			}
		}
	}
	for _, p := range d.Plugins {
		if p.Route == "" {
			return fmt.Errorf("plugin %q: only plugins attached to a route are supported by the stand-in", p.Name)
		}
		idx := slices.IndexFunc(d.Routes, func(r Route) bool { return r.Name == p.Route || r.ID == p.Route })
		if idx < 0 {
			return fmt.Errorf("plugin %q: unknown route %q", p.Name, p.Route)
		}
		if p.ID == "" {
			p.ID = stableID("plugins", d.Routes[idx].ID+"\x00"+p.Name)
		}
		d.Routes[idx].Plugins = append(d.Routes[idx].Plugins, p)
	}
	d.Plugins = nil
	return nil
}

// matches reports whether the route accepts a request, as Kong's router
// does for paths and methods.
func (r *Route) matches(method, path string) bool {
	if len(r.Methods) > 0 && !slices.Contains(r.Methods, method) {
		return false
	}
	for _, re := range r.pathRegexps {
		if re.MatchString(path) {
			return true
		}
	}
	for _, p := range r.pathPrefix {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// plugin returns the route's enabled plugin of that name.
func (r *Route) plugin(name string) (Plugin, bool) {
	for _, p := range r.Plugins {
		if p.Name == name && (p.Enabled == nil || *p.Enabled) {
			return p, true
		}
	}
	return Plugin{}, false
}

// stableNamespace is a fixed UUID namespace for the ids generated here.
var stableNamespace = [16]byte{0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}

// stableID is an RFC 4122 version 5 UUID of kind and key.
func stableID(kind, key string) string {
	h := sha1.New()
	h.Write(stableNamespace[:])
	h.Write([]byte(kind + ":" + key))
	var u [16]byte
	copy(u[:], h.Sum(nil))
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
