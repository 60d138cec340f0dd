package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"quartet/internal/jsonkeys"
	"quartet/internal/testkit"
)

// usersNamed builds users with ids 1..n in order, named by names and emails.
func usersNamed(names ...string) []User {
	out := make([]User, len(names))
	for i, n := range names {
		out[i] = User{ID: int64(i + 1), Name: n, Email: fmt.Sprintf("%s@example.com", n), CreatedAt: fixedTime}
	}
	return out
}

func TestUserPage(t *testing.T) {
	store := NewStore()
	if err := store.Load(&Dataset{Users: usersNamed("dan", "Ann", "bob", "anna", "Carl", "ann")}); err != nil {
		t.Fatal(err)
	}
	ids := func(items []*User) []int64 {
		out := []int64{}
		for _, u := range items {
			out = append(out, u.ID)
		}
		return out
	}
	tests := []struct {
		query          string
		wantIDs        []int64
		wantTotal      int
		wantTotalPages int
	}{
		{"page=1", []int64{1, 2, 3, 4, 5, 6}, 6, 1},
		{"pageSize=4", []int64{1, 2, 3, 4}, 6, 2},
		{"pageSize=4&page=2", []int64{5, 6}, 6, 2},
		{"pageSize=4&page=3", []int64{}, 6, 2},        // past the end: empty, not an error
		{"pageSize=3&page=2", []int64{4, 5, 6}, 6, 2}, // exact division
		{"pageSize=1&page=6", []int64{6}, 6, 6},       // last page
		{"pageSize=100&page=1", []int64{1, 2, 3, 4, 5, 6}, 6, 1},
		{"sortBy=name", []int64{2, 6, 4, 3, 5, 1}, 6, 1}, // case-insensitive, ties by id
		{"sortBy=NAME&pageSize=2&page=2", []int64{4, 3}, 6, 3},
		{"sortBy=email", []int64{2, 6, 4, 3, 5, 1}, 6, 1},
		{"sortBy=id", []int64{1, 2, 3, 4, 5, 6}, 6, 1},
		{"search=ann", []int64{2, 4, 6}, 3, 1},
		{"search=ANN&sortBy=name&pageSize=2", []int64{2, 6}, 3, 2}, // search, then sort, then count, then page
		{"search=ann&sortBy=name&pageSize=2&page=2", []int64{4}, 3, 2},
		{"search=zzz", []int64{}, 0, 0},
		{"search=example.com&pageSize=5&page=2", []int64{6}, 6, 2}, // email matches too
		{"page=2147483647&pageSize=100", []int64{}, 6, 1},          // no overflow
	}
	for _, tt := range tests {
		q, _ := url.ParseQuery(tt.query)
		uq, paged, err := parseUserQuery(q)
		if err != nil || !paged {
			t.Fatalf("%s: parse: paged=%v err=%v", tt.query, paged, err)
		}
		items, total := store.UserPage(uq)
		pages := (total + uq.PageSize - 1) / uq.PageSize
		if !slices.Equal(ids(items), tt.wantIDs) || total != tt.wantTotal || pages != tt.wantTotalPages {
			t.Errorf("%s: got ids %v total %d pages %d; want %v %d %d", tt.query, ids(items), total, pages, tt.wantIDs, tt.wantTotal, tt.wantTotalPages)
		}
	}
	// The orders follow updates and deletes.
	dan := "Zed"
	store.UpdateUser(1, UserPatch{Name: &dan})
	store.DeleteUser(2)
	items, _ := store.UserPage(UserQuery{SortBy: "name", Page: 1, PageSize: 10})
	if got := ids(items); !slices.Equal(got, []int64{6, 4, 3, 5, 1}) {
		t.Errorf("after rename and delete: name order %v", got)
	}
}

