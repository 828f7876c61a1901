package fleettest

import (
	"net"
	"sync"
	"testing"
)

// Proxy forwards TCP connections from a loopback port to a target address.
// Cut partitions it as a network does: bytes stop flowing both ways, with
// neither a reset nor a close, so each side notices only by its own
// timeouts; connections made meanwhile are accepted and never answered.
// Heal closes every connection that lived through the cut (as TCP gives up
// on them after a real partition) and lets new ones through.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool // true: lived through a cut
	wg    sync.WaitGroup
}

// NewProxy starts a proxy to target; it stops when the test ends.
func NewProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(p.Close)
	return p
}

// Addr is the proxy's listening address.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL is the proxy as a NATS URL.
func (p *Proxy) URL() string { return "nats://" + p.Addr() }

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			c.Close()
			return
		}
		p.mu.Lock()
		cut := p.cut
		p.mu.Unlock()
		if cut {
			continue // held: read by no one until Heal closes it
		}
		p.wg.Add(1)
		go p.forward(c)
	}
}

// track registers c, reporting false once the proxy is closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		return false
	}
	p.conns[c] = p.cut
	return true
}

func (p *Proxy) forward(c net.Conn) {
	defer p.wg.Done()
	up, err := net.Dial("tcp", p.target)
	if err != nil || !p.track(up) {
		if up != nil {
			up.Close()
		}
		p.drop(c)
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go p.pipe(&wg, up, c)
	go p.pipe(&wg, c, up)
	wg.Wait()
	p.drop(c)
	p.drop(up)
}

// pipe copies src to dst, discarding what arrives while the proxy is cut.
func (p *Proxy) pipe(wg *sync.WaitGroup, dst, src net.Conn) {
	defer wg.Done()
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			cut := p.cut
			p.mu.Unlock()
			if !cut {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) drop(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// Cut stops every byte through the proxy until Heal.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		p.conns[c] = true
	}
}

// Heal closes the connections that lived through the cut and lets new
// ones through.
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.cut = false
	var stale []net.Conn
	for c, cut := range p.conns {
		if cut {
			stale = append(stale, c)
			delete(p.conns, c)
		}
	}
	p.mu.Unlock()
	for _, c := range stale {
		c.Close()
	}
}

// Close stops the proxy and closes every connection through it.
func (p *Proxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for c := range conns {
		c.Close()
	}
	p.wg.Wait()
}
