package userpb

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// generatedFiles are the files generate.sh writes and the repository holds.
var generatedFiles = []string{"user.pb.go", "user_grpc.pb.go"}

// Exit statuses of generate.sh that mean "the tools are missing" rather than
// "generation went wrong".
const (
	exitNoProtoc = 3
	exitNoPlugin = 4
)

// TestGeneratedCodeIsFresh regenerates the Go code into a temporary directory
// and fails when it differs from the checked-in files.
//
// The comparison ignores the protoc version in the header lines naming it,
// and nothing else. protoc merely parses user.proto into a descriptor; the
// Go code is written by protoc-gen-go and protoc-gen-go-grpc, which
// generate.sh pins and whose version lines are compared. Pinning protoc as
// well would make the test fail or skip on every machine whose distribution
// ships another protoc (Debian 12 has 3.21.12) although the output differs
// only in that comment. Should a different protoc ever change the real
// output, for example the serialized descriptor, the rest of the file
// differs and the test fails.
func TestGeneratedCodeIsFresh(t *testing.T) {
	for _, tool := range []string{"bash", "protoc"} {
		if _, err := exec.LookPath(tool); err != nil {
			skipUnlessCI(t, "%s not found on PATH (Debian: apt-get install -y protobuf-compiler); cannot check that %s are fresh",
				tool, strings.Join(generatedFiles, " and "))
		}
	}

	// go test caches a passing result keyed on the files the test process
	// opens, not those the generator opens; read the inputs here so that
	// editing them reruns the test.
	for _, input := range []string{"user.proto", "generate.sh"} {
		if _, err := os.ReadFile(input); err != nil {
			t.Fatal(err)
		}
	}

	out := t.TempDir()
	cmd := exec.CommandContext(t.Context(), "bash", "generate.sh", out)
	var log bytes.Buffer
	cmd.Stdout = &log
	cmd.Stderr = &log
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && (exit.ExitCode() == exitNoProtoc || exit.ExitCode() == exitNoPlugin) {
			skipUnlessCI(t, "generate.sh cannot get its tools: %v\n%s", err, log.Bytes())
		}
		t.Fatalf("generate.sh %s: %v\n%s", out, err, log.Bytes())
	}

	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var produced []string
	for _, e := range entries {
		produced = append(produced, e.Name())
	}
	if !slices.Equal(produced, generatedFiles) {
		t.Fatalf("generate.sh wrote %q, want %q", produced, generatedFiles)
	}

	for _, name := range generatedFiles {
		fresh, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		checkedIn, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("%v (run go generate in userpb)", err)
		}
		if line, got, want, differ := firstDifference(maskProtocVersion(checkedIn), maskProtocVersion(fresh)); differ {
			t.Errorf("%s is stale; run go generate in userpb:\n%s:%d: checked in: %q\n%s:%d: generated:  %q",
				name, name, line, got, name, line, want)
		}
	}
}

// skipUnlessCI skips the test, or fails it when the environment variable CI is
// set: a CI machine is expected to have the tools, so missing them there is a
// broken setup and must not pass silently.
func skipUnlessCI(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") != "" {
		t.Fatalf("%s\n(CI is set, so this fails instead of skipping)", msg)
	}
	t.Skip(msg)
}

// maskProtocVersion returns src with the protoc version blanked out of the
// generated-header lines that name it: "// \tprotoc        v3.21.12" from
// protoc-gen-go and "// - protoc             v3.21.12" from
// protoc-gen-go-grpc. The lines stay, so line numbers in a report are those
// of the files. Only the header, the lines before the package clause, is
// searched, so a comment of the same shape from user.proto is still compared.
func maskProtocVersion(src []byte) []byte {
	var out bytes.Buffer
	inHeader := true
	for line := range bytes.Lines(src) {
		if bytes.HasPrefix(line, []byte("package ")) {
			inHeader = false
		}
		if inHeader && isProtocVersionLine(string(line)) {
			line = []byte("// protoc (version not compared)\n")
		}
		out.Write(line)
	}
	return out.Bytes()
}

func isProtocVersionLine(line string) bool {
	text, ok := strings.CutPrefix(line, "//")
	if !ok {
		return false
	}
	f := strings.Fields(text)
	if len(f) > 0 && f[0] == "-" {
		f = f[1:]
	}
	return len(f) == 2 && f[0] == "protoc"
}