func TestParseUserQueryForms(t *testing.T) {
	tests := []struct {
		query   string
		paged   bool
		wantErr bool
	}{
		{"", false, false},
		{"search=", false, false}, // an empty search is absent
		{"other=1", false, false},
		{"sortBy=", true, false},
		{"PAGE=2", true, false},
		{"page=0", true, true},
		{"page=x", true, true},
		{"pageSize=101", true, true},
		{"pageSize=0", true, true},
		{"page=1&Page=2", true, true},
	}
	for _, tt := range tests {
		q, _ := url.ParseQuery(tt.query)
		_, paged, err := parseUserQuery(q)
		if paged != tt.paged || (err != nil) != tt.wantErr {
			t.Errorf("%q: paged=%v err=%v; want paged=%v err=%v", tt.query, paged, err, tt.paged, tt.wantErr)
		}
	}
}

// userBodySeeds are user bodies, well-formed and not.
var userBodySeeds = []string{
	`{"name":"Ann Lee","email":"ann@example.com"}`, ` {"name" : "A" , "email":"a@x.io" } `, `null`, `{}`, `[]`, `"x"`, ``,
	`{"id":7,"name":"A"}`, `{"ID":7,"NAME":"A","Email":"e"}`, `{"name":"a","name":"b"}`, `{"name":null,"email":null,"id":null}`,
	`{"name":1}`, `{"id":"7"}`, `{"id":1.5}`, `{"id":1e2}`, `{"id":-0}`, `{"id":99999999999999999999}`, `{"id":01}`,
	`{"name":"caf\u00e9 \ud83d\ude00\n"}`, `{"name":"\ud800"}`, "{\"name\":\"\xff\"}", `{"name":"a\x"}`,
	`{"name":"a","extra":{"deep":[1,2,{"x":null}]},"more":true}`, `{"extra":[1,]}`, `{"name":"a"} x`, `{"name":"a"} {}`,
	`{"name":"a"`, `{"name":"a",}`, `{"nameſ":"x"}`, `{"ſ":1}`, `{"emaiſ":"x"}`, `{"name":"a"}` + "\n\t ",
	// Repeated keys, known and not, in other cases and spellings.
	`{"name":"a","Name":"b"}`, `{"x":1,"x":2}`, `{"x":{"y":1,"y":2}}`, `{"x":{"y":1,"Y":2}}`, `{"name":"a","x":1,"X":2}`,
	`{"\u006eame":"a","name":"b"}`, `{"k":1,"\u212a":2}`, `{"\u0078":1,"x":2}`, `{"x":[{"a":1,"a":2}],"name":"a"}`,
	`{"a":1,"b":2,"c":3,"d":4,"e":5,"name":"z"}`, `{"id":1,"name":"Ann","email":"ann@example.com","createdAt":"2024-01-05T09:00:00Z"}`,
	// Nesting to jsonkeys.MaxDepth and past it; surrogate escapes, paired and not.
	`{"name":"a","x":` + nestedBody(jsonkeys.MaxDepth-1) + `}`, `{"name":"a","x":` + nestedBody(jsonkeys.MaxDepth) + `}`,
	nestedBody(12000), `{"name":"\ud83d\ude00\udc00"}`, `{"name":"\\ud800","email":"\\\udbff"}`,
}

// checkUserBody holds the REST body decoder to its reference: encoding/json, with
// a repeated key (case-folded in the outermost object), invalid UTF-8, nesting
// deeper than jsonkeys.MaxDepth and an unpaired surrogate escape (by testkit's
// references) errors.
// decodeBody fails exactly when the reference does, for user and order bodies, and
// gives the reference's values.
func checkUserBody(t *testing.T, data []byte) {
	t.Helper()
	_, dup := errors.AsType[*jsonkeys.Error](jsonkeys.Check(data))
	var want userBody
	err := decodeOneJSONValue(bytes.NewReader(data), &want)
	if dup {
		err = errors.New("duplicate key")
	}
	if err == nil && testkit.JSONDepth(data) > jsonkeys.MaxDepth {
		err = errors.New("nested too deeply")
	}
	if err == nil && testkit.HasLoneSurrogate(data) { // data is one valid value
		err = errors.New("unpaired surrogate escape")
	}
	if !utf8.Valid(data) {
		err = errors.New("invalid UTF-8")
	}
	var got userBody
	if gotErr := decodeBody(data, &got); (gotErr != nil) != (err != nil) || err == nil && got != want {
		t.Fatalf("%q: decodeBody gives %+v, %v; want %+v, %v", data, got, gotErr, want, err)
	}
	var order NewOrder
	if orderErr := decodeBody(data, &order); dup && orderErr == nil {
		t.Fatalf("%q: an order body with a repeated key was accepted", data)
	}
}

