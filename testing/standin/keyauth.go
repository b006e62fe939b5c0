package standin

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"
)

// KeyAuthConfig is key-auth's configuration with Kong 3.x defaults.
type KeyAuthConfig struct {
	KeyNames        []string
	KeyInHeader     bool
	KeyInQuery      bool
	KeyInBody       bool
	HideCredentials bool
	Anonymous       string
	RunOnPreflight  bool
	Realm           string
}

func keyAuthConfig(raw map[string]any) (KeyAuthConfig, error) {
	c := KeyAuthConfig{
		KeyNames:       []string{"apikey"},
		KeyInHeader:    true,
		KeyInQuery:     true,
		RunOnPreflight: true,
		Realm:          "kong",
	}
	for k, v := range raw {
		var ok bool
		switch k {
		case "key_names":
			var list []any
			if list, ok = v.([]any); ok {
				c.KeyNames = c.KeyNames[:0]
				for _, e := range list {
					s, isString := e.(string)
					if !isString || s == "" {
						return c, fmt.Errorf("key-auth config key_names: %v is not a header name", e)
					}
					c.KeyNames = append(c.KeyNames, s)
				}
			}
		case "key_in_header":
			c.KeyInHeader, ok = v.(bool)
		case "key_in_query":
			c.KeyInQuery, ok = v.(bool)
		case "key_in_body":
			c.KeyInBody, ok = v.(bool)
		case "hide_credentials":
			c.HideCredentials, ok = v.(bool)
		case "run_on_preflight":
			c.RunOnPreflight, ok = v.(bool)
		case "anonymous":
			if v == nil {
				ok = true
			} else {
				c.Anonymous, ok = v.(string)
			}
		case "realm":
			if v == nil {
				ok = true
			} else {
				c.Realm, ok = v.(string)
			}
		default:
			return c, fmt.Errorf("key-auth config: unknown field %q", k)
		}
		if !ok {
			return c, fmt.Errorf("key-auth config %s: unexpected value %v", k, v)
		}
	}
	return c, nil
}

// keyAuth applies Kong 3.x key-auth (kong/plugins/key-auth/handler.lua) to
// requests, with the consumers and credentials of the declarative config.
type keyAuth struct {
	conf       KeyAuthConfig
	byKey      map[string]*keyedConsumer
	byID       map[string]*Consumer
	byUsername map[string]*Consumer
	maxArgs    int
}

type keyedConsumer struct {
	consumer   *Consumer
	credential *Credential
}

func newKeyAuth(conf KeyAuthConfig, consumers []Consumer, maxArgs int) *keyAuth {
	k := &keyAuth{
		conf:       conf,
		byKey:      map[string]*keyedConsumer{},
		byID:       map[string]*Consumer{},
		byUsername: map[string]*Consumer{},
		maxArgs:    maxArgs,
	}
	for i := range consumers {
		c := &consumers[i]
		k.byID[c.ID] = c
		if c.Username != "" {
			k.byUsername[c.Username] = c
		}
		for j := range c.KeyauthCredentials {
			k.byKey[c.KeyauthCredentials[j].Key] = &keyedConsumer{consumer: c, credential: &c.KeyauthCredentials[j]}
		}
	}
	return k
}

// authOutcome is what key-auth leaves behind for the plugins after it.
type authOutcome struct {
	consumer        *Consumer
	credential      *Credential
	wwwAuthenticate string // header key-auth set on the response, if any
	// rawQuery replaces the request's query when hide_credentials removed
	// the key from it.
	rawQuery *string
	// status and message: key-auth answered by itself (no anonymous).
	status  int
	message string
}

// loadConsumer is kong.client.load_consumer: by id, then by username when
// asked.
func (k *keyAuth) loadConsumer(idOrName string, byUsername bool) *Consumer {
	if c := k.byID[idOrName]; c != nil {
		return c
	}
	if byUsername {
		return k.byUsername[idOrName]
	}
	return nil
}

