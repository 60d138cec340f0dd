// Package cors is the service's one origin policy: which browser pages of other
// origins may use it. It decides both what CORS grants (Policy.Handler) and which
// pages may open a connection that a browser does not hold to CORS, a WebSocket
// above all (Policy.Guard), so that one list means the same thing everywhere.
//
// A Policy guarantees:
//
//   - A request without an Origin header (a client other than a browser), and a page
//     served by this service itself (its Origin's host is the request's Host), are
//     always allowed.
//   - Any other origin is allowed only if it is an origin a browser sends
//     (http or https, scheme://host[:port] and nothing more) and a pattern matches
//     it. A pattern is matched as the WebSocket library (coder/websocket) matches
//     its OriginPatterns: path.Match syntax, case-insensitively, against the
//     Origin's host[:port], or against scheme://host[:port] when the pattern
//     contains "://". So "https://app.example.com" is one exact origin,
//     "*.example.com" any subdomain over any scheme, and "https://*.example.com" the
//     same over https only. The pattern "*" allows every origin, without
//     credentials.
//   - A pattern path.Match cannot use, or one with a path, is refused by Add: a typo
//     must stop start-up, not silently lock every browser out.
//   - A request from an origin the policy does not allow is served by Handler as if
//     there were no CORS at all: the browser, not the service, then withholds the
//     answer from the page. Guard answers it 403 instead.
package cors

import (
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
)

// Policy is a parsed list of origin patterns. The zero value allows only the
// service's own pages.
type Policy struct {
	patterns  []string // lower case, checked by Add
	anyOrigin bool     // the entry "*": every origin, never with credentials
}

// Add adds the comma-separated origin patterns of list, refusing a pattern
// path.Match cannot use; its errors begin with name (the flag that set list).
func (p *Policy) Add(name, list string) error {
	for entry := range strings.SplitSeq(list, ",") {
		entry = strings.ToLower(strings.TrimSpace(entry))
		switch {
		case entry == "":
			continue
		case entry == "*":
			p.anyOrigin = true
		case strings.HasSuffix(entry, "/"):
			return fmt.Errorf("%s: %q: an origin has no path (drop the trailing /)", name, entry)
		}
		if _, err := path.Match(entry, ""); err != nil {
			return fmt.Errorf("%s: %q is not a valid pattern", name, entry)
		}
		if !slices.Contains(p.patterns, entry) {
			p.patterns = append(p.patterns, entry)
		}
	}
	return nil
}

// grant is what the policy grants a request's Origin.
type grant int

const (
	denied grant = iota // no CORS headers: the browser keeps the answer from the page
	same                // the service's own page: allowed, no credentials needed
	anyone              // allowed by "*": without credentials
	listed              // allowed by a listed pattern: with credentials
)

// access says what the policy grants origin (an Origin header's value) on a request
// to host (the request's Host).
func (p Policy) access(origin, host string) grant {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return denied // "null" (a sandboxed frame, a file: page) included
	}
	if u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(origin, "?") {
		return denied // an origin is scheme://host[:port] alone (RFC 6454 section 6.2): a browser sends nothing else
	}
	if strings.EqualFold(u.Host, host) {
		return same
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
			return listed
		}
	}
	if p.anyOrigin {
		return anyone
	}
	return denied
}

// The methods and request headers a preflight allows: those the service reads. The
// lists are fixed rather than echoing what the browser asks for, so what a foreign
// page may send is written down here.
var (
	allowMethods = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"
	allowHeaders = strings.Join([]string{
		"Authorization", "Content-Type", "Accept",
		"If-Match", "If-None-Match", // conditional requests
		"OData-Version", "OData-MaxVersion", "Prefer", // OData clients
		"Apollo-Require-Preflight", "X-Apollo-Operation-Name", // Apollo's CSRF-prevention headers
		"Apollographql-Client-Name", "Apollographql-Client-Version",
		"Traceparent", "Tracestate", // W3C trace context
	}, ", ")
	// exposeHeaders are the answer headers a foreign page's script may read besides
	// the CORS-safelisted ones.
	exposeHeaders = "ETag, Location, WWW-Authenticate, Allow, OData-Version, Preference-Applied, Retry-After"
)

// maxAge is how long (seconds) a browser may reuse a preflight's answer.
const maxAge = "600"

// Handler wraps next with the policy: it answers preflights itself and adds the
// CORS headers to the answers for allowed origins.
func (p Policy) Handler(next http.Handler) http.Handler {
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
		g := p.access(origin, r.Host)
		if g == denied {
			next.ServeHTTP(w, r)
			return
		}
		h.Set("Access-Control-Allow-Origin", origin)
		if g == listed {
			h.Set("Access-Control-Allow-Credentials", "true")
		}
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Add("Vary", "Access-Control-Request-Method")
			h.Add("Vary", "Access-Control-Request-Headers")
			h.Set("Access-Control-Allow-Methods", allowMethods)
			h.Set("Access-Control-Allow-Headers", allowHeaders)
			h.Set("Access-Control-Max-Age", maxAge)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.Set("Access-Control-Expose-Headers", exposeHeaders)
		next.ServeHTTP(w, r)
	})
}

// Guard serves next only to the requests the policy allows, and answers the others
// 403. It is for what a browser does not hold to CORS: a WebSocket handshake, whose
// connection the page gets whatever the answer's headers say.
func (p Policy) Guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && p.access(origin, r.Host) == denied {
			http.Error(w, fmt.Sprintf("request Origin %q is not authorized for Host %q", origin, r.Host), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}
