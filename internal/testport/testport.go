// Package testport picks loopback addresses for servers a test starts
// later, or stops and starts again on the same address.
//
// A listen on port 0 gets a port from the system's ephemeral range, the
// range the system also takes the local end of every outgoing connection
// from. A port picked that way and freed for a server to bind later can be
// taken in between by any connection on the machine, and the server then
// fails with "address already in use". The ports picked here lie below
// that range, where only another listener can take them.
package testport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"testing"
)

// span is how many ports below the ephemeral range are picked from.
const span = 16384

// Addrs returns n distinct loopback addresses ("127.0.0.1:port") that
// nothing listens on now.
func Addrs(tb testing.TB, n int) []string {
	tb.Helper()
	first, last := pickRange()
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	out := make([]string, 0, n)
	for tries := 0; len(out) < n; tries++ {
		if tries == 100*n {
			tb.Fatalf("no free loopback port among %d tries in %d-%d", tries, first, last)
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", first+rand.IntN(last-first+1)))
		if err != nil {
			continue // taken
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	return out
}

// Addr is Addrs for one address.
func Addr(tb testing.TB) string {
	tb.Helper()
	return Addrs(tb, 1)[0]
}

// pickRange is the ports Addrs picks from: the span just below the
// ephemeral range, above the privileged ports.
func pickRange() (first, last int) {
	low := ephemeralLow()
	return max(1024, low-span), low - 1
}

// ephemeralLow is the first port of the system's ephemeral range.
func ephemeralLow() int {
	if runtime.GOOS == "linux" {
		var low, high int
		raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
		if err == nil {
			if _, err := fmt.Sscan(string(raw), &low, &high); err == nil && low > 1024+1024 {
				return low
			}
		}
		return 32768 // Linux's default
	}
	return 49152 // IANA's dynamic ports: macOS and the BSDs
}
