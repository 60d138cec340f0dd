package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"quartet/internal/jsonkeys"
)

// decodeDataset reads the dataset format without reflection, several times faster
// than encoding/json on a million users. It accepts exactly what encoding/json would
// decode into a Dataset with unknown fields disallowed (keys matched
// case-insensitively, null leaving a value as it is), except a key repeated in one
// object and a string with an unpaired surrogate escape (which encoding/json would
// decode as U+FFFD, where a request body refuses it), and gives the same values;
// FuzzDecodeDataset holds it to that. Strings with escapes, times and prices are
// handed to the same code encoding/json uses.
//
// It pays for its lines at start-up: with encoding/json the start-up target is missed
// (bench/README.md, "Tricks measured against the standard library"). This
// file is that one decoder, its scanner and record readers together, which is why it
// is longer than the others.
func decodeDataset(data []byte) (*Dataset, error) {
	return decodeDatasetIn(data, segmentElems)
}

// decodeDatasetIn decodes data with lists decoded in segments of segment elements.
func decodeDatasetIn(data []byte, segment int) (*Dataset, error) {
	d := &jsonScanner{data: data, segment: segment}
	var ds Dataset
	err := d.object(loc{}, datasetFields, func(name string, key []byte) error {
		switch name {
		case "users":
			return decodeList(d, "users", &ds.Users, decodeUser)
		case "posts":
			return decodeList(d, "posts", &ds.Posts, decodePost)
		case "comments":
			return decodeList(d, "comments", &ds.Comments, decodeComment)
		case "products":
			return decodeList(d, "products", &ds.Products, decodeProduct)
		case "orders":
			return decodeList(d, "orders", &ds.Orders, decodeOrder)
		}
		return d.unknown(key)
	})
	if err != nil {
		return nil, err
	}
	if d.space(); d.pos < len(d.data) {
		return nil, fmt.Errorf("unexpected data after the dataset object (byte %d)", d.pos)
	}
	return &ds, nil
}

// The keys of each object, as the JSON tags spell them.
var (
	datasetFields = []string{"users", "posts", "comments", "products", "orders"}
	userFields    = []string{"id", "name", "email", "createdAt"}
	postFields    = []string{"id", "userId", "title", "content", "createdAt"}
	commentFields = []string{"id", "postId", "authorId", "text", "createdAt"}
	productFields = []string{"id", "name", "price", "category", "createdDate", "isActive"}
	orderFields   = []string{"id", "userId", "productId", "customerName", "orderDate", "quantity"}
)

// fieldIndex returns the index of the field of fields that key names, or -1 for none.
// Keys match as encoding/json matches them: exactly, or else case-insensitively with
// Unicode folding ("ſ" is an "s"). The exact pass is the common case and compares
// bytes only.
func fieldIndex(key []byte, fields []string) int {
	for i, f := range fields {
		if string(key) == f {
			return i
		}
	}
	for i, f := range fields {
		if strings.EqualFold(string(key), f) {
			return i
		}
	}
	return -1
}

// segmentElems is how many elements of a list one processor decodes at a time.
const segmentElems = 8192

// decodeList decodes a list. A long one is first measured by its brackets and
// strings alone (listShape), so that its elements are decoded in place into a slice
// of the right length, in segments on every processor at once: a million users are
// then neither copied while a slice grows nor decoded on one processor while the
// other waits (bench/README.md, "Start-up and memory"). The segments are used
// only if they join up, each ending just before the next one's start and the last
// at the list's end; then each segment started at an element, and decoded as one
// pass would have. Otherwise (the list is malformed, or a segment failed) the list
// is decoded again in one pass, whose result and first error are the answer.
func decodeList[T any](d *jsonScanner, name string, dst *[]T, decode func(*jsonScanner, loc, *T) error) error {
	if d.null() {
		return nil
	}
	*dst = []T{} // [] is an empty list, not an absent one
	if more, err := d.openArray(loc{list: name, i: -1}); !more || err != nil {
		return err
	}
	l := listDecoder[T]{name, decode}
	if shape, ok := listShape(d.data, d.pos, d.segment); ok {
		list := make([]T, shape.n)
		if l.inSegments(d.data, shape, list) {
			*dst = list
			d.pos = shape.end + 1
			return nil
		}
	}
	var list []T
	err := d.elements(func(i int) error {
		list = append(list, *new(T))
		return decode(d, loc{list: name, i: i}, &list[i])
	})
	*dst = list
	return err
}

