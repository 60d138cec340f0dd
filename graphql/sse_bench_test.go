package graphql

import (
	"net"
	"runtime"
	"strconv"
	"testing"
)

// idleSubscribers is how many subscribers BenchmarkIdleSubscriberMemory holds
// open per transport: with client and server in one process, each costs two of
// the 20,000 open files a process may have here.
const idleSubscribers = 5000

// BenchmarkIdleSubscriberMemory holds idleSubscribers onUserCreated
// subscriptions open over each transport, idle, and reports the server's heap
// and goroutine stacks per subscriber. The clients are bare TCP connections
// that send a request and read nothing, so what they hold in the process is a
// socket each, the same for every transport.
func BenchmarkIdleSubscriberMemory(b *testing.B) {
	sub := `{"query":"subscription { onUserCreated { id name } }"}`
	post := func(accept string) []byte {
		return []byte("POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: " + accept +
			"\r\nContent-Length: " + strconv.Itoa(len(sub)) + "\r\n\r\n" + sub)
	}
	ws := append([]byte("GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"+
		"Sec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n"), maskedTextFrame([]byte(initMsg))...)
	ws = append(ws, maskedTextFrame([]byte(`{"id":"1","type":"subscribe","payload":`+sub+`}`))...)
	for _, tc := range []struct {
		name    string
		request []byte
	}{
		{"sse", post("text/event-stream")},
		{"multipart", post("multipart/mixed;subscriptionSpec=1.0")},
		{"websocket", ws},
	} {
		b.Run(tc.name, func(b *testing.B) {
			srv := newStreamServer(b, 8, StreamOptions{})
			for b.Loop() {
				before := heapAndStacks()
				conns := make([]net.Conn, 0, idleSubscribers)
				for range idleSubscribers {
					c, err := net.Dial("tcp", srv.Listener.Addr().String())
					if err != nil {
						b.Fatal(err)
					}
					conns = append(conns, c)
					c.Write(tc.request)
				}
				srv.hub.waitActive(b, idleSubscribers)
				b.ReportMetric(float64(heapAndStacks()-before)/idleSubscribers, "B/subscriber")
				for _, c := range conns {
					c.Close()
				}
				srv.hub.waitActive(b, 0)
			}
		})
	}
}

func heapAndStacks() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc + m.StackInuse)
}
