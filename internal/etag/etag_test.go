package etag

import (
	"fmt"
	"strings"
	"testing"
)

func TestListMatches(t *testing.T) {
	for _, c := range []struct {
		values       []string
		tag          string
		strong, want bool
	}{
		{[]string{`"a"`}, `"a"`, true, true},
		{[]string{`"b", "a"`}, `"a"`, true, true},
		{[]string{`W/"a"`}, `"a"`, true, false},
		{[]string{`W/"a"`}, `"a"`, false, true},
		{[]string{`*`}, `"a"`, true, true},
		{[]string{`"b"`, ` "a" `}, `"a"`, false, true},
		{[]string{`"b"`}, `"a"`, false, false},
		{[]string{`a`}, `"a"`, false, false},
	} {
		if got := ListMatches(c.values, c.tag, c.strong); got != c.want {
			t.Errorf("ListMatches(%q, %s, strong %v) = %v, want %v", c.values, c.tag, c.strong, got, c.want)
		}
	}
}

// FuzzListMatches: for any header value, ListMatches never panics; it matches a tag
// as the service makes them (quoted hex) only if the value names the tag or "*"; a
// strong match is a weak one too; and the tag given after the value, in one list,
// always matches.
func FuzzListMatches(f *testing.F) {
	for _, seed := range []string{`"a"`, `"b", "a"`, `W/"a"`, `*`, ` "a" `, `a`, `"a,", W/"b"`, `,,`, ``} {
		f.Add(seed, []byte{0xa})
	}
	f.Fuzz(func(t *testing.T, value string, version []byte) {
		tag := fmt.Sprintf(`"%x"`, version)
		strong, weak := ListMatches([]string{value}, tag, true), ListMatches([]string{value}, tag, false)
		if strong && !weak {
			t.Errorf("%q matches %s strongly but not weakly", value, tag)
		}
		if weak && !strings.Contains(value, "*") && !strings.Contains(value, tag) {
			t.Errorf("%q matches %s, which it does not name", value, tag)
		}
		if !ListMatches([]string{value + ", " + tag}, tag, true) || !ListMatches([]string{value, tag}, tag, true) {
			t.Errorf("%s after %q does not match", tag, value)
		}
	})
}
