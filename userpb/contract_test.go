package userpb_test

import (
	"fmt"
	"slices"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"quartet/userpb"
)

// specFields is the table of spec section 2.1, row for row.
var specFields = []struct {
	message string
	field   protoreflect.Name
	kind    protoreflect.Kind
	number  protoreflect.FieldNumber
}{
	{"GetUserRequest", "id", protoreflect.Int32Kind, 1},
	{"CreateUserRequest", "name", protoreflect.StringKind, 1},
	{"CreateUserRequest", "email", protoreflect.StringKind, 2},
	{"UserResponse", "id", protoreflect.Int32Kind, 1},
	{"UserResponse", "name", protoreflect.StringKind, 2},
	{"UserResponse", "email", protoreflect.StringKind, 3},
	{"UserResponse", "created_at", protoreflect.StringKind, 4},
	{"CreateUsersResponse", "users_created", protoreflect.Int32Kind, 1},
	{"ChatMessage", "user_name", protoreflect.StringKind, 1},
	{"ChatMessage", "message", protoreflect.StringKind, 2},
	{"ChatMessage", "timestamp", protoreflect.StringKind, 3},
}

// specMessages lists every message of spec section 2.1, including the
// field-less Empty.
var specMessages = []protoreflect.Name{
	"GetUserRequest", "CreateUserRequest", "UserResponse", "CreateUsersResponse", "ChatMessage", "Empty",
}

func TestFileMatchesSpec(t *testing.T) {
	fd := userpb.File_user_proto
	if fd.Package() != "user" {
		t.Errorf("package = %q, want user", fd.Package())
	}
	if fd.Syntax() != protoreflect.Proto3 {
		t.Errorf("syntax = %v, want proto3", fd.Syntax())
	}
	if got := fd.Options().(*descriptorpb.FileOptions).GetGoPackage(); got != "quartet/userpb" {
		t.Errorf("go_package = %q, want quartet/userpb", got)
	}
	if fd.Imports().Len() != 0 {
		t.Errorf("user.proto imports %d files, want none (Empty is the package's own message)", fd.Imports().Len())
	}
	var names []protoreflect.Name
	for i := range fd.Messages().Len() {
		names = append(names, fd.Messages().Get(i).Name())
	}
	if !slices.Equal(names, specMessages) {
		t.Errorf("messages = %v, want %v", names, specMessages)
	}
}

func TestMessageFieldsMatchSpec(t *testing.T) {
	messages := userpb.File_user_proto.Messages()
	wantCount := map[protoreflect.Name]int{}
	for _, f := range specFields {
		wantCount[protoreflect.Name(f.message)]++
	}
	for _, name := range specMessages {
		md := messages.ByName(name)
		if md == nil {
			t.Errorf("message %s missing", name)
			continue
		}
		if got := md.Fields().Len(); got != wantCount[name] {
			t.Errorf("%s has %d fields, want %d", md.FullName(), got, wantCount[name])
		}
		if md.Oneofs().Len() != 0 || md.Messages().Len() != 0 || md.Enums().Len() != 0 {
			t.Errorf("%s declares oneofs, nested messages or enums; the spec has none", md.FullName())
		}
	}
	for _, want := range specFields {
		md := messages.ByName(protoreflect.Name(want.message))
		if md == nil {
			continue // reported above
		}
		fd := md.Fields().ByName(want.field)
		if fd == nil {
			t.Errorf("%s: field %s missing", md.FullName(), want.field)
			continue
		}
		if fd.Number() != want.number {
			t.Errorf("%s: number = %d, want %d", fd.FullName(), fd.Number(), want.number)
		}
		if byNumber := md.Fields().ByNumber(want.number); byNumber != fd {
			t.Errorf("%s: field number %d belongs to %v", md.FullName(), want.number, byNumber)
		}
		if fd.Kind() != want.kind {
			t.Errorf("%s: kind = %v, want %v", fd.FullName(), fd.Kind(), want.kind)
		}
		if fd.Cardinality() != protoreflect.Optional || fd.IsList() || fd.IsMap() {
			t.Errorf("%s: cardinality = %v, want a singular field", fd.FullName(), fd.Cardinality())
		}
		// A proto3 "optional" field would put zero values on the wire,
		// which plain proto3 peers never send.
		if fd.HasPresence() {
			t.Errorf("%s has explicit presence; the spec declares a plain proto3 field", fd.FullName())
		}
	}
}

