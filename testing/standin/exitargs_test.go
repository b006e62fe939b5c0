package standin

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/Kong/go-pdk/bridge"
	pb "github.com/Kong/go-pdk/server/kong_plugin_protocol"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

func exitWire(t *testing.T, status int32, body []byte, h map[string][]string) []byte {
	t.Helper()
	a := &pb.ExitArgs{Status: status, Body: body}
	if h != nil {
		st, err := bridge.WrapHeaders(h)
		if err != nil {
			t.Fatal(err)
		}
		a.Headers = st
	}
	data, err := proto.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func exitWireStruct(t *testing.T, st *structpb.Struct) []byte {
	t.Helper()
	data, err := proto.Marshal(&pb.ExitArgs{Status: 200, Headers: st})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// byName makes decoded headers comparable: the generic path yields them in
// map order.
func byName(hs []exitHeader) map[string][]string {
	m := map[string][]string{}
	for _, h := range hs {
		m[h.name] = h.values
	}
	return m
}

// TestExitArgsFastMatchesGeneric: the direct decoding gives what the
// protobuf decoding gives, and steps aside for every shape it does not
// read itself.
func TestExitArgsFastMatchesGeneric(t *testing.T) {
	str := func(s string) *structpb.Value { return structpb.NewStringValue(s) }
	list := func(vs ...*structpb.Value) *structpb.Value {
		return structpb.NewListValue(&structpb.ListValue{Values: vs})
	}
	twice := exitWire(t, 200, []byte("a"), nil)
	twice = append(twice, exitWire(t, 201, []byte("b"), nil)...)
	unknown := protowire.AppendTag(exitWire(t, 200, nil, nil), 9, protowire.VarintType)
	unknown = protowire.AppendVarint(unknown, 1)
	badUTF8Key := protowire.AppendTag(nil, 3, protowire.BytesType)
	entry := protowire.AppendTag(nil, 1, protowire.BytesType)
	entry = protowire.AppendBytes(entry, []byte("\xffkey"))
	entry = protowire.AppendTag(entry, 2, protowire.BytesType)
	entry = protowire.AppendBytes(entry, []byte{})
	st := protowire.AppendTag(nil, 1, protowire.BytesType)
	st = protowire.AppendBytes(st, entry)
	badUTF8Key = protowire.AppendBytes(badUTF8Key, st)

	for _, tc := range []struct {
		name    string
		data    []byte
		fast    bool // the direct decoding reads it
		wantErr bool
	}{
		{"go-pdk headers", exitWire(t, 200, []byte(`{"name":"peter"}`), map[string][]string{
			"Content-Type": {"application/json; charset=utf-8"}, "X-Rate-Limit-Remaining": {"41"}, "Vary": {"a", "b"},
		}), true, false},
		{"no headers, empty body", exitWire(t, 204, []byte{}, nil), true, false},
		{"nothing", nil, true, false},
		{"empty header list", exitWireStruct(t, &structpb.Struct{Fields: map[string]*structpb.Value{"X-Empty": list()}}), true, false},
		{"plain string value", exitWireStruct(t, &structpb.Struct{Fields: map[string]*structpb.Value{"X-One": str("1")}}), true, false},
		{"number value", exitWireStruct(t, &structpb.Struct{Fields: map[string]*structpb.Value{"X-N": structpb.NewNumberValue(1.5)}}), false, false},
		{"bool in a list", exitWireStruct(t, &structpb.Struct{Fields: map[string]*structpb.Value{"X-B": list(structpb.NewBoolValue(true))}}), false, false},
		{"nested struct value", exitWireStruct(t, &structpb.Struct{Fields: map[string]*structpb.Value{"X-S": structpb.NewStructValue(&structpb.Struct{})}}), false, true},
		{"null value", exitWireStruct(t, &structpb.Struct{Fields: map[string]*structpb.Value{"X-0": structpb.NewNullValue()}}), false, true},
		{"fields twice", twice, false, false},
		{"unknown field", unknown, false, false},
		{"invalid UTF-8 header name", badUTF8Key, false, true},
		{"truncated", exitWire(t, 200, []byte("body"), nil)[:5], false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fast, ok := decodeExitArgsFast(tc.data)
			if ok != tc.fast {
				t.Fatalf("fast path took it: %v, want %v", ok, tc.fast)
			}
			generic, genErr := decodeExitArgsGeneric(tc.data)
			if (genErr != nil) != tc.wantErr {
				t.Fatalf("generic error %v, want error %v", genErr, tc.wantErr)
			}
			got, err := decodeExitArgs(tc.data)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if got.status != generic.status || !reflect.DeepEqual(got.body, generic.body) || !maps.EqualFunc(byName(got.headers), byName(generic.headers), slices.Equal) {
				t.Fatalf("decoded %+v, generic %+v", got, generic)
			}
			if ok && (fast.status != generic.status || !reflect.DeepEqual(fast.body, generic.body) || !maps.EqualFunc(byName(fast.headers), byName(generic.headers), slices.Equal)) {
				t.Fatalf("fast %+v, generic %+v", fast, generic)
			}
			// Empty lists stay lists: a header with no values is not a
			// header with one empty value.
			for _, h := range got.headers {
				if h.values == nil {
					t.Fatalf("header %s decoded to nil values", h.name)
				}
			}
		})
	}
}