// listDecoder decodes the elements of one list.
type listDecoder[T any] struct {
	name   string
	decode func(*jsonScanner, loc, *T) error
}

// inSegments decodes the list's elements into elems, segments on every processor,
// and reports whether every segment decoded and they joined up (see decodeList).
func (l listDecoder[T]) inSegments(data []byte, shape listShapeOf, elems []T) bool {
	joined := make([]bool, len(shape.starts))
	var next atomic.Int64
	work := func() {
		// A fault reading a mapped file that shrank (decodeMapped) ends this
		// goroutine's work; the one pass that follows meets it where it is caught.
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			if r := recover(); r != nil && !isMemoryFault(r) {
				panic(r)
			}
		}()
		for k := int(next.Add(1)) - 1; k < len(shape.starts); k = int(next.Add(1)) - 1 {
			first := k * shape.every
			d := &jsonScanner{data: data, pos: shape.starts[k]}
			if !l.decodeSegment(d, elems[first:min(first+shape.every, len(elems))], first) {
				continue
			}
			if k+1 < len(shape.starts) {
				joined[k] = d.next() == ',' && d.pos+1 == shape.starts[k+1]
			} else {
				joined[k] = d.next() == ']' && d.pos == shape.end
			}
		}
	}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(shape.starts)) - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	return !slices.Contains(joined, false)
}

// decodeSegment decodes consecutive elements from d.pos into elems, numbering them
// from first, and reports whether all decoded.
func (l listDecoder[T]) decodeSegment(d *jsonScanner, elems []T, first int) bool {
	for i := range elems {
		if i > 0 {
			if d.next() != ',' {
				return false
			}
			d.pos++
		}
		if l.decode(d, loc{list: l.name, i: first + i}, &elems[i]) != nil {
			return false
		}
	}
	return true
}

// listShapeOf is where a list's elements seem to be, by listShape.
type listShapeOf struct {
	n      int   // elements
	every  int   // elements per segment
	starts []int // where elements 0, every, 2*every, ... start (just past their ',')
	end    int   // the position of the list's closing ']'
}

