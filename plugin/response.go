package plugin

import (
	"math"
	"net/http"
	"strconv"
	"time"

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

// headers returns the headers every answer carries: the caller's window as
// r describes it, the content type and CORS.
func headers(r quota.Result) map[string][]string {
	reset := strconv.FormatInt(wholeSeconds(r.ResetAfter), 10)
	return map[string][]string{
		"X-Rate-Limit-Limit":            {strconv.Itoa(r.Limit)},
		"X-Rate-Limit-Remaining":        {strconv.Itoa(r.Remaining)},
		"X-Rate-Limit-Reset":            {reset},
		"X-Rate-Reset":                  {reset},
		"Content-Type":                  {"application/json; charset=utf-8"},
		"Access-Control-Allow-Origin":   {"*"},
		"Access-Control-Expose-Headers": {exposedHeaders},
	}
}

// preflightHeaders adds what a browser's CORS preflight asks for.
func preflightHeaders(r quota.Result) map[string][]string {
	h := headers(r)
	h["Access-Control-Allow-Methods"] = []string{"GET, OPTIONS"}
	h["Access-Control-Allow-Headers"] = []string{"*"}
	h["Access-Control-Max-Age"] = []string{"86400"}
	return h
}

// throttledHeaders adds Retry-After, in whole seconds and at least 1: a
// client told 0 would retry at once and be throttled again.
func throttledHeaders(r quota.Result, retryAfter time.Duration) map[string][]string {
	h := headers(r)
	h["Retry-After"] = []string{strconv.FormatInt(max(wholeSeconds(retryAfter), 1), 10)}
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
