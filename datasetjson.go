package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// decodeDataset reads the dataset format in one pass, without reflection: a
// million-user file is read in a fraction of encoding/json's time. It accepts exactly
// what encoding/json would decode into a Dataset with unknown fields disallowed (keys
// matched case-insensitively, null leaving a value as it is, the last of repeated keys
// winning), and gives the same values; FuzzDecodeDataset holds it to that. Strings
// with escapes, times and prices are handed to the same code encoding/json uses.
//
// A long list is decoded on every processor at once (see inParallel).
func decodeDataset(data []byte) (*Dataset, error) {
	if runtime.GOMAXPROCS(0) == 1 {
		return decodeDatasetIn(data, 0)
	}
	return decodeDatasetIn(data, segmentBytes)
}

// segmentBytes is about how much of a long list one processor decodes at a time.
const segmentBytes = 1 << 20

// decodeDatasetIn decodes data with lists longer than two segments of about segment
// bytes decoded in parallel (0: none); tests make segments tiny.
func decodeDatasetIn(data []byte, segment int) (*Dataset, error) {
	d := &jsonScanner{data: data, segment: segment}
	var ds Dataset
	err := d.object(loc{}, func(key []byte) error {
		switch fieldName(key, datasetFields) {
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

// fieldName returns the field of fields that key names, or "" for none. Keys match as
// encoding/json matches them: exactly, or else case-insensitively with Unicode folding
// ("ſ" is an "s"). The exact pass is the common case and compares bytes only.
func fieldName(key []byte, fields []string) string {
	for _, f := range fields {
		if string(key) == f {
			return f
		}
	}
	for _, f := range fields {
		if strings.EqualFold(string(key), f) {
			return f
		}
	}
	return ""
}

// listChunk bounds the chunks a list is decoded into (see decodeList).
const listChunk = 8192

func decodeList[T any](d *jsonScanner, name string, dst *[]T, decode func(*jsonScanner, loc, *T) error) error {
	if d.null() {
		*dst = nil
		return nil
	}
	// Like encoding/json, decode into the elements already there when a key repeats.
	list := (*dst)[:0]
	if list == nil && d.next() == '[' {
		list = make([]T, 0) // [] is an empty list, not an absent one
	}
	*dst = list
	if more, err := d.openArray(loc{list: name, i: -1}); !more || err != nil {
		return err
	}
	l := listDecoder[T]{name, decode}
	if cap(list) == 0 && d.segment > 0 && len(d.data)-d.pos > 2*d.segment {
		chunks, err := l.inParallel(d)
		*dst = join(list, chunks)
		return err
	}
	// Elements past the list's capacity are decoded in place into chunks, joined once
	// at the end: appending to one slice would copy a million-element list about
	// twice over while it grows.
	var chunks [][]T
	_, err := d.elements(0, noStop, func(i int) error {
		var elem *T
		if i < cap(list) {
			list = list[:i+1]
			elem = &list[i]
		} else {
			elem = nextElement(&chunks)
		}
		return decode(d, loc{list: name, i: i}, elem)
	})
	*dst = join(list, chunks)
	return err
}

// listDecoder decodes the elements of one list.
type listDecoder[T any] struct {
	name   string
	decode func(*jsonScanner, loc, *T) error
}

// decodedSegment is a run of a list's elements, decoded by decodeSegment.
type decodedSegment[T any] struct {
	chunks [][]T
	n      int   // elements
	end    int   // the next element's start, or just past the list if closed
	closed bool  // the list ended
	err    error // decoding stopped here
}

// decodeSegment decodes the elements from d.pos, an element's start, numbering them
// from first, until the list ends or an element starts at or past stop.
func (l listDecoder[T]) decodeSegment(d *jsonScanner, first, stop int) decodedSegment[T] {
	var r decodedSegment[T]
	r.closed, r.err = d.elements(first, stop, func(i int) error {
		r.n++
		return l.decode(d, loc{list: l.name, i: i}, nextElement(&r.chunks))
	})
	r.end = d.pos
	return r
}

// inParallel decodes a long list from d.pos, its first element's start, on every
// processor, and returns its elements in chunks with d.pos just past the list.
//
// The list is cut into segments at likely element starts, guessed from the text
// alone ('{' after ',' after '}'), and each segment is decoded from its start until
// an element starts at or past the next segment's, without knowing whether its start
// really is one (it may be inside a string, or past the list's end). The segments are
// then put together in order from the list's real start: a segment is used only if
// the one before it ended exactly at its start, which makes its start an element start
// of this list, so it decoded just as decoding in one pass would have. Where that
// fails (or a segment failed) the text is decoded again here, numbered right, so
// values and errors are always those of one pass. A segment that started elsewhere
// soon fails (inside a string, its first key is a piece of the text's structure such
// as ","; in another list, a field of another kind of record) or stops at the
// element crossing the next start, so little work is ever thrown away.
func (l listDecoder[T]) inParallel(d *jsonScanner) ([][]T, error) {
	starts := segmentStarts(d.data, d.pos, d.segment)
	results := make([]decodedSegment[T], len(starts))
	done := make([]chan struct{}, len(starts))
	for k := range done {
		done[k] = make(chan struct{})
	}
	var next atomic.Int64
	var finished atomic.Bool // no more segments are needed
	var wg sync.WaitGroup
	defer wg.Wait()
	defer finished.Store(true)
	for range min(max(runtime.GOMAXPROCS(0), 2), len(starts)) {
		wg.Go(func() {
			for k := int(next.Add(1)) - 1; k < len(starts); k = int(next.Add(1)) - 1 {
				if !finished.Load() {
					results[k] = l.decodeSegment(&jsonScanner{data: d.data, pos: starts[k]}, 0, stopAfter(starts, k))
				}
				close(done[k])
			}
		})
	}
	var chunks [][]T
	for pos, n := starts[0], 0; ; {
		k, found := slices.BinarySearch(starts, pos)
		var r decodedSegment[T]
		if found {
			<-done[k]
			r = results[k]
		}
		if !found || r.err != nil {
			stop := noStop
			if k < len(starts) {
				stop = starts[k]
			}
			if found {
				stop = stopAfter(starts, k)
			}
			r = l.decodeSegment(&jsonScanner{data: d.data, pos: pos}, n, stop)
			if r.err != nil {
				return nil, r.err
			}
		}
		chunks = append(chunks, r.chunks...)
		if r.closed {
			d.pos = r.end
			return chunks, nil
		}
		pos, n = r.end, n+r.n
	}
}

// stopAfter is where the segment starting at starts[k] stops.
func stopAfter(starts []int, k int) int {
	if k+1 < len(starts) {
		return starts[k+1]
	}
	return noStop
}

// segmentStarts returns from and then, about every size bytes, the first likely
// element start found (see inParallel).
func segmentStarts(data []byte, from, size int) []int {
	starts := []int{from}
	for at := from + size; at < len(data); at += size {
		if s := objectAfterComma(data, at, min(at+size, len(data))); s >= 0 {
			starts = append(starts, s)
			at = s
		}
	}
	return starts
}

// objectAfterComma returns the first position in data[from:limit] of a '{' that
// follows a ',' that follows a '}' (white space allowed between), or -1.
func objectAfterComma(data []byte, from, limit int) int {
	for i := from; i < limit; i++ {
		j := bytes.IndexByte(data[i:limit], '{')
		if j < 0 {
			return -1
		}
		i += j
		k := skipSpaceBack(data, i-1)
		if k < 0 || data[k] != ',' {
			continue
		}
		if k = skipSpaceBack(data, k-1); k >= 0 && data[k] == '}' {
			return i
		}
	}
	return -1
}

// skipSpaceBack returns the last position at or before i that is not white space.
func skipSpaceBack(data []byte, i int) int {
	for i >= 0 && isSpace(data[i]) {
		i--
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// nextElement appends a zero element to the last chunk, starting a new chunk when it
// is full, and returns it. Chunks grow from 16 elements to listChunk, so a short list
// takes little room.
func nextElement[T any](chunks *[][]T) *T {
	n := len(*chunks)
	if n == 0 || len((*chunks)[n-1]) == cap((*chunks)[n-1]) {
		size := 16
		if n > 0 {
			size = min(2*cap((*chunks)[n-1]), listChunk)
		}
		*chunks = append(*chunks, make([]T, 0, size))
		n++
	}
	last := &(*chunks)[n-1]
	*last = (*last)[:len(*last)+1]
	return &(*last)[len(*last)-1]
}

// join returns list followed by the elements of chunks, in one slice. A long list is
// copied on every processor.
func join[T any](list []T, chunks [][]T) []T {
	if len(chunks) == 0 {
		return list
	}
	n := len(list)
	offsets := make([]int, len(chunks))
	for i, c := range chunks {
		offsets[i] = n
		n += len(c)
	}
	out := make([]T, n)
	copy(out, list)
	// Worker w copies chunks w, w+workers, ...
	copyChunks := func(w, workers int) {
		for i := w; i < len(chunks); i += workers {
			copy(out[offsets[i]:], chunks[i])
		}
	}
	if n < parallelJoin {
		copyChunks(0, 1)
		return out
	}
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		wg.Go(func() { copyChunks(w, workers) })
	}
	wg.Wait()
	return out
}

// parallelJoin is the least number of elements join copies in parallel.
const parallelJoin = 1 << 16

func decodeUser(d *jsonScanner, at loc, u *User) error {
	return d.object(at, func(key []byte) error {
		switch fieldName(key, userFields) {
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
	return d.object(at, func(key []byte) error {
		switch fieldName(key, postFields) {
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
	return d.object(at, func(key []byte) error {
		switch fieldName(key, commentFields) {
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
	return d.object(at, func(key []byte) error {
		switch fieldName(key, productFields) {
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
	return d.object(at, func(key []byte) error {
		switch fieldName(key, orderFields) {
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
	segment int // see decodeDatasetIn
}

// maxNesting bounds how deep values may nest where this format has no nesting at all
// (a value of an unexpected kind is skipped only to report it).
const maxNesting = 64

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

// object reads an object, calling field for each key with pos at its value; field
// must consume the value, and must not keep key, which may point into data. A null is
// no object and no error, as for encoding/json.
func (d *jsonScanner) object(at loc, field func(key []byte) error) error {
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
	for {
		if d.next() != '"' {
			return d.syntax("a string key")
		}
		key, err := d.key()
		if err != nil {
			return err
		}
		if d.next() != ':' {
			return d.syntax("':'")
		}
		d.pos++
		d.space()
		if err := field(key); err != nil {
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
	_, err := d.elements(0, noStop, elem)
	return err
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

// noStop is a stop for elements past any position.
const noStop = math.MaxInt

// elements reads an array's elements from pos, an element, calling elem for each with
// pos at it, numbered from i. It stops at the end of the array (closed, pos just past
// it) or before the first element that starts at or past stop (pos at its start).
func (d *jsonScanner) elements(i, stop int, elem func(i int) error) (closed bool, err error) {
	for ; ; i++ {
		if err := elem(i); err != nil {
			return false, err
		}
		switch d.next() {
		case ',':
			d.pos++
			if d.space(); d.pos >= stop {
				return false, nil
			}
		case ']':
			d.pos++
			return true, nil
		default:
			return false, d.syntax("',' or ']'")
		}
	}
}

// stringToken returns the raw bytes of the string at pos, quotes included, and
// whether it is plain: printable ASCII without escapes, the same unquoted.
func (d *jsonScanner) stringToken() ([]byte, bool, error) {
	data, start := d.data, d.pos
	pos := start + 1 // past the opening quote
	plain := true
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
			return data[start:d.pos], plain, nil
		case c == '\\':
			plain = false
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
			plain = false
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

// key reads an object key. A key without escapes is returned as it is in data, so
// matching it allocates nothing.
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

// rawString reads a string; escapes and non-ASCII text are decoded by encoding/json
// itself, so both agree on every odd case (invalid UTF-8, lone surrogates).
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

// unquote decodes a string token with escapes or non-ASCII text.
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
	s, err := d.rawString()
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
	if err := d.skip(0); err != nil {
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
		return d.valueTypeError(at, "a number")
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
	if err := d.skip(0); err != nil {
		return err
	}
	if err := dst.UnmarshalJSON(d.data[start:d.pos]); err != nil {
		return fmt.Errorf("%s: %v (byte %d)", at, err, start)
	}
	return nil
}

// skip consumes one well-formed value of any kind.
func (d *jsonScanner) skip(depth int) error {
	if depth > maxNesting {
		return fmt.Errorf("malformed JSON at byte %d: nested too deeply", d.pos)
	}
	switch c := d.next(); {
	case c == '{':
		return d.object(loc{list: "value"}, func([]byte) error { return d.skip(depth + 1) })
	case c == '[':
		return d.array(loc{list: "value"}, func(int) error { return d.skip(depth + 1) })
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
