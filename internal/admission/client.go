package admission

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// Of names the client of remoteAddr, as every bound of this package counts
// clients: the peer's IP address, or its /64 for IPv6 (one host commonly holds a
// whole /64); an address that is not an IP (a Unix socket's name) is its own
// client. Behind a reverse proxy every client has the proxy's address, unless the
// proxy is trusted (Proxies) to say who its client is.
func Of(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	if ip.Is4() {
		return host // as net/http and grpc-go write it: no string to build
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

// Proxies are the reverse proxies trusted to say who their client is, and the one
// header they say it in: the proxy appends the address it took the connection from,
// and everything left of that is what the client wrote itself.
type Proxies struct {
	nets   []netip.Prefix
	header string // canonical: HeaderXForwardedFor or HeaderForwarded
}

// The headers a trusted proxy may name its client in.
const (
	HeaderXForwardedFor = "X-Forwarded-For"
	HeaderForwarded     = "Forwarded" // RFC 7239
)

// ParseProxies reads a comma-separated list of addresses and CIDR prefixes
// ("10.0.0.0/8, 127.0.0.1, ::1") and the header they set, X-Forwarded-For or
// Forwarded in any letter case.
func ParseProxies(list, header string) (Proxies, error) {
	var p Proxies
	switch {
	case strings.EqualFold(header, HeaderXForwardedFor):
		p.header = HeaderXForwardedFor
	case strings.EqualFold(header, HeaderForwarded):
		p.header = HeaderForwarded
	default:
		return p, fmt.Errorf("the header must be %s or %s, not %q", HeaderXForwardedFor, HeaderForwarded, header)
	}
	for item := range strings.SplitSeq(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if prefix, err := netip.ParsePrefix(item); err == nil {
			p.nets = append(p.nets, prefix.Masked())
			continue
		}
		ip, err := netip.ParseAddr(item)
		if err != nil {
			return Proxies{}, fmt.Errorf("%q is neither an IP address nor a CIDR prefix", item)
		}
		ip = ip.Unmap()
		p.nets = append(p.nets, netip.PrefixFrom(ip, ip.BitLen()))
	}
	return p, nil
}

// Any reports whether any proxy is trusted.
func (p Proxies) Any() bool { return len(p.nets) > 0 }

// Header is the header the proxies name their clients in.
func (p Proxies) Header() string { return p.header }

// Contains reports whether the peer remoteAddr ("ip:port") is a trusted proxy.
func (p Proxies) Contains(remoteAddr string) bool {
	ap, err := netip.ParseAddrPort(remoteAddr)
	return err == nil && p.trusted(ap.Addr())
}

func (p Proxies) trusted(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, prefix := range p.nets {
		if prefix.Contains(ip) {
			return true
		}
	}
	return false
}

// RemoteAddr returns the client behind a request from remoteAddr ("ip:port"): if
// that is a trusted proxy, the nearest address in the proxies' header that is not
// itself a trusted proxy, read from the last hop back, with remoteAddr's port.
// values returns a header's lines by name (http.Header.Values, gRPC metadata's
// Get). The other header is never read: a proxy that sets one passes the other on
// as the client wrote it. An entry not an IP ("unknown") stops the walk.
func (p Proxies) RemoteAddr(remoteAddr string, values func(name string) []string) string {
	if len(p.nets) == 0 {
		return remoteAddr
	}
	host, port, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		return remoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil || !p.trusted(peer) {
		return remoteAddr
	}
	var hops []string
	if p.header == HeaderForwarded {
		hops = forwardedFor(values(HeaderForwarded))
	} else {
		for _, v := range values(HeaderXForwardedFor) {
			for hop := range strings.SplitSeq(v, ",") {
				hops = append(hops, strings.TrimSpace(hop))
			}
		}
	}
	client := remoteAddr
	for i := len(hops) - 1; i >= 0; i-- {
		ip, ok := hopAddr(hops[i])
		if !ok {
			break
		}
		client = net.JoinHostPort(ip.String(), port)
		if !p.trusted(ip) {
			break
		}
	}
	return client
}

// forwardedFor returns each Forwarded element's for=, or "unknown".
func forwardedFor(values []string) []string {
	var hops []string
	for _, v := range values {
		for elem := range strings.SplitSeq(v, ",") {
			hop := "unknown"
			for pair := range strings.SplitSeq(elem, ";") {
				name, value, _ := strings.Cut(strings.TrimSpace(pair), "=")
				if strings.EqualFold(name, "for") {
					hop = strings.Trim(value, `"`)
				}
			}
			hops = append(hops, hop)
		}
	}
	return hops
}

// hopAddr reads one hop's address: an IP, "[IPv6]" or either with a port.
func hopAddr(hop string) (netip.Addr, bool) {
	ip, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(hop, "["), "]"))
	if err != nil { // with a port, then; parsed only now, as a failed parse allocates its error
		var ap netip.AddrPort
		if ap, err = netip.ParseAddrPort(hop); err == nil {
			ip = ap.Addr()
		}
	}
	// A zone names an interface of the proxy's machine, not the client.
	return ip.Unmap().WithZone(""), err == nil && ip.Zone() == ""
}
