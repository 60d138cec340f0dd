// Package testkit holds what the tests of every package share: golden files and
// -update, skips for a missing tool or under -short, allocation counts, strict JSON
// references and the Prometheus format. Only tests import it. A skip names what is
// missing and how to install it; under CI (CI set) a missing tool fails instead, so
// no group of tests stops running unnoticed.
package testkit

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files with what the tests see")

// CheckGolden compares got with the golden file at path, or writes it there under
// -update, reporting the first difference.
func CheckGolden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if diff := FirstDifference(got, want); diff != "" {
		t.Errorf("%s differs from what the test saw (go test -update rewrites it):\n%s", path, diff)
	}
}

// FirstDifference describes where got and want first differ: the line number, up
// to three lines before it, and both versions of the line; "" when they are equal.
func FirstDifference(got, want []byte) string {
	if bytes.Equal(got, want) {
		return ""
	}
	var text [2][]string
	for k, t := range [2][]byte{got, want} {
		text[k] = strings.SplitAfter(string(t), "\n")
		if last := len(text[k]) - 1; text[k][last] == "" {
			text[k] = text[k][:last] // a final newline starts no line
		}
	}
	g, w := text[0], text[1]
	i := 0
	for i < len(g) && i < len(w) && g[i] == w[i] {
		i++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "first difference at line %d (got %d lines, want %d)\n", i+1, len(g), len(w))
	for _, line := range g[max(0, i-3):i] {
		fmt.Fprintf(&b, "   %q\n", line)
	}
	lineAt := [2]string{"(end of text)", "(end of text)"}
	for k, l := range [2][]string{g, w} {
		if i < len(l) {
			lineAt[k] = strconv.Quote(l[i])
		}
	}
	fmt.Fprintf(&b, "got  %s\nwant %s", lineAt[0], lineAt[1])
	return b.String()
}

// Missing skips the test for want of what, which install installs, or fails it
// under CI; it does not return.
func Missing(t testing.TB, what, install string) {
	t.Helper()
	msg := fmt.Sprintf("needs %s; install: %s (.ci/run installs it)", what, install)
	if os.Getenv("CI") != "" {
		t.Fatalf("%s\n(CI is set: a missing tool fails the test instead of skipping it)", msg)
	}
	t.Skip("skipped: " + msg)
}

// SkipIfShort skips a slow test under -short; why says what makes it slow.
func SkipIfShort(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped under -short: " + why)
	}
}

// LiveHeap is the bytes of live heap objects after a collection.
func LiveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

const nodeMajor = 20 // the tests' package.json files say "engines": {"node": ">=20"}

// RequireNode makes sure node (nodeMajor or later) is on PATH and each package is in
// dir/node_modules (dir relative to the test's package); it skips under -short.
func RequireNode(t testing.TB, dir string, packages ...string) {
	t.Helper()
	SkipIfShort(t, "starts Node")
	need, install := fmt.Sprintf("Node %d or later on PATH", nodeMajor), "Node from https://nodejs.org/ or your distribution's nodejs"
	npmCI := fmt.Sprintf("`npm ci` in %s/", fromModuleRoot(dir))
	if len(packages) > 0 {
		install += ", then " + npmCI
	}
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		Missing(t, need, install)
	}
	version := strings.TrimSpace(string(out))
	major, _ := strconv.Atoi(strings.SplitN(strings.TrimPrefix(version, "v"), ".", 2)[0])
	if major < nodeMajor {
		Missing(t, fmt.Sprintf("%s (node on PATH is %s)", need, version), install)
	}
	var absent []string
	for _, pkg := range packages {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg)); err != nil {
			absent = append(absent, pkg)
		}
	}
	if len(absent) > 0 {
		Missing(t, fmt.Sprintf("the npm packages %s in %s/node_modules", strings.Join(absent, ", "), fromModuleRoot(dir)), npmCI)
	}
}

// RequireChromium returns the Chromium a browser test drives: $CHROMIUM, or
// Debian's /usr/bin/chromium.
func RequireChromium(t testing.TB) string {
	t.Helper()
	SkipIfShort(t, "starts Chromium")
	chromium := cmp.Or(os.Getenv("CHROMIUM"), "/usr/bin/chromium")
	if _, err := os.Stat(chromium); err != nil {
		Missing(t, "Chromium at "+chromium+" (or $CHROMIUM naming another)", "apt-get install chromium")
	}
	return chromium
}

