// Package clientaddr names the client a connection comes from, for the bounds the
// service keeps per client (the fair share, the WebSocket caps): the peer's IP
// address, or its /64 network for IPv6, where one host commonly holds a whole /64
// and could otherwise count as billions of clients. Behind a reverse proxy every
// client has the proxy's address.
package clientaddr

import (
	"net"
	"net/netip"
)

// Of returns the client of remoteAddr, a "host:port" as net/http's
// Request.RemoteAddr and a gRPC peer's address give it. An address that is not
// an IP (a Unix socket's name) is its own client.
func Of(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}