// firstDifference reports the 1-based number and the contents of the first
// line where a and b differ. A missing line is reported as empty.
func firstDifference(a, b []byte) (line int, lineA, lineB string, differ bool) {
	la := strings.SplitAfter(string(a), "\n")
	lb := strings.SplitAfter(string(b), "\n")
	for i := range max(len(la), len(lb)) {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			return i + 1, x, y, true
		}
	}
	return 0, "", "", false
}

func TestMaskProtocVersion(t *testing.T) {
	header := func(protoc, plugin string) string {
		return "// Code generated by protoc-gen-go. DO NOT EDIT.\n" +
			"// versions:\n" +
			"// \tprotoc-gen-go " + plugin + "\n" +
			"// \tprotoc        " + protoc + "\n" +
			"// source: user.proto\n\n" +
			"package userpb\n\n" +
			"// protoc v1\n"
	}
	grpcHeader := func(protoc string) string {
		return "// versions:\n" +
			"// - protoc-gen-go-grpc v1.6.2\n" +
			"// - protoc             " + protoc + "\n" +
			"package userpb\n"
	}
	tests := []struct {
		name  string
		a, b  string
		equal bool
	}{
		{"protoc version differs", header("v3.21.12", "v1.36.12"), header("v5.29.3", "v1.36.12"), true},
		{"unknown protoc version", header("(unknown)", "v1.36.12"), header("v3.21.12", "v1.36.12"), true},
		{"grpc header protoc version differs", grpcHeader("v3.21.12"), grpcHeader("v6.30.0"), true},
		{"plugin version differs", header("v3.21.12", "v1.36.12"), header("v3.21.12", "v1.36.11"), false},
		{"protoc-like line after package clause", "package p\n// protoc v1\n", "package p\n// protoc v2\n", false},
		{"protoc line removed", header("v3.21.12", "v1.36.12"), strings.Replace(header("v3.21.12", "v1.36.12"), "// \tprotoc        v3.21.12\n", "", 1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, x, y, differ := firstDifference(maskProtocVersion([]byte(tt.a)), maskProtocVersion([]byte(tt.b)))
			if differ == tt.equal {
				t.Errorf("after masking protoc versions: equal = %v, want %v (first difference %q vs %q)", !differ, tt.equal, x, y)
			}
		})
	}
}

func TestFirstDifference(t *testing.T) {
	tests := []struct {
		a, b         string
		line         int
		lineA, lineB string
		differ       bool
	}{
		{"x\ny\n", "x\ny\n", 0, "", "", false},
		{"x\ny\n", "x\nz\n", 2, "y\n", "z\n", true},
		{"x\n", "x\ny\n", 2, "", "y\n", true},
		{"x", "x\n", 1, "x", "x\n", true},
	}
	for _, tt := range tests {
		line, la, lb, differ := firstDifference([]byte(tt.a), []byte(tt.b))
		if line != tt.line || la != tt.lineA || lb != tt.lineB || differ != tt.differ {
			t.Errorf("firstDifference(%q, %q) = %d, %q, %q, %v; want %d, %q, %q, %v",
				tt.a, tt.b, line, la, lb, differ, tt.line, tt.lineA, tt.lineB, tt.differ)
		}
	}
}

// TestProtocGenGoPinMatchesRuntime keeps generate.sh's protoc-gen-go pin at
// the google.golang.org/protobuf version the module builds with: code from a newer generator refuses to run on an
// older runtime, and code from an older one misses the runtime's fast paths.
func TestProtocGenGoPinMatchesRuntime(t *testing.T) {
	// go test puts its own go command first on PATH.
	out, err := exec.CommandContext(t.Context(), "go", "list", "-m", "-f", "{{.Version}}", "google.golang.org/protobuf").Output()
	if err != nil {
		t.Fatalf("go list -m google.golang.org/protobuf: %v", err)
	}
	runtime := strings.TrimSpace(string(out))
	script, err := os.ReadFile("generate.sh")
	if err != nil {
		t.Fatal(err)
	}
	const key = "readonly PROTOC_GEN_GO_VERSION="
	var pin string
	for i, line := range strings.Split(string(script), "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			if pin != "" {
				t.Fatalf("generate.sh:%d: second %s", i+1, key)
			}
			pin = v
		}
	}
	if pin == "" {
		t.Fatalf("generate.sh has no line starting %q", key)
	}
	if pin != runtime {
		t.Errorf("generate.sh pins protoc-gen-go %s, but the module builds with google.golang.org/protobuf %s; update the pin and run go generate", pin, runtime)
	}
}
