package plugin

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/genderize-kong/genderize/plugin/quota"
)

// A policy that is not registered is refused, and the error lists the
// registered ones.
func TestUnknownQuotaPolicy(t *testing.T) {
	c := New().(*Config)
	c.QuotaPolicy = "carrier-pigeon"
	err := c.validate()
	if err == nil || !strings.HasPrefix(err.Error(), "quota_policy: ") || !strings.Contains(err.Error(), strings.Join(quota.Policies(), ", ")) {
		t.Fatalf("error %v, want quota_policy listing %v", err, quota.Policies())
	}
}

func TestRedisConfigValidation(t *testing.T) {
	tests := []struct {
		name  string
		redis string // JSON merged over the defaults
		field string // "" when valid
	}{
		{"host", `{"host":"redis.internal"}`, ""},
		{"cluster", `{"cluster_addresses":["10.0.0.1:6379","10.0.0.2:6379"]}`, ""},
		{"sentinel", `{"sentinel_master":"mymaster","sentinel_addresses":["10.0.0.1:26379"]}`, ""},
		{"nothing", `{}`, "redis:"},
		{"sentinel without addresses", `{"sentinel_master":"mymaster"}`, "redis:"},
		{"sentinel addresses without master", `{"sentinel_addresses":["10.0.0.1:26379"]}`, "redis:"},
		{"timeout 0", `{"host":"r","timeout":0}`, "redis.timeout:"},
		{"timeout 60001", `{"host":"r","timeout":60001}`, "redis.timeout:"},
		{"timeout 60000", `{"host":"r","timeout":60000}`, ""},
		{"timeout 1", `{"host":"r","timeout":1}`, ""},
		{"port 0", `{"host":"r","port":0}`, "redis.port:"},
		{"port 65536", `{"host":"r","port":65536}`, "redis.port:"},
		{"database -1", `{"host":"r","database":-1}`, "redis.database:"},
		{"cluster address without port", `{"cluster_addresses":["10.0.0.1"]}`, "redis.cluster_addresses:"},
		{"cluster address with a comma", `{"cluster_addresses":["10.0.0.1:1,10.0.0.2:2"]}`, "redis.cluster_addresses:"},
		{"sentinel address without port", `{"sentinel_master":"m","sentinel_addresses":["s"]}`, "redis.sentinel_addresses:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New().(*Config)
			if err := json.Unmarshal([]byte(`{"quota_policy":"redis","redis":`+tt.redis+`}`), c); err != nil {
				t.Fatal(err)
			}
			err := c.Redis.validate()
			switch {
			case tt.field == "" && err != nil:
				t.Errorf("valid record refused: %v", err)
			case tt.field != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.field)):
				t.Errorf("error %v, want one naming %s", err, tt.field)
			}
		})
	}
}

// The redis record decodes as Kong sends it (absent fields null, nested
// record included) and maps onto quota.Options, address lists joined so
// that Options stays comparable; the local policy gets its path alone.
func TestQuotaOptions(t *testing.T) {
	c := New().(*Config)
	in := `{"quota_policy":"redis","fault_tolerant":false,"redis":{"host":"redis.internal","port":null,"username":"kong",
		"password":"secret","database":2,"ssl":true,"ssl_verify":true,"server_name":"redis.example","timeout":150,
		"cluster_addresses":["a:1","b:2"],"sentinel_master":null,"sentinel_addresses":null,"sentinel_username":null,"sentinel_password":null}}`
	if err := json.Unmarshal([]byte(in), c); err != nil {
		t.Fatal(err)
	}
	want := quota.Options{
		Path: "/var/lib/genderize/quota.db",
		Redis: quota.RedisOptions{Host: "redis.internal", Port: 6379, Username: "kong", Password: "secret", Database: 2,
			SSL: true, SSLVerify: true, ServerName: "redis.example", Timeout: 150 * time.Millisecond, ClusterAddresses: "a:1,b:2"},
		FaultTolerant: false,
	}
	if got := c.quotaOptions(); got != want {
		t.Errorf("options\n%+v\nwant\n%+v", got, want)
	}
	if got := c.storeTimeout(); got != 150*time.Millisecond {
		t.Errorf("store timeout %s, want the redis timeout", got)
	}

	d := New().(*Config)
	if err := json.Unmarshal([]byte(`{"redis":null,"fault_tolerant":null}`), d); err != nil {
		t.Fatal(err)
	}
	if d.Redis.Port != 6379 || d.Redis.Timeout != 2000 || !d.FaultTolerant {
		t.Errorf("null record lost the defaults: %+v fault_tolerant %v", d.Redis, d.FaultTolerant)
	}
	d.Redis.Host = "ignored by local"
	if got := d.quotaOptions(); got != (quota.Options{Path: d.QuotaPath}) {
		t.Errorf("local options %+v, want the path alone", got)
	}
	if got := d.storeTimeout(); got != localStoreTimeout {
		t.Errorf("local store timeout %s", got)
	}
}
