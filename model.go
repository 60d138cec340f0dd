package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// The five entities of the shared store. Records are immutable once stored: an update
// stores a new record, so a pointer handed to a reader never changes under it.

// User is a registered user.
type User struct {
	ID        int64     `json:"id"`
	Name      string    `json:"name"`
	Email     string    `json:"email"`
	CreatedAt time.Time `json:"createdAt"`

	nameKey, emailKey string                         // case-folded Name and Email, set when stored
	rest              atomic.Pointer[representation] // made at the first REST read
}

// representation is a user's REST answer, kept with the record, which never
// changes: a read encodes and hashes nothing.
type representation struct {
	body []byte // the JSON and a newline; its capacity is its length, so appending copies
	tag  string // of the JSON (entityTag)
}

// representation returns u's REST answer, making it at the first call.
func (u *User) representation() *representation {
	if rep := u.rest.Load(); rep != nil {
		return rep
	}
	j, _ := json.Marshal(u) // refuses only times outside years 0 to 9999, which no stored user has
	rep := &representation{body: slices.Clip(append(j, '\n')), tag: entityTag(j)}
	u.rest.Store(rep) // a racing first read stores an equal one
	return rep
}

// entityTag is the strong ETag, quoted, of a representation's JSON: 128 bits of its
// SHA-256. A hash of the bytes a client sees, unlike a version counter, survives a
// restart or a replay without being stored, and changes exactly when they do.
func entityTag(json []byte) string {
	sum := sha256.Sum256(json)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

// ETag is u's strong entity tag.
func (u *User) ETag() string { return u.representation().tag }

// Post is a user's post.
type Post struct {
	ID        int64     `json:"id"`
	UserID    int64     `json:"userId"`
	Title     string    `json:"title"`
	Content   string    `json:"content"`
	CreatedAt time.Time `json:"createdAt"`
}

// Comment is a user's comment on a post.
type Comment struct {
	ID        int64     `json:"id"`
	PostID    int64     `json:"postId"`
	AuthorID  int64     `json:"authorId"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"createdAt"`
}

// Product is an item for sale.
type Product struct {
	ID          int64     `json:"id"`
	Name        string    `json:"name"`
	Price       Decimal   `json:"price"`
	Category    string    `json:"category"`
	CreatedDate time.Time `json:"createdDate"`
	IsActive    bool      `json:"isActive"`
}

// Order is a sales record of one product, optionally placed by a registered user
// (UserID 0: none). Orders outlive the user who placed them.
type Order struct {
	ID           int64     `json:"id"`
	UserID       int64     `json:"userId"`
	ProductID    int64     `json:"productId"`
	CustomerName string    `json:"customerName"`
	OrderDate    time.Time `json:"orderDate"`
	Quantity     int64     `json:"quantity"`
}

// Decimal is an exact decimal number in units of 1/10,000 (19.99 is Decimal(199900)):
// prices must round-trip exactly, which float64 cannot promise.
type Decimal int64

// DecimalScale is the number of Decimal units in 1.
const DecimalScale = 10000

// ParseDecimal parses a decimal literal such as "19.99", "-3" or "1e2"; more than four
// fractional digits is an error rather than a silent rounding.
func ParseDecimal(s string) (Decimal, error) {
	if s == "" {
		return 0, errors.New("empty number")
	}
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		if err != nil || e > 30 || e < -30 {
			return 0, fmt.Errorf("number %q is out of range", s)
		}
		mant, exp = s[:i], e
	}
	neg := strings.HasPrefix(mant, "-")
	if neg {
		mant = mant[1:]
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	if intPart == "" && frac == "" {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	digits := intPart + frac
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is not a number", s)
		}
	}
	// The value is digits × 10^(exp - len(frac)); in units that is digits × 10^shift.
	shift := exp - len(frac) + 4
	digits = strings.TrimLeft(digits, "0")
	for shift < 0 && strings.HasSuffix(digits, "0") {
		digits, shift = digits[:len(digits)-1], shift+1
	}
	if shift < 0 {
		return 0, fmt.Errorf("%s has more than 4 decimal places", s)
	}
	if digits == "" {
		return 0, nil
	}
	if len(digits)+shift > 18 {
		return 0, fmt.Errorf("number %s is out of range", s)
	}
	v, _ := strconv.ParseInt(digits+strings.Repeat("0", shift), 10, 64) // 18 digits at most: no overflow
	if neg {
		v = -v
	}
	return Decimal(v), nil
}

// String formats d with as few fractional digits as its value needs: "19.99", "5".
func (d Decimal) String() string { return string(d.appendText(nil)) }

func (d Decimal) appendText(b []byte) []byte {
	u := uint64(d)
	if d < 0 {
		b = append(b, '-')
		u = uint64(-d)
	}
	b = strconv.AppendUint(b, u/DecimalScale, 10)
	if frac := u % DecimalScale; frac != 0 {
		b = append(b, '.')
		b = append(b, strings.TrimRight(fmt.Sprintf("%04d", frac), "0")...)
	}
	return b
}

