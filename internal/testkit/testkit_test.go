package testkit

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestFirstDifference(t *testing.T) {
	for _, tt := range []struct {
		got, want string
		report    []string // what the report must contain; nil: no difference
	}{
		{"a\nb\n", "a\nb\n", nil},
		{"a\nb\nc\nd\ne\n", "a\nb\nc\nd\nE\n", []string{"line 5 (got 5 lines, want 5)", `"b\n"`, `"d\n"`, `got  "e\n"`, `want "E\n"`}},
		{"a\n", "a\nb\n", []string{"line 2", "got  (end of text)", `want "b\n"`}},
		{"a", "a\n", []string{"line 1", `got  "a"`, `want "a\n"`}},
	} {
		report := FirstDifference([]byte(tt.got), []byte(tt.want))
		if tt.report == nil {
			if report != "" {
				t.Errorf("FirstDifference(%q, %q) = %q, want no difference", tt.got, tt.want, report)
			}
			continue
		}
		for _, part := range tt.report {
			if !strings.Contains(report, part) {
				t.Errorf("FirstDifference(%q, %q) = %q, want it to contain %q", tt.got, tt.want, report, part)
			}
		}
	}
	if report := FirstDifference([]byte("1\n2\n3\n4\n5\nx\n"), []byte("1\n2\n3\n4\n5\ny\n")); strings.Contains(report, `"2\n"`) {
		t.Errorf("context goes back more than three lines:\n%s", report)
	}
}

// recorder stands in for a test so that what a helper does to it can be checked.
// Like a test's, its Fatalf and Skip end the goroutine: run a helper that may call
// them with capture.
type recorder struct {
	testing.TB
	failed, skipped string
}

func (r *recorder) Errorf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Skip(args ...any) {
	r.skipped = fmt.Sprint(args...)
	runtime.Goexit()
}

// capture runs helper on a recorder in a goroutine of its own and returns the record.
func capture(t *testing.T, helper func(testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		helper(r)
	}()
	<-done
	return r
}

func TestCheckGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.golden")
	if err := os.WriteFile(path, []byte("same\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := capture(t, func(tb testing.TB) { CheckGolden(tb, path, []byte("same\n")) }); r.failed != "" {
		t.Errorf("equal content reported: %s", r.failed)
	}
	if r := capture(t, func(tb testing.TB) { CheckGolden(tb, path, []byte("other\n")) }); !strings.Contains(r.failed, `want "same\n"`) {
		t.Errorf("a difference reported as %q", r.failed)
	}
	absent := filepath.Join(t.TempDir(), "absent.golden")
	if r := capture(t, func(tb testing.TB) { CheckGolden(tb, absent, []byte("x")) }); r.failed == "" {
		t.Error("a missing golden file was not reported")
	}
}

// TestMissingFailsUnderCI checks the rule .ci/run relies on: a missing tool is a skip
// that names it on a developer's machine and a failure under CI.
func TestMissingFailsUnderCI(t *testing.T) {
	missing := func(tb testing.TB) { Missing(tb, "node on PATH", "apt-get install nodejs") }
	t.Setenv("CI", "")
	r := capture(t, missing)
	if r.failed != "" || !strings.Contains(r.skipped, "node on PATH") || !strings.Contains(r.skipped, "apt-get install nodejs") {
		t.Errorf("without CI: failed %q, skipped %q; want a skip naming the tool and its install", r.failed, r.skipped)
	}
	t.Setenv("CI", "true")
	r = capture(t, missing)
	if r.failed == "" || r.skipped != "" {
		t.Errorf("under CI: failed %q, skipped %q; want a failure", r.failed, r.skipped)
	}
}

func TestRequireNodeNamesThePackages(t *testing.T) {
	SkipIfShort(t, "starts node")
	t.Setenv("CI", "")
	dir := t.TempDir()
	r := capture(t, func(tb testing.TB) { RequireNode(tb, dir, "left-pad") })
	if r.failed != "" || !strings.Contains(r.skipped, "npm ci") {
		t.Errorf("failed %q, skipped %q; want a skip that says npm ci", r.failed, r.skipped)
	}
}

