// Package fleettest runs what the fleet's tests need on loopback: a
// cluster of real NATS servers with JetStream, each its own process (the
// nats-server of the module's pinned version, built once per test
// process), so that a test can kill one with SIGKILL; and TCP proxies
// between a node and the servers, so that a test can cut a node off the
// fabric while the servers and the other nodes carry on.
package fleettest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/testbin"
	"github.com/corral-dev/corral/internal/testio"
	"github.com/corral-dev/corral/internal/testport"
	"github.com/corral-dev/corral/internal/testproc"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

var built testbin.Once

// ServerBinary builds the pinned nats-server (a tool of the module) once
// per test process and returns its path.
func ServerBinary(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(built.Build(tb, "github.com/nats-io/nats-server/v2"), "nats-server")
}

// Cluster is a NATS cluster with JetStream on loopback.
type Cluster struct {
	Servers []*Server
	base    string
}

// Server is one nats-server process of a Cluster.
type Server struct {
	bin         string
	Name        string
	ClientAddr  string // host:port clients connect to
	clusterAddr string
	conf        string
	log         *testio.Buffer

	mu     sync.Mutex
	p      *testproc.Process // nil when killed
	exited <-chan struct{}   // the last start's end
}

// URL is the server's client URL.
func (s *Server) URL() string { return "nats://" + s.ClientAddr }

// StartCluster starts n servers forming one cluster with JetStream, and
// waits until JetStream answers on every one of them. The servers do not
// advertise each other to clients, so a client reaches only the URLs it is
// given (a test's proxies stay in the path).
func StartCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	c := startCluster(tb, n, tb.TempDir())
	tb.Cleanup(func() {
		for _, s := range c.Servers {
			s.Kill()
		}
		if tb.Failed() {
			for _, s := range c.Servers {
				tb.Logf("%s log (tail):\n%s", s.Name, tail(s.log.String(), 40))
			}
		}
	})
	return c
}

func startCluster(tb testing.TB, n int, parent string) *Cluster {
	tb.Helper()
	bin := ServerBinary(tb)
	base, err := os.MkdirTemp(parent, "nats-cluster-")
	if err != nil {
		tb.Fatal(err)
	}
	c := &Cluster{base: base}
	// A server killed and started again binds the same ports.
	addrs := testport.Addrs(tb, 2*n)
	clientAddrs, clusterAddrs := addrs[:n], addrs[n:]
	for i := range n {
		s := &Server{
			bin:         bin,
			Name:        fmt.Sprintf("nats-%d", i+1),
			ClientAddr:  clientAddrs[i],
			clusterAddr: clusterAddrs[i],
			log:         &testio.Buffer{},
		}
		dir := filepath.Join(base, s.Name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			tb.Fatal(err)
		}
		var routes []string
		for j, a := range clusterAddrs {
			if j != i {
				routes = append(routes, fmt.Sprintf("%q", "nats://"+a))
			}
		}
		host, port := splitAddr(tb, s.ClientAddr)
		chost, cport := splitAddr(tb, s.clusterAddr)
		conf := fmt.Sprintf(`server_name: %q
host: %q
port: %s
jetstream {
  store_dir: %q
  max_memory_store: 64MB
  max_file_store: 2GB
}
`, s.Name, host, port, filepath.Join(dir, "js"))
		if n > 1 {
			conf += fmt.Sprintf(`cluster {
  name: "corral-test"
  host: %q
  port: %s
  no_advertise: true
  routes: [%s]
}
`, chost, cport, strings.Join(routes, ", "))
		}
		s.conf = filepath.Join(dir, "server.conf")
		if err := os.WriteFile(s.conf, []byte(conf), 0o600); err != nil {
			tb.Fatal(err)
		}
		c.Servers = append(c.Servers, s)
	}
	for _, s := range c.Servers {
		s.Start(tb)
	}
	for _, s := range c.Servers {
		s.WaitJetStream(tb)
	}
	c.waitPlacement(tb)
	return c
}

// waitPlacement waits until the cluster can place a stream on all of its
// servers: JetStream answers before every peer has joined its meta group.
func (c *Cluster) waitPlacement(tb testing.TB) {
	tb.Helper()
	nc, err := nats.Connect(strings.Join(c.URLs(), ","), nats.Timeout(time.Second))
	if err != nil {
		tb.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{
			Name: "fleettest_ready", Subjects: []string{"fleettest.ready"},
			Replicas: len(c.Servers), Storage: jetstream.MemoryStorage,
		})
		if err == nil {
			err = js.DeleteStream(ctx, "fleettest_ready")
		}
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the NATS cluster cannot place a stream on its %d servers within 60s: %v", len(c.Servers), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var shared struct {
	mu sync.Mutex
	c  *Cluster
}

// Shared returns a three-server cluster shared by the tests of one test
// process, started by the first test that asks: tests that need a cluster
// but do not break it keep apart by their fleet names. StopShared (from
// TestMain) stops it.
func Shared(tb testing.TB) *Cluster {
	tb.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.c == nil {
		shared.c = startCluster(tb, 3, os.TempDir())
	}
	return shared.c
}

// StopShared kills the shared cluster's servers and removes their stores.
func StopShared() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.c == nil {
		return
	}
	for _, s := range shared.c.Servers {
		s.Kill()
	}
	os.RemoveAll(shared.c.base)
	shared.c = nil
}

// URLs are the client URLs of every server.
func (c *Cluster) URLs() []string {
	var out []string
	for _, s := range c.Servers {
		out = append(out, s.URL())
	}
	return out
}

// Start starts the server (again, after Kill: on the same store).
func (s *Server) Start(tb testing.TB) {
	tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p != nil {
		return
	}
	cmd := exec.Command(s.bin, "-c", s.conf)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	s.p = testproc.Start(tb, cmd)
	s.exited = s.p.Exited()
}

// Kill ends the server with SIGKILL and waits for it.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p == nil {
		return
	}
	s.p.Kill()
	s.p = nil
}

// WaitJetStream waits until the server answers JetStream requests as part
// of a cluster with a meta leader.
func (s *Server) WaitJetStream(tb testing.TB) {
	tb.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		last = s.jetStreamReady()
		if last == nil {
			return
		}
		s.mu.Lock()
		exited := s.exited
		s.mu.Unlock()
		select {
		case <-exited:
			tb.Fatalf("%s exited:\n%s", s.Name, tail(s.log.String(), 40))
		case <-time.After(50 * time.Millisecond):
		}
	}
	tb.Fatalf("%s: JetStream not ready within 60s: %v\n%s", s.Name, last, tail(s.log.String(), 40))
}

func (s *Server) jetStreamReady() error {
	nc, err := nats.Connect(s.URL(), nats.Timeout(time.Second), nats.NoReconnect())
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	msg, err := nc.RequestWithContext(ctx, "$JS.API.INFO", nil)
	if err != nil {
		return err
	}
	if bytes.Contains(msg.Data, []byte(`"error"`)) {
		return fmt.Errorf("%s", msg.Data)
	}
	return nil
}

// Log is what the server wrote so far.
func (s *Server) Log() string { return s.log.String() }

func splitAddr(tb testing.TB, addr string) (string, string) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		tb.Fatal(err)
	}
	return host, port
}

func tail(s string, lines int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}