// MarshalJSON writes d as a JSON number.
func (d Decimal) MarshalJSON() ([]byte, error) { return d.appendText(nil), nil }

// UnmarshalJSON reads a JSON number exactly, without passing through float64.
func (d *Decimal) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	v, err := ParseDecimal(string(b))
	if err == nil {
		*d = v
	}
	return err
}

// The entity rules. Each validate function checks one record's fields by the rules
// every write shares, on every surface, and the dataset loader too, so a dataset
// cannot hold what no client could have written. Each returns the fields normalised
// (one-line texts trimmed) and an *Error naming every bad field, if any.

const (
	maxNameLength  = 100 // characters
	maxEmailLength = 254
	maxTitleLength = 200
	// The free texts' sizes are in bytes: a limit in characters would let a text of
	// 4-byte characters through at four times the size.
	maxContentBytes = 100_000
	maxCommentBytes = 10_000
	maxQuantity     = 1<<31 - 1 // within the 32-bit integers every surface can carry
	// maxID is the largest id a record can have: ids are 32-bit on gRPC, in GraphQL
	// and in OData's CSDL.
	maxID = 1<<31 - 1
)

// fieldProblems collects what is wrong with a record, field by field; nil until the
// first problem, as most records are valid.
type fieldProblems map[string][]string

func (p *fieldProblems) add(field, msg string) {
	if msg == "" {
		return
	}
	if *p == nil {
		*p = fieldProblems{}
	}
	(*p)[field] = append((*p)[field], msg)
}

// err is the problems as an error, nil if there are none.
func (p fieldProblems) err() error {
	if p == nil {
		return nil
	}
	return invalidFields(p)
}

// validateUser checks a user's name and email and returns them trimmed.
func validateUser(name, email string) (string, string, error) {
	name, email = strings.TrimSpace(name), strings.TrimSpace(email)
	var bad fieldProblems
	bad.add("name", nameRule.check(name))
	switch {
	case email == "":
		bad.add("email", "is required")
	case len(email) > maxEmailLength && utf8.RuneCountInString(email) > maxEmailLength: // no more characters than bytes
		bad.add("email", fmt.Sprintf("must be at most %d characters", maxEmailLength))
	case emailRule.check(email) != "" || !isEmailAddress(email):
		bad.add("email", "must be a valid email address")
	}
	return name, email, bad.err()
}

// validatePost checks a post's title and content and returns them, the title trimmed.
func validatePost(title, content string) (string, string, error) {
	title = strings.TrimSpace(title)
	var bad fieldProblems
	bad.add("title", titleRule.check(title))
	bad.add("content", contentRule.check(content))
	return title, content, bad.err()
}

// validateComment checks a comment's text and returns it trimmed.
func validateComment(text string) (string, error) {
	text = strings.TrimSpace(text)
	var bad fieldProblems
	bad.add("text", commentRule.check(text))
	return text, bad.err()
}

// validateOrder checks an order's own fields and returns the customer's name trimmed;
// "" (or only white space) is no name, for the caller to fill in with the user's.
// That the product and user exist is the store's to check.
func validateOrder(customerName string, quantity int64) (string, error) {
	customerName = strings.TrimSpace(customerName)
	var bad fieldProblems
	if customerName != "" {
		bad.add("customerName", nameRule.check(customerName))
	}
	if quantity < 1 || quantity > maxQuantity {
		bad.add("quantity", fmt.Sprintf("must be between 1 and %d", maxQuantity))
	}
	return customerName, bad.err()
}

// validateProduct checks a product's fields and returns its name and category
// trimmed. Products come only from datasets; the rules are kept here with the rest.
func validateProduct(name, category string, price Decimal) (string, string, error) {
	name, category = strings.TrimSpace(name), strings.TrimSpace(category)
	var bad fieldProblems
	bad.add("name", nameRule.check(name))
	bad.add("category", categoryRule.check(category))
	if price < 0 {
		bad.add("price", "must not be negative")
	}
	return name, category, bad.err()
}

// textRule is what a text field may hold. What would mangle a reader's screen,
// terminal or log, or hide text from its readers, is refused here, once, for every
// surface: invalid UTF-8; control characters (free text keeps line feed and tab, a
// one-line field neither, nor U+2028 and U+2029); bidirectional embeddings, overrides
// and isolates ("Trojan Source"; the marks U+200E, U+200F and U+061C stay allowed);
// noncharacters; tag characters, which carry text a reader cannot see, except in
// free text the emoji tag sequences of a black flag (England, Scotland, Wales); and
// for a required field, a value with nothing visible in it.
type textRule struct {
	multiline bool // line feeds and tabs allowed
	required  bool // something visible needed
	maxRunes  int  // 0: no length rule here
	maxBytes  int  // 0: none
}

// The text fields' rules.
var (
	nameRule     = textRule{required: true, maxRunes: maxNameLength}  // user, customer and product names
	emailRule    = textRule{required: true, maxRunes: maxEmailLength} // checked further by isEmailAddress
	categoryRule = textRule{}
	titleRule    = textRule{required: true, maxRunes: maxTitleLength}
	contentRule  = textRule{multiline: true, maxBytes: maxContentBytes}
	commentRule  = textRule{multiline: true, required: true, maxBytes: maxCommentBytes}
)

