package testport

import (
	"net"
	"strconv"
	"testing"
)

func TestAddrsAreFreeDistinctAndBelowTheEphemeralRange(t *testing.T) {
	first, last := pickRange()
	if first < 1024 || last >= ephemeralLow() || first > last {
		t.Fatalf("range %d-%d, ephemeral from %d", first, last, ephemeralLow())
	}
	addrs := Addrs(t, 6)
	seen := map[string]bool{}
	for _, a := range addrs {
		host, port, err := net.SplitHostPort(a)
		if err != nil || host != "127.0.0.1" {
			t.Fatalf("address %q: %v", a, err)
		}
		if p, _ := strconv.Atoi(port); p < first || p > last {
			t.Fatalf("port %d outside %d-%d", p, first, last)
		}
		if seen[a] {
			t.Fatalf("%s twice in %v", a, addrs)
		}
		seen[a] = true
		// Free now: a server can bind it.
		ln, err := net.Listen("tcp", a)
		if err != nil {
			t.Fatalf("%s is not free: %v", a, err)
		}
		ln.Close()
	}
}
