package main

import (
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
)

// CORS: one policy for every HTTP surface (REST, GraphQL, OData, the WebSocket
// handshake), set by -cors-origins (and its deprecated alias -ws-origins).
//
// An entry is matched as the WebSocket library (coder/websocket) matches its
// OriginPatterns, so the one list means the same thing to both: path.Match syntax,
// case-insensitively, against the Origin's host[:port], or against scheme://host[:port]
// when the entry contains "://". So "https://app.example.com" is one exact origin,
// "*.example.com" any subdomain over any scheme, and "https://*.example.com" the same
// over https only. A page served by this service itself (its Origin's host is the
// request's Host) is always allowed.

// corsPolicy is the parsed -cors-origins list. The zero value allows only the
// service's own pages.
type corsPolicy struct {
	patterns  []string // lower case, checked by parseCORSOrigins
	anyOrigin bool     // the entry "*": every origin, never with credentials
}

// corsPolicyFromFlags is the policy -cors-origins and its deprecated alias -ws-origins
// set together: the union of their lists.
func corsPolicyFromFlags(corsOrigins, wsOrigins string) (corsPolicy, error) {
	var p corsPolicy
	if err := p.add("-cors-origins", corsOrigins); err != nil {
		return corsPolicy{}, err
	}
	if err := p.add("-ws-origins", wsOrigins); err != nil {
		return corsPolicy{}, err
	}
	return p, nil
}

// add adds the comma-separated origin patterns of list, the value of the flag named
// flagName, refusing a pattern path.Match cannot use: a typo in the flag must stop
// start-up, not silently lock every browser out.
func (p *corsPolicy) add(flagName, list string) error {
	for entry := range strings.SplitSeq(list, ",") {
		entry = strings.ToLower(strings.TrimSpace(entry))
		switch {
		case entry == "":
			continue
		case entry == "*":
			p.anyOrigin = true
		case strings.HasSuffix(entry, "/"):
			return fmt.Errorf("%s: %q: an origin has no path (drop the trailing /)", flagName, entry)
		}
		if _, err := path.Match(entry, ""); err != nil {
			return fmt.Errorf("%s: %q is not a valid pattern", flagName, entry)
		}
		if !slices.Contains(p.patterns, entry) {
			p.patterns = append(p.patterns, entry)
		}
	}
	return nil
}

// websocketPatterns is the list the WebSocket handshake checks Origin against: the
// same entries, read the same way ("*" included: path.Match's * matches any host).
func (p corsPolicy) websocketPatterns() []string { return p.patterns }

// originAccess is what the policy grants a request's Origin.
type originAccess int

const (
	originDenied originAccess = iota // no CORS headers: the browser keeps the answer from the page
	originSame                       // the service's own page: allowed, no credentials needed
	originAny                        // allowed by "*": without credentials
	originListed                     // allowed by a listed pattern: with credentials
)

// access says what the policy grants origin (an Origin header's value) on a request
// to host (the request's Host).
func (p corsPolicy) access(origin, host string) originAccess {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return originDenied // "null" (a sandboxed frame, a file: page) included
	}
	if u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(origin, "?") {
		return originDenied // an origin is scheme://host[:port] alone (RFC 6454 section 6.2): a browser sends nothing else
	}
	if strings.EqualFold(u.Host, host) {
		return originSame
	}
	for _, pattern := range p.patterns {
		if pattern == "*" {
			continue // below: "*" grants less than a listed origin
		}
		target := u.Host
		if strings.Contains(pattern, "://") {
			target = u.Scheme + "://" + u.Host
		}
		if ok, _ := path.Match(pattern, strings.ToLower(target)); ok {
			return originListed
		}
	}
	if p.anyOrigin {
		return originAny
	}
	return originDenied
}

// The methods and request headers a preflight allows: those the surfaces read. The
// lists are fixed rather than echoing what the browser asks for, so what a foreign
// page may send is written down here.
var (
	corsAllowMethods = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"
	corsAllowHeaders = strings.Join([]string{
		"Authorization", "Content-Type", "Accept",
		"If-Match", "If-None-Match", // conditional requests
		"OData-Version", "OData-MaxVersion", "Prefer", // OData clients
		"Apollo-Require-Preflight", "X-Apollo-Operation-Name", // Apollo's CSRF-prevention headers
		"Apollographql-Client-Name", "Apollographql-Client-Version",
		"Traceparent", "Tracestate", // W3C trace context
	}, ", ")
	// corsExposeHeaders are the answer headers a foreign page's script may read
	// besides the CORS-safelisted ones.
	corsExposeHeaders = "ETag, Location, WWW-Authenticate, Allow, OData-Version, Preference-Applied, Retry-After"
)

// corsMaxAge is how long (seconds) a browser may reuse a preflight's answer.
const corsMaxAge = "600"

// withCORS wraps next with the policy: it answers preflights itself and adds the
// CORS headers to the answers for allowed origins. A request from an origin the
// policy does not allow is served as if there were no CORS at all: the browser, not
// the service, then withholds the answer from the page.
func withCORS(p corsPolicy, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		// Every answer depends on Origin (same-origin pages included), so caches must
		// key on it.
		h.Add("Vary", "Origin")
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		grant := p.access(origin, r.Host)
		if grant == originDenied {
			next.ServeHTTP(w, r)
			return
		}
		h.Set("Access-Control-Allow-Origin", origin)
		if grant == originListed {
			h.Set("Access-Control-Allow-Credentials", "true")
		}
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Add("Vary", "Access-Control-Request-Method")
			h.Add("Vary", "Access-Control-Request-Headers")
			h.Set("Access-Control-Allow-Methods", corsAllowMethods)
			h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
			h.Set("Access-Control-Max-Age", corsMaxAge)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
		next.ServeHTTP(w, r)
	})
}
