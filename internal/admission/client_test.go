package admission

import (
	"net"
	"testing"
)

func TestOf(t *testing.T) {
	for remote, want := range map[string]string{
		"127.0.0.2:5000":                 "127.0.0.2",
		"[::ffff:192.0.2.7]:80":          "192.0.2.7",
		"[2001:db8:1:2:3:4:5:6]:443":     "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1%eth0]:80": "2001:db8:1:2::/64",
		"[fe80::1]:80":                   "fe80::/64",
		"pipe":                           "pipe",
	} {
		if got := Of(remote); got != want {
			t.Errorf("Of(%q) = %q, want %q", remote, got, want)
		}
	}
}

// headers returns a lookup of the lines of Forwarded and X-Forwarded-For.
func headers(forwarded, xff []string) func(string) []string {
	return func(name string) []string {
		if name == HeaderForwarded {
			return forwarded
		}
		return xff
	}
}

func TestRemoteAddr(t *testing.T) {
	byXFF, err := ParseProxies("127.0.0.1, 10.0.0.0/8, ::1", "x-forwarded-for")
	if err != nil {
		t.Fatal(err)
	}
	byForwarded, err := ParseProxies("127.0.0.1, 10.0.0.0/8, ::1", "Forwarded")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		proxies   Proxies
		remote    string
		forwarded []string
		xff       []string
		want      string
	}{
		{"not a proxy: headers ignored", byXFF, "192.0.2.1:5000", nil, []string{"203.0.113.9"}, "192.0.2.1:5000"},
		{"proxy without headers", byXFF, "127.0.0.1:5000", nil, nil, "127.0.0.1:5000"},
		{"X-Forwarded-For", byXFF, "127.0.0.1:5000", nil, []string{"203.0.113.9"}, "203.0.113.9:5000"},
		{"a client's own claim is left of its proxy's", byXFF, "127.0.0.1:5000", nil, []string{"1.2.3.4, 203.0.113.9"}, "203.0.113.9:5000"},
		{"through two trusted proxies", byXFF, "127.0.0.1:5000", nil, []string{"203.0.113.9, 10.1.2.3"}, "203.0.113.9:5000"},
		{"lines joined in order", byXFF, "127.0.0.1:5000", nil, []string{"198.51.100.7", "10.1.2.3"}, "198.51.100.7:5000"},
		// The proxy appends X-Forwarded-For only; what the client wrote in Forwarded
		// is its own word, and ignored.
		{"a client's own Forwarded is ignored", byXFF, "127.0.0.1:5000", []string{"for=6.6.6.6"}, []string{"10.0.0.9"}, "10.0.0.9:5000"},
		{"Forwarded", byForwarded, "127.0.0.1:5000", []string{`for=192.0.2.60;proto=http;by=203.0.113.43`}, nil, "192.0.2.60:5000"},
		{"a client's own X-Forwarded-For is ignored", byForwarded, "127.0.0.1:5000", []string{"for=192.0.2.60"}, []string{"6.6.6.6"}, "192.0.2.60:5000"},
		{"no Forwarded, X-Forwarded-For is not read", byForwarded, "127.0.0.1:5000", nil, []string{"6.6.6.6"}, "127.0.0.1:5000"},
		{"Forwarded IPv6 with port", byForwarded, "[::1]:5000", []string{`for="[2001:db8:cafe::17]:4711"`}, nil, "[2001:db8:cafe::17]:5000"},
		{"Forwarded two elements", byForwarded, "127.0.0.1:5000", []string{`for=192.0.2.43, for=10.9.9.9`}, nil, "192.0.2.43:5000"},
		{"a client's own Forwarded element is left of its proxy's", byForwarded, "127.0.0.1:5000", []string{`for=6.6.6.6, for=192.0.2.43`}, nil, "192.0.2.43:5000"},
		{"unknown stops the walk", byForwarded, "127.0.0.1:5000", []string{`for=192.0.2.43, for=unknown`}, nil, "127.0.0.1:5000"},
		{"garbage", byXFF, "127.0.0.1:5000", nil, []string{"not-an-ip"}, "127.0.0.1:5000"},
		{"every hop trusted", byXFF, "127.0.0.1:5000", nil, []string{"10.0.0.2, 10.0.0.1"}, "10.0.0.2:5000"},
		{"mapped IPv4 peer", byXFF, "[::ffff:127.0.0.1]:5000", nil, []string{"203.0.113.9"}, "203.0.113.9:5000"},
	} {
		if got := tc.proxies.RemoteAddr(tc.remote, headers(tc.forwarded, tc.xff)); got != tc.want {
			t.Errorf("%s: RemoteAddr(%s, %q, %q) = %s, want %s", tc.name, tc.remote, tc.forwarded, tc.xff, got, tc.want)
		}
	}
	if got := (Proxies{}).RemoteAddr("127.0.0.1:5000", headers(nil, []string{"203.0.113.9"})); got != "127.0.0.1:5000" {
		t.Errorf("no trusted proxies: %s", got)
	}
	for addr, want := range map[string]bool{"127.0.0.1:80": true, "[::1]:80": true, "10.2.3.4:1": true, "[::ffff:10.2.3.4]:1": true, "192.0.2.1:80": false, "pipe": false} {
		if got := byXFF.Contains(addr); got != want {
			t.Errorf("Contains(%s) = %v", addr, got)
		}
	}
	if _, err := ParseProxies("10.0.0.0/8, nonsense", HeaderXForwardedFor); err == nil {
		t.Error("ParseProxies accepted nonsense")
	}
	if _, err := ParseProxies("10.0.0.0/8", "X-Real-IP"); err == nil {
		t.Error("ParseProxies accepted a header no proxy is read in")
	}
}

// FuzzRemoteAddr: whatever the headers say, the answer is the peer or an address
// taken from them, never a panic.
func FuzzRemoteAddr(f *testing.F) {
	f.Add("203.0.113.9, 10.1.2.3", `for="[2001:db8::1]:80";by=x, for=unknown`)
	f.Add("", "for=")
	byXFF, _ := ParseProxies("127.0.0.0/8,10.0.0.0/8", HeaderXForwardedFor)
	byForwarded, _ := ParseProxies("127.0.0.0/8,10.0.0.0/8", HeaderForwarded)
	f.Fuzz(func(t *testing.T, xff, forwarded string) {
		got := byXFF.RemoteAddr("127.0.0.1:1", headers(nil, []string{xff}))
		if _, _, err := net.SplitHostPort(got); err != nil {
			t.Errorf("X-Forwarded-For %q: %q", xff, got)
		}
		got = byForwarded.RemoteAddr("127.0.0.1:1", headers([]string{forwarded}, nil))
		if _, _, err := net.SplitHostPort(got); err != nil {
			t.Errorf("Forwarded %q: %q", forwarded, got)
		}
	})
}

// BenchmarkOf is the cost of naming an IPv4 client, on every request.
func BenchmarkOf(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Of("192.0.2.17:50412")
	}
}
