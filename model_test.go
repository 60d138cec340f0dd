package main

import (
	"net/mail"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/grpc/codes"

	"quartet/userpb"
)

// TestTextRules holds the text fields' rules: what a one-line field and a free-text
// field refuse, and what they keep.
func TestTextRules(t *testing.T) {
	tests := []struct {
		name  string
		rule  textRule
		value string
		want  string // "" accepted, else a substring of the refusal
	}{
		{"plain", nameRule, "Zoe Lee", ""},
		{"accents", nameRule, "José Müller", ""},
		{"right-to-left with marks", nameRule, "محمد\u200f 2", ""},
		{"emoji with joiners", nameRule, "👨\u200d👩\u200d👧", ""},
		{"inner zero-width joiner", nameRule, "a\u200db", ""},
		{"100 characters", nameRule, strings.Repeat("é", 100), ""},
		{"101 characters", nameRule, strings.Repeat("é", 101), "at most 100"},
		{"101 ASCII characters", nameRule, strings.Repeat("a", 101), "at most 100"},
		{"empty", nameRule, "", "is required"},
		{"NUL", nameRule, "Zo\x00e", "control characters"},
		{"ESC", nameRule, "\x1b[31mZoe", "control characters"},
		{"BEL", nameRule, "Zoe\a", "control characters"},
		{"DEL", nameRule, "Zoe\x7f", "control characters"},
		{"C1 NEL", nameRule, "Zoe\u0085x", "control characters"},
		{"C1 CSI", nameRule, "Zoe\u009b", "control characters"},
		{"line feed", nameRule, "Zoe\nAdmin", "single line"},
		{"carriage return", nameRule, "Zoe\rAdmin", "control characters"},
		{"tab", nameRule, "Zoe\tLee", "single line"},
		{"line separator", nameRule, "Zoe\u2028Lee", "single line"},
		{"right-to-left override", nameRule, "Zoe\u202egpj.exe", "bidirectional"},
		{"left-to-right embedding", nameRule, "\u202aZoe", "bidirectional"},
		{"first strong isolate", nameRule, "Zoe\u2068x\u2069", "bidirectional"},
		{"invalid UTF-8", nameRule, "Zo\xffe", "valid UTF-8"},
		{"zero-width space only", nameRule, "\u200b", "visible character"},
		{"invisible mix only", nameRule, "\u200b\u200c\u200d\u2060\ufeff\u00ad \u00a0\u3164", "visible character"},
		{"marks only", nameRule, "\u200e\u200f", "visible character"},
		{"variation selector only", nameRule, "\ufe0f", "visible character"},
		{"email with control", emailRule, "a\x00@example.com", "control characters"},
		{"title bidi", titleRule, "Hello \u202e", "bidirectional"},
		{"title 200", titleRule, strings.Repeat("t", 200), ""},
		{"title 201", titleRule, strings.Repeat("t", 201), "at most 200"},
		{"content lines and tabs", contentRule, "line 1\n\tline 2\u2028", ""},
		{"content empty", contentRule, "", ""},
		{"content invisible only", contentRule, "\u200b", ""},
		{"content ESC", contentRule, "x\x1b[2J", "control characters"},
		{"content CR", contentRule, "a\r\nb", "control characters"},
		{"content NUL", contentRule, "a\x00", "control characters"},
		{"content bidi", contentRule, "a\u2067b", "bidirectional"},
		{"content invalid UTF-8", contentRule, "\xc3", "valid UTF-8"},
		{"comment empty", commentRule, "", "is required"},
		{"comment zero-width only", commentRule, "\u200b\n\u200b", "visible character"},
		{"comment lines", commentRule, "nice\npost", ""},
		{"category empty", categoryRule, "", ""},
		{"category newline", categoryRule, "a\nb", "single line"},
		// Noncharacters, in every field.
		{"U+FFFE", nameRule, "Zoe\ufffe", "noncharacters"},
		{"U+FFFF", contentRule, "a\uffffb", "noncharacters"},
		{"U+FDD0", nameRule, "\ufdd0Zoe", "noncharacters"},
		{"U+FDEF", commentRule, "nice \ufdef", "noncharacters"},
		{"U+1FFFE", titleRule, "Title \U0001fffe", "noncharacters"},
		{"U+10FFFF", contentRule, "\U0010ffff", "noncharacters"},
		{"U+EFFFF", categoryRule, "\U000effff", "noncharacters"},
		{"next to noncharacters", nameRule, "\ufdcf\ufdf0\ufffd\ufffc\U0001fffd\U00010000", ""},
		// Tag characters: none in a one-line field; in free text only a flag's sequence.
		{"tags in a name", nameRule, "Zoe\U000e0041\U000e0064\U000e006d\U000e0069\U000e006e", "tag characters"},
		{"tags only", nameRule, "\U000e0061\U000e007f", "tag characters"},
		{"language tag", nameRule, "Zoe\U000e0001", "tag characters"},
		{"flag in a name", nameRule, "Zoe \U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f", "tag characters"},
		{"flag in a title", titleRule, "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f Trip", "tag characters"},
		{"flag in a comment", commentRule, "go \U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f!", ""},
		{"two flags in content", contentRule, "\U0001f3f4\U000e0067\U000e0062\U000e0077\U000e006c\U000e0073\U000e007f\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f", ""},
		{"hidden text in a comment", commentRule, "nice\U000e0069\U000e0067\U000e006e\U000e006f\U000e0072\U000e0065", "tag characters"},
		{"tags after a letter", contentRule, "a\U000e0067\U000e0062\U000e007f", "tag characters"},
		{"flag tags not ended", contentRule, "\U0001f3f4\U000e0067\U000e0062 x", "tag characters"},
		{"flag tags at the end", contentRule, "\U0001f3f4\U000e0067\U000e0062", "tag characters"},
		{"cancel tag alone", contentRule, "\U0001f3f4\U000e007f", "tag characters"},
		{"language tag in content", contentRule, "\U0001f3f4\U000e0001\U000e007f", "tag characters"},
		{"black flag alone", nameRule, "\U0001f3f4", ""},
		// Combining marks draw nothing without a letter to sit on.
		{"one combining mark", nameRule, "\u0301", "visible character"},
		{"combining marks only", nameRule, "\u0301\u0308\u20dd", "visible character"},
		{"spacing mark only", nameRule, "\u093e", "visible character"},
		{"marks after invisibles", nameRule, "\u200b\u0301 \u0327", "visible character"},
		{"marks on a letter", nameRule, "e\u0301\u0327", ""},
		{"comment of marks", commentRule, "\u0301\n\u0301", "visible character"},
		{"content of marks", contentRule, "\u0301", ""},
	}
	for _, tt := range tests {
		got := tt.rule.check(tt.value)
		if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q gives %q, want %q", tt.name, tt.value, got, tt.want)
		}
	}
}

