package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"quartet/internal/jwt"
	"quartet/internal/testkit"
)

func envFrom(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// servingLine is the log line that says the service listens, and where.
var servingLine = regexp.MustCompile(`msg="quartet serving" http=(\S+) grpc=(\S+)`)

// running is the program started as main starts it: through run, with arguments and
// an environment.
type running struct {
	httpAddr, grpcAddr string
	logs               *syncBuffer
	done               chan error
	stop               context.CancelFunc
}

// runServing calls run in a goroutine and returns once it logs that it serves; the
// test's end stops it. Start the whole service this way to test what run adds to
// start (flags, environment, signals, the logger); otherwise use startApp.
func runServing(t *testing.T, args []string, env map[string]string) *running {
	t.Helper()
	ctx, stop := context.WithCancel(t.Context())
	r := &running{logs: &syncBuffer{}, done: make(chan error, 1), stop: stop}
	go func() { r.done <- run(ctx, args, envFrom(env), io.Discard, r.logs) }()
	t.Cleanup(func() {
		stop()
		<-r.done
	})
	var m []string
	testkit.Eventually(t, func() error {
		if m = servingLine.FindStringSubmatch(r.logs.String()); m != nil {
			return nil
		}
		select {
		case err := <-r.done:
			r.done <- err
			t.Fatalf("run returned %v before it served:\n%s", err, r.logs)
		default:
		}
		return fmt.Errorf("no serving line in the log:\n%s", r.logs)
	})
	r.httpAddr, r.grpcAddr = m[1], m[2]
	return r
}

// shutdown stops the program as a signal does and returns what run returned.
func (r *running) shutdown() error {
	r.stop()
	err := <-r.done
	r.done <- err
	return err
}

// TestRunServesAndShutsDown runs the program as main does, finds the bound address in
// its log, uses it, and stops it with the context as a signal would.
func TestRunServesAndShutsDown(t *testing.T) {
	r := runServing(t, []string{"-grpc", "127.0.0.1:0", "-stream-delay", "0s"}, map[string]string{"QUARTET_HTTP": "127.0.0.1:0"})
	resp, err := http.Get("http://" + r.httpAddr + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	if err := r.shutdown(); err != nil {
		t.Errorf("run after shutdown = %v, want nil", err)
	}
	if !strings.Contains(r.logs.String(), "shutting down") {
		t.Error("no shutdown line in the log")
	}
}

func TestRunRefusesBadConfiguration(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := t.TempDir()
	badJSON := filepath.Join(dir, "bad.json")
	os.WriteFile(badJSON, []byte(`{"users":[{"id":1,"name":"A","email":"a@x.io"},{"id":1,"name":"B","email":"b@x.io"}]}`), 0o644)
	repeatedKey := filepath.Join(dir, "repeated.json")
	os.WriteFile(repeatedKey, []byte(`{"users":[{"id":1,"name":"A","Name":"B","email":"a@x.io"}]}`), 0o644)
	loneSurrogate := filepath.Join(dir, "surrogate.json")
	os.WriteFile(loneSurrogate, []byte(`{"users":[{"id":1,"name":"A","email":"a@x.io"},{"id":2,"name":"Zo\ud800e","email":"z@x.io"}]}`), 0o644)
	fifo := filepath.Join(dir, "fifo") // opened with no writer, it would block start-up for good
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	badPEM := filepath.Join(dir, "key.pem")
	os.WriteFile(badPEM, []byte("-----BEGIN PUBLIC KEY-----\nnot base64\n-----END PUBLIC KEY-----\n"), 0o644)
	free := []string{"-http", "127.0.0.1:0", "-grpc", "127.0.0.1:0"}
	tests := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"-http", busy.Addr().String()}, nil, "-http " + busy.Addr().String() + ": address already in use"},
		{append(free[:2:2], "-grpc", busy.Addr().String()), nil, "-grpc " + busy.Addr().String() + ": address already in use"},
		{append(free, "-load", filepath.Join(dir, "missing.json")), nil, "-load: " + filepath.Join(dir, "missing.json") + ": no such file or directory"},
		{append(free, "-load", badJSON), nil, "-load " + badJSON + ": users[1] (id 1): duplicate id"},
		{append(free, "-load", repeatedKey), nil, "-load " + repeatedKey + `: users[0]: repeated key "Name" (byte 29)`},
		{append(free, "-load", loneSurrogate), nil, "-load " + loneSurrogate + `: users[1].name: unpaired surrogate escape \ud800 names no character (byte 65)`},
		{append(free, "-load", fifo), nil, "-load " + fifo + ": not a regular file"},
		{append(free, "-load", dir), nil, "-load " + dir + ": not a regular file"},
		{append(free, "-env", "staging"), nil, `-env must be development or production, not "staging"`},
		{append(free, "-repair"), nil, "-repair needs -data"},
		{append(free, "-pprof", "yes"), nil, `-pprof must be auto, on or off, not "yes"`},
		{append(free, "-public-url", "api.example.com"), nil, "-public-url must be an http or https URL"},
		{append(free, "-public-url", "https://api.example.com/?x=1"), nil, "-public-url must be an http or https URL"},
		{append(free, "-public-url", "ftp://api.example.com"), nil, "-public-url must be an http or https URL"},
		{append(free, "-public-url", "https://api.example.com/a b"), nil, "-public-url must be an http or https URL"},
		{append(free, "-public-url", "https://api.example.com/a{b}"), nil, "-public-url must be an http or https URL"},
		{append(free, "-jwt-secret", "short"), nil, "jwt: HS256 secret is 5 bytes; at least 32 are required (RFC 7518 section 3.2)"},
		{append(free, "-jwt-public-key", badPEM), nil, "jwt:"},
		{append(free, "-jwt-public-key", filepath.Join(dir, "none.pem")), nil, "-jwt-public-key: " + filepath.Join(dir, "none.pem") + ": no such file or directory"},
		{append(free, "-jwt-secret", testSecret, "-jwt-public-key", badPEM), nil, "-jwt-secret and -jwt-public-key exclude each other"},
		{append(free, "-stream-delay", "soon"), nil, `invalid value "soon" for flag -stream-delay`},
		{append(free, "-shutdown-timeout", "-1s"), nil, "-shutdown-timeout must not be negative"},
		{free, map[string]string{"QUARTET_SHUTDOWN_TIMEOUT": "-5s"}, "-shutdown-timeout must not be negative"},
		{free, map[string]string{"QUARTET_DEMO": "maybe"}, `invalid value "maybe" for QUARTET_DEMO`},
		{append(free, "-nope"), nil, "flag provided but not defined: -nope"},
		{append(free, "extra"), nil, `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		err := run(t.Context(), tt.args, envFrom(tt.env), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("run %v: err = %v, want one line containing %q", tt.args, err, tt.want)
		}
	}
}

func TestFlagsWinOverEnvironment(t *testing.T) {
	var out strings.Builder
	err := run(t.Context(), []string{"-h"}, envFrom(nil), &out, io.Discard)
	if !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "QUARTET_<NAME>") || !strings.Contains(out.String(), "-jwt-secret") {
		t.Errorf("-h: %v\n%s", err, out.String())
	}
	// The environment says production, the flag says development: the flag wins, so
	// the service starts (an invalid env value would have failed first).
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err = run(ctx, []string{"-http", "127.0.0.1:0", "-grpc", "127.0.0.1:0", "-env", "development"},
		envFrom(map[string]string{"QUARTET_ENV": "bogus"}), io.Discard, io.Discard)
	if err != nil {
		t.Errorf("flag did not win over QUARTET_ENV: %v", err)
	}
	err = run(ctx, []string{"-http", "127.0.0.1:0", "-grpc", "127.0.0.1:0"}, envFrom(map[string]string{"QUARTET_ENV": "bogus"}), io.Discard, io.Discard)
	if err == nil {
		t.Error("QUARTET_ENV was not read")
	}
}

// TestHelp: -h, for the service and for its token command, prints the usage on
// stdout and exits 0, as main runs it; the service's names the token command, and
// the token command's lists only the flags a token is signed with.
func TestHelp(t *testing.T) {
	if args, ok := os.LookupEnv("QUARTET_TEST_MAIN_ARGS"); ok { // the child below
		os.Args = append([]string{"quartet"}, strings.Fields(args)...)
		main()
		os.Exit(0)
	}
	signing := []string{"-jwt-audience", "-jwt-issuer", "-jwt-secret", "-jwt-secret-file", "-scope", "-sub", "-ttl"}
	for _, tc := range []struct {
		args      string
		want, not []string
	}{
		{"-h", []string{"quartet token [flags]", "-jwt-public-key", "-auth-reads", "-http"}, nil},
		{"token -h", signing, []string{"-jwt-public-key", "-auth-reads", "-http"}},
	} {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelp$")
		cmd.Env = append(os.Environ(), "QUARTET_TEST_MAIN_ARGS="+tc.args)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || stderr.Len() > 0 {
			t.Errorf("quartet %s: %v, stderr %q; want exit 0 and nothing on stderr", tc.args, err, stderr.String())
		}
		listed := regexp.MustCompile(`(?m)^  (-[a-z-]+)`).FindAllStringSubmatch(string(out), -1)
		flags := map[string]bool{}
		for _, m := range listed {
			flags[m[1]] = true
		}
		for _, f := range tc.want {
			if !flags[f] && !strings.Contains(string(out), f) {
				t.Errorf("quartet %s does not list %s:\n%s", tc.args, f, out)
			}
		}
		for _, f := range tc.not {
			if flags[f] {
				t.Errorf("quartet %s lists %s:\n%s", tc.args, f, out)
			}
		}
		if tc.args == "token -h" && len(flags) != len(signing) {
			t.Errorf("quartet token -h lists %d flags, want %d (%v):\n%s", len(flags), len(signing), signing, out)
		}
	}
}

func TestTokenCommand(t *testing.T) {
	var out strings.Builder
	err := run(t.Context(), []string{"token", "-sub", "alice", "-scope", "write", "-ttl", "10m"},
		envFrom(map[string]string{"QUARTET_JWT_SECRET": testSecret}), &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jwt.New(jwt.Config{Secret: []byte(testSecret)})
	if err != nil {
		t.Fatal(err)
	}
	c, err := v.Verify(strings.TrimSpace(out.String()))
	if err != nil || c.Subject != "alice" || !c.HasScope("write") || time.Until(c.Expiry) > 10*time.Minute {
		t.Errorf("token claims %+v, %v", c, err)
	}
	for _, args := range [][]string{{"token", "-sub", "a"}, {"token", "-jwt-secret", testSecret}, {"token", "-jwt-secret", "short", "-sub", "a"}} {
		if err := run(t.Context(), args, envFrom(nil), io.Discard, io.Discard); err == nil {
			t.Errorf("token %v succeeded", args)
		}
	}
}

func TestOpenStoreChoices(t *testing.T) {
	empty, err := openStore(config{demo: false}, slog.New(slog.DiscardHandler))
	if err != nil || len(empty.Users()) != 0 {
		t.Errorf("-demo=false: %d users, %v", len(empty.Users()), err)
	}
	file := filepath.Join(t.TempDir(), "d.json")
	os.WriteFile(file, []byte(`{"users":[{"id":3,"name":"Only","email":"only@example.com"}]}`), 0o644)
	loaded, err := openStore(config{demo: true, load: file}, slog.New(slog.DiscardHandler))
	if err != nil || len(loaded.Users()) != 1 || len(loaded.Products()) != 0 {
		t.Errorf("-load: %v users, %v", loaded.Users(), err)
	}
}

func TestRESTAuth(t *testing.T) {
	cfg := testConfig()
	cfg.jwt.secret = testSecret
	a, logs := startApp(t, cfg)
	base := "http://" + a.httpAddr
	do := func(method, path, token, body string) *http.Response {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	body := `{"name":"Zoe","email":"zoe@example.com"}`
	tests := []struct {
		method, path, auth string
		status             int
		challenge          string
	}{
		{"POST", "/api/users", "", 401, "Bearer"},
		{"POST", "/api/users", "Bearer garbage", 401, `Bearer error="invalid_token", error_description="token malformed: `},
		{"POST", "/api/users", "Basic abc", 401, `Bearer error="invalid_token", error_description="token malformed: authorization scheme is not Bearer"`},
		{"POST", "/api/users", "Bearer " + testToken(t, "read"), 403, `Bearer error="insufficient_scope", scope="write"`},
		{"POST", "/api/users", "Bearer " + testToken(t, "write"), 201, ""},
		{"PUT", "/api/users/1", "", 401, "Bearer"},
		{"PUT", "/api/users/1", "bearer " + testToken(t, "write"), 200, ""},
		{"DELETE", "/api/users/2", "Bearer " + testToken(t, "admin"), 403, `Bearer error="insufficient_scope"`},
		{"DELETE", "/api/users/2", "Bearer " + testToken(t, "admin write"), 204, ""},
		{"POST", "/api/users/1/orders", "", 401, "Bearer"},
		{"GET", "/api/users", "", 200, ""}, // reads stay open
		{"GET", "/api/users/1", "Bearer garbage", 200, ""},
		{"GET", "/api/users/1/orders", "", 200, ""},
	}
	for _, tt := range tests {
		resp := do(tt.method, tt.path, tt.auth, body)
		if resp.StatusCode != tt.status || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), tt.challenge) {
			t.Errorf("%s %s (%.20q): %d %q, want %d %q", tt.method, tt.path, tt.auth, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), tt.status, tt.challenge)
		}
		if tt.challenge == "" && resp.Header.Get("WWW-Authenticate") != "" {
			t.Errorf("%s %s: unexpected challenge %q", tt.method, tt.path, resp.Header.Get("WWW-Authenticate"))
		}
	}
	// The one log line per request names the authenticated caller (the token's sub).
	if !regexp.MustCompile(`method=POST path=/api/users status=201 .* sub=alice`).MatchString(logs.String()) {
		t.Errorf("no log line with the caller's subject:\n%s", logs)
	}
}

