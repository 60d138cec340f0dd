package clientaddr

import "testing"

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
