package engine

import "github.com/genderize-kong/genderize/schema/namekey"

// CountryCode returns the upper-case form of an ISO 3166-1 alpha-2 code,
// accepting any letter case, and whether s is such a code. It is
// namekey.CountryCode: the builder stores countries under the same codes.
func CountryCode(s string) (string, bool) { return namekey.CountryCode(s) }
