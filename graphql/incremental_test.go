package graphql

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"quartet/internal/testkit"
)

// incrementalText renders what ExecuteIncremental gives for req, in format f:
// the initial result, then each payload, one a line; or the one answer.
func incrementalText(t *testing.T, s *Schema, req Request, f incrementalFormat) string {
	t.Helper()
	in := s.ExecuteIncremental(context.Background(), req)
	if len(in.Pending) == 0 { // answered in one piece, as the transport does
		return string(in.Initial.appendJSON(nil)) + "\n"
	}
	out := append(in.appendInitial(nil, f), '\n')
	for p := in.Next(); p != nil; p = in.Next() {
		out = append(p.appendJSON(out, f), '\n')
	}
	return string(out)
}

// TestIncrementalGolden runs every testdata/incremental/NAME.graphql (with
// variables from NAME.vars.json) and compares its results in both formats
// with NAME.golden.
func TestIncrementalGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "incremental", "*.graphql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			s, _ := newTestSchema(t)
			req := goldenRequest(t, file)
			got := "# 2022-08-24\n" + incrementalText(t, s, req, format20220824) +
				"# v0.2\n" + incrementalText(t, s, req, formatV02)
			testkit.CheckGolden(t, strings.TrimSuffix(file, ".graphql")+".golden", []byte(got))
		})
	}
}

// TestIncrementalFlat checks that Execute, which answers in one piece (the
// WebSocket, batches), runs @defer and @stream as if they were absent.
func TestIncrementalFlat(t *testing.T) {
	s, _ := newTestSchema(t)
	deferred := s.Execute(context.Background(), Request{Query: `{ users @stream { id ... @defer { name } } }`})
	plain := s.Execute(context.Background(), Request{Query: `{ users { id name } }`})
	if got, want := string(deferred.appendJSON(nil)), string(plain.appendJSON(nil)); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestIncrementalBoundsWholeOperation checks that the response-size bound
// counts every part, and that the cost and depth count deferred fragments.
func TestIncrementalBoundsWholeOperation(t *testing.T) {
	s, _ := newTestSchema(t)
	query := `{ users { id ... @defer { name email } } }`
	initial := s.ExecuteIncremental(context.Background(), Request{Query: query}).Initial
	held := 3 * partBytes([]pathSeg{{key: "users", index: -1}, {index: 0}}) // a user's part, held back
	s.Limits.MaxResponseBytes = len(initial.Data) + held + 1                // the initial result fits, not the first part
	got := incrementalText(t, s, Request{Query: query}, formatV02)
	if n := strings.Count(got, "\n"); n != 2 || !strings.Contains(got, `{"completed":[{"id":"0","errors":[{"message":"The response is larger than the limit of`) || !strings.HasSuffix(got, `"hasNext":false}`+"\n") {
		t.Errorf("want the initial result, then the first part refused for its size, ending the answer; got\n%s", got)
	}

	costOf := func(q string) int {
		p := s.prepare(q)
		if p.errs != nil {
			t.Fatal(p.errs)
		}
		op, _ := selectOperation(p.doc, "")
		return s.operationCost(p, op, nil)
	}
	if d, f := costOf(`{ users { id ... @defer { posts { title } } } }`), costOf(`{ users { id posts { title } } }`); d != f {
		t.Errorf("cost with @defer %d, without %d: want the same", d, f)
	}

	s.Limits.MaxDepth = 2
	in := s.ExecuteIncremental(context.Background(), Request{Query: `{ users { ... @defer { posts { title } } } }`})
	if in.Initial.Data != nil || len(in.Pending) != 0 || !strings.Contains(in.Initial.Errors[0].Message, "depth") {
		t.Errorf("a deferred field past the depth limit: got %s, want the operation refused", in.Initial.appendJSON(nil))
	}
}

// TestMultipartPartsArriveOneByOne reads the first part of an answer while
// the deferred fragment's resolver is still blocked, so before the handler
// can have written the last: each part is flushed as written.
func TestMultipartPartsArriveOneByOne(t *testing.T) {
	s, _ := newTestSchema(t)
	entered, release := make(chan struct{}), make(chan struct{})
	s.SetResolver("Query", "echo", func(p ResolveParams) (any, error) {
		close(entered)
		<-release
		return p.Args["text"], nil
	})
	ts := httptest.NewServer(NewHandler(s))
	defer ts.Close()
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		t.Run(method, func(t *testing.T) {
			entered, release = make(chan struct{}), make(chan struct{})
			query := `{ user(id: 1) { name } ... @defer { echo(text: "late") } }`
			req, _ := http.NewRequest(method, ts.URL+"?query="+strings.ReplaceAll(query, " ", "%20"), nil)
			if method == http.MethodPost {
				req, _ = http.NewRequest(method, ts.URL, strings.NewReader(`{"query":`+jsonText(query)+`}`))
				req.Header.Set("Content-Type", "application/json")
			}
			req.Header.Set("Accept", "multipart/mixed;deferSpec=20220824")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			for k, want := range map[string]string{"Cache-Control": "no-cache", "X-Accel-Buffering": "no", "Content-Type": `multipart/mixed; boundary="-"; deferSpec=20220824`} {
				if got := resp.Header.Get(k); got != want {
					t.Errorf("%s: %q, want %q", k, got, want)
				}
			}
			r := bufio.NewReader(resp.Body)
			first := readPart(t, r) // the delimiter before the first part
			first = readPart(t, r)
			<-entered // the deferred resolver runs, and waits on the test
			if want := `{"data":{"user":{"name":"Alice"}},"hasNext":true}`; !strings.HasSuffix(first, want) {
				t.Errorf("first part %q, want it to end with %s", first, want)
			}
			close(release)
			rest, _ := io.ReadAll(r)
			if want := `{"incremental":[{"data":{"echo":"late"},"path":[]}],"hasNext":false}` + "\r\n-----\r\n"; !strings.HasSuffix(string(rest), want) {
				t.Errorf("rest %q, want it to end with %q", rest, want)
			}
		})
	}
}

