package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/mail"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// realConfig is big enough that the rare cases (a backslash in one name in 10,000)
// occur; it is generated, never loaded whole into a test's service.
var realConfig = GenConfig{Seed: 1, Users: 40_000, PostsPerUser: 1, CommentsPerPost: 1, Products: 3_000, Orders: 8_000}

var (
	realOnce sync.Once
	realData fullDataset
)

// realDataset is realConfig generated and decoded, once for the tests that read it.
func realDataset(t *testing.T) fullDataset {
	t.Helper()
	realOnce.Do(func() { realData = decodeDataset(t, generate(t, realConfig)) })
	if realData.Users == nil {
		t.Fatal("the dataset could not be generated")
	}
	return realData
}

// textProblem restates the service's text rules (model.go textRule and its byte
// limits) so that every generated record is checked without loading it: "" when s
// would be accepted. The service test below sends the hardest of them through the
// create paths themselves.
func textProblem(s string, multiline, required bool, maxRunes, maxBytes int) string {
	switch {
	case s != strings.TrimSpace(s):
		return "not trimmed"
	case !utf8.ValidString(s):
		return "invalid UTF-8"
	case maxRunes > 0 && utf8.RuneCountInString(s) > maxRunes:
		return "too many characters"
	case maxBytes > 0 && len(s) > maxBytes:
		return "too many bytes"
	}
	visible := false
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
			if !multiline {
				return "line feed or tab in a one-line field"
			}
		case r < ' ' || 0x7f <= r && r <= 0x9f || r == '\u2028' || r == '\u2029':
			return "control character"
		case 0x202a <= r && r <= 0x202e || 0x2066 <= r && r <= 0x2069:
			return "bidirectional override"
		case !unicode.IsSpace(r) && !unicode.Is(unicode.Cf, r):
			visible = true
		}
	}
	if required && !visible {
		return "nothing visible"
	}
	return ""
}

