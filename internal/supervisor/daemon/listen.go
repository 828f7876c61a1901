package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/oklog/run"
	"go.uber.org/zap"
	"golang.org/x/net/netutil"
	"golang.org/x/sys/unix"
)

// Limits every listener applies.
const (
	// headerTimeout bounds reading a request's headers (and a TLS
	// handshake).
	headerTimeout = 10 * time.Second
	// bodyTimeout bounds reading a request's body, from its headers to
	// its end.
	bodyTimeout = 30 * time.Second
	// idleTimeout is how long a kept-alive connection waits for its next
	// request.
	idleTimeout = 2 * time.Minute
	// DefaultMaxConns is the default cap on the connections open at once
	// on one listener.
	DefaultMaxConns = 256
	// minConns is the least a cap is lowered to.
	minConns = 8
)

// connCap is the cap on one listener's connections: max, but at most a
// quarter of the process's open-file limit, so that clients of one listener
// can never take the files the other listener, the runners and the session
// files need.
func connCap(want int) int {
	if want <= 0 {
		want = DefaultMaxConns
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err == nil && lim.Cur != unix.RLIM_INFINITY {
		want = min(want, int(lim.Cur/4))
	}
	return max(want, minConns)
}

// listenTCP listens on addr, with TLS when cert and key are given, and caps
// the connections open at once. The cap applies before the TLS handshake:
// a connection waiting past it costs the process nothing.
func listenTCP(addr, cert, key string, maxConns int) (net.Listener, error) {
	var tlsCfg *tls.Config
	if cert != "" || key != "" {
		if cert == "" || key == "" {
			return nil, errors.New("TLS needs both --tls-cert and --tls-key")
		}
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("TLS certificate: %w", err)
		}
		// HTTP/1.1 only (no "h2" offered): terminal WebSockets and event
		// streams take over their connection.
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	ln = netutil.LimitListener(ln, connCap(maxConns))
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	return ln, nil
}

// addServer serves h on ln until the group stops. Stopping ends every event
// stream first, so the graceful shutdown does not wait on them.
func addServer(g *run.Group, log *zap.Logger, ln net.Listener, h http.Handler) {
	base, cancel := context.WithCancel(context.Background())
	srv := &http.Server{
		Handler:           bodyDeadline(h, bodyTimeout),
		ReadHeaderTimeout: headerTimeout,
		IdleTimeout:       idleTimeout,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          zap.NewStdLog(log.Named("http")),
	}
	g.Add(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve %s: %w", ln.Addr(), err)
		}
		return nil
	}, func(error) {
		cancel()
		ctx, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close()
		}
	})
}

// bodyDeadline bounds the reading of a request's body by timeout. The
// deadline is lifted once the body has been read: a request's context is
// cancelled when a read past its body fails, and event streams, terminals
// and commands waiting on a runner live longer than any body takes.
// (http.Server.ReadTimeout would cancel them.)
func bodyDeadline(next http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(timeout)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
			}
		}
		next.ServeHTTP(w, r)
	})
}

type deadlineBody struct {
	io.ReadCloser
	rc     *http.ResponseController
	lifted bool
}

// Read lifts the deadline at the body's end. After any other error it stays,
// so that what net/http reads of the rest to reuse the connection fails at
// once too.
func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.lifted {
		b.lifted = true
		b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}
