package graphql

import (
	"net/http"
	"strconv"
)

// incrementalFormat is a wire format of incremental results, as clients name
// it in Accept.
type incrementalFormat int

const (
	noIncremental incrementalFormat = iota
	// format20220824 is graphql-js 17.0.0-alpha.2's, Apollo Router's and Apollo
	// Client 3's: incremental [{path, label, data | items, errors}], hasNext.
	format20220824
	// formatV02 is graphql-js 17.0.0-alpha.9's: pending [{id, path, label}],
	// incremental [{id, data | items, errors}], completed [{id, errors}].
	formatV02
)

var mediaParams = [...]string{format20220824: "deferSpec=20220824", formatV02: "incrementalSpec=v0.2"}

// multipartFormat reads an Accept header: the incremental format of the
// multipart/mixed it allows with the highest quality, the first among equals.
// A multipart/mixed with no spec parameter is the 2022-08-24 format, as urql
// and meros read it.
func multipartFormat(accept []acceptRange) incrementalFormat {
	best, bestQ := noIncremental, 0.0
	for _, r := range accept {
		if r.media != "multipart/mixed" {
			continue
		}
		f := noIncremental
		switch defer_, spec := r.params["deferspec"], r.params["incrementalspec"]; {
		case spec == "v0.2" && defer_ == "":
			f = formatV02
		case spec == "" && (defer_ == "" || defer_ == "20220824") && r.params["subscriptionspec"] == "":
			f = format20220824
		}
		if f != noIncremental && r.q > bestQ {
			best, bestQ = f, r.q
		}
	}
	return best
}

// writeMultipart answers in as multipart/mixed, each part written and flushed
// as soon as it is computed. The boundary is "-" and the closing one "-----",
// as Apollo Router and GraphQL Yoga write them; each part is followed at once
// by the delimiter, which readers such as Apollo Client's wait for.
func writeMultipart(w http.ResponseWriter, f incrementalFormat, in *Incremental) {
	h := w.Header()
	h.Set("Content-Type", `multipart/mixed; boundary="-"; `+mediaParams[f])
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx would buffer the parts otherwise
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	bp := buffers.Get().(*[]byte)
	buf := in.appendInitial(append((*bp)[:0], "\r\n---"+partHeader...), f)
	in.Initial.release()
	for {
		buf = append(buf, "\r\n---"...)
		if _, err := w.Write(buf); err != nil {
			break // the client left: nothing more is computed
		}
		rc.Flush()
		p := in.Next()
		if p == nil {
			w.Write([]byte("--\r\n"))
			break
		}
		buf = p.appendJSON(append(buf[:0], partHeader...), f)
	}
	putBuffer(bp, buf)
}

const partHeader = "\r\nContent-Type: application/json; charset=utf-8\r\n\r\n"

func (in *Incremental) appendInitial(buf []byte, f incrementalFormat) []byte {
	buf = in.Initial.appendJSON(buf)
	buf = buf[:len(buf)-1] // the closing brace
	if f == formatV02 {
		buf = appendList(append(buf, `,"pending":`...), in.Pending, appendPending)
	}
	return append(strconv.AppendBool(append(buf, `,"hasNext":`...), len(in.queue) > 0), '}')
}

func appendPending(buf []byte, p *Pending) []byte {
	buf = strconv.AppendInt(append(buf, `{"id":"`...), int64(p.ID), 10)
	buf = appendValue(append(buf, `","path":`...), p.Path)
	return append(appendLabel(buf, p.Label), '}')
}

func appendLabel(buf []byte, label string) []byte {
	if label == "" {
		return buf
	}
	return appendString(append(buf, `,"label":`...), label)
}

func (p *Payload) appendJSON(buf []byte, f incrementalFormat) []byte {
	if f == format20220824 {
		buf = append(buf, `{"incremental":[`...)
		buf = p.appendResult(buf, f)
		return append(strconv.AppendBool(append(buf, `],"hasNext":`...), p.HasNext), '}')
	}
	buf = append(buf, '{')
	if len(p.Started) > 0 {
		buf = append(appendList(append(buf, `"pending":`...), p.Started, appendPending), ',')
	}
	failed := p.Data == nil && p.Items == nil
	if !failed {
		buf = append(p.appendResult(append(buf, `"incremental":[`...), f), "],"...)
	}
	if p.Done {
		buf = strconv.AppendInt(append(buf, `"completed":[{"id":"`...), int64(p.ID), 10)
		buf = append(buf, '"')
		if failed {
			buf = appendErrors(append(buf, ','), p.Errors)
		}
		buf = append(buf, "}],"...)
	}
	return append(strconv.AppendBool(append(buf, `"hasNext":`...), p.HasNext), '}')
}

// appendResult appends the object for p in incremental: in the 2022-08-24
// format with its path and label, in v0.2 with its id.
func (p *Payload) appendResult(buf []byte, f incrementalFormat) []byte {
	buf = append(buf, '{')
	if f == formatV02 {
		buf = append(strconv.AppendInt(append(buf, `"id":"`...), int64(p.ID), 10), `",`...)
	}
	switch {
	case !p.Stream:
		buf = append(append(buf, `"data":`...), orNull(p.Data)...)
	default:
		buf = append(append(buf, `"items":`...), orNull(p.Items)...)
	}
	if f == format20220824 {
		path := p.Path
		if p.Stream {
			path = append(path[:len(path):len(path)], p.Index)
		}
		buf = appendLabel(appendValue(append(buf, `,"path":`...), path), p.Label)
	}
	if len(p.Errors) > 0 {
		buf = appendErrors(append(buf, ','), p.Errors)
	}
	return append(buf, '}')
}

func appendErrors(buf []byte, errs []*Error) []byte {
	return appendList(append(buf, `"errors":`...), errs, func(buf []byte, e *Error) []byte { return e.appendJSON(buf) })
}

func orNull(b []byte) []byte {
	if b == nil {
		return []byte("null")
	}
	return b
}