// emailProblem restates isEmailAddress: one bare local@domain that net/mail parses
// as itself.
func emailProblem(s string) string {
	if len(s) > maxEmailBytes {
		return "too long"
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s || strings.Count(s, "@") != 1 {
		return fmt.Sprintf("not a bare address (%v)", err)
	}
	return ""
}

// TestGenerateValid checks every generated record against the service's validation
// rules, so the dataset stays loadable when the loader refuses what the create paths
// refuse.
func TestGenerateValid(t *testing.T) {
	ds := realDataset(t)
	bad := func(what string, id int64, field, problem, value string) {
		t.Helper()
		if problem != "" {
			t.Errorf("%s %d: %s %s: %.80q", what, id, field, problem, value)
		}
	}
	for _, u := range ds.Users {
		bad("user", u.ID, "name", textProblem(u.Name, false, true, maxNameRunes, 0), u.Name)
		bad("user", u.ID, "email", emailProblem(u.Email), u.Email)
	}
	for _, p := range ds.Posts {
		bad("post", p.ID, "title", textProblem(p.Title, false, true, maxTitleRunes, 0), p.Title)
		bad("post", p.ID, "content", textProblem(p.Content, true, false, 0, maxContentBytes), p.Content)
	}
	for _, c := range ds.Comments {
		bad("comment", c.ID, "text", textProblem(c.Text, true, true, 0, maxCommentBytes), c.Text)
	}
	for _, p := range ds.Products {
		bad("product", p.ID, "name", textProblem(p.Name, false, true, maxNameRunes, 0), p.Name)
		bad("product", p.ID, "category", textProblem(p.Category, false, true, 0, 0), p.Category)
		if f, err := p.Price.Float64(); err != nil || f < 0 {
			t.Errorf("product %d: price %s", p.ID, p.Price)
		}
	}
	for _, o := range ds.Orders {
		bad("order", o.ID, "customerName", textProblem(o.CustomerName, false, true, maxNameRunes, 0), o.CustomerName)
		if o.Quantity < 1 || o.Quantity > maxGeneratedQuantity {
			t.Errorf("order %d: quantity %d", o.ID, o.Quantity)
		}
	}
}

// TestGenerateLooksReal checks that the data has what real data has: names in many
// scripts, apostrophes, the characters JSON escapes, e-mails short and long and
// plus-addressed, texts of varied length, prices mostly small, orders skewed to a
// few products, and guests.
func TestGenerateLooksReal(t *testing.T) {
	ds := realDataset(t)
	count := func(pred func(string) bool, values []string) int {
		n := 0
		for _, v := range values {
			if pred(v) {
				n++
			}
		}
		return n
	}
	var names, emails, contents, comments, products, customers []string
	for _, u := range ds.Users {
		names, emails = append(names, u.Name), append(emails, u.Email)
	}
	for _, p := range ds.Posts {
		contents = append(contents, p.Content)
	}
	for _, c := range ds.Comments {
		comments = append(comments, c.Text)
	}
	for _, p := range ds.Products {
		products = append(products, p.Name)
	}
	guests := 0
	for _, o := range ds.Orders {
		customers = append(customers, o.CustomerName)
		if o.UserID == 0 {
			guests++
		}
	}
	script := func(tab *unicode.RangeTable) func(string) bool {
		return func(s string) bool { return strings.IndexFunc(s, func(r rune) bool { return unicode.Is(tab, r) }) >= 0 }
	}
	has := func(sub string) func(string) bool { return func(s string) bool { return strings.Contains(s, sub) } }
	nonASCII := func(s string) bool {
		return strings.IndexFunc(s, func(r rune) bool { return r > unicode.MaxASCII }) >= 0
	}
	for _, c := range []struct {
		what     string
		pred     func(string) bool
		values   []string
		min, max float64 // share of values
	}{
		{"names with a non-ASCII letter", nonASCII, names, 0.4, 0.8},
		{"Cyrillic names", script(unicode.Cyrillic), names, 0.02, 0.15},
		{"Greek names", script(unicode.Greek), names, 0.005, 0.05},
		{"Han names", script(unicode.Han), names, 0.04, 0.2},
		{"names with ø", has("ø"), names, 0.002, 0.05},
		{"names with ß", has("ß"), names, 0.001, 0.05},
		{"names with Ł", has("Ł"), names, 0.001, 0.05},
		{"names with an apostrophe", has("'"), names, 0.02, 0.15},
		{"names with a quote", has(`"`), names, 0.0001, 0.002},
		{"names with a backslash", has(`\`), names, 0.00002, 0.0005},
		{"plus-addressed e-mails", has("+"), emails, 0.05, 0.2},
		{"e-mails of 14 bytes or fewer", func(s string) bool { return len(s) <= 14 }, emails, 0.02, 0.3},
		{"e-mails over 50 bytes", func(s string) bool { return len(s) > 50 }, emails, 0.05, 0.2},
		{"posts with a tab", has("\t"), contents, 0.005, 0.06},
		{"posts over 1,000 bytes", func(s string) bool { return len(s) > 1000 }, contents, 0.05, 0.5},
		{"posts under 300 bytes", func(s string) bool { return len(s) < 300 }, contents, 0.1, 0.7},
		{"posts with a non-ASCII letter", nonASCII, contents, 0.3, 0.95},
		{"comments of a few words", func(s string) bool { return len(s) < 40 }, comments, 0.4, 0.8},
		{"comments of several paragraphs", has("\n\n"), comments, 0.02, 0.1},
		{"product names with a non-ASCII letter", nonASCII, products, 0.1, 0.6},
		{"product names with a quote", has(`"`), products, 0.001, 0.05},
		{"customer names with a non-ASCII letter", nonASCII, customers, 0.4, 0.8},
	} {
		n := count(c.pred, c.values)
		if share := float64(n) / float64(len(c.values)); share < c.min || share > c.max {
			t.Errorf("%s: %d of %d (%.4f), want %.4f to %.4f", c.what, n, len(c.values), share, c.min, c.max)
		}
	}
	if share := float64(guests) / float64(len(ds.Orders)); share < 0.05 || share > 0.15 {
		t.Errorf("guest orders: %.3f, want about 0.1", share)
	}
	// Prices: most are small, a quarter over 500 (the OData filter counts on it).
	under20, over500 := 0, 0
	for _, p := range ds.Products {
		f, _ := p.Price.Float64()
		switch {
		case f < 20:
			under20++
		case f > 500:
			over500++
		}
	}
	if n := len(ds.Products); under20 < n/4 || over500 < n/6 || over500 > n/3 {
		t.Errorf("prices: %d under 20 and %d over 500 of %d", under20, over500, n)
	}
	// Orders: the tenth of the products with the lowest ids sell over a third.
	top := 0
	for _, o := range ds.Orders {
		if o.ProductID <= int64(realConfig.Products/10) {
			top++
		}
	}
	if top < len(ds.Orders)/3 {
		t.Errorf("%d of %d orders are for the top tenth of products", top, len(ds.Orders))
	}
}

// TestGeneratedDataRoundTrips loads a generated dataset into the real service and
// checks that names in other scripts and with the characters JSON escapes come back
// exactly through REST, GraphQL and OData, and that the hardest generated records
// pass the create paths, whose rules the dataset must keep.
func TestGeneratedDataRoundTrips(t *testing.T) {
	bin := buildQuartet(t)
	full := realDataset(t)
	cfg := GenConfig{Seed: realConfig.Seed, Users: 2000, PostsPerUser: 1, CommentsPerPost: 1, Products: 300, Orders: 2000}
	path := filepath.Join(t.TempDir(), "ds.json")
	if err := writeDataset(path, cfg); err != nil {
		t.Fatal(err)
	}
	ds := decodeDataset(t, generate(t, cfg))
	ctx := context.Background()
	p, err := startService(ctx, bin, path, nil, false)
	if err != nil {
		t.Fatal(err) // the service refused the file, or did not start
	}
	defer p.stop()
	client := &http.Client{Timeout: 10 * time.Second}
	call := func(method, path string, body any, wantStatus int, into any) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequestWithContext(ctx, method, p.httpBase()+path, rd)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != wantStatus {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		if err := json.Unmarshal(b, into); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
	graphql := func(query string, vars map[string]any, into any) {
		t.Helper()
		var resp struct {
			Data   json.RawMessage   `json:"data"`
			Errors []json.RawMessage `json:"errors"`
		}
		call("POST", "/graphql", map[string]any{"query": query, "variables": vars}, 200, &resp)
		if len(resp.Errors) > 0 {
			t.Fatalf("%s: %s", query, resp.Errors[0])
		}
		if err := json.Unmarshal(resp.Data, into); err != nil {
			t.Fatal(err)
		}
	}
	odataQuote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

	// The first loaded user of each kind, read back on each surface.
	kinds := map[string]func(string) bool{
		"Cyrillic": func(s string) bool {
			return strings.ContainsFunc(s, func(r rune) bool { return unicode.Is(unicode.Cyrillic, r) })
		},
		"Han": func(s string) bool {
			return strings.ContainsFunc(s, func(r rune) bool { return unicode.Is(unicode.Han, r) })
		},
		"Greek": func(s string) bool {
			return strings.ContainsFunc(s, func(r rune) bool { return unicode.Is(unicode.Greek, r) })
		},
		"Arabic": func(s string) bool {
			return strings.ContainsFunc(s, func(r rune) bool { return unicode.Is(unicode.Arabic, r) })
		},
		"apostrophe": func(s string) bool { return strings.Contains(s, "'") },
		"ß, ø or Ł":  func(s string) bool { return strings.ContainsAny(s, "ßøŁ") },
	}
	for kind, pred := range kinds {
		var u *genUser
		for i := range ds.Users {
			if pred(ds.Users[i].Name) {
				u = &ds.Users[i]
				break
			}
		}
		if u == nil {
			t.Errorf("no %s name among %d users", kind, len(ds.Users))
			continue
		}
		var rest genUser
		call("GET", "/api/users/"+strconv.FormatInt(u.ID, 10), nil, 200, &rest)
		var gql struct{ User genUser }
		graphql("query($id: Int!) { user(id: $id) { id name email } }", map[string]any{"id": u.ID}, &gql)
		if rest.Name != u.Name || rest.Email != u.Email || gql.User.Name != u.Name || gql.User.Email != u.Email {
			t.Errorf("%s user %d: loaded %q <%s>, REST %q <%s>, GraphQL %q <%s>", kind, u.ID, u.Name, u.Email, rest.Name, rest.Email, gql.User.Name, gql.User.Email)
		}
		// OData serves orders: the customer's name, found by a filter that spells
		// it, and read back.
		var odata struct {
			Value []genOrder `json:"value"`
		}
		q := url.Values{"$filter": {"customerName eq " + odataQuote(u.Name)}, "$top": {"1"}}
		call("GET", "/api/orders?"+q.Encode(), nil, 200, &odata)
		want := 0
		for _, o := range ds.Orders {
			if o.CustomerName == u.Name {
				want++
			}
		}
		if want > 0 && (len(odata.Value) != 1 || odata.Value[0].CustomerName != u.Name) {
			t.Errorf("%s: OData orders of %q: %+v", kind, u.Name, odata.Value)
		}
	}
	// Every order's customer name, and every product's name, exactly as loaded.
	var orders struct {
		Value []genOrder `json:"value"`
	}
	call("GET", "/api/orders?$top=100&$orderby=id", nil, 200, &orders)
	for i, o := range orders.Value {
		if o.CustomerName != ds.Orders[i].CustomerName {
			t.Errorf("OData order %d: %q, loaded %q", o.ID, o.CustomerName, ds.Orders[i].CustomerName)
		}
	}
	var products struct {
		Value []genProduct `json:"value"`
	}
	call("GET", "/api/products?$top=100&$orderby=id", nil, 200, &products)
	for i, pr := range products.Value {
		if pr.Name != ds.Products[i].Name || pr.Category != ds.Products[i].Category {
			t.Errorf("OData product %d: %q (%s), loaded %q (%s)", pr.ID, pr.Name, pr.Category, ds.Products[i].Name, ds.Products[i].Category)
		}
	}

	// The hardest records of the larger dataset through the create paths: the
	// service's own rules, not a restatement, must accept them unchanged.
	pick := func(n int, less func(i, j int) bool) int {
		best := 0
		for i := 1; i < n; i++ {
			if less(i, best) {
				best = i
			}
		}
		return best
	}
	runes := utf8.RuneCountInString
	hardUsers := []genUser{
		full.Users[pick(len(full.Users), func(i, j int) bool { return runes(full.Users[i].Name) > runes(full.Users[j].Name) })],
		full.Users[pick(len(full.Users), func(i, j int) bool { return len(full.Users[i].Email) > len(full.Users[j].Email) })],
		full.Users[pick(len(full.Users), func(i, j int) bool { return len(full.Users[i].Email) < len(full.Users[j].Email) })],
	}
	for _, u := range full.Users {
		if strings.ContainsAny(u.Name, `"\`) {
			hardUsers = append(hardUsers, u)
		}
	}
	var authorID int64
	for _, u := range hardUsers {
		var got genUser
		call("POST", "/api/users", map[string]string{"name": u.Name, "email": u.Email}, 201, &got)
		if got.Name != u.Name || got.Email != u.Email {
			t.Errorf("created %q <%s>, read %q <%s>", u.Name, u.Email, got.Name, got.Email)
		}
		authorID = got.ID
	}
	longTitle := full.Posts[pick(len(full.Posts), func(i, j int) bool { return runes(full.Posts[i].Title) > runes(full.Posts[j].Title) })]
	longPost := full.Posts[pick(len(full.Posts), func(i, j int) bool { return len(full.Posts[i].Content) > len(full.Posts[j].Content) })]
	var tabPost genPost
	for _, p := range full.Posts {
		if strings.Contains(p.Content, "\t") {
			tabPost = p
			break
		}
	}
	longComment := full.Comments[pick(len(full.Comments), func(i, j int) bool { return len(full.Comments[i].Text) > len(full.Comments[j].Text) })]
	for _, p := range []genPost{longTitle, longPost, tabPost} {
		var got struct{ CreatePost genPost }
		graphql("mutation($u: Int!, $t: String!, $c: String!) { createPost(userId: $u, title: $t, content: $c) { id title content } }",
			map[string]any{"u": authorID, "t": p.Title, "c": p.Content}, &got)
		if got.CreatePost.Title != p.Title || got.CreatePost.Content != p.Content {
			t.Errorf("createPost: %.60q / %.60q, read %.60q / %.60q", p.Title, p.Content, got.CreatePost.Title, got.CreatePost.Content)
		}
		var c struct{ AddComment genComment }
		graphql("mutation($p: Int!, $a: Int!, $t: String!) { addComment(postId: $p, authorId: $a, text: $t) { text } }",
			map[string]any{"p": got.CreatePost.ID, "a": authorID, "t": longComment.Text}, &c)
		if c.AddComment.Text != longComment.Text {
			t.Errorf("addComment: %.60q, read %.60q", longComment.Text, c.AddComment.Text)
		}
	}
	for _, u := range hardUsers {
		var o genOrder
		call("POST", "/api/users/"+strconv.FormatInt(authorID, 10)+"/orders",
			map[string]any{"productId": 1, "quantity": maxGeneratedQuantity, "customerName": u.Name}, 201, &o)
		if o.CustomerName != u.Name {
			t.Errorf("order for %q: read %q", u.Name, o.CustomerName)
		}
	}
}