// readPart reads up to and past the next delimiter, and returns what came
// before it.
func readPart(t testing.TB, r *bufio.Reader) string {
	t.Helper()
	var b bytes.Buffer
	for !bytes.HasSuffix(b.Bytes(), []byte("\r\n---")) {
		c, err := r.ReadByte()
		if err != nil {
			t.Fatalf("after %q: %v", b.Bytes(), err)
		}
		b.WriteByte(c)
	}
	return strings.TrimSuffix(b.String(), "\r\n---")
}

// TestMultipartFormat checks which Accept gives which format.
func TestMultipartFormat(t *testing.T) {
	for accept, want := range map[string]incrementalFormat{
		"":                                      noIncremental,
		"application/json":                      noIncremental,
		"*/*":                                   noIncremental,
		"multipart/mixed":                       format20220824,
		`multipart/mixed; deferSpec="20220824"`: format20220824,
		"multipart/mixed;deferSpec=20220824,application/graphql-response+json,application/json;q=0.9":   format20220824,
		"multipart/mixed;incrementalSpec=v0.2,application/graphql-response+json,application/json;q=0.9": formatV02,
		"multipart/mixed;deferSpec=20220824;q=0.5, multipart/mixed;incrementalSpec=v0.2":                formatV02,
		"multipart/mixed;deferSpec=19990101":                                                            noIncremental,
		"multipart/mixed;subscriptionSpec=1.0":                                                          noIncremental,
		"multipart/mixed;q=0":                                                                           noIncremental,
	} {
		if got := multipartFormat(acceptRanges(accept)); got != want {
			t.Errorf("%q: format %d, want %d", accept, got, want)
		}
	}
}

// refuseAnswersPast refuses an answer claim past its bytes.
type refuseAnswersPast int64

func (r refuseAnswersPast) ClaimAnswer(n int64) error {
	if n > int64(r) {
		return errors.New("too many answer bytes wait for this client's reading")
	}
	return nil
}

// TestIncrementalStopped: an execution stopped by its answer claim or by
// MaxResponseBytes says which stopped it, in the initial result (which then
// holds nothing back) or in the payload it stopped in, its last field
// counted as much as the others.
func TestIncrementalStopped(t *testing.T) {
	const size = 200 << 10
	refused := `{"errors":[{"message":"Too many answer bytes wait for this client's reading.","extensions":{"code":"TOO_MANY_REQUESTS"}}]}` + "\n"
	partRefused := `{"incremental":[{"data":null,"path":[],"errors":[{"message":"Too many answer bytes wait for this client's reading.","extensions":{"code":"TOO_MANY_REQUESTS"}}]}],"hasNext":false}` + "\n"
	tooLarge := `{"errors":[{"message":"The response is larger than the limit of 1000 bytes; execution was stopped.","extensions":{"code":"RESPONSE_TOO_LARGE","maxResponseBytes":1000}}],"data":null}` + "\n"
	for _, c := range []struct {
		query    string
		maxBytes int
		want     string
	}{
		{`{ ... @defer { d: echo } a: echo b: echo }`, 0, refused},
		{`{ user(id: 1) { id ... @defer { name } } echo }`, 0, refused},
		{`{ users @stream(initialCount: 1) { id } echo }`, 0, refused},
		{`{ user(id: 1) { id } ... @defer { echo } }`, 0, `{"data":{"user":{"id":1}},"hasNext":true}` + "\n" + partRefused},
		{`{ user(id: 1) { id } echo }`, 1000, tooLarge},
	} {
		s, _ := newTestSchema(t)
		s.SetResolver("Query", "echo", func(ResolveParams) (any, error) { return strings.Repeat("x", size), nil })
		s.Limits.MaxResponseBytes = c.maxBytes
		in := s.ExecuteIncremental(WithAnswerClaim(context.Background(), refuseAnswersPast(size/2)), Request{Query: c.query})
		got := string(in.Initial.appendJSON(nil)) + "\n"
		if len(in.Pending) > 0 {
			got = string(in.appendInitial(nil, format20220824)) + "\n"
		}
		for p := in.Next(); p != nil; p = in.Next() {
			got += string(p.appendJSON(nil, format20220824)) + "\n"
		}
		if got != c.want {
			t.Errorf("%s:\n got %.400s\nwant %s", c.query, got, c.want)
		}
	}
}