// RequireCommand makes sure the command name is on PATH.
func RequireCommand(t testing.TB, name, install string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		Missing(t, name+" on PATH", install)
	}
}

// fromModuleRoot returns dir, relative to the test's package, as a path from the
// module's root, for messages a reader runs from there.
func fromModuleRoot(dir string) string {
	abs, _ := filepath.Abs(dir)
	for root := abs; root != filepath.Dir(root); root = filepath.Dir(root) {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			rel, _ := filepath.Rel(root, abs)
			return filepath.ToSlash(rel)
		}
	}
	return dir
}

// BytesAllocated returns the bytes the heap allocated while f ran, other
// goroutines' included: a test bounds it well above what f needs.
func BytesAllocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

var (
	surrogatePair   = regexp.MustCompile(`\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}`)
	surrogateEscape = regexp.MustCompile(`\\u[dD][89a-fA-F][0-9a-fA-F]{2}`)
)

// HasLoneSurrogate reports whether the valid JSON text data has a \u escape of a
// surrogate not half of a pair, worked out unlike the service's scan: escaped
// backslashes are blotted out, then the pairs, and any surrogate escape left is alone.
func HasLoneSurrogate(data []byte) bool {
	s := strings.ReplaceAll(string(data), `\\`, "__")
	s = surrogatePair.ReplaceAllString(s, "_")
	return surrogateEscape.MatchString(s)
}

// JSONDepth is how deeply arrays and objects nest in data's first value, read by
// encoding/json's tokens up to the first error.
func JSONDepth(data []byte) int {
	deepest, _ := readTokens(data)
	return deepest
}

// readTokens reads data's first value by encoding/json's tokens, up to the first
// error: how deeply it nests, and the first key that an earlier key of its object
// matches as encoding/json matches struct fields.
func readTokens(data []byte) (deepest int, repeated error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	type open struct {
		keys     []string // nil in an array
		inObject bool
		wantKey  bool
	}
	var stack []open
	for {
		tok, err := dec.Token()
		if err != nil {
			return deepest, repeated
		}
		top := len(stack) - 1
		if top >= 0 && stack[top].inObject {
			if key, ok := tok.(string); ok && stack[top].wantKey {
				for _, k := range stack[top].keys {
					if strings.EqualFold(k, key) && repeated == nil {
						repeated = fmt.Errorf("repeated key %q", key)
					}
				}
				stack[top].keys = append(stack[top].keys, key)
				stack[top].wantKey = false
				continue
			}
			stack[top].wantKey = true // the value read now ends here or in its own levels
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			stack = append(stack, open{inObject: tok == json.Delim('{'), wantKey: true})
			deepest = max(deepest, len(stack))
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:top]
		}
		if len(stack) == 0 {
			return deepest, repeated
		}
	}
}

