package standin

import (
	"fmt"
	"unicode/utf8"

	pb "github.com/Kong/go-pdk/server/kong_plugin_protocol"
	"google.golang.org/protobuf/encoding/protowire"
)

// exitArgs is what kong.response.exit receives: the status, the body and
// each header with its values, as the plugin named them.
type exitArgs struct {
	status  int32
	body    []byte
	headers []exitHeader
}

type exitHeader struct {
	name   string
	values []string
}

// decodeExitArgs decodes kong.response.exit's arguments. Go plugins send
// them in one shape (go-pdk's WrapHeaders: every header once, as a list of
// strings), which is read straight off the wire; anything else goes through
// the generic protobuf decoding, with the same result. The generic path
// made of its Struct a map of interfaces per request: a tenth of the
// stand-in's CPU.
func decodeExitArgs(data []byte) (exitArgs, error) {
	if a, ok := decodeExitArgsFast(data); ok {
		return a, nil
	}
	return decodeExitArgsGeneric(data)
}

func decodeExitArgsGeneric(data []byte) (exitArgs, error) {
	m, err := decode[pb.ExitArgs](data)
	if err != nil {
		return exitArgs{}, err
	}
	a := exitArgs{status: m.Status, body: m.Body}
	if m.Headers != nil {
		for k, v := range m.Headers.Fields {
			vs, err := headerValues(v)
			if err != nil {
				return exitArgs{}, fmt.Errorf("kong.response.exit header %q: %w", k, err)
			}
			a.headers = append(a.headers, exitHeader{name: k, values: vs})
		}
	}
	return a, nil
}

// decodeExitArgsFast reads the common shape only: each field of ExitArgs
// at most once, header entries as key then value, each value a string or
// a list of strings, every header named once. ok is false for anything
// else, valid or not.
func decodeExitArgsFast(b []byte) (a exitArgs, ok bool) {
	var seen [4]bool
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num < 1 || num > 3 || seen[num] {
			return exitArgs{}, false
		}
		seen[num] = true
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return exitArgs{}, false
			}
			a.status = int32(v)
			b = b[n:]
		case num == 2 && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return exitArgs{}, false
			}
			// Non-nil even when empty, as protobuf decodes bytes.
			a.body = append([]byte{}, v...)
			b = b[n:]
		case num == 3 && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return exitArgs{}, false
			}
			if a.headers, ok = decodeHeadersFast(v); !ok {
				return exitArgs{}, false
			}
			b = b[n:]
		default:
			return exitArgs{}, false
		}
	}
	return a, true
}

// decodeHeadersFast reads a google.protobuf.Struct of headers.
func decodeHeadersFast(b []byte) ([]exitHeader, bool) {
	headers := make([]exitHeader, 0, 8)
	for len(b) > 0 {
		entry, ok := consumeField(&b, 1)
		if !ok {
			return nil, false
		}
		key, ok := consumeField(&entry, 1)
		if !ok || !utf8.Valid(key) {
			return nil, false
		}
		value, ok := consumeField(&entry, 2)
		if !ok || len(entry) != 0 {
			return nil, false
		}
		name := string(key)
		for _, h := range headers {
			if h.name == name {
				return nil, false
			}
		}
		values, ok := decodeHeaderValueFast(value)
		if !ok {
			return nil, false
		}
		headers = append(headers, exitHeader{name: name, values: values})
	}
	return headers, true
}

// decodeHeaderValueFast reads a google.protobuf.Value holding a string
// (field 3) or a list (field 6) of values holding strings.
func decodeHeaderValueFast(b []byte) ([]string, bool) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 || typ != protowire.BytesType {
		return nil, false
	}
	v, m := protowire.ConsumeBytes(b[n:])
	if m < 0 || n+m != len(b) {
		return nil, false
	}
	switch num {
	case 3:
		if !utf8.Valid(v) {
			return nil, false
		}
		return []string{string(v)}, true
	case 6:
		values := make([]string, 0, 1)
		for len(v) > 0 {
			elem, ok := consumeField(&v, 1)
			if !ok {
				return nil, false
			}
			s, ok := consumeField(&elem, 3)
			if !ok || len(elem) != 0 || !utf8.Valid(s) {
				return nil, false
			}
			values = append(values, string(s))
		}
		return values, true
	}
	return nil, false
}

// consumeField takes a length-delimited field numbered num off the front
// of *b.
func consumeField(b *[]byte, num protowire.Number) ([]byte, bool) {
	got, typ, n := protowire.ConsumeTag(*b)
	if n < 0 || got != num || typ != protowire.BytesType {
		return nil, false
	}
	v, m := protowire.ConsumeBytes((*b)[n:])
	if m < 0 {
		return nil, false
	}
	*b = (*b)[n+m:]
	return v, true
}
