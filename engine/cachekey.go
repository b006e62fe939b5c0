package engine

import "unsafe"

// cacheKey builds the cache's keys: country, a NUL, then the name exactly
// as the client sent it. The name as sent rather than its lookup key,
// because the answer depends on more than the key (candidates reads the
// name's capitals: "DUPONT Marie" is tried as Marie, "dupont marie" is
// not), and because a hit then costs no normalisation at all. Country is
// "" or two letters, so the NUL makes every key unambiguous.
//
// One buffer serves every name of a Predict call: view makes no string.
type cacheKey struct {
	buf []byte
}

// view returns the key of name in country as a string that shares the
// buffer and is valid until the next view. Ristretto's Get keeps only the
// two hashes it computes from a key (the cache stores no keys), so a view
// is enough for Get; Set needs String.
func (k *cacheKey) view(country, name string) string {
	if k.buf == nil {
		k.buf = make([]byte, 0, 64)
	}
	k.buf = append(append(append(k.buf[:0], country...), 0), name...)
	return unsafe.String(unsafe.SliceData(k.buf), len(k.buf))
}

// String returns a copy of the last view's key.
func (k *cacheKey) String() string {
	return string(k.buf)
}
