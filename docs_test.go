package main

import (
	"bytes"
	"context"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"quartet/internal/admission"
)

// The tests below keep docs/ complete where the code can say what complete is: every
// flag, every HTTP route, every error code. They read the documents as text; what the
// documents say about behaviour is held to the code by the tests of that behaviour.

// readDocs returns the text of every Markdown file in docs/, by file name.
func readDocs(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no documents in docs/: %v", err)
	}
	docs := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs[filepath.Base(f)] = string(b)
	}
	return docs
}

// TestDocsListEveryFlag: every flag `quartet -h` prints is in docs/configuration.md.
func TestDocsListEveryFlag(t *testing.T) {
	var usage bytes.Buffer
	run(context.Background(), []string{"-h"}, func(string) string { return "" }, &usage, &usage)
	flags := regexp.MustCompile(`(?m)^  (-[a-z][a-z0-9-]*)`).FindAllStringSubmatch(usage.String(), -1)
	if len(flags) < 20 {
		t.Fatalf("only %d flags in the usage text:\n%s", len(flags), usage.String())
	}
	doc := readDocs(t)["configuration.md"]
	for _, f := range flags {
		if !strings.Contains(doc, "`"+f[1]+"`") && !strings.Contains(doc, "`"+f[1]+" ") {
			t.Errorf("flag %s is not in docs/configuration.md", f[1])
		}
	}
}

// TestDocsListEveryRoute: every path the HTTP server registers is named in docs/.
func TestDocsListEveryRoute(t *testing.T) {
	srv := NewServer(NewStore(), slog.New(slog.DiscardHandler), serverOptions{pprof: true})
	var all strings.Builder
	for _, text := range readDocs(t) {
		all.WriteString(text)
	}
	docs := all.String()
	for path := range srv.methods {
		path = strings.TrimSuffix(path, "{$}") // "/api/{$}" is the root "/api/"
		if strings.HasPrefix(path, "/debug/pprof/") {
			path = "/debug/pprof/" // documented as one tree
		}
		named := regexp.MustCompile("[\\s`]" + regexp.QuoteMeta(path) + "[\\s`]")
		if !named.MatchString(docs) {
			t.Errorf("route %s is not named in docs/", path)
		}
	}
}

// TestDocsListEveryErrorCode: the GraphQL table of docs/errors.md names exactly the
// codes extensions.code can hold (graphqlCodes, which TestGraphQLCodesAllListed holds
// to the source), and the kinds table names each domain kind's HTTP status, gRPC code
// and OData code; and every surface's table has every kind.
func TestDocsListEveryErrorCode(t *testing.T) {
	doc := readDocs(t)["errors.md"]
	_, table, ok := strings.Cut(doc, "every code `extensions.code` can hold:")
	table, _, _ = strings.Cut(strings.TrimLeft(table, "\n"), "\n\n")
	if !ok || !strings.Contains(table, "| code |") {
		t.Fatal("docs/errors.md has no table of GraphQL codes")
	}
	var listed []string
	for _, m := range regexp.MustCompile("`([A-Z][A-Z_]+[A-Z])`").FindAllStringSubmatch(table, -1) {
		listed = append(listed, m[1])
	}
	slices.Sort(listed)
	listed = slices.Compact(listed)
	if want := slices.Sorted(slices.Values(graphqlCodes)); !slices.Equal(listed, want) {
		t.Errorf("GraphQL codes in docs/errors.md %q\ncodes the source can send  %q", listed, want)
	}
	for kind := KindInternal; kind <= KindExhausted; kind++ {
		c := kindCodes[kind]
		status, grpc, odata, gql := c.http, c.grpc, c.odata, c.graphql
		if status == 0 || grpc == 0 || odata == "" || gql == "" {
			t.Errorf("kind %d is missing from a surface's table: HTTP %d, gRPC %v, OData %q, GraphQL %q", kind, status, grpc, odata, gql)
		}
		for _, want := range []string{"| " + strconv.Itoa(status), "`" + grpc.String() + "`", "`" + odata + "`"} {
			if !strings.Contains(doc, want) {
				t.Errorf("kind %d: %q is not in docs/errors.md", kind, want)
			}
		}
	}
}

// TestDocsLinksResolve: every link in docs/ to a file names one inside the repository
// that exists, so the documents read the same in a clone of the repository alone.
func TestDocsLinksResolve(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)#]*)(#[^)]*)?\)`)
	for name, text := range readDocs(t) {
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if target == "" || strings.Contains(target, "://") {
				continue
			}
			inRepo := filepath.Join("docs", target)
			if filepath.IsAbs(target) || !filepath.IsLocal(inRepo) {
				t.Errorf("docs/%s links to %s, outside the repository", name, target)
				continue
			}
			if _, err := os.Stat(inRepo); err != nil {
				t.Errorf("docs/%s links to %s, which does not exist", name, target)
			}
		}
	}
}

// TestDocsNameExistingFiles: every source file docs/ names (`store.go`,
// `graphql/parser.go`, `userpb/user.proto`, …) exists, so a file renamed or moved
// takes its mentions in docs/ with it.
func TestDocsNameExistingFiles(t *testing.T) {
	file := regexp.MustCompile("`([a-z][a-z0-9_/]*\\.(?:go|proto|graphql|json|sh))`")
	for name, text := range readDocs(t) {
		for _, m := range file.FindAllStringSubmatch(text, -1) {
			if _, err := os.Stat(m[1]); err != nil {
				t.Errorf("docs/%s names %s, which does not exist", name, m[1])
			}
		}
	}
}

// TestDocsListEveryBudget: docs/limits.md's admission table is the list in
// internal/admission/limits.go: every budget's flag and every byte default in it.
func TestDocsListEveryBudget(t *testing.T) {
	doc := readDocs(t)["limits.md"]
	start := strings.Index(doc, "## Admission")
	end := strings.Index(doc[start+1:], "\n## ")
	if start < 0 || end < 0 {
		t.Fatal("docs/limits.md has no Admission section")
	}
	section := doc[start : start+1+end]
	l := admission.Defaults()
	fs := flag.NewFlagSet("admission", flag.ContinueOnError)
	l.Register(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if !strings.Contains(section, "`-"+f.Name+"`") {
			t.Errorf("budget flag -%s is not in docs/limits.md's Admission table", f.Name)
		}
	})
	for name, n := range map[string]int64{"ClientBodyBytes": l.ClientBodyBytes &^ 0xffff, "TotalBodyBytes": l.TotalBodyBytes,
		"ClientAnswerBytes": l.ClientAnswerBytes, "TotalAnswerBytes": l.TotalAnswerBytes,
		"BatchClientBytes": l.BatchClientBytes, "BatchTotalBytes": l.BatchTotalBytes} {
		if mib := strconv.FormatInt(n>>20, 10) + " MiB"; !strings.Contains(section, mib) {
			t.Errorf("%s's default, %s, is not in docs/limits.md's Admission table", name, mib)
		}
	}
	for _, n := range []int{l.ClientWaiting, l.WSSockets, l.WSSocketsPerClient, l.WSOperations, l.WSOperationsPerClient} {
		if s := strconv.Itoa(n); !strings.Contains(section, s) && !strings.Contains(section, commas(n)) {
			t.Errorf("the default %d is not in docs/limits.md's Admission table", n)
		}
	}
}

// commas writes n with thousands separated by commas, as the documents do.
func commas(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
