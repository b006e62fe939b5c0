package engine

import (
	"strconv"
	"unicode/utf8"
)

// Gender values as the API spells them. An empty Gender means no prediction
// (JSON null).
const (
	Female = "female"
	Male   = "male"
)

// Prediction is one result of the API: what the name statistics say about
// one name, in the scope of one country or of all countries pooled.
type Prediction struct {
	// Name is the name exactly as the client sent it (after URL decoding).
	Name string
	// Gender is Female, Male, or "" when no prediction can be made.
	Gender string
	// Probability is the share of the majority gender, rounded to two
	// decimals as genderize.io does; 0 when nothing is known.
	Probability float64
	// Count is the number of records behind the answer, in the scope used.
	Count int64
	// CountryID is the upper-case country the prediction was scoped to, or
	// "" for the global model (then the field is absent from the JSON).
	CountryID string
}

// AppendJSON appends p as genderize.io writes it: fields in the order name,
// gender, probability, count, country_id; probability always with a decimal
// point (0.0, 1.0, 0.98); country_id only when the request was scoped.
func (p Prediction) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"name":`...)
	dst = appendJSONString(dst, p.Name)
	dst = append(dst, `,"gender":`...)
	if p.Gender == "" {
		dst = append(dst, "null"...)
	} else {
		dst = appendJSONString(dst, p.Gender)
	}
	dst = append(dst, `,"probability":`...)
	dst = appendProbability(dst, p.Probability)
	dst = append(dst, `,"count":`...)
	dst = strconv.AppendInt(dst, p.Count, 10)
	if p.CountryID != "" {
		dst = append(dst, `,"country_id":`...)
		dst = appendJSONString(dst, p.CountryID)
	}
	return append(dst, '}')
}

// MarshalJSON implements json.Marshaler with the same bytes as AppendJSON.
func (p Prediction) MarshalJSON() ([]byte, error) {
	return p.AppendJSON(make([]byte, 0, 96+len(p.Name))), nil
}

// AppendJSONArray appends ps as a JSON array, the body of a batch response.
func AppendJSONArray(dst []byte, ps []Prediction) []byte {
	dst = append(dst, '[')
	for i, p := range ps {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = p.AppendJSON(dst)
	}
	return append(dst, ']')
}

func appendProbability(dst []byte, p float64) []byte {
	// Every probability the engine gives is rounded to two decimals:
	// those are written directly, in the bytes strconv's shortest form
	// gives them (a float64 c/100 has no shorter decimal that reads back
	// as it), at a tenth of its cost.
	if p >= 0 && p <= 1 {
		if c := int(p*100 + 0.5); float64(c)/100 == p {
			switch {
			case c == 100:
				return append(dst, "1.0"...)
			case c%10 == 0:
				return append(dst, '0', '.', byte('0'+c/10))
			default:
				return append(dst, '0', '.', byte('0'+c/10), byte('0'+c%10))
			}
		}
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, p, 'f', -1, 64)
	for _, c := range dst[start:] {
		if c == '.' {
			return dst
		}
	}
	return append(dst, ".0"...)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. Valid UTF-8 is kept as is
// (clients get the name back byte for byte); invalid bytes become U+FFFD,
// control characters and the two line separators JavaScript chokes on are
// escaped.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
