package etag

import "testing"

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
