package odata

import (
	"strings"
	"testing"
)

// TestSplitQuery checks the rules a query string must follow as a whole:
// '&' alone separates, every escape decodes, no system option repeats.
func TestSplitQuery(t *testing.T) {
	tests := []struct {
		raw  string
		want string // the parameters as name=value|..., or "error: message at position N"
	}{
		{"", ""},
		{"&&", ""},
		{"$top=1&x=a+b%20c&y", "$top=1|x=a b c|y="},
		{"%24top=1&%78=%3B", "$top=1|x=;"},
		{"$expand=orders($top=1;$skip=1)", "$expand=orders($top=1;$skip=1)"},
		{"$filter=name eq 'a;b'", "$filter=name eq 'a;b'"},
		{"x=1&x=2", "x=1|x=2"},
		{"x=%zz", `error: invalid percent-encoding "%zz" in the value of x at position 2`},
		{"$top=1&x=a%", `error: invalid percent-encoding "%" in the value of x at position 10`},
		{"$top=1&x=%4", `error: invalid percent-encoding "%4" in the value of x at position 9`},
		{"$top=1&x=%4g", `error: invalid percent-encoding "%4g" in the value of x at position 9`},
		{"a%g1=1", `error: invalid percent-encoding "%g1" in a parameter name at position 1`},
		{"$filter=%zz", `error: invalid percent-encoding "%zz" in the value of $filter at position 8`},
		{"x=1;y=2", "error: ';' does not separate query parameters; use '&' at position 3"},
		{"$top=1&x;y", "error: ';' does not separate query parameters; use '&' at position 8"},
		{"$top;$skip=1", "error: ';' does not separate query parameters; use '&' at position 4"},
		{"$top=1&$top=2", "error: query option $top is given more than once at position 7"},
		{"$top=1&$Top=1", "error: query option $Top is given more than once at position 7"},
		{"$top=1&%24TOP=1", "error: query option $TOP is given more than once at position 7"},
		{"$foo=1&$foo=1", "error: query option $foo is given more than once at position 7"},
	}
	for _, tt := range tests {
		params, err := splitQuery(tt.raw, DefaultLimits)
		var got string
		if err != nil {
			got = "error: " + err.Error()
		} else {
			var parts []string
			for _, p := range params {
				parts = append(parts, p.name+"="+p.value)
			}
			got = strings.Join(parts, "|")
		}
		if got != tt.want {
			t.Errorf("%q:\n got %s\nwant %s", tt.raw, got, tt.want)
		}
	}
}

// TestContainsPassword checks the password rule on the raw query string and on its
// decoded form, which one bad escape elsewhere must not prevent.
func TestContainsPassword(t *testing.T) {
	tests := []struct {
		raw  string
		want bool
	}{
		{"password", true},
		{"x=PassWord", true},
		{"$filter=customerName eq 'p%61ssword'&x=%zz", true},
		{"x=%zz&y=PA%53%53WORD", true},
		{"x=%password", true},
		{"x=%2apassword", true},
		{"x=ppassword", true},
		{"x=passpassword", true},
		{"x=%70%61%73%73%77%6f%72%64", true},
		{"x=p%zzassword", false},
		{"x=pass+word", false},
		{"x=pass%20word", false},
		{"x=passwor", false},
		{"x=%2570assword", false}, // decoded once, as the query string is
		{"x=pass&word", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := containsPassword(tt.raw); got != tt.want {
			t.Errorf("containsPassword(%q) = %v, want %v", tt.raw, got, tt.want)
		}
	}
}

// TestContainsPasswordAllocates nothing, whatever the query string's length.
func TestContainsPasswordAllocates(t *testing.T) {
	raw := strings.Repeat("p%61ssw%zz", 1000)
	if n := testing.AllocsPerRun(10, func() { containsPassword(raw) }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}
