// Package cors is the service's one origin policy, for CORS (Policy.Handler) and
// for what a browser does not hold to CORS, a WebSocket above all (Policy.Guard).
// A request without Origin, or from this service's own page, is always allowed;
// any other origin only if a browser could send it (http or https,
// scheme://host[:port] alone) and a pattern matches it as coder/websocket's
// OriginPatterns do (path.Match, case-insensitive, against host[:port], or
// scheme://host[:port] when the pattern has "://"); "*" allows every origin,
// without credentials. Add refuses an unusable pattern: a typo stops start-up.
package cors

import (
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
)

// Policy is a parsed list of origin patterns; the zero value allows only the
// service's own pages.
type Policy struct {
	patterns  []string // lower case, checked by Add; "*" is anyOrigin instead
	anyOrigin bool     // the entry "*": every origin, never with credentials
}

// Add adds the comma-separated patterns of list; its errors begin with name.
func (p *Policy) Add(name, list string) error {
	for entry := range strings.SplitSeq(list, ",") {
		entry = strings.ToLower(strings.TrimSpace(entry))
		scheme, host, hasScheme := strings.Cut(entry, "://")
		if !hasScheme {
			scheme, host = "http", entry
		}
		switch {
		case entry == "":
			continue
		case entry == "*": // grants less than a listed origin: checked after them
			p.anyOrigin = true
			continue
		case strings.Contains(host, "/") || scheme != "http" && scheme != "https" || host == "" || entry == "null":
			return fmt.Errorf("%s: %q: no origin a browser sends matches it: http[s]://host[:port] alone", name, entry)
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

// access says what the policy grants origin on a request to host.
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

// What a preflight allows: the methods and headers the service reads, written down
// rather than echoed from the request.
var (
	allowMethods = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"
	allowHeaders = strings.Join([]string{
		"Authorization", "Content-Type", "Accept",
		"If-Match", "If-None-Match", // conditional requests
		"OData-Version", "OData-MaxVersion", "Prefer", // OData clients
		"Apollo-Require-Preflight", "X-Apollo-Operation-Name", // Apollo's CSRF-prevention headers
		"Apollographql-Client-Name", "Apollographql-Client-Version",
		"Traceparent", "Tracestate", // W3C trace context
		"X-Grpc-Web", "X-User-Agent", "Grpc-Timeout", // gRPC-Web clients
	}, ", ")
	exposeHeaders = "ETag, Location, WWW-Authenticate, Allow, OData-Version, Preference-Applied, Retry-After, Grpc-Status, Grpc-Message, Grpc-Status-Details-Bin"
)

const maxAge = "600" // seconds a browser may reuse a preflight's answer

// Handler answers preflights and adds the CORS headers for allowed origins.
func (p Policy) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Add("Vary", "Origin")
		origin := r.Header.Get("Origin")
		g := denied
		if origin != "" {
			g = p.access(origin, r.Host)
		}
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

// Guard serves next only the requests the policy allows, answering others 403:
// for what a browser does not hold to CORS, a WebSocket handshake.
func (p Policy) Guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && p.access(origin, r.Host) == denied {
			http.Error(w, fmt.Sprintf("request Origin %q is not authorized for Host %q", origin, r.Host), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}
