// Package compare serves the page that sends one read to every interface style
// of the service and shows the answers side by side, and the service's front
// page, which leads to it. Like the GraphQL editor, each is one self-contained
// HTML document embedded in the binary: the stylesheet and the script are
// inline, the Content-Security-Policy allows no other script or style, and the
// page talks only to its own origin, as any client would.
package compare

import (
	"cmp"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"html"
	"net/http"
	"strings"
	"time"
)

// The sources stay readable files that also work opened from this directory;
// the handlers inline the stylesheet and the script in place of these tags.
//
//go:embed compare.html compare.css compare.js index.html
var files embed.FS

const (
	styleTag  = `<link rel="stylesheet" href="compare.css">`
	scriptTag = `<script src="compare.js"></script>`
	// The gRPC address is data in the HTML, not text in the script, so that
	// the script's hash, and so the CSP, is the same for every address.
	grpcAddressTag  = `<meta name="grpc-address" content="">`
	grpcAddressText = `<code class="grpc-address"></code>`
)

// Options are what the pages show that only their caller knows.
type Options struct {
	// GRPCAddress is the host:port the gRPC server listens on, as its
	// listener reports it: the comparison's grpcurl commands name it (a host
	// left unspecified, ":50051", is shown as the page's own host), and the
	// front page lists it. Empty: no grpcurl command.
	GRPCAddress string
}

// Handler serves the side-by-side page (GET and HEAD). Its script sends each
// read to REST, GraphQL, OData and gRPC-Web on the origin it was loaded from;
// its CSP lets it connect nowhere else.
func Handler(opts Options) http.Handler {
	css, js := asset("compare.css"), asset("compare.js")
	body := strings.NewReplacer(styleTag, "<style>"+css+"</style>", scriptTag, "<script>"+js+"</script>",
		grpcAddressTag, `<meta name="grpc-address" content="`+html.EscapeString(opts.GRPCAddress)+`">`).Replace(asset("compare.html"))
	return newPage(body, "default-src 'none'; script-src '"+hashSource(js)+"'; style-src '"+hashSource(css)+"'; "+
		"connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
}

// Index serves the front page, GET /: where each style is served, with links
// to the side-by-side page, the GraphQL editor and the documents the service
// serves. It has no script.
func Index(opts Options) http.Handler {
	css := asset("compare.css")
	addr := cmp.Or(html.EscapeString(opts.GRPCAddress), "its own port (-grpc)")
	body := strings.NewReplacer(styleTag, "<style>"+css+"</style>",
		grpcAddressText, `<code class="grpc-address">`+addr+`</code>`).Replace(asset("index.html"))
	return newPage(body, "default-src 'none'; style-src '"+hashSource(css)+"'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
}

func asset(name string) string {
	b, err := files.ReadFile(name)
	if err != nil {
		panic("compare: asset missing: " + err.Error())
	}
	return string(b)
}

// hashSource is the CSP source expression matching an inline element whose
// text is s.
func hashSource(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// newPage serves body, with its ETag, under csp.
func newPage(body, csp string) http.Handler {
	sum := sha256.Sum256([]byte(body))
	etag := `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hdr := w.Header()
		hdr.Set("Content-Type", "text/html; charset=utf-8")
		hdr.Set("Content-Security-Policy", csp)
		hdr.Set("X-Content-Type-Options", "nosniff")
		hdr.Set("Referrer-Policy", "no-referrer")
		hdr.Set("Cache-Control", "no-cache")
		hdr.Set("ETag", etag)
		http.ServeContent(w, r, "", time.Time{}, strings.NewReader(body))
	})
}
