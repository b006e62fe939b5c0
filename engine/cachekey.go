package engine

import "unsafe"

// The cache's keys are the country, a NUL, then the name exactly as the
// client sent it. The name as sent rather than its lookup key, because
// the answer depends on more than the key (candidates reads the name's
// capitals: "DUPONT Marie" is tried as Marie, "dupont marie" is not), and
// because a hit then costs no normalisation at all. Country is "" or two
// letters, so the NUL makes every key unambiguous.
//
// Predict builds each key in one buffer on its stack (keyBufferSize fits
// a country, a NUL and most names) and looks it up through a view of that
// buffer: a hit in the front layer allocates nothing. What keeps a key
// (the front layer, ristretto) copies it first.
const keyBufferSize = 64

// appendCacheKey appends the cache key of name in country to dst.
func appendCacheKey(dst []byte, country, name string) []byte {
	return append(append(append(dst, country...), 0), name...)
}

// keyView is b as a string, without a copy: valid while b is unchanged.
func keyView(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}
