package export

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// schemaFile is the schema consumers build from, at the repository's root.
var schemaFile = filepath.Join("..", "..", "proto", "dta", "export", "v1", "export.proto")

var (
	schemaOnce  sync.Once
	schemaFiles protoreflect.FileDescriptor
	schemaErr   error
)

// schema compiles the repository's .proto file with a real protobuf
// compiler (protocompile), so the tests decode records as a consumer
// generating code from the file would.
func schema(t *testing.T) protoreflect.FileDescriptor {
	t.Helper()
	schemaOnce.Do(func() {
		c := protocompile.Compiler{Resolver: &protocompile.SourceResolver{ImportPaths: []string{filepath.Dir(schemaFile)}}}
		fs, err := c.Compile(context.Background(), filepath.Base(schemaFile))
		if err != nil {
			schemaErr = err
			return
		}
		schemaFiles = fs[0]
	})
	if schemaErr != nil {
		t.Fatalf("compiling %s: %v", schemaFile, schemaErr)
	}
	return schemaFiles
}

// schemaMessage decodes b as the named message of the schema and returns
// its populated fields by name (enums as numbers, nested messages as maps,
// repeated fields as slices).
func schemaMessage(t *testing.T, name string, b []byte) map[string]any {
	t.Helper()
	md := schema(t).Messages().ByName(protoreflect.FullName(name).Name())
	if md == nil {
		t.Fatalf("schema has no message %s", name)
	}
	m := dynamicpb.NewMessage(md)
	if err := (proto.UnmarshalOptions{DiscardUnknown: false}).Unmarshal(b, m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(m.GetUnknown()) != 0 {
		t.Fatalf("%s: the encoder wrote fields the schema does not have: %x", name, m.GetUnknown())
	}
	return toMap(m)
}

func toMap(m protoreflect.Message) map[string]any {
	out := map[string]any{}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		out[string(fd.Name())] = toAny(fd, v)
		return true
	})
	return out
}

func toAny(fd protoreflect.FieldDescriptor, v protoreflect.Value) any {
	if fd.IsList() {
		var l []any
		for i := range v.List().Len() {
			l = append(l, scalar(fd, v.List().Get(i)))
		}
		return l
	}
	return scalar(fd, v)
}

func scalar(fd protoreflect.FieldDescriptor, v protoreflect.Value) any {
	switch fd.Kind() {
	case protoreflect.MessageKind:
		return toMap(v.Message())
	case protoreflect.EnumKind:
		return int32(v.Enum())
	}
	return v.Interface()
}

func TestEveryRecordDecodesWithTheSchemaFile(t *testing.T) {
	if _, err := os.Stat(schemaFile); err != nil {
		t.Fatal(err)
	}
	a := AppendEntry{Collector: "c", Store: "append", List: 3, Index: 1 << 40, Data: []byte{1, 2, 3, 4}, ReadTimeUnixNano: 7, LostBefore: 9,
		Generation: 1764091200123456}
	m := schemaMessage(t, SchemaAppendEntry, a.AppendProto(nil))
	if m["list"] != uint32(3) || m["index"] != uint64(1<<40) || string(m["data"].([]byte)) != "\x01\x02\x03\x04" ||
		m["read_time_unix_nano"] != uint64(7) || m["lost_before"] != uint64(9) || m["store"] != "append" || m["collector"] != "c" ||
		m["generation"] != uint64(1764091200123456) {
		t.Errorf("AppendEntry decoded as %v", m)
	}
	p := PostcardPath{Collector: "c", Store: "postcard", Key: []byte{0, 0, 0, 7}, Hops: []Hop{{1, 11}, {3, 33}}, PathLength: 5, Cause: 2, TimeUnixNano: 8}
	m = schemaMessage(t, SchemaPostcardPath, p.AppendProto(nil))
	hops := m["hops"].([]any)
	if len(hops) != 2 || hops[1].(map[string]any)["hop"] != uint32(3) || hops[1].(map[string]any)["value"] != uint32(33) ||
		m["cause"] != int32(2) || m["path_length"] != uint32(5) || m["time_unix_nano"] != uint64(8) {
		t.Errorf("PostcardPath decoded as %v", m)
	}
	c := SlotChange{Collector: "c", Store: "keyincrement", Primitive: primitiveKeyIncrement, Slot: 12, Counter: 5, Previous: 2, Interval: 3, TimeUnixNano: 4,
		Data: []byte{9}, Checksum: 0xdeadbeef, Value: []byte{8}}
	m = schemaMessage(t, SchemaSlotChange, c.AppendProto(nil))
	if m["primitive"] != int32(2) || m["slot"] != uint64(12) || m["counter"] != uint64(5) || m["previous"] != uint64(2) ||
		m["interval"] != uint64(3) || m["checksum"] != uint32(0xdeadbeef) || len(m) != 11 {
		t.Errorf("SlotChange decoded as %v", m)
	}
	// The enum names the JSON form uses are the schema's.
	for n, name := range primitiveNames {
		if ev := schema(t).Enums().ByName("Primitive").Values().ByNumber(protoreflect.EnumNumber(n)); ev == nil || string(ev.Name()) != name {
			t.Errorf("Primitive %d is %q in the JSON form but not in the schema", n, name)
		}
	}
	for n, name := range causeNames {
		if ev := schema(t).Enums().ByName("PathCause").Values().ByNumber(protoreflect.EnumNumber(n)); ev == nil || string(ev.Name()) != name {
			t.Errorf("PathCause %d is %q in the JSON form but not in the schema", n, name)
		}
	}
}

