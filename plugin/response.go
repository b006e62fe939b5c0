package plugin

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/genderize-kong/genderize/plugin/quota"
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
	errInvalidKey     = newAPIError(http.StatusUnauthorized, "Invalid API key")
	errNotActive      = newAPIError(http.StatusPaymentRequired, "Subscription is not active")
	errMissingName    = newAPIError(http.StatusUnprocessableEntity, "Missing 'name' parameter")
	errInvalidName    = newAPIError(http.StatusUnprocessableEntity, "Invalid 'name' parameter")
	errInvalidCountry = newAPIError(http.StatusUnprocessableEntity, "Invalid 'country_id' parameter")
	errLimitReached   = newAPIError(http.StatusTooManyRequests, "Request limit reached")
	errTooLow         = newAPIError(http.StatusTooManyRequests, "Request too low to process")
	errInternal       = newAPIError(http.StatusInternalServerError, "Internal error")
)

const exposedHeaders = "X-Rate-Limit-Limit, X-Rate-Limit-Remaining, X-Rate-Limit-Reset, X-Rate-Reset, Retry-After"

// Headers go to Kong as the protobuf Struct go-pdk's bridge.WrapHeaders
// would make of a map[string][]string (each value a list of strings), but
// built directly: the map of interfaces WrapHeaders goes through cost more
// than the rest of an answer. The constant values are made once and shared;
// protobuf messages may be marshalled concurrently.
var (
	contentTypeValue   = headerValue("application/json; charset=utf-8")
	anyOriginValue     = headerValue("*")
	exposeHeadersValue = headerValue(exposedHeaders)
	allowMethodsValue  = headerValue("GET, OPTIONS")
	allowHeadersValue  = headerValue("*")
	maxAgeValue        = headerValue("86400")
)

func headerValue(v string) *structpb.Value {
	return structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{structpb.NewStringValue(v)}})
}

// headers returns the headers every answer carries: the caller's window as
// r describes it, the content type and CORS.
func headers(r quota.Result) *structpb.Struct {
	return headersWithRoom(r, 0)
}

// headersWithRoom is headers with room for extra more.
func headersWithRoom(r quota.Result, extra int) *structpb.Struct {
	reset := headerValue(strconv.FormatInt(wholeSeconds(r.ResetAfter), 10))
	fields := make(map[string]*structpb.Value, 7+extra)
	fields["X-Rate-Limit-Limit"] = headerValue(strconv.Itoa(r.Limit))
	fields["X-Rate-Limit-Remaining"] = headerValue(strconv.Itoa(r.Remaining))
	fields["X-Rate-Limit-Reset"] = reset
	fields["X-Rate-Reset"] = reset
	fields["Content-Type"] = contentTypeValue
	fields["Access-Control-Allow-Origin"] = anyOriginValue
	fields["Access-Control-Expose-Headers"] = exposeHeadersValue
	return &structpb.Struct{Fields: fields}
}

// preflightHeaders adds what a browser's CORS preflight asks for.
func preflightHeaders(r quota.Result) *structpb.Struct {
	h := headersWithRoom(r, 3)
	h.Fields["Access-Control-Allow-Methods"] = allowMethodsValue
	h.Fields["Access-Control-Allow-Headers"] = allowHeadersValue
	h.Fields["Access-Control-Max-Age"] = maxAgeValue
	return h
}

// throttledHeaders adds Retry-After, in whole seconds and at least 1: a
// client told 0 would retry at once and be throttled again.
func throttledHeaders(r quota.Result, retryAfter time.Duration) *structpb.Struct {
	h := headersWithRoom(r, 1)
	h.Fields["Retry-After"] = headerValue(strconv.FormatInt(max(wholeSeconds(retryAfter), 1), 10))
	return h
}

// wholeSeconds rounds d up: "resets in 0 seconds" would be a lie while any
// of the window is left.
func wholeSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64(math.Ceil(d.Seconds()))
}
