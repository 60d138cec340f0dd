package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestJWTSecretFile covers -jwt-secret-file: the secret is read from
// the file with one trailing newline dropped, and it excludes the other key flags,
// whether they come as flags or from the environment.
func TestJWTSecretFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tt := range []struct {
		name, content, want string
	}{
		{"plain", testSecret, testSecret},
		{"newline", testSecret + "\n", testSecret},
		{"crlf", testSecret + "\r\n", testSecret},
		{"two newlines keep one", testSecret + "\n\n", testSecret + "\n"},
		{"carriage return alone kept", testSecret + "\r", testSecret + "\r"},
		{"inner spaces kept", " " + testSecret + " ", " " + testSecret + " "},
	} {
		j := jwtFlags{secretFile: write(tt.name, tt.content)}
		cfg, on, err := j.verifierConfig()
		if err != nil || !on || string(cfg.Secret) != tt.want {
			t.Errorf("%s: secret %q, on %v, %v; want %q", tt.name, cfg.Secret, on, err, tt.want)
		}
	}

	good := write("good", testSecret+"\n")
	free := []string{"-http", "127.0.0.1:0", "-grpc", "127.0.0.1:0"}
	for _, tt := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{append(free, "-jwt-secret-file", filepath.Join(dir, "none")), nil, "-jwt-secret-file: " + filepath.Join(dir, "none") + ": no such file or directory"},
		{append(free, "-jwt-secret-file", write("empty", "\n")), nil, "-jwt-secret-file: " + filepath.Join(dir, "empty") + " is empty"},
		{append(free, "-jwt-secret-file", write("short", "short\n")), nil, "at least 32 are required"},
		{append(free, "-jwt-secret-file", good, "-jwt-secret", testSecret), nil, "-jwt-secret and -jwt-secret-file exclude each other"},
		{append(free, "-jwt-secret-file", good), map[string]string{"QUARTET_JWT_SECRET": testSecret}, "-jwt-secret and -jwt-secret-file exclude each other"},
		{append(free, "-jwt-secret-file", good, "-jwt-public-key", good), nil, "-jwt-secret-file and -jwt-public-key exclude each other"},
	} {
		err := run(t.Context(), tt.args, envFrom(tt.env), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run %v: err = %v, want one containing %q", tt.args, err, tt.want)
		}
	}

	// The token command signs with the file's secret, given as a flag or by the
	// environment, and the server started with the file accepts the token.
	var out strings.Builder
	if err := run(t.Context(), []string{"token", "-sub", "alice", "-scope", "write"},
		envFrom(map[string]string{"QUARTET_JWT_SECRET_FILE": good}), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.jwt.secretFile = good
	a, _ := startApp(t, cfg)
	body := `{"name":"Zoe","email":"zoe@example.com"}`
	resp := rawHTTP(t, a.httpAddr, "POST /api/users HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n"+
		"Authorization: Bearer "+strings.TrimSpace(out.String())+"\r\nContent-Length: 40\r\n\r\n"+body)
	if !strings.HasPrefix(resp, "HTTP/1.1 201 ") {
		t.Errorf("write with a token signed by the file's secret:\n%s", resp)
	}
}
