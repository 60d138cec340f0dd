package graphql

import (
	"encoding/json"
	"errors"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"quartet/internal/jsonstr"
)

// Values of extensions.code set by this package.
const (
	codeParseFailed      = "GRAPHQL_PARSE_FAILED"
	codeValidationFailed = "GRAPHQL_VALIDATION_FAILED"
	codeBadUserInput     = "BAD_USER_INPUT"
	codeInternal         = "INTERNAL_SERVER_ERROR"
	codeTooManyRequests  = "TOO_MANY_REQUESTS" // a WebSocket refused for want of room, as the service's fair share words it
)

// Error is a GraphQL error as it appears in a response (spec 7.1.2).
type Error struct {
	Message    string
	Locations  []Position
	Path       []any // string keys and int indices
	Extensions map[string]any
	Err        error // the resolver's error, if any; not serialised
}

// Error returns the message followed by the locations it applies to.
func (e *Error) Error() string {
	if len(e.Locations) == 0 {
		return e.Message
	}
	locs := make([]string, len(e.Locations))
	for i, l := range e.Locations {
		locs[i] = l.String()
	}
	return e.Message + " at " + strings.Join(locs, ", ")
}

// Unwrap returns the underlying resolver error.
func (e *Error) Unwrap() error { return e.Err }

// Code returns extensions.code, or "".
func (e *Error) Code() string {
	c, _ := e.Extensions["code"].(string)
	return c
}

// ErrorList is a list of GraphQL errors used as a Go error.
type ErrorList []*Error

// Error joins the messages of the list.
func (l ErrorList) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

// ExtendedError is a resolver error with GraphQL extensions, such as
// {"code": "NOT_FOUND"}, found with errors.As.
type ExtendedError interface {
	error
	Extensions() map[string]any
}

// NewError returns a resolver error with message and extensions.code.
func NewError(code, message string) error {
	return &codedError{code: code, msg: message}
}

type codedError struct{ code, msg string }

func (e *codedError) Error() string              { return e.msg }
func (e *codedError) Extensions() map[string]any { return map[string]any{"code": e.code} }

func newError(code, msg string, locs ...Position) *Error {
	e := &Error{Message: msg, Locations: locs}
	if code != "" {
		e.Extensions = map[string]any{"code": code}
	}
	return e
}

func fromResolverError(err error) *Error {
	if ge, ok := errors.AsType[*Error](err); ok {
		c := *ge
		return &c
	}
	e := &Error{Message: err.Error(), Err: err}
	if ext, ok := errors.AsType[ExtendedError](err); ok {
		e.Extensions = ext.Extensions()
	}
	return e
}

// Response is the result of a request (spec 7.1). Data holds the data entry's
// JSON; nil, when the request failed before execution, leaves it out.
type Response struct {
	Errors []*Error
	Data   []byte

	raw    []byte  // the encoded response, when it is shared by many subscribers
	pooled *[]byte // Data's buffer, from buffers; see release
}

// release gives Data's buffer back for reuse, once the answer is written; a
// response handed to anyone else keeps its buffer.
func (r *Response) release() {
	if r.pooled != nil {
		putBuffer(r.pooled, r.Data)
		r.pooled, r.Data = nil, nil
	}
}

// MarshalJSON writes {"errors":[...],"data":...}, leaving out what is absent.
func (r *Response) MarshalJSON() ([]byte, error) { return r.appendJSON(nil), nil }

func (r *Response) appendJSON(buf []byte) []byte {
	if r.raw != nil {
		return append(buf, r.raw...)
	}
	if r.Data == nil {
		return append(r.appendErrors(append(buf, '{')), '}')
	}
	return append(append(r.appendHead(buf), r.Data...), '}')
}

// appendHead appends what comes before the data: `{"errors":[...],"data":`.
func (r *Response) appendHead(buf []byte) []byte {
	buf = r.appendErrors(append(buf, '{'))
	if len(r.Errors) > 0 {
		buf = append(buf, ',')
	}
	return append(buf, `"data":`...)
}

func (r *Response) appendErrors(buf []byte) []byte {
	if len(r.Errors) == 0 {
		return buf
	}
	return appendErrors(buf, r.Errors)
}

// MarshalJSON writes the error in the response form of spec 7.1.2.
func (e *Error) MarshalJSON() ([]byte, error) { return e.appendJSON(nil), nil }

func (e *Error) appendJSON(buf []byte) []byte {
	buf = appendString(append(buf, `{"message":`...), e.Message)
	if len(e.Locations) > 0 {
		buf = appendList(append(buf, `,"locations":`...), e.Locations, func(buf []byte, l Position) []byte {
			buf = strconv.AppendInt(append(buf, `{"line":`...), int64(l.Line), 10)
			buf = strconv.AppendInt(append(buf, `,"column":`...), int64(l.Column), 10)
			return append(buf, '}')
		})
	}
	if e.Path != nil {
		buf = appendValue(append(buf, `,"path":`...), e.Path)
	}
	if len(e.Extensions) > 0 {
		buf = appendValue(append(buf, `,"extensions":`...), e.Extensions)
	}
	return append(buf, '}')
}

// appendString appends s as a JSON string as encoding/json writes it, with <, >
// and & left as they are.
func appendString(buf []byte, s string) []byte { return jsonstr.Append(buf, s) }

// appendFloat formats f as encoding/json does. f must be finite.
func appendFloat(buf []byte, f float64, bits int) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21)) {
		format = 'e'
	}
	buf = strconv.AppendFloat(buf, f, format, -1, bits)
	if format == 'e' { // e-09 to e-9
		n := len(buf)
		if n >= 4 && buf[n-4] == 'e' && buf[n-3] == '-' && buf[n-2] == '0' {
			buf[n-2] = buf[n-1]
			buf = buf[:n-1]
		}
	}
	return buf
}

// appendValue appends a JSON-like Go value. Maps are written with sorted
// keys; unknown types go through encoding/json.
func appendValue(buf []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(buf, "null"...)
	case string:
		return appendString(buf, v)
	case bool:
		return strconv.AppendBool(buf, v)
	case int:
		return strconv.AppendInt(buf, int64(v), 10)
	case int32:
		return strconv.AppendInt(buf, int64(v), 10)
	case int64:
		return strconv.AppendInt(buf, v, 10)
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return append(buf, "null"...)
		}
		return appendFloat(buf, v, 64)
	case json.Number:
		return append(buf, v...)
	case []any:
		return appendList(buf, v, appendValue)
	case []string:
		return appendList(buf, v, appendString)
	case map[string]any:
		keys := slices.AppendSeq(make([]string, 0, len(v)), maps.Keys(v))
		slices.Sort(keys)
		buf = append(buf, '{')
		for i, k := range keys {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendString(buf, k)
			buf = append(buf, ':')
			buf = appendValue(buf, v[k])
		}
		return append(buf, '}')
	}
	b, err := json.Marshal(v)
	if err != nil {
		return append(buf, "null"...)
	}
	return append(buf, b...)
}

func appendList[T any](buf []byte, items []T, appendItem func([]byte, T) []byte) []byte {
	buf = append(buf, '[')
	for i, item := range items {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendItem(buf, item)
	}
	return append(buf, ']')
}
