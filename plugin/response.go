package plugin

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/Kong/go-pdk/server/kong_plugin_protocol"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// apiError is an error answer of the API: its status and its exact body.
type apiError struct {
	status int
	body   []byte
}

func newAPIError(status int, message string) *apiError {
	return &apiError{status: status, body: []byte(`{"error":"` + message + `"}`)}
}

// The messages are the API's: clients match on them.
var (
	errInvalidKey       = newAPIError(http.StatusUnauthorized, "Invalid API key")
	errNotActive        = newAPIError(http.StatusPaymentRequired, "Subscription is not active")
	errMissingName      = newAPIError(http.StatusUnprocessableEntity, "Missing 'name' parameter")
	errInvalidName      = newAPIError(http.StatusUnprocessableEntity, "Invalid 'name' parameter")
	errInvalidCountry   = newAPIError(http.StatusUnprocessableEntity, "Invalid 'country_id' parameter")
	errLimitReached     = newAPIError(http.StatusTooManyRequests, "Request limit reached")
	errTooLow           = newAPIError(http.StatusTooManyRequests, "Request too low to process")
	errMethodNotAllowed = newAPIError(http.StatusMethodNotAllowed, "Method not allowed")
	errInternal         = newAPIError(http.StatusInternalServerError, "Internal error")
	errUnavailable      = newAPIError(http.StatusServiceUnavailable, "Service temporarily unavailable")
)

const exposedHeaders = "X-Rate-Limit-Limit, X-Rate-Limit-Remaining, X-Rate-Limit-Reset, X-Rate-Reset, Retry-After"

// Headers go to Kong as the protobuf Struct go-pdk's bridge.WrapHeaders
// would make of a map[string][]string (each value a list of strings), but
// encoded directly with protowire, in the order written here: building a
// structpb map and marshalling it cost about 25 allocations per answer,
// more than the rest of a single-name answer. The constant headers are
// encoded once.
var (
	contentTypeHeader = appendHeader(nil, "Content-Type", []byte("application/json; charset=utf-8"))
	corsHeaders       = appendHeader(appendHeader(nil, "Access-Control-Allow-Origin", []byte("*")), "Access-Control-Expose-Headers", []byte(exposedHeaders))
	preflightHeaders  = appendHeader(appendHeader(appendHeader(nil, "Access-Control-Allow-Methods", []byte("GET, OPTIONS")), "Access-Control-Allow-Headers", []byte("*")), "Access-Control-Max-Age", []byte("86400"))
	allowHeader       = appendHeader(nil, "Allow", []byte("GET, OPTIONS"))
)

// appendHeader appends one entry of a Struct's fields map: name to a
// ListValue holding one StringValue, value.
func appendHeader(b []byte, name string, value []byte) []byte {
	str := protowire.SizeTag(3) + protowire.SizeBytes(len(value)) // Value{string_value}
	list := protowire.SizeTag(1) + protowire.SizeBytes(str)       // ListValue{values}
	val := protowire.SizeTag(6) + protowire.SizeBytes(list)       // Value{list_value}
	entry := protowire.SizeTag(1) + protowire.SizeBytes(len(name)) + protowire.SizeTag(2) + protowire.SizeBytes(val)
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(entry))
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, name)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(val))
	b = protowire.AppendTag(b, 6, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(list))
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(str))
	b = protowire.AppendTag(b, 3, protowire.BytesType)
	return protowire.AppendBytes(b, value)
}

func appendIntHeader(b []byte, name string, n int64) []byte {
	var digits [20]byte
	return appendHeader(b, name, strconv.AppendInt(digits[:0], n, 10))
}

// appendHeaders appends every header of an answer, made from the decision
// alone, as a google.protobuf.Struct's encoding: the caller's window as
// d.rate describes it, the content type and CORS on every answer;
// Retry-After when throttled, in whole seconds and at least 1 (a client
// told 0 would retry at once and be throttled again); what a browser's
// preflight asks for on a 204; Allow on a 405.
func appendHeaders(b []byte, d *decision) []byte {
	r := d.rate
	reset := wholeSeconds(r.ResetAfter)
	b = appendIntHeader(b, "X-Rate-Limit-Limit", int64(r.Limit))
	b = appendIntHeader(b, "X-Rate-Limit-Remaining", int64(r.Remaining))
	b = appendIntHeader(b, "X-Rate-Limit-Reset", reset)
	b = appendIntHeader(b, "X-Rate-Reset", reset)
	b = append(b, contentTypeHeader...)
	b = append(b, corsHeaders...)
	if d.retryAfter > 0 {
		b = appendIntHeader(b, "Retry-After", max(wholeSeconds(d.retryAfter), 1))
	}
	switch d.status {
	case http.StatusNoContent:
		b = append(b, preflightHeaders...)
	case http.StatusMethodNotAllowed:
		b = append(b, allowHeader...)
	}
	return b
}

// exitArgs is kong.response.exit's argument for d: ExitArgs with status
// and body, and the headers (field 3, a Struct) already encoded, carried
// as the message's unknown fields, which the encoder writes verbatim.
func exitArgs(d *decision) *kong_plugin_protocol.ExitArgs {
	args := &kong_plugin_protocol.ExitArgs{Status: int32(d.status), Body: d.body}
	var scratch [512]byte
	h := appendHeaders(scratch[:0], d)
	raw := protowire.AppendTag(make([]byte, 0, len(h)+8), 3, protowire.BytesType)
	raw = protowire.AppendBytes(raw, h)
	args.ProtoReflect().SetUnknown(protoreflect.RawFields(raw))
	return args
}

// wholeSeconds rounds d up: "resets in 0 seconds" would be a lie while any
// of the window is left.
func wholeSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64(math.Ceil(d.Seconds()))
}

// bodies are the buffers answers are encoded into: a batch of 100 names
// is about 7 KB of JSON, made for every answer and dropped as soon as
// Exit has copied it into its frame. Buffers grown past maxPooledBody
// (very long names) are left to the collector.
var bodies = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

const maxPooledBody = 64 << 10

func newBody() *[]byte { return bodies.Get().(*[]byte) }

// releaseBody returns b to the pool; nil is ignored. Nothing may use the
// body after.
func releaseBody(b *[]byte) {
	if b == nil || cap(*b) > maxPooledBody {
		return
	}
	*b = (*b)[:0]
	bodies.Put(b)
}
