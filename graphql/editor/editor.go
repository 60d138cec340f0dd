// Package editor serves the interactive GraphQL query editor: one HTML page,
// its stylesheet and script inlined, for a graphql.Handler's HTMLPage. It is
// a user interface, not part of the GraphQL engine, and knows nothing of it:
// the page talks to the engine only over HTTP and WebSocket, like any client.
package editor

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"html"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The editor's sources stay three readable files; editorPage inlines the
// stylesheet and the script into the HTML so that the page is one response,
// served from the one URL (/graphql) that reaches the graphql.Handler.
//
//go:embed editor.html editor.css editor.js
var editorFiles embed.FS

// Tags in editor.html that the stylesheet and the script replace. With them
// the HTML also works when opened straight from the source directory.
const (
	editorStyleTag  = `<link rel="stylesheet" href="editor.css">`
	editorScriptTag = `<script src="editor.js"></script>`
)

// grpcAddressTag is the element in editor.html that carries the gRPC
// address into the page. The address is data in the HTML, not text in the
// script, so that the script's CSP hash is the same for every address.
const grpcAddressTag = `<meta name="grpc-address" content="">`

// Options are what the page shows that only its caller knows.
type Options struct {
	// GRPCAddress is the host:port the service's gRPC server listens on, as
	// the listener reports it (net.Listener.Addr). The "Same data
	// elsewhere" panel names it in its grpcurl commands; an unspecified
	// host (":50051", "0.0.0.0:50051", "[::]:50051") is shown as the host
	// the page was loaded from. Empty: the panel shows no grpcurl command.
	GRPCAddress string
}

// Handler returns the handler of the interactive query editor, for
// graphql.Handler.HTMLPage:
//
//	h := graphql.NewHandler(schema)
//	h.HTMLPage = editor.Handler(editor.Options{GRPCAddress: "127.0.0.1:50051"})
//
// The page is one self-contained HTML document embedded in the binary: its
// stylesheet and script are inline and nothing is loaded from any other
// host, so it works offline. It sends operations to the URL it was served
// from (POST, application/json) and subscriptions to the same URL over
// WebSocket with the graphql-transport-ws subprotocol. Its
// Content-Security-Policy allows no script or style but its own, named by
// their SHA-256 hashes, and connections only to its own origin.
//
// The handler answers GET and HEAD (405 otherwise) and honours
// If-None-Match; pages made with different Options have different ETags.
func Handler(opts Options) http.Handler {
	templateOnce.Do(buildTemplate)
	page := strings.Replace(pageTemplate.html, grpcAddressTag,
		`<meta name="grpc-address" content="`+html.EscapeString(opts.GRPCAddress)+`">`, 1)
	sum := sha256.Sum256([]byte(page))
	return &editorPage{
		body: []byte(page),
		etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`,
		csp:  pageTemplate.csp,
	}
}

// The assembled page without its Options and its CSP are the same for every
// Handler: they are built once.
var (
	templateOnce sync.Once
	pageTemplate struct{ html, csp string }
)

type editorPage struct {
	body []byte
	etag string
	// csp is the Content-Security-Policy without its connect-src, which
	// depends on the request's host.
	csp string
}

func buildTemplate() {
	read := func(name string) string {
		b, err := editorFiles.ReadFile(name)
		if err != nil {
			panic("editor: asset missing: " + err.Error())
		}
		return string(b)
	}
	html, css, js := read("editor.html"), read("editor.css"), read("editor.js")
	if strings.Count(html, grpcAddressTag) != 1 {
		panic("editor: editor.html must have " + grpcAddressTag + " exactly once")
	}
	page, cssHash, jsHash, err := inlineAssets(html, css, js)
	if err != nil {
		panic("editor: " + err.Error())
	}
	pageTemplate.html = page
	pageTemplate.csp = "default-src 'none'; script-src '" + jsHash + "'; style-src '" + cssHash + "'; " +
		"img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}

// inlineAssets puts css and js into html in place of editorStyleTag and
// editorScriptTag and returns the page with the CSP hash sources of the
// two inline elements.
func inlineAssets(html, css, js string) (page, cssHash, jsHash string, err error) {
	switch {
	case strings.Count(html, editorStyleTag) != 1:
		return "", "", "", errors.New("editor.html must link editor.css exactly once")
	case strings.Count(html, editorScriptTag) != 1:
		return "", "", "", errors.New("editor.html must load editor.js exactly once")
	case strings.Contains(strings.ToLower(css), "</style"):
		return "", "", "", errors.New("editor.css must not contain </style")
	case strings.Contains(strings.ToLower(js), "</script"), strings.Contains(js, "<!--"):
		return "", "", "", errors.New("editor.js must not contain </script or <!--")
	}
	page = strings.Replace(html, editorStyleTag, "<style>"+css+"</style>", 1)
	page = strings.Replace(page, editorScriptTag, "<script>"+js+"</script>", 1)
	return page, hashSource(css), hashSource(js), nil
}

// hashSource is the CSP source expression matching an inline element whose
// text is s.
func hashSource(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// connectSrc allows fetches to the page's own origin and WebSockets to its
// host. 'self' covers ws: and wss: in CSP Level 3; the explicit sources are
// for browsers that predate it. A host that is not plain name[:port] text gets
// 'self' only, and so does an IPv6 literal, which CSP's host-source grammar
// cannot name (browsers drop such a source with a console error).
func connectSrc(host string) string {
	if host == "" || strings.ContainsFunc(host, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune(".-:", r))
	}) {
		return "connect-src 'self'"
	}
	return "connect-src 'self' ws://" + host + " wss://" + host
}

func (p *editorPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "Method "+r.Method+" is not allowed; use GET.", http.StatusMethodNotAllowed)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	hdr.Set("Content-Security-Policy", p.csp+"; "+connectSrc(r.Host))
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("ETag", p.etag)
	hdr.Add("Vary", "Accept")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(p.body))
}
