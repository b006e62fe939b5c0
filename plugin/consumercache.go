package plugin

import (
	"strings"
	"sync"
	"time"

	"github.com/Kong/go-pdk/entities"
)

// maxCachedKeys bounds the consumer cache. Only keys key-auth recognised
// are cached, so the bound is the number of distinct customers seen within
// one TTL; past it, new keys are simply not cached until old ones expire.
const maxCachedKeys = 10000

// consumerCache maps an API key, as its raw undecoded query value, to the
// consumer key-auth authenticated for it, for consumer_cache_ttl: a
// repeated key then costs no kong.client.get_consumer round trip. It
// belongs to one plugin instance, so a config change (a new instance)
// starts it empty.
//
// An entry answers exactly as key-auth would, within the TTL, because:
//   - the key is the raw bytes key-auth decodes, so no decoding can map two
//     keys to one entry;
//   - only a query holding exactly one apikey parameter with a value is
//     looked up or stored (key-auth refuses duplicates, ignores empty and
//     bare ones);
//   - only consumers key-auth recognised are stored: an unknown key maps
//     to the anonymous consumer, which is left to Kong every time;
//   - key-auth reads the first lua_max_uri_args arguments only: a key
//     recognised at argument position p was within them, so the entry
//     serves the key at position p or earlier, and Kong is asked otherwise.
//
// It assumes key-auth reads keys from the query alone, as kong/kong.yml
// configures it (key_in_header and key_in_body false): with keys in
// headers or bodies, set consumer_cache_ttl to 0.
type consumerCache struct {
	mu        sync.Mutex
	entries   map[string]cachedConsumer
	lastSweep time.Time
}

type cachedConsumer struct {
	consumer entities.Consumer
	position int // the apikey argument's index when key-auth recognised it
	expires  time.Time
}

func newConsumerCache() *consumerCache {
	return &consumerCache{entries: make(map[string]cachedConsumer)}
}

// get returns the consumer cached for key seen at position, if any and
// still fresh at now.
func (c *consumerCache) get(key string, position int, now time.Time) (entities.Consumer, bool) {
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if !ok || !now.Before(e.expires) || position > e.position {
		return entities.Consumer{}, false
	}
	return e.consumer, true
}

// put caches consumer for key, recognised at position, until now+ttl.
func (c *consumerCache) put(key string, position int, consumer entities.Consumer, now time.Time, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxCachedKeys || now.Sub(c.lastSweep) >= ttl {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		c.lastSweep = now
		if len(c.entries) >= maxCachedKeys {
			return
		}
	}
	// Copy the key: it points into the request's buffer.
	c.entries[strings.Clone(key)] = cachedConsumer{consumer: consumer, position: position, expires: now.Add(ttl)}
}

// apikeyArgument finds the query's one apikey parameter as key-auth reads
// arguments (ngx.req.get_uri_args: split on '&', empty parts skipped, names
// percent-decoded): its raw value and its position among the arguments.
// ok is false when there is none with a value, or more than one.
func apikeyArgument(query string) (raw string, position int, ok bool) {
	n := 0
	for a := range arguments(query) {
		if isAPIKeyName(a.name) {
			if ok || !a.hasValue || a.value == "" {
				return "", 0, false
			}
			raw, position, ok = a.value, n, true
		}
		n++
	}
	return raw, position, ok
}

// isAPIKeyName reports whether a raw argument name decodes to "apikey".
func isAPIKeyName(name string) bool {
	if name == "apikey" {
		return true
	}
	// Escaped, "apikey" is at most 18 bytes long.
	if len(name) < len("apikey") || len(name) > 3*len("apikey") || !needsUnescape(name) {
		return false
	}
	var buf [3 * len("apikey")]byte
	decoded, ok := appendUnescaped(buf[:0], name)
	return ok && string(decoded) == "apikey"
}