func TestFromModuleRoot(t *testing.T) {
	// The working directory is internal/testkit, two levels below go.mod.
	if got := fromModuleRoot(filepath.Join("..", "..", "e2e", "odata")); got != "e2e/odata" {
		t.Errorf("fromModuleRoot = %q, want e2e/odata", got)
	}
}

// TestSkipsGoThroughTestkit keeps the rule that makes a test run's skips readable and
// .ci/run strict: outside this package no test calls Skip or testing.Short itself, so
// that every skip names its missing tool or -short, and fails under CI when a tool is
// missing. bench/ is a module of its own and cannot import this package.
func TestSkipsGoThroughTestkit(t *testing.T) {
	root := filepath.Join("..", "..")
	direct := regexp.MustCompile(`\.Skip(f|Now)?\(|testing\.Short\(\)`)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", ".git", "bench", "testkit":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(src), "\n") {
			if direct.MatchString(line) {
				t.Errorf("%s:%d: %s\n(skip through testkit.Missing, RequireNode, RequireChromium, RequireCommand or SkipIfShort)", path, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestHasLoneSurrogate(t *testing.T) {
	for in, want := range map[string]bool{
		`"\ud800"`: true, `"\uDC00"`: true, `"\ud83d\ude00"`: false, `"\uD83D\uDE00"`: false,
		`"\ud83d\ud83d\ude00"`: true, `"\ud83d\ude00\ude00"`: true, `"\\ud800"`: false, `"\\\ud800"`: true,
		`"\ud800x"`: true, `"\u0041\ud7ff\ue000"`: false, `{"\udfff":1}`: true, `"plain"`: false,
	} {
		if got := HasLoneSurrogate([]byte(in)); got != want {
			t.Errorf("HasLoneSurrogate(%s) = %v, want %v", in, got, want)
		}
	}
}

func TestJSONDepth(t *testing.T) {
	for in, want := range map[string]int{`1`: 0, `[]`: 1, `{"a":[{}]}`: 3, `[[1],[[2]]]`: 3, `{"a":"[[["}`: 1, `[[` + `]] [[[]]]`: 2} {
		if got := JSONDepth([]byte(in)); got != want {
			t.Errorf("JSONDepth(%s) = %d, want %d", in, got, want)
		}
	}
}

func TestRepeatedKey(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":1,"b":2}`: "", `{"a":1,"a":2}`: `repeated key "a"`, `{"name":1,"NAME":2}`: `repeated key "NAME"`,
		`{"users":[],"uſers":[]}`: `repeated key "uſers"`, `[{"a":1},{"a":2}]`: "", `{"a":{"a":1},"b":{"a":2}}`: "",
		`{"a":"b","b":1}`: "", `{"a":["b","b"],"c":1}`: "", `{"a":{"b":1},"a":2}`: `repeated key "a"`,
	} {
		_, err := readTokens([]byte(in))
		got := fmt.Sprint(err)
		if want == "" {
			want = "<nil>"
		}
		if got != want {
			t.Errorf("readTokens(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestEventually(t *testing.T) {
	calls := 0
	holdsAtThird := func() error {
		if calls++; calls < 3 {
			return fmt.Errorf("%d calls", calls)
		}
		return nil
	}
	if r := capture(t, func(tb testing.TB) { poll(tb, time.Minute, holdsAtThird) }); r.failed != "" || calls != 3 {
		t.Errorf("a condition that holds at the third call: %d calls, failure %q", calls, r.failed)
	}
	never := func() error { return fmt.Errorf("%d calls", calls) }
	r := capture(t, func(tb testing.TB) { poll(tb, 10*time.Millisecond, never) })
	if want := fmt.Sprintf("still, after 10ms: %d calls", calls); r.failed != want {
		t.Errorf("a condition that never holds: failure %q, want %q", r.failed, want)
	}
}