// TestEmailLengthInCharacters: an e-mail may have 254 characters (CONTRACT.md section
// 1), however many bytes they take.
func TestEmailLengthInCharacters(t *testing.T) {
	for _, tt := range []struct {
		email string
		ok    bool
	}{
		{strings.Repeat("ä", 125) + "@b.co", true}, // 130 characters, 255 bytes
		{strings.Repeat("ä", 249) + "@b.co", true}, // 254 characters
		{strings.Repeat("ä", 250) + "@b.co", false},
		{strings.Repeat("a", 249) + "@b.co", true},
		{strings.Repeat("a", 250) + "@b.co", false},
	} {
		_, _, err := validateUser("Zoe", tt.email)
		if tt.ok && err != nil || !tt.ok && (err == nil || !strings.Contains(err.Error(), "at most 254 characters")) {
			t.Errorf("%d characters, %d bytes: %v", utf8.RuneCountInString(tt.email), len(tt.email), err)
		}
	}
}

// TestTextRulesOnEverySurface writes a bad name, title and text through the store's
// writes, which every surface calls, and through gRPC CreateUsers and a dataset:
// each is refused per field and nothing is stored.
func TestTextRulesOnEverySurface(t *testing.T) {
	s := newTestStore(t)
	users, posts, comments, orders := len(s.Users()), len(s.Posts()), len(s.Comments()), len(s.Orders())
	wantField := func(what string, err error, field, msg string) {
		t.Helper()
		e, ok := err.(*Error)
		if !ok || e.Kind != KindInvalid || len(e.Fields[field]) == 0 || !strings.Contains(e.Fields[field][0], msg) {
			t.Errorf("%s: %v, want a %s error %q", what, err, field, msg)
		}
	}
	_, err := s.CreateUser("Zoe\u202e", "zoe@example.com")
	wantField("CreateUser", err, "name", "bidirectional")
	_, err = s.CreateUsers([]NewUser{{"Ok", "ok@example.com"}, {"\u200b", "z@example.com"}})
	wantField("CreateUsers", err, "name", "visible character")
	_, err = s.UpdateUser(1, UserPatch{Name: new("Ann\x1b[0m")})
	wantField("UpdateUser", err, "name", "control characters")
	_, err = s.CreatePost(1, "Title\nInjected: header", "")
	wantField("CreatePost title", err, "title", "single line")
	_, err = s.CreatePost(1, "Title", "body\x07")
	wantField("CreatePost content", err, "content", "control characters")
	_, err = s.AddComment(1, 1, "\u2060")
	wantField("AddComment", err, "text", "visible character")
	_, err = s.CreateOrder(1, NewOrder{ProductID: 1, Quantity: 1, CustomerName: "x\x00"})
	wantField("CreateOrder", err, "customerName", "control characters")
	_, err = s.CreateUser("Zoe\U000e0041\U000e0042", "zoe@example.com")
	wantField("CreateUser tags", err, "name", "must not contain tag characters")
	_, err = s.UpdateUser(1, UserPatch{Name: new("Ann\uffff")})
	wantField("UpdateUser noncharacter", err, "name", "must not contain Unicode noncharacters")
	_, err = s.CreateUsers([]NewUser{{"\u0301", "z@example.com"}})
	wantField("CreateUsers combining mark", err, "name", "must contain a visible character")
	_, err = s.AddComment(1, 1, "x\U000e0078")
	wantField("AddComment tags", err, "text", "tag characters outside a flag's emoji tag sequence")
	_, err = s.CreateOrder(1, NewOrder{ProductID: 1, Quantity: 1, CustomerName: "\u0308\u0308"})
	wantField("CreateOrder combining marks", err, "customerName", "must contain a visible character")
	if len(s.Users()) != users || len(s.Posts()) != posts || len(s.Comments()) != comments || len(s.Orders()) != orders {
		t.Error("a refused write stored something")
	}
	if u, _ := s.User(1); u.Name != "Alice Johnson" {
		t.Errorf("user 1 changed to %q", u.Name)
	}

	for _, tt := range []struct{ name, json, want string }{
		{"user", `{"users":[{"id":1,"name":"a\u0000","email":"a@example.com"}]}`, "users[0] (id 1): invalid input: name must not contain control characters"},
		{"post", `{"users":[{"id":1,"name":"a","email":"a@example.com"}],"posts":[{"id":1,"userId":1,"title":"\u202e"}]}`, "posts[0] (id 1): title must not contain bidirectional"},
		{"comment", `{"users":[{"id":1,"name":"a","email":"a@example.com"}],"posts":[{"id":1,"userId":1,"title":"t"}],"comments":[{"id":1,"postId":1,"authorId":1,"text":"\u200b"}]}`, "comments[0] (id 1): text must contain a visible character"},
		{"product", `{"products":[{"id":1,"name":"p","category":"a\nb","price":1}]}`, "products[0] (id 1): category must be a single line"},
		{"order", `{"products":[{"id":1,"name":"p","price":1}],"orders":[{"id":1,"productId":1,"quantity":1,"customerName":"\u009b"}]}`, "orders[0] (id 1): customerName must not contain control characters"},
		{"user tags", `{"users":[{"id":1,"name":"a","email":"a@example.com"},{"id":2,"name":"b\udb40\udc41","email":"b@example.com"}]}`, "users[1] (id 2): invalid input: name must not contain tag characters"},
		{"product noncharacter", `{"products":[{"id":1,"name":"p\ufdd0","price":1}]}`, "products[0] (id 1): name must not contain Unicode noncharacters"},
		{"user combining mark", `{"users":[{"id":1,"name":" \u0301 ","email":"a@example.com"}]}`, "users[0] (id 1): invalid input: name must contain a visible character"},
	} {
		ds, err := ReadDataset(strings.NewReader(tt.json))
		if err == nil {
			err = NewStore().Load(ds)
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("dataset %s: %v, want %q", tt.name, err, tt.want)
		}
	}

	// gRPC answers the refusal as InvalidArgument with the field's message.
	a, _ := startApp(t, testConfig())
	c := userpb.NewUserServiceClient(dialGRPC(t, a.grpcAddr))
	stream, err := c.CreateUsers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	stream.Send(&userpb.CreateUserRequest{Name: "Zoe\u2066", Email: "zoe@example.com"})
	_, err = stream.CloseAndRecv()
	wantCode(t, err, codes.InvalidArgument, "user 0: invalid input: name must not contain bidirectional override or isolate characters")
	for name, want := range map[string]string{
		"Zoe\U000e0041":      "name must not contain tag characters",
		"Zoe\U0010fffe":      "name must not contain Unicode noncharacters (such as U+FFFF)",
		"\u0301\u0301\u0301": "name must contain a visible character",
	} {
		stream, err := c.CreateUsers(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		stream.Send(&userpb.CreateUserRequest{Name: name, Email: "zoe@example.com"})
		_, err = stream.CloseAndRecv()
		wantCode(t, err, codes.InvalidArgument, "user 0: invalid input: "+want)
	}
}

// TestIsEmailAddress: an e-mail is one bare address, as net/mail reads it, with
// nothing around it. The table says what net/mail.ParseAddress itself makes of each
// string, so the rows where the two differ (a display name, angle brackets, a
// comment, quotes, space around) are the rule's own.
func TestIsEmailAddress(t *testing.T) {
	tests := []struct {
		s       string
		netMail string // ParseAddress's Address, "" for an error
		want    bool
	}{
		{"a@b", "a@b", true},
		{"alice@example.com", "alice@example.com", true},
		{"Dave.Brown@Example.COM", "Dave.Brown@Example.COM", true},
		{"x+tag@sub.domain.io", "x+tag@sub.domain.io", true},
		{"o'neil@x.ie", "o'neil@x.ie", true},
		{"weird!#$%&'*+/=?^_`{|}~-@x", "weird!#$%&'*+/=?^_`{|}~-@x", true},
		{"zoë.o'brien@exämple.com", "zoë.o'brien@exämple.com", true},
		{"a@[127.0.0.1]", "a@[127.0.0.1]", true},
		{"a@-b", "a@-b", true},
		{`"quoted"@x`, "quoted@x", false}, // the address net/mail reads is not the text given
		{`"a b"@x`, "a b@x", false},
		{"Ann <a@b>", "a@b", false}, // a display name
		{"<a@b>", "a@b", false},
		{"a@b (comment)", "a@b", false},
		{" a@b", "a@b", false},
		{".a@b", "", false}, {"a.@b", "", false}, {"a..b@c", "", false}, {"a@b.", "", false},
		{"a b@c", "", false}, {"@b", "", false}, {"a@", "", false}, {"a@@b", "", false},
		{"a@b, c@d", "", false}, {"", "", false}, {"a", "", false},
	}
	for _, tt := range tests {
		netMail := ""
		if a, err := mail.ParseAddress(tt.s); err == nil {
			netMail = a.Address
		}
		if netMail != tt.netMail {
			t.Errorf("net/mail reads %q as %q, the table says %q", tt.s, netMail, tt.netMail)
		}
		if got := isEmailAddress(tt.s); got != tt.want {
			t.Errorf("isEmailAddress(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}

// FuzzIsEmailAddress: whatever isEmailAddress accepts, net/mail reads as that very
// address with no display name; and its plain-address path decides as net/mail does.
func FuzzIsEmailAddress(f *testing.F) {
	for _, s := range []string{"a@b", "alice@example.com", "a.b@c.d", "x+y@z", "a..b@c", "Ann <a@b>", `"q"@x`,
		"o'brien+tag@mail.example.org", "a@b@c", ".a@b", "a@b.", "a@[1.2.3.4]", "é@x", "a(b)@c", "a\\b@c", "{x}|~@y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isEmailAddress(s), readsAsBareAddress(s); got != want {
			t.Fatalf("isEmailAddress(%q) = %v, net/mail alone says %v", s, got, want)
		}
		if !isEmailAddress(s) {
			return
		}
		if a, err := mail.ParseAddress(s); err != nil || a.Address != s || a.Name != "" || !strings.Contains(s, "@") {
			t.Fatalf("%q accepted; net/mail: %v %v", s, a, err)
		}
	})
}