// specMethods is the table of spec section 4.1.
var specMethods = []struct {
	name         protoreflect.Name
	input        protoreflect.FullName
	output       protoreflect.FullName
	clientStream bool
	serverStream bool
}{
	{"GetUser", "user.GetUserRequest", "user.UserResponse", false, false},
	{"GetAllUsers", "user.Empty", "user.UserResponse", false, true},
	{"CreateUsers", "user.CreateUserRequest", "user.CreateUsersResponse", true, false},
	{"ChatWithUsers", "user.ChatMessage", "user.ChatMessage", true, true},
}

func TestServiceMatchesSpec(t *testing.T) {
	services := userpb.File_user_proto.Services()
	if services.Len() != 1 {
		t.Fatalf("user.proto declares %d services, want 1", services.Len())
	}
	sd := services.Get(0)
	if sd.FullName() != "user.UserService" {
		t.Fatalf("service = %s, want user.UserService", sd.FullName())
	}
	if sd.Methods().Len() != len(specMethods) {
		t.Errorf("%s has %d methods, want %d", sd.FullName(), sd.Methods().Len(), len(specMethods))
	}
	for _, want := range specMethods {
		md := sd.Methods().ByName(want.name)
		if md == nil {
			t.Errorf("%s: method %s missing", sd.FullName(), want.name)
			continue
		}
		if md.Input().FullName() != want.input || md.Output().FullName() != want.output {
			t.Errorf("%s: %s -> %s, want %s -> %s", md.FullName(),
				md.Input().FullName(), md.Output().FullName(), want.input, want.output)
		}
		if md.IsStreamingClient() != want.clientStream || md.IsStreamingServer() != want.serverStream {
			t.Errorf("%s: client streaming %v, server streaming %v; want %v, %v", md.FullName(),
				md.IsStreamingClient(), md.IsStreamingServer(), want.clientStream, want.serverStream)
		}
	}
}

// TestServiceDescMatchesSpec checks what gRPC itself routes on: the
// registered service name, the method paths and the streaming flags.
func TestServiceDescMatchesSpec(t *testing.T) {
	desc := userpb.UserService_ServiceDesc
	if desc.ServiceName != "user.UserService" {
		t.Errorf("ServiceName = %q, want user.UserService", desc.ServiceName)
	}
	if desc.Metadata != "user.proto" {
		t.Errorf("Metadata = %v, want user.proto (reflection looks the file up by it)", desc.Metadata)
	}
	unary := map[string]bool{}
	for _, m := range desc.Methods {
		unary[m.MethodName] = true
	}
	streams := map[string]grpc.StreamDesc{}
	for _, s := range desc.Streams {
		streams[s.StreamName] = s
	}
	fullNames := map[protoreflect.Name]string{
		"GetUser":       userpb.UserService_GetUser_FullMethodName,
		"GetAllUsers":   userpb.UserService_GetAllUsers_FullMethodName,
		"CreateUsers":   userpb.UserService_CreateUsers_FullMethodName,
		"ChatWithUsers": userpb.UserService_ChatWithUsers_FullMethodName,
	}
	for _, want := range specMethods {
		name := string(want.name)
		if got, wantPath := fullNames[want.name], "/user.UserService/"+name; got != wantPath {
			t.Errorf("full method name of %s = %q, want %q", name, got, wantPath)
		}
		if !want.clientStream && !want.serverStream {
			if !unary[name] {
				t.Errorf("%s is not a unary method of the ServiceDesc", name)
			}
			continue
		}
		s, ok := streams[name]
		if !ok {
			t.Errorf("%s is not a stream of the ServiceDesc", name)
			continue
		}
		if s.ClientStreams != want.clientStream || s.ServerStreams != want.serverStream {
			t.Errorf("stream %s: ClientStreams %v, ServerStreams %v; want %v, %v",
				name, s.ClientStreams, s.ServerStreams, want.clientStream, want.serverStream)
		}
	}
	if got := len(desc.Methods) + len(desc.Streams); got != len(specMethods) {
		t.Errorf("ServiceDesc has %d calls, want %d", got, len(specMethods))
	}
}

// wireField is one decoded field of a binary message: the number and wire
// type from docs/grpc.md and the value.
type wireField struct {
	num    protowire.Number
	typ    protowire.Type
	varint uint64 // for protowire.VarintType
	bytes  string // for protowire.BytesType
}

func varintField(num protowire.Number, v int32) wireField {
	// int32 (unlike sint32) encodes negative values sign-extended to 64 bits.
	return wireField{num: num, typ: protowire.VarintType, varint: uint64(int64(v))}
}