func TestUserBodyDecoding(t *testing.T) {
	for _, seed := range userBodySeeds {
		checkUserBody(t, []byte(seed))
	}
	var b userBody // a user as GET answers it, sent back with PUT
	if err := decodeBody([]byte(`{"id":1,"name":"Ann","email":"ann@example.com","createdAt":"2024-01-05T09:00:00Z"}`), &b); err != nil ||
		b != (userBody{ID: 1, Name: "Ann", Email: "ann@example.com"}) {
		t.Errorf("a user as GET answers it: %+v, %v", b, err)
	}
	for _, dup := range []string{`{"name":"a","Name":"b"}`, `{"x":1,"X":2}`, `{"k":1,"\u212a":2}`, `{"x":[{"a":1,"a":2}]}`} {
		if err := decodeBody([]byte(dup), &b); err == nil {
			t.Errorf("%s: a repeated key was accepted", dup)
		}
	}
}

// FuzzUserBodyJSON holds the REST body decoder to checkUserBody's reference.
func FuzzUserBodyJSON(f *testing.F) {
	for _, seed := range userBodySeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkUserBody(t, data) })
}

// userQuerySeeds are user list query strings, well-formed and not.
var userQuerySeeds = []string{
	"", "page=1", "page=%zz", "page=1;pageSize=2", "search=%41%42", "search=a%2", "page=1&page=2",
	"PAGE=1&page=2", "pageSize=100&sortBy=NAME", "sortBy=email&search=", "%", "a=%g0", "x=1&&y=2", "page=+1",
}

// checkUserQuery holds the user list's query parsing to its rules: a %-escape that is
// not two hex digits, or a ';', makes the query an error; a repeated parameter
// (names matched case-insensitively) too; an accepted page is within its bounds.
func checkUserQuery(t *testing.T, raw string) {
	t.Helper()
	q, err := restQuery(raw)
	badEscape := false
	for i := 0; i < len(raw); i++ {
		if raw[i] == '%' && (i+2 >= len(raw) || !isHex(raw[i+1]) || !isHex(raw[i+2])) {
			badEscape = true
		}
	}
	if (badEscape || strings.Contains(raw, ";")) && err == nil {
		t.Fatalf("%q: a query string that does not decode was accepted", raw)
	}
	if err != nil {
		return
	}
	uq, paged, err := parseUserQuery(q)
	if err != nil {
		return
	}
	counts := map[string]int{}
	for key, vals := range q {
		counts[strings.ToLower(key)] += len(vals)
	}
	for _, name := range []string{"page", "pagesize", "search", "sortby"} {
		if counts[name] > 1 {
			t.Fatalf("%q: repeated parameter %s was accepted", raw, name)
		}
	}
	if paged && (uq.Page < 1 || uq.PageSize < 1 || uq.PageSize > maxPageSize) {
		t.Fatalf("%q: accepted out-of-bounds page %d size %d", raw, uq.Page, uq.PageSize)
	}
}

func isHex(c byte) bool { return strings.IndexByte("0123456789abcdefABCDEF", c) >= 0 }

func TestUserQueryStrict(t *testing.T) {
	for _, raw := range userQuerySeeds {
		checkUserQuery(t, raw)
	}
	for _, raw := range []string{"page=%zz", "page=1;pageSize=2", "page=1&Page=2", "%"} {
		q, err := restQuery(raw)
		if err == nil {
			_, _, err = parseUserQuery(q)
		}
		if err == nil {
			t.Errorf("%q: accepted", raw)
		}
	}
}

// FuzzUserQuery checks the user list's query parsing against checkUserQuery's rules.
func FuzzUserQuery(f *testing.F) {
	for _, seed := range userQuerySeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) { checkUserQuery(t, raw) })
}

