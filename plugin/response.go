package plugin

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
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

// headers are every header of an answer, made from the decision alone:
// the caller's window as d.rate describes it, the content type and CORS on
// every answer; Retry-After when throttled, in whole seconds and at least
// 1 (a client told 0 would retry at once and be throttled again); what a
// browser's preflight asks for on a 204; Allow on a 405.
func headers(d *decision) *structpb.Struct {
	extra := 0
	switch {
	case d.retryAfter > 0:
		extra = 1
	case d.status == http.StatusNoContent:
		extra = 3
	case d.status == http.StatusMethodNotAllowed:
		extra = 1
	}
	r := d.rate
	reset := headerValue(strconv.FormatInt(wholeSeconds(r.ResetAfter), 10))
	fields := make(map[string]*structpb.Value, 7+extra)
	fields["X-Rate-Limit-Limit"] = headerValue(strconv.Itoa(r.Limit))
	fields["X-Rate-Limit-Remaining"] = headerValue(strconv.Itoa(r.Remaining))
	fields["X-Rate-Limit-Reset"] = reset
	fields["X-Rate-Reset"] = reset
	fields["Content-Type"] = contentTypeValue
	fields["Access-Control-Allow-Origin"] = anyOriginValue
	fields["Access-Control-Expose-Headers"] = exposeHeadersValue
	if d.retryAfter > 0 {
		fields["Retry-After"] = headerValue(strconv.FormatInt(max(wholeSeconds(d.retryAfter), 1), 10))
	}
	switch d.status {
	case http.StatusNoContent:
		fields["Access-Control-Allow-Methods"] = allowMethodsValue
		fields["Access-Control-Allow-Headers"] = allowHeadersValue
		fields["Access-Control-Max-Age"] = maxAgeValue
	case http.StatusMethodNotAllowed:
		fields["Allow"] = allowMethodsValue
	}
	return &structpb.Struct{Fields: fields}
}

// wholeSeconds rounds d up: "resets in 0 seconds" would be a lie while any
// of the window is left.
func wholeSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64(math.Ceil(d.Seconds()))
}
