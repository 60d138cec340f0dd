// Package reqbody is how every surface takes a request body: CheckJSON is the one
// rule for a JSON body's headers (each surface words its refusal in its own format),
// and Read the one reader, which takes the bytes the door read ahead as they are and
// otherwise reads within the caller's limit.
package reqbody

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"quartet/internal/contentcoding"
)

// Why CheckJSON refuses a request body.
var (
	ErrEncoded   = errors.New("the request body is content-encoded")
	ErrMediaType = errors.New("the request body is not of the media type wanted")
	ErrCharset   = errors.New("the request body is not encoded in UTF-8")
)

// CheckJSON reports why a request body with headers h cannot be read as JSON of
// media type want (application/json, or a JSON type such as merge-patch+json):
// it has a content coding (ErrEncoded), another media type (ErrMediaType, "+json"
// types included: application/evil+json is not the JSON an API defines), or a
// charset other than UTF-8 (ErrCharset, RFC 8259 section 11); nil when none.
func CheckJSON(h http.Header, want string) error {
	if contentcoding.Encoded(h) {
		return ErrEncoded
	}
	ct := h.Get("Content-Type")
	if ct == want { // the usual header needs no parsing
		return nil
	}
	mediaType, params, err := mime.ParseMediaType(ct)
	if err != nil || mediaType != want {
		return ErrMediaType
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return ErrCharset
	}
	return nil
}

// Read returns r's whole body, refusing one over limit bytes with an
// *http.MaxBytesError. A body the door read ahead whole (its Bytes method) is
// returned as it is, without a copy. Otherwise a declared length is read into one
// buffer, made that large only once the first chunk has come, so that a client
// declaring a large body it does not send holds little.
func Read(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, &http.MaxBytesError{Limit: limit}
	}
	if b, ok := r.Body.(interface{ Bytes() ([]byte, bool, error) }); ok {
		if data, whole, err := b.Bytes(); whole {
			if err == nil && int64(len(data)) > limit {
				err = &http.MaxBytesError{Limit: limit}
			}
			return data, err
		}
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	if r.ContentLength < 0 {
		return io.ReadAll(body)
	}
	buf := make([]byte, min(r.ContentLength, firstChunk))
	if _, err := io.ReadFull(body, buf); err != nil || len(buf) == int(r.ContentLength) {
		return buf, err
	}
	whole := make([]byte, r.ContentLength)
	n := copy(whole, buf)
	_, err := io.ReadFull(body, whole[n:])
	return whole, err
}

// firstChunk is how much of a declared length Read makes room for before any of it
// has come.
const firstChunk = 64 << 10