// listShape finds the elements of the list whose first element is at from, by
// counting brackets outside strings, and where every every-th one starts. It does
// not check the syntax (the decoding does); ok is false where the text runs out.
func listShape(data []byte, from, every int) (shape listShapeOf, ok bool) {
	shape = listShapeOf{n: 1, every: every, starts: []int{from}}
	depth := 0
	for i := from; i < len(data); i++ {
		switch data[i] {
		case '"': // to the closing quote, the next one not escaped
			for {
				j := bytes.IndexByte(data[i+1:], '"')
				if j < 0 {
					return shape, false
				}
				i += 1 + j
				k := i - 1
				for data[k] == '\\' {
					k--
				}
				if (i-1-k)%2 == 0 {
					break
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth < 0 {
				shape.end = i
				return shape, true
			}
		case ',':
			if depth == 0 {
				if shape.n%every == 0 {
					shape.starts = append(shape.starts, i+1)
				}
				shape.n++
			}
		}
	}
	return shape, false
}

func decodeUser(d *jsonScanner, at loc, u *User) error {
	return d.object(at, userFields, func(name string, key []byte) error {
		switch name {
		case "id":
			return d.int64(at.with("id"), &u.ID)
		case "name":
			return d.string(at.with("name"), &u.Name)
		case "email":
			return d.string(at.with("email"), &u.Email)
		case "createdAt":
			return d.unmarshaler(at.with("createdAt"), &u.CreatedAt)
		}
		return d.unknown(key)
	})
}

func decodePost(d *jsonScanner, at loc, p *Post) error {
	return d.object(at, postFields, func(name string, key []byte) error {
		switch name {
		case "id":
			return d.int64(at.with("id"), &p.ID)
		case "userId":
			return d.int64(at.with("userId"), &p.UserID)
		case "title":
			return d.string(at.with("title"), &p.Title)
		case "content":
			return d.string(at.with("content"), &p.Content)
		case "createdAt":
			return d.unmarshaler(at.with("createdAt"), &p.CreatedAt)
		}
		return d.unknown(key)
	})
}

func decodeComment(d *jsonScanner, at loc, c *Comment) error {
	return d.object(at, commentFields, func(name string, key []byte) error {
		switch name {
		case "id":
			return d.int64(at.with("id"), &c.ID)
		case "postId":
			return d.int64(at.with("postId"), &c.PostID)
		case "authorId":
			return d.int64(at.with("authorId"), &c.AuthorID)
		case "text":
			return d.string(at.with("text"), &c.Text)
		case "createdAt":
			return d.unmarshaler(at.with("createdAt"), &c.CreatedAt)
		}
		return d.unknown(key)
	})
}

func decodeProduct(d *jsonScanner, at loc, p *Product) error {
	return d.object(at, productFields, func(name string, key []byte) error {
		switch name {
		case "id":
			return d.int64(at.with("id"), &p.ID)
		case "name":
			return d.string(at.with("name"), &p.Name)
		case "price":
			return d.unmarshaler(at.with("price"), &p.Price)
		case "category":
			return d.string(at.with("category"), &p.Category)
		case "createdDate":
			return d.unmarshaler(at.with("createdDate"), &p.CreatedDate)
		case "isActive":
			return d.bool(at.with("isActive"), &p.IsActive)
		}
		return d.unknown(key)
	})
}

func decodeOrder(d *jsonScanner, at loc, o *Order) error {
	return d.object(at, orderFields, func(name string, key []byte) error {
		switch name {
		case "id":
			return d.int64(at.with("id"), &o.ID)
		case "userId":
			return d.int64(at.with("userId"), &o.UserID)
		case "productId":
			return d.int64(at.with("productId"), &o.ProductID)
		case "customerName":
			return d.string(at.with("customerName"), &o.CustomerName)
		case "orderDate":
			return d.unmarshaler(at.with("orderDate"), &o.OrderDate)
		case "quantity":
			return d.int64(at.with("quantity"), &o.Quantity)
		}
		return d.unknown(key)
	})
}

// loc says where a value sits, for error messages only, so it is turned into text only
// when there is an error: "users[3].email", "users", "dataset".
type loc struct {
	list  string // "" for the dataset object itself
	i     int    // -1 for the list itself
	field string
}

func (l loc) with(field string) loc { l.field = field; return l }

// open is how many arrays and objects of the file are open around the value at l.
func (l loc) open() int {
	switch {
	case l.list == "":
		return 0
	case l.i < 0:
		return 1 // the dataset object
	case l.field == "":
		return 2 // and the list
	}
	return 3 // and the record
}

func (l loc) String() string {
	switch {
	case l.list == "":
		return "dataset"
	case l.i < 0:
		return l.list
	case l.field == "":
		return fmt.Sprintf("%s[%d]", l.list, l.i)
	}
	return fmt.Sprintf("%s[%d].%s", l.list, l.i, l.field)
}

// jsonScanner reads JSON values from data at pos. Every error names its byte offset.
type jsonScanner struct {
	data    []byte
	pos     int
	segment int // elements per segment of a list (segmentElems; tests make it tiny)
}

func (d *jsonScanner) space() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// next returns the next byte after white space, or 0 at the end.
func (d *jsonScanner) next() byte {
	d.space()
	if d.pos < len(d.data) {
		return d.data[d.pos]
	}
	return 0
}

func (d *jsonScanner) syntax(want string) error {
	if d.pos >= len(d.data) {
		return fmt.Errorf("malformed JSON: unexpected end of input, expecting %s", want)
	}
	return fmt.Errorf("malformed JSON at byte %d: expecting %s, found %q", d.pos, want, d.data[d.pos])
}

// kind names the JSON kind of the value at pos, for type errors.
func (d *jsonScanner) kind() string {
	switch d.next() {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

func (d *jsonScanner) unknown(key []byte) error {
	return fmt.Errorf("json: unknown field %q (byte %d)", key, d.pos)
}

// null consumes a null literal if one is next.
func (d *jsonScanner) null() bool {
	if d.next() == 'n' && strings.HasPrefix(string(d.data[d.pos:min(d.pos+4, len(d.data))]), "null") {
		d.pos += 4
		return true
	}
	return false
}

// object reads an object, calling field for each key with pos at its value: name is
// the field of fields the key names (fieldIndex), "" for none. field must consume the
// value, and must not keep key, which may point into data. A null is no object and no
// error, as for encoding/json. A field named twice, in any letter case, is an error:
// encoding/json would let the last one win, and a file that says two things of one
// record, or holds two lists of users, would lose one of them without a word.
func (d *jsonScanner) object(at loc, fields []string, field func(name string, key []byte) error) error {
	if d.null() {
		return nil
	}
	if d.next() != '{' {
		return d.valueTypeError(at, "an object")
	}
	d.pos++
	if d.next() == '}' {
		d.pos++
		return nil
	}
	var seen uint64 // the fields named so far, a bit each
	for {
		if d.next() != '"' {
			return d.syntax("a string key")
		}
		start := d.pos
		key, err := d.key()
		if err != nil {
			return err
		}
		name := ""
		if i := fieldIndex(key, fields); i >= 0 {
			if seen&(1<<i) != 0 {
				return fmt.Errorf("%s: repeated key %q (byte %d)", at, key, start)
			}
			seen |= 1 << i
			name = fields[i]
		}
		if d.next() != ':' {
			return d.syntax("':'")
		}
		d.pos++
		d.space()
		if err := field(name, key); err != nil {
			return err
		}
		switch d.next() {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return nil
		default:
			return d.syntax("',' or '}'")
		}
	}
}

// array reads an array, calling elem for each element with pos at it.
func (d *jsonScanner) array(at loc, elem func(i int) error) error {
	if more, err := d.openArray(at); !more || err != nil {
		return err
	}
	return d.elements(elem)
}

// openArray reads the start of an array, and reports whether an element follows (pos
// is then at it) or the array was empty.
func (d *jsonScanner) openArray(at loc) (more bool, err error) {
	if d.next() != '[' {
		return false, d.valueTypeError(at, "an array")
	}
	d.pos++
	if d.next() == ']' {
		d.pos++
		return false, nil
	}
	return true, nil
}

// elements reads an array's elements from pos, an element, calling elem for each with
// pos at it, numbered from 0, and leaves pos just past the array.
func (d *jsonScanner) elements(elem func(i int) error) error {
	for i := 0; ; i++ {
		if err := elem(i); err != nil {
			return err
		}
		switch d.next() {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return nil
		default:
			return d.syntax("',' or ']'")
		}
	}
}

// stringToken returns the raw bytes of the string at pos, quotes included, and
// whether it is plain: without escapes and valid UTF-8, so that it is its own value
// (names in any script are; sending them to encoding/json cost a fifth of a large load).
func (d *jsonScanner) stringToken() ([]byte, bool, error) {
	data, start := d.data, d.pos
	pos := start + 1 // past the opening quote
	escaped, ascii := false, true
	for {
		for pos < len(data) && plainText[data[pos]] {
			pos++
		}
		if pos >= len(data) {
			d.pos = pos
			return nil, false, d.syntax("'\"'")
		}
		switch c := data[pos]; {
		case c == '"':
			d.pos = pos + 1
			tok := data[start:d.pos]
			return tok, !escaped && (ascii || utf8.Valid(tok[1:len(tok)-1])), nil
		case c == '\\':
			escaped = true
			pos++
			if pos >= len(data) {
				d.pos = pos
				return nil, false, d.syntax("an escape")
			}
			switch data[pos] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				pos++
			case 'u':
				for k := 1; k <= 4; k++ {
					if pos+k >= len(data) || !isHex(data[pos+k]) {
						d.pos = pos + k
						return nil, false, d.syntax("a hex digit")
					}
				}
				pos += 5
			default:
				d.pos = pos
				return nil, false, d.syntax("an escape")
			}
		case c < 0x20:
			d.pos = pos
			return nil, false, d.syntax("a character in a string")
		default: // part of a multi-byte character
			ascii = false
			pos++
		}
	}
}

// plainText marks the bytes that stand for themselves in a string: printable ASCII
// other than the quote and the backslash.
var plainText = func() (plain [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		plain[c] = c != '"' && c != '\\'
	}
	return plain
}()

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// key reads an object key. A plain key is returned as it is in data, so matching it
// allocates nothing.
func (d *jsonScanner) key() ([]byte, error) {
	tok, plain, err := d.stringToken()
	if err != nil {
		return nil, err
	}
	if plain {
		return tok[1 : len(tok)-1], nil
	}
	s, err := unquote(tok)
	return []byte(s), err
}

// rawString reads a string; escapes and invalid UTF-8 are decoded by encoding/json
// itself, so both agree on every odd case (replacement characters; an unpaired
// surrogate escape in a key makes a key no field has, and string refuses one in a
// value).
func (d *jsonScanner) rawString() (string, error) {
	tok, plain, err := d.stringToken()
	if err != nil {
		return "", err
	}
	if plain {
		return string(tok[1 : len(tok)-1]), nil
	}
	return unquote(tok)
}

// unquote decodes a string token with escapes or invalid UTF-8.
func unquote(tok []byte) (string, error) {
	var s string
	if err := json.Unmarshal(tok, &s); err != nil {
		return "", err
	}
	return s, nil
}

func (d *jsonScanner) string(at loc, dst *string) error {
	if d.null() {
		return nil
	}
	if d.next() != '"' {
		return d.valueTypeError(at, "a string")
	}
	start := d.pos
	tok, plain, err := d.stringToken()
	if err != nil {
		return err
	}
	if plain {
		*dst = string(tok[1 : len(tok)-1])
		return nil
	}
	if i := jsonkeys.LoneSurrogate(tok[1 : len(tok)-1]); i >= 0 {
		return fmt.Errorf("%s: unpaired surrogate escape %s names no character (byte %d)", at, tok[1+i:1+i+6], start+1+i)
	}
	s, err := unquote(tok)
	if err == nil {
		*dst = s
	}
	return err
}

// valueTypeError reports a value of the wrong kind, after checking that it is at
// least well-formed JSON (a syntax error is the better message).
func (d *jsonScanner) valueTypeError(at loc, want string) error {
	start := d.pos
	kind := d.kind()
	if err := d.skip(at, at.open()); err != nil {
		return err
	}
	return fmt.Errorf("%s must be %s, not %s (byte %d)", at, want, kind, start)
}

// numberToken returns the number literal at pos, checked against the JSON grammar.
func (d *jsonScanner) numberToken() ([]byte, error) {
	start := d.pos
	digits := func() int {
		n := 0
		for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
			d.pos++
			n++
		}
		return n
	}
	if d.pos < len(d.data) && d.data[d.pos] == '-' {
		d.pos++
	}
	switch {
	case d.pos < len(d.data) && d.data[d.pos] == '0':
		d.pos++
	case digits() == 0:
		return nil, d.syntax("a digit")
	}
	if d.pos < len(d.data) && d.data[d.pos] == '.' {
		d.pos++
		if digits() == 0 {
			return nil, d.syntax("a digit")
		}
	}
	if d.pos < len(d.data) && (d.data[d.pos] == 'e' || d.data[d.pos] == 'E') {
		d.pos++
		if d.pos < len(d.data) && (d.data[d.pos] == '+' || d.data[d.pos] == '-') {
			d.pos++
		}
		if digits() == 0 {
			return nil, d.syntax("a digit")
		}
	}
	return d.data[start:d.pos], nil
}

func (d *jsonScanner) int64(at loc, dst *int64) error {
	if d.null() {
		return nil
	}
	if c := d.next(); c != '-' && (c < '0' || c > '9') {
		return d.valueTypeError(at, "an integer")
	}
	start := d.pos
	tok, err := d.numberToken()
	if err != nil {
		return err
	}
	n, ok := smallInt(tok)
	if !ok {
		if n, err = strconv.ParseInt(string(tok), 10, 64); err != nil {
			return fmt.Errorf("%s must be an integer, not %s (byte %d)", at, tok, start)
		}
	}
	*dst = n
	return nil
}

// smallInt parses the common integer literal, up to 18 digits with an optional sign,
// which cannot overflow; ok is false for anything else, left to strconv.
func smallInt(tok []byte) (n int64, ok bool) {
	digits := tok
	if len(tok) > 0 && tok[0] == '-' {
		digits = tok[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if len(digits) < len(tok) {
		n = -n
	}
	return n, true
}

func (d *jsonScanner) bool(at loc, dst *bool) error {
	if d.null() {
		return nil
	}
	rest := d.data[d.pos:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		*dst = true
		d.pos += 4
	case len(rest) >= 5 && string(rest[:5]) == "false":
		*dst = false
		d.pos += 5
	default:
		return d.valueTypeError(at, "a boolean")
	}
	return nil
}

// unmarshaler hands the raw value to dst's own UnmarshalJSON, as encoding/json does.
func (d *jsonScanner) unmarshaler(at loc, dst json.Unmarshaler) error {
	start := d.pos
	if err := d.skip(at, at.open()); err != nil {
		return err
	}
	if err := dst.UnmarshalJSON(d.data[start:d.pos]); err != nil {
		return fmt.Errorf("%s: %v (byte %d)", at, err, start)
	}
	return nil
}

// skip consumes one well-formed value of any kind, the value at, inside open arrays
// and objects. This format has no nesting below its records, so a value is skipped
// only to report its kind; it may nest no deeper than a request body may
// (jsonkeys.MaxDepth, counted from the file's top), which bounds the recursion.
func (d *jsonScanner) skip(at loc, open int) error {
	switch c := d.next(); {
	case (c == '{' || c == '[') && open == jsonkeys.MaxDepth:
		return fmt.Errorf("%s: %w", at, &jsonkeys.DepthError{Offset: int64(d.pos)})
	case c == '{':
		return d.object(loc{list: "value"}, nil, func(string, []byte) error { return d.skip(at, open+1) })
	case c == '[':
		return d.array(loc{list: "value"}, func(int) error { return d.skip(at, open+1) })
	case c == '"':
		_, _, err := d.stringToken()
		return err
	case c == 't' || c == 'f':
		for _, lit := range []string{"true", "false"} {
			if strings.HasPrefix(string(d.data[d.pos:min(d.pos+len(lit), len(d.data))]), lit) {
				d.pos += len(lit)
				return nil
			}
		}
	case c == 'n':
		if d.null() {
			return nil
		}
	case c == '-' || c >= '0' && c <= '9':
		_, err := d.numberToken()
		return err
	}
	return d.syntax("a value")
}