func (k *keyAuth) authenticate(r *Request) authOutcome {
	if !k.conf.RunOnPreflight && r.Method == http.MethodOptions {
		return authOutcome{}
	}
	out, failure := k.doAuthentication(r)
	if failure == "" {
		return out
	}
	if k.conf.Anonymous == "" {
		out.status, out.message = http.StatusUnauthorized, failure
		return out
	}
	anon := k.loadConsumer(k.conf.Anonymous, true)
	if anon == nil {
		// kong.client.authenticate(nil, nil) raises: Kong answers 500.
		out.status, out.message = http.StatusInternalServerError, "An unexpected error occurred"
		return out
	}
	out.consumer, out.credential = anon, nil
	return out
}

// doAuthentication returns the failure message key-auth would answer with,
// or "" on success.
func (k *keyAuth) doAuthentication(r *Request) (authOutcome, string) {
	var out authOutcome
	var query map[string][]queryValue
	var body map[string][]string
	key, found := "", false
	for _, name := range k.conf.KeyNames {
		var values []string
		if k.conf.KeyInHeader {
			values = r.Header.Values(name)
		}
		if len(values) == 0 && k.conf.KeyInQuery {
			if query == nil {
				query = ngxURIArgs(r.RawQuery, k.maxArgs)
			}
			for _, v := range query[name] {
				// A bare "apikey" (no "=") is the boolean true in Lua:
				// not a string, not a table, so key-auth looks on. Only
				// several occurrences make a table.
				if len(query[name]) == 1 && !v.set {
					break
				}
				values = append(values, v.value)
			}
		}
		if len(values) == 0 && k.conf.KeyInBody {
			if body == nil {
				body = formOrJSONBody(r)
			}
			values = body[name]
		}
		switch {
		case len(values) == 1:
			key, found = values[0], true
			if k.conf.HideCredentials {
				q := removeArg(r.RawQuery, name)
				out.rawQuery = &q
			}
		case len(values) > 1:
			return out, "Duplicate API key found"
		}
		if found {
			break
		}
	}
	if key == "" {
		out.wwwAuthenticate = `Key realm="` + k.conf.Realm + `"`
		return out, "No API key found in request"
	}
	kc := k.byKey[key]
	if kc == nil {
		return out, "Invalid authentication credentials"
	}
	out.consumer, out.credential = kc.consumer, kc.credential
	return out, ""
}

type queryValue struct {
	value string
	set   bool // false for a bare key without "="
}

// ngxURIArgs parses a raw query as ngx.req.get_uri_args does: at most
// maxArgs arguments (the rest is silently dropped), "+" and %XX decoded,
// malformed escapes kept as they are, arguments with an empty key dropped.
func ngxURIArgs(raw string, maxArgs int) map[string][]queryValue {
	args := map[string][]queryValue{}
	n := 0
	for part := range strings.SplitSeq(raw, "&") {
		if part == "" {
			continue
		}
		if maxArgs > 0 && n >= maxArgs {
			break
		}
		n++
		k, v, hasValue := strings.Cut(part, "=")
		key := ngxUnescape(k)
		if key == "" {
			continue
		}
		args[key] = append(args[key], queryValue{value: ngxUnescape(v), set: hasValue})
	}
	return args
}

func ngxUnescape(s string) string {
	if !strings.ContainsAny(s, "%+") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '+':
			b = append(b, ' ')
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	default:
		return c - 'a' + 10
	}
}

// removeArg drops every occurrence of name from a raw query, which is
// what hide_credentials leaves the plugins after key-auth to see.
func removeArg(raw, name string) string {
	var kept []string
	for part := range strings.SplitSeq(raw, "&") {
		k, _, _ := strings.Cut(part, "=")
		if part == "" || ngxUnescape(k) == name {
			continue
		}
		kept = append(kept, part)
	}
	return strings.Join(kept, "&")
}

// formOrJSONBody reads the body fields key_in_body looks at.
func formOrJSONBody(r *Request) map[string][]string {
	out := map[string][]string{}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/x-www-form-urlencoded":
		for k, vs := range ngxURIArgs(string(r.Body), 0) {
			for _, v := range vs {
				out[k] = append(out[k], v.value)
			}
		}
	case "application/json":
		var m map[string]any
		if json.Unmarshal(r.Body, &m) == nil {
			for k, v := range m {
				if s, ok := v.(string); ok {
					out[k] = []string{s}
				}
			}
		}
	}
	return out
}
