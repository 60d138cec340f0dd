package odata

import (
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// param is one name=value pair of a query string, percent-decoded.
type param struct {
	name, value string
}

// splitQuery checks the raw query string as a whole and splits it into its
// parameters (url.ParseQuery refuses every ';', which $expand needs). It must be
// at most l.MaxQueryBytes long; '&' is the only separator, so a ';' is refused in
// a name and in the value of a parameter that is not a system option; every
// percent-escape is valid and decodes to UTF-8; no system option is given twice,
// in any letter case. Errors carry no Option and a position in raw.
func splitQuery(raw string, l Limits) ([]param, error) {
	if len(raw) > l.MaxQueryBytes {
		return nil, &Error{Msg: "query string of " + strconv.Itoa(len(raw)) + " bytes exceeds the maximum of " + strconv.Itoa(l.MaxQueryBytes)}
	}
	var params []param
	seen := map[string]bool{}
	for off := 0; off <= len(raw); {
		part, _, _ := strings.Cut(raw[off:], "&")
		start := off
		off += len(part) + 1
		if part == "" {
			continue
		}
		rawName, rawValue, _ := strings.Cut(part, "=")
		if i := strings.IndexByte(rawName, ';'); i >= 0 {
			return nil, semicolon(start + i)
		}
		name, err := url.QueryUnescape(rawName)
		if err != nil {
			return nil, badEscape(rawName, start, "a parameter name")
		}
		if !utf8.ValidString(name) {
			return nil, &Error{Pos: start, Msg: "a parameter name is not valid UTF-8"}
		}
		system := strings.HasPrefix(name, "$")
		if i := strings.IndexByte(rawValue, ';'); i >= 0 && !system {
			return nil, semicolon(start + len(rawName) + 1 + i)
		}
		value, err := url.QueryUnescape(rawValue)
		if err != nil {
			return nil, badEscape(rawValue, start+len(rawName)+1, "the value of "+name)
		}
		if !utf8.ValidString(value) {
			return nil, &Error{Pos: start + len(rawName) + 1, Msg: "the value of " + name + " is not valid UTF-8"}
		}
		if system {
			lname := strings.ToLower(name)
			if seen[lname] {
				return nil, &Error{Pos: start, Msg: "query option " + name + " is given more than once"}
			}
			seen[lname] = true
		}
		params = append(params, param{name, value})
	}
	return params, nil
}

func semicolon(pos int) *Error {
	return &Error{Pos: pos, Msg: "';' does not separate query parameters; use '&'"}
}

// badEscape returns the error for the first malformed %-escape in s, which
// starts at offset base of the query string.
func badEscape(s string, base int, where string) *Error {
	i := 0
	for ; i < len(s); i++ {
		if s[i] == '%' && (i+2 >= len(s) || unhex(s[i+1]) < 0 || unhex(s[i+2]) < 0) {
			break
		}
	}
	bad := s[i:min(i+3, len(s))]
	return &Error{Pos: base + i, Msg: "invalid percent-encoding " + strconv.Quote(bad) + " in " + where}
}

func unhex(c byte) int {
	i := strings.IndexByte("0123456789abcdefABCDEF", c)
	if i >= 16 {
		i -= 6 // A-F
	}
	return i
}

// containsPassword reports whether raw contains "password" in any ASCII letter
// case, as it is or with its valid percent-escapes decoded and '+' read as a
// space (an invalid escape is kept as it is, so that it cannot hide a word
// elsewhere). Only the places where a 'p' may start are tried: a 'p', a 'P' or
// a '%', so a long query string costs little, and nothing is allocated.
func containsPassword(raw string) bool {
	for i := 0; i < len(raw); i++ {
		k := strings.IndexAny(raw[i:], "pP%")
		if k < 0 {
			return false
		}
		i += k
		if passwordAt(raw[i:]) {
			return true
		}
	}
	return false
}

// passwordAt reports whether raw starts with "password", read as containsPassword reads.
func passwordAt(raw string) bool {
	const word = "password"
	i := 0
	for n := range len(word) {
		if i >= len(raw) {
			return false
		}
		c := raw[i]
		i++
		switch {
		case c == '+':
			c = ' '
		case c == '%' && i+1 < len(raw) && unhex(raw[i]) >= 0 && unhex(raw[i+1]) >= 0:
			c = byte(unhex(raw[i])<<4 | unhex(raw[i+1]))
			i += 2
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != word[n] {
			return false
		}
	}
	return true
}
