package grpcweb

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
)

var errBase64 = errors.New("gRPC-Web: the request body is not valid base64")

// textReader decodes a grpc-web-text body: base64 sent in chunks that may each end
// in padding, so "=" may stand mid-body at the end of a four-character quantum.
type textReader struct {
	src  io.Reader
	in   [4096]byte // base64 read, in[:n] not yet decoded
	n    int
	out  []byte // decoded, not yet read
	buf  []byte // out's storage, reused
	done bool   // src ended
}

func (t *textReader) Read(p []byte) (int, error) {
	for len(t.out) == 0 {
		if t.done {
			if t.n > 0 {
				return 0, errBase64 // a last quantum cut short
			}
			return 0, io.EOF
		}
		m, err := t.src.Read(t.in[t.n:])
		t.n += m
		if err == io.EOF {
			t.done = true
		} else if err != nil {
			return 0, err
		}
		whole := t.n - t.n%4
		out, err := decodeChunks(t.buf[:0], t.in[:whole])
		if err != nil {
			return 0, errBase64
		}
		t.out, t.buf = out, out
		t.n = copy(t.in[:], t.in[whole:t.n])
	}
	n := copy(p, t.out)
	t.out = t.out[n:]
	return n, nil
}

// decodeChunks appends to dst the decoding of src, whole quanta of base64 each of
// which may be padded. Line breaks, which package base64 skips, are refused: they
// would shift the quanta.
func decodeChunks(dst, src []byte) ([]byte, error) {
	if bytes.ContainsAny(src, "\r\n") {
		return dst, errBase64
	}
	for len(src) > 0 {
		end := len(src)
		if i := bytes.IndexByte(src, '='); i >= 0 {
			end = min(len(src), i/4*4+4)
		}
		var err error
		if dst, err = base64.StdEncoding.AppendDecode(dst, src[:end]); err != nil {
			return dst, err
		}
		src = src[end:]
	}
	return dst, nil
}
