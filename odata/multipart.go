package odata

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
)

// serveMultipart answers a batch in the multipart/mixed format of OData 4.0
// (Protocol, section 11.7): each application/http part is answered, in order,
// by an application/http part with its Content-ID. A change set holds writes,
// so it is answered 405 as a whole.
func (bt *Batch) serveMultipart(w http.ResponseWriter, r *http.Request, boundary string, limits Limits) {
	if boundary == "" {
		write(w, errorResponse(http.StatusBadRequest, "BadRequest", "a multipart/mixed batch needs a boundary"))
		return
	}
	body, ok := readBatch(w, r, limits)
	if !ok {
		return
	}
	type answer struct {
		contentID string
		*partRecorder
	}
	var answers []answer
	room := limits.MaxBatchAnswerBytes
	claim := answerClaim(w)
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			write(w, errorResponse(http.StatusBadRequest, "BadRequest", "malformed multipart batch: "+multipartError(err, len(answers), boundary)))
			return
		}
		if len(answers) == limits.MaxBatchRequests {
			write(w, errorResponse(http.StatusBadRequest, "BadRequest", "a batch may hold at most "+strconv.Itoa(limits.MaxBatchRequests)+" requests"))
			return
		}
		a := answer{contentID: part.Header.Get("Content-ID")}
		mt, _, _ := mime.ParseMediaType(part.Header.Get("Content-Type"))
		switch mt {
		case "multipart/mixed":
			a.partRecorder = failedPart(http.StatusMethodNotAllowed, "MethodNotAllowed", "change sets are not allowed: the service is read-only")
			a.header.Set("Allow", http.MethodGet)
		case "application/http":
			req, err := readPartRequest(part)
			if err != nil {
				a.partRecorder = failedPart(http.StatusBadRequest, "BadRequest", "part "+strconv.Itoa(len(answers)+1)+": "+err.Error())
				break
			}
			req.ID = strconv.Itoa(len(answers) + 1)
			a.partRecorder = bt.serve(r, req, room, nil)
			room -= a.body.Len()
			if refused(w, claim, limits.MaxBatchAnswerBytes-room) {
				return
			}
		default:
			a.partRecorder = failedPart(http.StatusBadRequest, "BadRequest", "part "+strconv.Itoa(len(answers)+1)+" is not application/http")
		}
		answers = append(answers, a)
	}
	if len(answers) == 0 {
		write(w, errorResponse(http.StatusBadRequest, "BadRequest", "a batch needs at least one request"))
		return
	}
	// A boundary from a hash of the answers cannot occur in them, and the same
	// batch gets the same bytes.
	h := sha256.New()
	for _, a := range answers {
		h.Write(a.body.Bytes())
	}
	var out bytes.Buffer
	mw := multipart.NewWriter(&out)
	mw.SetBoundary("batchresponse_" + hex.EncodeToString(h.Sum(nil))[:32])
	for _, a := range answers {
		ph := textproto.MIMEHeader{"Content-Type": {"application/http"}, "Content-Transfer-Encoding": {"binary"}}
		if a.contentID != "" {
			ph.Set("Content-ID", a.contentID)
		}
		pw, _ := mw.CreatePart(ph) // writes to a bytes.Buffer do not fail
		fmt.Fprintf(pw, "HTTP/1.1 %d %s\r\n", a.status, http.StatusText(a.status))
		a.header.WriteSubset(pw, map[string]bool{"Content-Length": true})
		fmt.Fprintf(pw, "Content-Length: %d\r\n\r\n", a.body.Len())
		pw.Write(a.body.Bytes())
	}
	mw.Close()
	write(w, Response{http.StatusOK, "multipart/mixed; boundary=" + mw.Boundary(), out.Bytes()})
}

// multipartError says, in a batch's terms, what is wrong with a body read up to its part n+1.
func multipartError(err error, n int, boundary string) string {
	switch {
	case errors.Is(err, io.EOF) && n == 0:
		return "the body has no delimiter line " + strconv.Quote("--"+boundary) + " (the boundary of its Content-Type)"
	case errors.Is(err, io.EOF):
		return "the body ends before the closing delimiter " + strconv.Quote("--"+boundary+"--")
	case errors.Is(err, multipart.ErrMessageTooLarge):
		return "part " + strconv.Itoa(n+1) + " has too many header lines"
	}
	return "part " + strconv.Itoa(n+1) + ": " + strings.TrimPrefix(err.Error(), "multipart: ")
}

// readPartRequest reads the request of an application/http part: a request line
// "GET Products?$top=2 HTTP/1.1" whose target may be relative (which
// http.ReadRequest refuses) and runs from the first space to the last, as
// ODataLib reads it (clients leave spaces in query options), then headers.
func readPartRequest(part io.Reader) (batchRequest, error) {
	tp := textproto.NewReader(bufio.NewReader(part))
	line, err := tp.ReadLine()
	if err != nil {
		return batchRequest{}, fmt.Errorf("no request line")
	}
	method, rest, _ := strings.Cut(line, " ")
	i := strings.LastIndexByte(rest, ' ') // no space before: rest is "", and i -1
	if i < 0 || !strings.HasPrefix(rest[i+1:], "HTTP/") || strings.TrimSpace(rest[:i]) == "" {
		return batchRequest{}, fmt.Errorf("malformed request line %q", line)
	}
	hdr, err := tp.ReadMIMEHeader()
	if err != nil && err != io.EOF {
		return batchRequest{}, fmt.Errorf("malformed headers: %v", err)
	}
	req := batchRequest{Method: method, URL: strings.TrimSpace(rest[:i]), Headers: map[string]string{}}
	for k, v := range hdr {
		if k != "Host" && len(v) > 0 {
			req.Headers[k] = v[0]
		}
	}
	return req, nil
}