// TestSafeDefaults: a development service listens on this machine only; a production one
// everywhere, and without authentication it says so in its log and in /healthz.
func TestSafeDefaults(t *testing.T) {
	for env, want := range map[string]string{"development": "localhost", "production": ""} {
		if got := defaultListenHost(env); got != want {
			t.Errorf("defaultListenHost(%q) = %q, want %q", env, got, want)
		}
	}
	for _, tc := range []struct {
		args        []string
		wantWarning bool
	}{
		{[]string{"-env", "production"}, true},
		{[]string{"-env", "production", "-jwt-secret", "0123456789abcdef0123456789abcdef"}, false},
		{[]string{"-env", "development"}, false},
	} {
		r := runServing(t, append([]string{"-http", "127.0.0.1:0", "-grpc", "127.0.0.1:0"}, tc.args...), nil)
		logs := r.logs
		resp, err := http.Get("http://" + r.httpAddr + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]string
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if runErr := r.shutdown(); err != nil || runErr != nil {
			t.Fatalf("%v: healthz decode %v, run %v", tc.args, err, runErr)
		}
		if got := body["warning"] == openInProductionWarning; got != tc.wantWarning || body["status"] != "ok" {
			t.Errorf("%v: /healthz = %v, want the warning: %v", tc.args, body, tc.wantWarning)
		}
		if got := strings.Contains(logs.String(), "level=WARN msg=\""+openInProductionWarning); got != tc.wantWarning {
			t.Errorf("%v: warning logged %v, want %v:\n%s", tc.args, got, tc.wantWarning, logs)
		}
	}
}
