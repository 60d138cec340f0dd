package odata

import (
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// metadataLevel is the odata.metadata parameter of an answer's format (OData
// JSON Format 4.01, 3 and 4.5), which $format or else Accept choose.
type metadataLevel uint8

const (
	metadataMinimal metadataLevel = iota
	metadataNone                  // no control information but counts
	metadataFull                  // and each entity's type, id and edit link
)

var metadataNames = [...]string{"minimal", "none", "full"}

// format is the JSON format of one answer; the zero value is the default.
type format struct {
	metadata metadataLevel
	ieee754  bool   // Edm.Decimal and Edm.Int64 values as JSON strings
	root     string // the absolute URL of the service root, for @odata.id
	explicit bool   // $format chose the format, which Accept then does not change
}

// contentType is the Content-Type of an answer in f, echoing its parameters.
func (f format) contentType() string {
	s := "application/json; odata.metadata=" + metadataNames[f.metadata]
	if f.ieee754 {
		s += "; IEEE754Compatible=true"
	}
	return s
}

func notAcceptable(msg string) *Error { return &Error{Status: http.StatusNotAcceptable, Msg: msg} }

// parseFormat reads the value of $format: json, or application/json with format
// parameters; any other format is 406.
func parseFormat(v string) (format, *Error) {
	if strings.EqualFold(v, "json") {
		return format{explicit: true}, nil
	}
	mt, params, err := mime.ParseMediaType(v)
	if err != nil || mt != "application/json" {
		return format{}, notAcceptable("format " + strconv.Quote(v) + " is not served; ask for json or application/json")
	}
	f, e := formatParams(params)
	f.explicit = true
	return f, e
}

// formatParams reads the parameters of application/json that choose the format,
// with or without their "odata." prefix; it ignores the others.
func formatParams(params map[string]string) (format, *Error) {
	var f format
	for name, v := range params {
		switch strings.TrimPrefix(name, "odata.") {
		case "metadata":
			l := slices.Index(metadataNames[:], strings.ToLower(v))
			if l < 0 {
				return format{}, notAcceptable("odata.metadata=" + v + " is not served; ask for none, minimal or full")
			}
			f.metadata = metadataLevel(l)
		case "ieee754compatible":
			lv := strings.ToLower(v)
			if lv != "true" && lv != "false" {
				return format{}, notAcceptable("IEEE754Compatible=" + v + " must be true or false")
			}
			f.ieee754 = lv == "true"
		}
	}
	return f, nil
}

// acceptFormat reads the format from the first application/json range of an
// Accept header that parses; without one, the default.
func acceptFormat(accept string) (format, *Error) {
	for _, rng := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(rng))
		if err != nil || mt != "application/json" || params["q"] == "0" {
			continue
		}
		return formatParams(params)
	}
	return format{}, nil
}

// negotiate settles the format of q's answer to r: $format's, else Accept's.
func (q *Query) negotiate(r *http.Request, root string) error {
	f := q.out
	if !f.explicit {
		var err *Error
		if f, err = acceptFormat(r.Header.Get("Accept")); err != nil {
			return err
		}
	}
	f.root = root
	q.setFormat(f)
	return nil
}

func (q *Query) setFormat(f format) {
	q.out = f
	for _, e := range q.expand {
		e.q.setFormat(f)
	}
}

// appendControl writes what opens an entity in full metadata: its type, id and
// edit link, after a comma if comma is set.
func (q *Query) appendControl(b []byte, x any, comma bool) []byte {
	t := q.Type
	if comma {
		b = append(b, ',')
	}
	b = append(b, `"@odata.type":`...)
	b = appendString(b, "#"+t.namespace+"."+t.Name)
	if t.set != nil {
		link := t.set.Name + "(" + strconv.FormatInt(t.keyProperty().Int(x), 10) + ")"
		b = append(b, `,"@odata.id":`...)
		b = appendString(b, q.out.root+link)
		b = append(b, `,"@odata.editLink":`...)
		b = appendString(b, link)
	}
	return b
}