// check says what is wrong with s (trimmed by the caller), "" if nothing.
func (rule textRule) check(s string) string {
	if rule.maxBytes > 0 && len(s) > rule.maxBytes {
		return fmt.Sprintf("must be at most %d bytes", rule.maxBytes)
	}
	ascii := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c >= 0x7f {
			ascii = false // the rare case: looked at rune by rune below
			break
		}
	}
	if ascii {
		switch {
		case rule.required && s == "":
			return "is required"
		case rule.maxRunes > 0 && len(s) > rule.maxRunes:
			return fmt.Sprintf("must be at most %d characters", rule.maxRunes)
		}
		return ""
	}
	if !utf8.ValidString(s) {
		return "must be valid UTF-8"
	}
	visible, n := false, 0
	flag := noFlag // where the runes so far leave an emoji tag sequence
	for _, r := range s {
		n++
		isTag := 0xe0000 <= r && r <= 0xe007f
		if flag == inFlagTags && !isTag {
			return tagMessage(rule) // tags with no cancel tag to end them
		}
		switch {
		case r == '\n' || r == '\t' || r == '\u2028' || r == '\u2029':
			if !rule.multiline {
				return "must be a single line without tabs"
			}
		case r < ' ' || 0x7f <= r && r <= 0x9f:
			return "must not contain control characters"
		case 0x202a <= r && r <= 0x202e || 0x2066 <= r && r <= 0x2069:
			return "must not contain bidirectional override or isolate characters"
		case 0xfdd0 <= r && r <= 0xfdef || r&0xfffe == 0xfffe:
			return "must not contain Unicode noncharacters (such as U+FFFF)"
		case isTag:
			switch {
			case !rule.multiline:
				return tagMessage(rule)
			case r == '\U000E007F' && flag == inFlagTags:
				flag = noFlag // the sequence is complete
			case 0xe0020 <= r && r <= 0xe007e && flag != noFlag:
				flag = inFlagTags
			default:
				return tagMessage(rule)
			}
			continue
		case !visible && !unicode.IsSpace(r) && !isInvisible(r) && !unicode.IsMark(r):
			visible = true
		}
		if flag = noFlag; r == '\U0001F3F4' {
			flag = afterBlackFlag
		}
	}
	switch {
	case flag == inFlagTags:
		return tagMessage(rule)
	case rule.required && !visible:
		return "must contain a visible character"
	case rule.maxRunes > 0 && n > rule.maxRunes:
		return fmt.Sprintf("must be at most %d characters", rule.maxRunes)
	}
	return ""
}

// Where textRule.check is in an emoji tag sequence.
const (
	noFlag         = iota
	afterBlackFlag // U+1F3F4, which tags may follow
	inFlagTags     // tags, which the cancel tag must end
)

// tagMessage is the refusal of tag characters under rule.
func tagMessage(rule textRule) string {
	if rule.multiline {
		return "must not contain tag characters outside a flag's emoji tag sequence"
	}
	return "must not contain tag characters"
}

// isInvisible reports whether r is drawn as nothing: a format character (category Cf,
// such as the zero-width space), the combining grapheme joiner, a variation selector,
// or a Hangul filler.
func isInvisible(r rune) bool {
	return unicode.Is(unicode.Cf, r) || r == '\u034f' || 0xfe00 <= r && r <= 0xfe0f || 0xe0100 <= r && r <= 0xe01ef ||
		r == '\u115f' || r == '\u1160' || r == '\u3164' || r == '\uffa0'
}

// isEmailAddress reports whether s is one bare address, local@domain, with nothing
// around it, as net/mail reads RFC 5322's addr-spec. The plain address nearly everyone
// has, both parts dot-atoms (RFC 5322 3.2.3), which net/mail reads as that very
// address, is recognised without it: net/mail was a quarter of a large load's time
// (bench/README.md).
func isEmailAddress(s string) bool {
	local, domain, ok := strings.Cut(s, "@")
	return ok && isDotAtom(local) && isDotAtom(domain) || readsAsBareAddress(s)
}

// readsAsBareAddress is isEmailAddress decided by net/mail alone.
func readsAsBareAddress(s string) bool {
	a, err := mail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s {
		return false
	}
	local, domain, ok := strings.Cut(s, "@")
	return ok && local != "" && domain != "" && !strings.ContainsAny(s, " \t\r\n")
}

func isDotAtom(s string) bool {
	if s == "" || s[0] == '.' || s[len(s)-1] == '.' || strings.Contains(s, "..") {
		return false
	}
	for i := range len(s) {
		if !atext[s[i]] && s[i] != '.' {
			return false
		}
	}
	return true
}

// atext marks RFC 5322's atext: printable ASCII other than its specials.
var atext = func() (t [256]bool) {
	for c := '!'; c <= '~'; c++ {
		t[c] = !strings.ContainsRune(`()<>[]:;@\,."`, c)
	}
	return t
}()
