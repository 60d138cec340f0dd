module quartet/bench

go 1.26.0

require (
	github.com/coder/websocket v1.8.15
	github.com/graph-gophers/graphql-go v1.11.0
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
	quartet v0.0.0
)

require (
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
)

replace quartet => ../
