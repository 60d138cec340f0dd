// Package clientaddr names the client a connection comes from, for the per-client
// bounds: the peer's IP address, or its /64 for IPv6 (one host commonly holds a
// whole /64). Behind a reverse proxy every client has the proxy's address, unless
// the proxy is trusted (Proxies) to say who its client is.
package clientaddr

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// Of returns the client of remoteAddr ("host:port"); an address that is not an IP
// (a Unix socket's name) is its own client.
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

// Proxies are the reverse proxies trusted to say who their client is.
type Proxies []netip.Prefix

// ParseProxies reads a comma-separated list of addresses and CIDR prefixes
// ("10.0.0.0/8, 127.0.0.1, ::1").
func ParseProxies(list string) (Proxies, error) {
	var p Proxies
	for item := range strings.SplitSeq(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if prefix, err := netip.ParsePrefix(item); err == nil {
			p = append(p, prefix.Masked())
			continue
		}
		ip, err := netip.ParseAddr(item)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an IP address nor a CIDR prefix", item)
		}
		ip = ip.Unmap()
		p = append(p, netip.PrefixFrom(ip, ip.BitLen()))
	}
	return p, nil
}

// Contains reports whether the peer remoteAddr ("ip:port") is a trusted proxy.
func (p Proxies) Contains(remoteAddr string) bool {
	ap, err := netip.ParseAddrPort(remoteAddr)
	return err == nil && p.trusted(ap.Addr())
}

func (p Proxies) trusted(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, prefix := range p {
		if prefix.Contains(ip) {
			return true
		}
	}
	return false
}

// RemoteAddr returns the client behind a request from remoteAddr ("ip:port"): if
// that is a trusted proxy, the nearest address not a trusted proxy in Forwarded
// (RFC 7239) or else X-Forwarded-For, read from the last hop back, with
// remoteAddr's port. What a client wrote itself is reached only past trusted
// proxies; an entry not an IP ("unknown") stops the walk.
func (p Proxies) RemoteAddr(remoteAddr string, forwarded, xForwardedFor []string) string {
	if len(p) == 0 {
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
	if len(forwarded) > 0 {
		hops = forwardedFor(forwarded)
	} else {
		for _, v := range xForwardedFor {
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
	if ap, apErr := netip.ParseAddrPort(hop); apErr == nil {
		ip, err = ap.Addr(), nil
	}
	// A zone names an interface of the proxy's machine, not the client.
	return ip.Unmap().WithZone(""), err == nil && ip.Zone() == ""
}
