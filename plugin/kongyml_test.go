package plugin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// kongYMLConfig is the genderize plugin's config in kong/kong.yml, the
// contract every part is built against.
func kongYMLConfig(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "kong", "kong.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Routes []struct {
			Plugins []struct {
				Name   string         `yaml:"name"`
				Config map[string]any `yaml:"config"`
			} `yaml:"plugins"`
		} `yaml:"routes"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, r := range doc.Routes {
		for _, p := range r.Plugins {
			if p.Name == "genderize" {
				return p.Config
			}
		}
	}
	t.Fatal("kong.yml has no genderize plugin on a route")
	return nil
}

// The schema Kong loads (the Config's json tags) has exactly the fields of
// kong.yml, and kong.yml's values decode into a valid config.
func TestKongYMLMatchesConfig(t *testing.T) {
	yml := kongYMLConfig(t)
	var fromYML []string
	for k := range yml {
		fromYML = append(fromYML, k)
	}
	var fromSchema []string
	typ := reflect.TypeFor[Config]()
	for i := range typ.NumField() {
		if f := typ.Field(i); f.IsExported() {
			fromSchema = append(fromSchema, f.Tag.Get("json"))
		}
	}
	slices.Sort(fromYML)
	slices.Sort(fromSchema)
	if !slices.Equal(fromYML, fromSchema) {
		t.Fatalf("kong.yml fields\n%v\nConfig fields\n%v", fromYML, fromSchema)
	}

	// What Kong hands the plugin server: the config as JSON.
	b, err := json.Marshal(yml)
	if err != nil {
		t.Fatal(err)
	}
	c := New().(*Config)
	if err := json.Unmarshal(b, c); err != nil {
		t.Fatal(err)
	}
	if err := c.validate(); err != nil {
		t.Fatalf("kong.yml config invalid: %v", err)
	}
	// New's defaults are kong.yml's values: a field Kong sends as null
	// behaves as in the shipped config.
	defaults := New().(*Config)
	defaults.state, c.state = nil, nil
	if !reflect.DeepEqual(c, defaults) {
		t.Errorf("kong.yml config %+v\ndiffers from New() %+v", c, defaults)
	}
}

// Kong sends every schema field; one without a value comes as null and must
// keep New's default. A configured plans table replaces the default plans.
func TestConfigDecoding(t *testing.T) {
	c := New().(*Config)
	in := `{"database_path":null,"cache_size":null,"max_batch":50,"plans":{"solo":{"quota":7}},"default_plan":"solo",
		"anonymous_consumer":null,"ip_limit":null,"ip_window_seconds":null,"throttle_rate":2.5,"throttle_burst":null,
		"quota_policy":null,"quota_path":null,"max_name_length":null,"__seq__":3,"__key__":"plugins:x"}`
	if err := json.Unmarshal([]byte(in), c); err != nil {
		t.Fatal(err)
	}
	if c.DatabasePath != "/usr/local/share/genderize/names.db" || c.MaxBatch != 50 || c.ThrottleRate != 2.5 || c.IPLimit != 100 {
		t.Errorf("decoded %+v", c)
	}
	if len(c.Plans) != 1 || c.Plans["solo"].Quota != 7 {
		t.Errorf("plans %v, want only solo", c.Plans)
	}
	if err := c.validate(); err != nil {
		t.Error(err)
	}
	c = New().(*Config)
	if err := json.Unmarshal([]byte(`{"plans":null}`), c); err != nil || len(c.Plans) != 3 {
		t.Errorf("plans null: %v %v", c.Plans, err)
	}
	if err := json.Unmarshal([]byte(`{"plans":{"x":{"quota":"lots"}}}`), c); err == nil || !strings.Contains(err.Error(), "quota") {
		t.Errorf("bad quota decoded: %v", err)
	}
}