// BenchmarkDecodeUserBody measures decodeJSON on POST /api/users bodies, a typical
// one and one with a key the service ignores, with what the strict checks cost.
func BenchmarkDecodeUserBody(b *testing.B) {
	for _, c := range []struct{ name, body string }{
		{"typical", `{"name":"Ann Lee","email":"ann.lee@example.com"}`},
		{"extraKey", `{"name":"Ann Lee","email":"ann.lee@example.com","role":"admin"}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			header := http.Header{"Content-Type": {"application/json"}}
			w := &discardResponse{header: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				r := &http.Request{Method: "POST", Header: header, Body: io.NopCloser(strings.NewReader(c.body)), ContentLength: int64(len(c.body))}
				var u userBody
				if !decodeJSON(w, r, "application/json", &u) {
					b.Fatal("refused")
				}
			}
		})
	}
}

// TestUserListIsEncodingJSON checks the plain user list, streamed a chunk at a time,
// against encoding/json's encoding of the whole list: several chunks, and names that
// escape (HTML characters, quotes, a backslash) or are not ASCII.
func TestUserListIsEncodingJSON(t *testing.T) {
	users := make([]User, 3000)
	for i := range users {
		users[i] = User{ID: int64(i + 1), Name: fmt.Sprintf(`O'Brien <%d> & "Zoë" \ 日本`, i), Email: fmt.Sprintf("z%d@example.com", i), CreatedAt: fixedTime}
	}
	store := NewStore()
	if err := store.Load(&Dataset{Users: users}); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(newTestServer(t, store).URL + "/api/users")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	want, _ := json.Marshal(store.Users())
	if len(got) < 3*responseChunk || !bytes.Equal(got, append(want, '\n')) {
		t.Fatalf("the list (%d bytes) is not encoding/json's (%d bytes)", len(got), len(want)+1)
	}
}

// nestedBody is a body of levels objects, each the only member of the one around it:
// {"a":{"a":...1...}}.
func nestedBody(levels int) string {
	return strings.Repeat(`{"a":`, levels) + "1" + strings.Repeat("}", levels)
}

// BenchmarkDecodeNestedBody measures the refusal of a 1 MiB POST /api/users body of
// objects nested about 175,000 deep: what it allocates is bounded by
// jsonkeys.MaxDepth, not by the body's levels (TestNestedBodyAllocatesLittle).
func BenchmarkDecodeNestedBody(b *testing.B) {
	body := nestedBody((maxBodyBytes - 1) / len(`{"a":}`))
	header := http.Header{"Content-Type": {"application/json"}}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		w := &discardResponse{header: http.Header{}}
		r := &http.Request{Method: "POST", Header: header, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body))}
		var u userBody
		if decodeJSON(w, r, "application/json", &u) || w.status != http.StatusBadRequest {
			b.Fatalf("a nested body was not refused with 400 (status %d)", w.status)
		}
	}
}

// TestNestedBodyAllocatesLittle: a 1 MiB body of objects nested 175,000 deep is
// refused with 400, allocating little beyond the body itself. Without the nesting
// bound its duplicate-key check made a frame and a map for every level: 88 MB.
func TestNestedBodyAllocatesLittle(t *testing.T) {
	body := nestedBody((maxBodyBytes - 1) / len(`{"a":}`))
	header := http.Header{"Content-Type": {"application/json"}}
	w := &discardResponse{header: http.Header{}}
	accepted := false
	n := testkit.BytesAllocated(func() {
		r := &http.Request{Method: "POST", Header: header, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body))}
		var u userBody
		accepted = decodeJSON(w, r, "application/json", &u)
	})
	if accepted || w.status != http.StatusBadRequest {
		t.Fatalf("a nested body: accepted %v, status %d; want 400", accepted, w.status)
	}
	if limit := uint64(len(body) + 128<<10); n > limit { // the body read, and a little
		t.Errorf("refusing a %d-byte nested body allocated %d bytes; want at most %d", len(body), n, limit)
	}
}
