package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/unixsock"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
)

// maxCommandLine bounds one control.sock command.
const maxCommandLine = 1 << 20

// ListenControl creates the session's control.sock (mode 0600). A socket
// file left by a dead runner is replaced; one a live process answers on is
// an error.
func ListenControl(dir string) (net.Listener, error) {
	return listenUnix(filepath.Join(dir, ControlSock), "control socket")
}

// ListenAttach creates the session's runner.sock (mode 0600), on which a
// supervisor re-attaches to a runner that outlived its previous one, as
// ListenControl does control.sock.
func ListenAttach(dir string) (*unixsock.Listener, error) {
	return listenUnix(filepath.Join(dir, RunnerSock), "runner socket")
}

// listenUnix listens on a Unix socket at path, whatever its length
// (unixsock).
func listenUnix(path, what string) (*unixsock.Listener, error) {
	if _, err := os.Stat(path); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		c, err := unixsock.Dial(ctx, path)
		cancel()
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("%s %s: another runner is serving this session", what, path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale %s: %w", what, err)
		}
	}
	ln, err := unixsock.Listen(path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", what, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("%s mode: %w", what, err)
	}
	return ln, nil
}

// CommandHandler runs one command; *Runner's Do is one.
type CommandHandler func(ctx context.Context, req command.Request) *wire.Reply

// ServeControl answers commands on ln, one JSON command per line and one
// reply line per command, in order, until ctx ends. A malformed line or an
// unknown command gets an ok:false reply; the connection stays open.
func ServeControl(ctx context.Context, ln net.Listener, do CommandHandler, log *zap.Logger) error {
	var wg sync.WaitGroup
	conns := map[net.Conn]bool{}
	var mu sync.Mutex
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	defer stop()
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("accept on control socket: %w", err)
		}
		mu.Lock()
		conns[c] = true
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			serveConn(ctx, c, do, log)
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
			c.Close()
		}()
	}
}

func serveConn(ctx context.Context, c net.Conn, do CommandHandler, log *zap.Logger) {
	lines := wire.NewLineReader(c, maxCommandLine)
	w := bufio.NewWriter(c)
	for {
		line, err := lines.Next()
		var reply *wire.Reply
		var le *wire.LineError
		switch {
		case errors.As(err, &le):
			reply = wire.ErrReply(wire.Errorf(wire.CodeBadRequest, "command line too long (over %d bytes)", maxCommandLine))
		case err != nil:
			return
		case len(line) == 0:
			continue
		default:
			if req, requestID, derr := command.DecodeWithID(line); derr != nil {
				reply = wire.ErrReply(derr)
			} else {
				reply = do(command.WithRequestID(ctx, requestID), req)
			}
		}
		raw, err := json.Marshal(reply)
		if err != nil {
			log.Error("encode control reply", zap.Error(err))
			return
		}
		w.Write(raw)
		w.WriteByte('\n')
		if err := w.Flush(); err != nil {
			return
		}
	}
}