func stringField(num protowire.Number, s string) wireField {
	return wireField{num: num, typ: protowire.BytesType, bytes: s}
}

// encode writes fields by hand, independently of the generated code.
func encode(fields []wireField) []byte {
	var b []byte
	for _, f := range fields {
		b = protowire.AppendTag(b, f.num, f.typ)
		switch f.typ {
		case protowire.VarintType:
			b = protowire.AppendVarint(b, f.varint)
		case protowire.BytesType:
			b = protowire.AppendString(b, f.bytes)
		}
	}
	return b
}

// decode splits a binary message into its fields, in wire order.
func decode(b []byte) ([]wireField, error) {
	var fields []wireField
	for off := 0; off < len(b); {
		num, typ, n := protowire.ConsumeTag(b[off:])
		if n < 0 {
			return nil, fmt.Errorf("offset %d: bad tag: %v", off, protowire.ParseError(n))
		}
		f := wireField{num: num, typ: typ}
		var m int
		switch typ {
		case protowire.VarintType:
			f.varint, m = protowire.ConsumeVarint(b[off+n:])
		case protowire.BytesType:
			var v []byte
			v, m = protowire.ConsumeBytes(b[off+n:])
			f.bytes = string(v)
		default:
			return nil, fmt.Errorf("offset %d: field %d has wire type %d; the contract's messages have only int32 and string fields", off, num, typ)
		}
		if m < 0 {
			return nil, fmt.Errorf("offset %d: field %d: %v", off+n, num, protowire.ParseError(m))
		}
		fields = append(fields, f)
		off += n + m
	}
	return fields, nil
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		msg  proto.Message
		wire []wireField // fields in the order of docs/grpc.md
	}{
		{"GetUserRequest", &userpb.GetUserRequest{Id: 42}, []wireField{varintField(1, 42)}},
		{"GetUserRequest negative id", &userpb.GetUserRequest{Id: -1}, []wireField{varintField(1, -1)}},
		{"GetUserRequest zero id", &userpb.GetUserRequest{}, nil},
		{"CreateUserRequest", &userpb.CreateUserRequest{Name: "Zoë Ådler", Email: "zoe@example.com"},
			[]wireField{stringField(1, "Zoë Ådler"), stringField(2, "zoe@example.com")}},
		{"CreateUserRequest email only", &userpb.CreateUserRequest{Email: "a@b"}, []wireField{stringField(2, "a@b")}},
		{"UserResponse", &userpb.UserResponse{Id: 2147483647, Name: "Alice", Email: "alice@example.com", CreatedAt: "2024-05-01 12:00:00"},
			[]wireField{varintField(1, 2147483647), stringField(2, "Alice"), stringField(3, "alice@example.com"), stringField(4, "2024-05-01 12:00:00")}},
		{"UserResponse zero", &userpb.UserResponse{}, nil},
		{"CreateUsersResponse", &userpb.CreateUsersResponse{UsersCreated: 3}, []wireField{varintField(1, 3)}},
		{"ChatMessage", &userpb.ChatMessage{UserName: "Server", Message: "Echo: hi", Timestamp: "23:59:59"},
			[]wireField{stringField(1, "Server"), stringField(2, "Echo: hi"), stringField(3, "23:59:59")}},
		{"Empty", &userpb.Empty{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := proto.MarshalOptions{Deterministic: true}.Marshal(tt.msg)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			got, err := decode(b)
			if err != nil {
				t.Fatalf("decode %x: %v", b, err)
			}
			// Field order on the wire is not part of the contract.
			slices.SortFunc(got, func(a, b wireField) int { return int(a.num) - int(b.num) })
			if !slices.Equal(got, tt.wire) {
				t.Errorf("wire fields = %+v, want %+v", got, tt.wire)
			}

			back := tt.msg.ProtoReflect().New().Interface()
			if err := proto.Unmarshal(b, back); err != nil {
				t.Fatalf("Unmarshal(Marshal): %v", err)
			}
			if !proto.Equal(back, tt.msg) {
				t.Errorf("Unmarshal(Marshal(m)) = %v, want %v", back, tt.msg)
			}

			// A peer built from the spec alone encodes the same fields.
			fromSpec := tt.msg.ProtoReflect().New().Interface()
			if err := proto.Unmarshal(encode(tt.wire), fromSpec); err != nil {
				t.Fatalf("Unmarshal(hand-encoded): %v", err)
			}
			if !proto.Equal(fromSpec, tt.msg) {
				t.Errorf("Unmarshal(hand-encoded) = %v, want %v", fromSpec, tt.msg)
			}
		})
	}
}
