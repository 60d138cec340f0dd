// Package userpb holds the gRPC contract of the quartet user service: the
// messages and the UserService of package user, generated from user.proto.
//
// user.pb.go and user_grpc.pb.go are checked in, so building needs no code
// generation. After editing user.proto run `go generate` here; it needs
// protoc on PATH and installs the pinned Go plugins itself (see generate.sh).
// A test fails when the checked-in code is stale.
package userpb

//go:generate bash generate.sh