func TestEveryJSONRecordDecodesWithProtojsonAndTheSchemaFile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema string
		rec    interface{ AppendProto([]byte) []byte }
		absent []string // fields left out of the JSON (zero)
	}{
		{"an Append entry", SchemaAppendEntry, &AppendEntry{Collector: "c", Store: "append", List: 0, Index: 0, Data: []byte{1, 2, 3, 4},
			ReadTimeUnixNano: 1764091200123456789, Generation: 1764091200123456}, []string{"lost_before"}},
		{"an Append entry after lost ones", SchemaAppendEntry, &AppendEntry{Collector: "c", Store: "append", List: 1, Index: 1 << 60, Data: []byte{1},
			ReadTimeUnixNano: 1, LostBefore: 3, Generation: 2}, nil},
		{"a path", SchemaPostcardPath, &PostcardPath{Collector: "c", Store: "postcard", Key: []byte{0, 0, 0, 7}, Hops: []Hop{{1, 11}, {3, 33}},
			Cause: 3, TimeUnixNano: 8}, nil},
		{"a Key-Write change", SchemaSlotChange, &SlotChange{Collector: "c", Store: "keywrite", Primitive: primitiveKeyWrite, Slot: 12,
			Data: []byte{1, 0, 0, 0, 9}, Checksum: 1, Value: []byte{9}, Interval: 3, TimeUnixNano: 4}, nil},
		{"a Key-Increment change", SchemaSlotChange, &SlotChange{Collector: "c", Store: "keyincrement", Primitive: primitiveKeyIncrement,
			Slot: 12, Counter: 1<<63 + 1, Previous: 2, Interval: 3, TimeUnixNano: 4}, []string{"data", "checksum", "value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Exporter{cfg: Config{Format: JSON}}
			js := e.encode(tc.rec)
			md := schema(t).Messages().ByName(protoreflect.FullName(tc.schema).Name())
			fromJSON := dynamicpb.NewMessage(md)
			if err := protojson.Unmarshal(js, fromJSON); err != nil {
				t.Fatalf("protojson refuses %s: %v", js, err)
			}
			fromProto := dynamicpb.NewMessage(md)
			if err := proto.Unmarshal(tc.rec.AppendProto(nil), fromProto); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(fromJSON, fromProto) {
				t.Errorf("JSON %s decodes as %v, the protobuf form as %v", js, fromJSON, fromProto)
			}
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(js, &raw); err != nil {
				t.Fatal(err)
			}
			for _, f := range tc.absent {
				if _, ok := raw[f]; ok {
					t.Errorf("%s: %s present, want it left out at zero", js, f)
				}
			}
			// Every other field of the message is there, zero or not, and
			// 64-bit integers are numbers.
			fields := md.Fields()
			for i := range fields.Len() {
				fd := fields.Get(i)
				v, ok := raw[string(fd.Name())]
				if !ok {
					if !slices.Contains(tc.absent, string(fd.Name())) {
						t.Errorf("%s: %s left out", js, fd.Name())
					}
					continue
				}
				if k := fd.Kind(); (k == protoreflect.Uint64Kind || k == protoreflect.Int64Kind) && v[0] == '"' {
					t.Errorf("%s: %s is a string, want a JSON number", js, fd.Name())
				}
			}
		})
	}
}