// CopyDir copies a store's directory into a new one, leaving a file's trailing
// zeros (a journal's unwritten space) unwritten.
func CopyDir(t testing.TB, from string) string {
	t.Helper()
	to := t.TempDir()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Join(to, e.Name())
		if err := os.WriteFile(name, bytes.TrimRight(data, "\x00"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(name, int64(len(data))); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

// DecodeStrict is the hand-written JSON decoders' reference: encoding/json into a
// T with unknown fields refused, one value, no repeated key, no lone surrogate.
func DecodeStrict[T any](data []byte) (*T, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var v T
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, io.ErrUnexpectedEOF
	}
	if _, err := readTokens(data); err != nil {
		return nil, err
	}
	if HasLoneSurrogate(data) {
		return nil, errors.New("unpaired surrogate escape")
	}
	return &v, nil
}

// Dataset returns a dataset file of the shape the service is started with: users
// with names and e-mail addresses, and products, in id order.
func Dataset(users, products int) []byte {
	first := []string{"Ann", "Carl", "Dana", "Eve", "Ivo", "Kai", "Lena", "Milo", "Nora", "Otto", "Rosa", "Sven"}
	last := []string{"Berg", "Dubois", "Jones", "Khan", "Novak", "Silva", "Smith"}
	var b bytes.Buffer
	b.WriteString(`{"users":[`)
	for i := 1; i <= users; i++ {
		if i > 1 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id": %d, "name": "%s %s %d", "email": "user%d@example.com", "createdAt": "2024-01-01T00:00:00Z"}`,
			i, first[i*7%len(first)], last[i*13%len(last)], i, i)
	}
	b.WriteString(`],"products":[`)
	for i := 1; i <= products; i++ {
		if i > 1 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id": %d, "name": "Lamp Desk %d", "price": %d.%02d, "category": "%c", "createdDate": "2024-01-01T00:00:00Z", "isActive": %t}`,
			i, i, i%2000, i%100, 'A'+i%3, i%10 != 0)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// LongDatasetInputs returns a long dataset (20,000 users, 40 products: many of a
// parallel decoder's segments) and variants of it with errors in the middle (one,
// or two in different segments), inside strings that look like element starts,
// and at the end.
func LongDatasetInputs() [][]byte {
	data := Dataset(20000, 40)
	tricky := []byte(`{"users":[{"id":1,"name":"a},{\"id\":2},{","email":"x"},{"id":3,"name":"},{"},{"id":4}],` +
		`"products":[{"id":1,"name":"p"}],"users":[{"id":9},{"name":"},{\"name\":1}"}]}`)
	wrongType := bytes.Replace(data, []byte(`{"id": 5000,`), []byte(`{"id": "5000",`), 1)
	unknownField := bytes.Replace(data, []byte(`{"id": 15000,`), []byte(`{"id": 15000, "nope": 1,`), 1)
	both := bytes.Replace(wrongType, []byte(`{"id": 15000,`), []byte(`{"id": 15000, "nope": 1,`), 1)
	inputs := [][]byte{data, tricky, wrongType, unknownField, both}
	for _, cut := range []int{len(data) / 3, len(data) / 2, len(data) - 3} {
		broken := bytes.Clone(data)
		broken[cut] = '!'
		inputs = append(inputs, broken, data[:cut])
	}
	return inputs
}

// DatasetSeeds are dataset-shaped documents, valid and not, for DecodeStrict.
var DatasetSeeds = []string{
	`{}`, `null`, `{"users":null}`, `{"users":[]}`, `[]`, `"x"`, `{"users":{}}`, `{"users":"x"}`,
	`{"users":[{"id":1,"name":"A","email":"a@x.io","createdAt":"2024-01-01T09:00:00Z"}]}`,
	`{"Users":[{"ID":1,"NAME":"A"}],"users":[{"id":2}]}`,
	`{"users":[{"id":1,"id":2}]}`, `{"users":[null,{"id":null,"name":null}]}`,
	`{"users":[{"id":1.5}]}`, `{"users":[{"id":1e2}]}`, `{"users":[{"id":-0}]}`, `{"users":[{"id":99999999999999999999}]}`,
	`{"users":[{"id":"1"}]}`, `{"users":[{"name":1}]}`, `{"users":[{"name":"a\u00e9\ud83d\ude00\n"}]}`,
	`{"users":[{"name":"\ud800"}]}`, "{\"users\":[{\"name\":\"\xff\"}]}", `{"users":[{"name":"a\x"}]}`,
	`{"products":[{"id":1,"price":19.99,"isActive":true,"createdDate":null}]}`, `{"products":[{"price":"1"}]}`,
	`{"products":[{"price":1.00001}]}`, `{"products":[{"isActive":1}]}`, `{"orders":[{"quantity":3,"orderDate":"bad"}]}`,
	`{"comments":[{"postId":1,"authorId":2,"text":"t"}],"posts":[{"userId":1,"title":"t","content":"c"}]}`,
	`{"nope":1}`, `{"users":[{"nope":{"a":[1,2]}}]}`, `{"users":[]} x`, `{"users":[] `, `{"users":[1,]}`,
	` { "users" : [ { "id" : 1 } ] } `, `{"users":[{"id":01}]}`, `{"users":[{"id":-}]}`, `{"users":[{"id":1.}]}`,
	`{"users":[{"createdAt":"2024-01-01T09:00:00+02:00"}]}`, `{"users":[{"createdAt":1}]}`,
	`{"users":[{"name":"K"}],"uſers":[]}`, `{"uſers":[]}`,
	`{"users":[{"name":"\ud83d\ude00\udc00"}]}`, `{"users":[{"name":"\\ud800","email":"\\\udbff"}]}`,
	`{"users":[{"name":` + strings.Repeat("[", 61) + strings.Repeat("]", 61) + `}]}`,
	`{"users":[{"name":` + strings.Repeat("[", 62) + strings.Repeat("]", 62) + `}]}`,
	`{"users":[{"createdAt":{"a":` + strings.Repeat("[", 70) + `}}]}`,
}
