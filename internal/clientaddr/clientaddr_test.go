package clientaddr

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

func TestRemoteAddr(t *testing.T) {
	proxies, err := ParseProxies("127.0.0.1, 10.0.0.0/8, ::1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		remote    string
		forwarded []string
		xff       []string
		want      string
	}{
		{"not a proxy: headers ignored", "192.0.2.1:5000", nil, []string{"203.0.113.9"}, "192.0.2.1:5000"},
		{"proxy without headers", "127.0.0.1:5000", nil, nil, "127.0.0.1:5000"},
		{"X-Forwarded-For", "127.0.0.1:5000", nil, []string{"203.0.113.9"}, "203.0.113.9:5000"},
		{"a client's own claim is left of its proxy's", "127.0.0.1:5000", nil, []string{"1.2.3.4, 203.0.113.9"}, "203.0.113.9:5000"},
		{"through two trusted proxies", "127.0.0.1:5000", nil, []string{"203.0.113.9, 10.1.2.3"}, "203.0.113.9:5000"},
		{"lines joined in order", "127.0.0.1:5000", nil, []string{"198.51.100.7", "10.1.2.3"}, "198.51.100.7:5000"},
		{"Forwarded wins", "127.0.0.1:5000", []string{`for=192.0.2.60;proto=http;by=203.0.113.43`}, []string{"203.0.113.9"}, "192.0.2.60:5000"},
		{"Forwarded IPv6 with port", "[::1]:5000", []string{`for="[2001:db8:cafe::17]:4711"`}, nil, "[2001:db8:cafe::17]:5000"},
		{"Forwarded two elements", "127.0.0.1:5000", []string{`for=192.0.2.43, for=10.9.9.9`}, nil, "192.0.2.43:5000"},
		{"unknown stops the walk", "127.0.0.1:5000", []string{`for=192.0.2.43, for=unknown`}, nil, "127.0.0.1:5000"},
		{"garbage", "127.0.0.1:5000", nil, []string{"not-an-ip"}, "127.0.0.1:5000"},
		{"every hop trusted", "127.0.0.1:5000", nil, []string{"10.0.0.2, 10.0.0.1"}, "10.0.0.2:5000"},
		{"mapped IPv4 peer", "[::ffff:127.0.0.1]:5000", nil, []string{"203.0.113.9"}, "203.0.113.9:5000"},
	} {
		if got := proxies.RemoteAddr(tc.remote, tc.forwarded, tc.xff); got != tc.want {
			t.Errorf("%s: RemoteAddr(%s, %q, %q) = %s, want %s", tc.name, tc.remote, tc.forwarded, tc.xff, got, tc.want)
		}
	}
	if got := Proxies(nil).RemoteAddr("127.0.0.1:5000", nil, []string{"203.0.113.9"}); got != "127.0.0.1:5000" {
		t.Errorf("no trusted proxies: %s", got)
	}
	for addr, want := range map[string]bool{"127.0.0.1:80": true, "[::1]:80": true, "10.2.3.4:1": true, "[::ffff:10.2.3.4]:1": true, "192.0.2.1:80": false, "pipe": false} {
		if got := proxies.Contains(addr); got != want {
			t.Errorf("Contains(%s) = %v", addr, got)
		}
	}
	if _, err := ParseProxies("10.0.0.0/8, nonsense"); err == nil {
		t.Error("ParseProxies accepted nonsense")
	}
}

// FuzzRemoteAddr: whatever the headers say, the answer is the peer or an address
// taken from them, never a panic.
func FuzzRemoteAddr(f *testing.F) {
	f.Add("203.0.113.9, 10.1.2.3", `for="[2001:db8::1]:80";by=x, for=unknown`)
	f.Add("", "for=")
	proxies, _ := ParseProxies("127.0.0.0/8,10.0.0.0/8")
	f.Fuzz(func(t *testing.T, xff, forwarded string) {
		got := proxies.RemoteAddr("127.0.0.1:1", nil, []string{xff})
		if _, _, err := net.SplitHostPort(got); err != nil {
			t.Errorf("X-Forwarded-For %q: %q", xff, got)
		}
		got = proxies.RemoteAddr("127.0.0.1:1", []string{forwarded}, nil)
		if _, _, err := net.SplitHostPort(got); err != nil {
			t.Errorf("Forwarded %q: %q", forwarded, got)
		}
	})
}
