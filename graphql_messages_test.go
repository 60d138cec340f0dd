package main

import (
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"quartet/graphql"
)

// graphqlCodes is every extensions.code the GraphQL surface can send, as docs/errors.md
// lists them. TestGraphQLCodesAllListed keeps it complete.
var graphqlCodes = []string{
	"GRAPHQL_PARSE_FAILED", "GRAPHQL_VALIDATION_FAILED", "BAD_USER_INPUT",
	"NOT_FOUND", "CONFLICT", "PRECONDITION_FAILED", "UNAUTHENTICATED", "FORBIDDEN",
	"COST_LIMIT_EXCEEDED", "RESPONSE_TOO_LARGE", "INTERNAL_SERVER_ERROR",
	"PERSISTED_QUERY_NOT_FOUND", "PERSISTED_QUERY_NOT_SUPPORTED", "PERSISTED_QUERY_HASH_MISMATCH",
	"PERSISTED_QUERY_NOT_IN_LIST", "PERSISTED_QUERY_ID_REQUIRED", "TOO_MANY_REQUESTS",
}

// TestGraphQLCodesAllListed finds every code the source can put in extensions.code:
// the graphql package's code constants (Code* and code*) and the GraphQL code of each domain error
// kind (graphqlCode), and requires graphqlCodes to hold exactly those, so that a code
// added without its row in docs/errors.md (TestDocsListEveryErrorCode) fails here.
func TestGraphQLCodesAllListed(t *testing.T) {
	var found []string
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join("graphql", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, name := range vs.Names {
				if strings.HasPrefix(strings.ToLower(name.Name), "code") && i < len(vs.Values) {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						code, _ := strconv.Unquote(lit.Value)
						found = append(found, code)
					}
				}
			}
			return true
		})
	}
	if len(found) < 10 {
		t.Fatalf("only %d Code constants found in graphql/: %q", len(found), found)
	}
	for _, c := range kindCodes {
		found = append(found, c.graphql)
	}
	// Resolvers name NOT_FOUND through graphql.NewError as well as through the kinds.
	slices.Sort(found)
	found = slices.Compact(found)
	listed := slices.Sorted(slices.Values(graphqlCodes))
	if !slices.Equal(found, listed) {
		t.Errorf("codes in the source %q\ncodes listed    %q", found, listed)
	}
}

// goTypeInMessage matches what only a Go type name looks like: a package-qualified
// name (time.Time, graphql.Value, main.User), a map, slice or pointer type, a sized
// number type, or the words encoding/json uses for them.
var goTypeInMessage = regexp.MustCompile(`\b[a-z][a-z0-9]*\.[A-Z][A-Za-z0-9]*\b|map\[|\[\][a-z*]|\*[a-z]+\.|\b(u?int(8|16|32|64)|float(32|64)|interface \{|struct \{)|\bGo (value|struct|type)`)

// TestGraphQLMessagesNameNoGoType: no GraphQL error message a client can read names
// a Go type. Every message of every golden answer of the GraphQL surface (over HTTP
// and WebSocket, the service's and the engine's) is checked, and the one the
// DateTime scalar gives for a value that is not a time (it used to print the
// value's Go type).
func TestGraphQLMessagesNameNoGoType(t *testing.T) {
	for _, bad := range []string{"DateTime cannot represent time.Duration", "cannot unmarshal into Go value of type main.x", "[]interface {}", "int64"} {
		if !goTypeInMessage.MatchString(bad) {
			t.Fatalf("the pattern misses %q", bad)
		}
	}
	var messages int
	for _, dir := range []string{filepath.Join("testdata", "graphql"), filepath.Join("graphql", "testdata", "exec"), filepath.Join("graphql", "testdata", "ws")} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".golden") || strings.HasSuffix(path, ".json")) {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range regexp.MustCompile(`"message"\s*:\s*("(?:[^"\\]|\\.)*")`).FindAllSubmatch(data, -1) {
				var msg string
				if json.Unmarshal(m[1], &msg) != nil {
					continue
				}
				messages++
				if goTypeInMessage.MatchString(msg) {
					t.Errorf("%s: message names a Go type: %s", path, msg)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if messages < 50 {
		t.Errorf("only %d messages found in the golden files: the walk is not reading them", messages)
	}

	store := newTestStore(t)
	s := newGraphQLSchema(store, nil, slog.New(slog.DiscardHandler), 12)
	s.SetResolver("User", "createdAt", func(graphql.ResolveParams) (any, error) { return "2024-01-01", nil })
	resp := s.Execute(context.Background(), graphql.Request{Query: "{ user(id: 1) { createdAt } }"})
	if len(resp.Errors) != 1 {
		t.Fatalf("errors %v, want the DateTime one", resp.Errors)
	}
	if msg := resp.Errors[0].Message; msg != "DateTime cannot represent a value that is not a time" {
		t.Errorf("DateTime of a string: %q", msg)
	}
}
