package webauth

import (
	"net"
	"strings"
	"testing"
)

// FuzzParseOrigin: any string either is refused or gives an origin that
// parses to itself, in lower case, without a default port.
func FuzzParseOrigin(f *testing.F) {
	for _, s := range []string{"http://localhost:5173", "HTTPS://Example.COM:443/", "http://[::1]:80", "null", "*", "http://a:b:c", "http://x/y?z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParseOrigin(s)
		if err != nil {
			return
		}
		again, err := ParseOrigin(o)
		if err != nil || again != o {
			t.Fatalf("ParseOrigin(%q) = %q, which parses to %q, %v", s, o, again, err)
		}
		if o != strings.ToLower(o) || strings.HasSuffix(o, ":80") && strings.HasPrefix(o, "http://") || strings.HasSuffix(o, ":443") && strings.HasPrefix(o, "https://") {
			t.Fatalf("ParseOrigin(%q) = %q: not in the form a browser sends", s, o)
		}
	})
}

// FuzzHostHeader: no Host header but the supervisor's own names passes the
// guard of a loopback listener, and none makes it panic.
func FuzzHostHeader(f *testing.F) {
	for _, s := range []string{"127.0.0.1:7777", "localhost:7777", "[::1]:7777", "evil.example:7777", "127.0.0.1.evil:7777", "[::ffff:127.0.0.1]:7777", "", ":7777", "[", "a@127.0.0.1:7777"} {
		f.Add(s)
	}
	a, err := New(Config{Token: "t"})
	if err != nil {
		f.Fatal(err)
	}
	g := a.Guard(Listener{Addr: "127.0.0.1:7777"}, echo).(*guard)
	f.Fuzz(func(t *testing.T, host string) {
		if !g.hostAllowed(host) {
			return
		}
		hp, err := splitHost(host, "80")
		if err != nil {
			t.Fatalf("Host %q allowed: %v", host, err)
		}
		if hp.name != "localhost" && hp.name != "127.0.0.1" && !isLoopbackLiteral(hp.name) {
			t.Fatalf("Host %q allowed for a loopback listener", host)
		}
	})
}

func isLoopbackLiteral(name string) bool {
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}
