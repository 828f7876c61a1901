package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/ownedfile"
	"github.com/corral-dev/corral/internal/unixsock"
)

// lockState takes the state folder's lock, so that two supervisors never
// drive the same sessions. The lock dies with the process.
func lockState(state string) (unlock func(), err error) {
	path := filepath.Join(state, lockName)
	f, err := ownedfile.Open(path, os.O_RDWR|os.O_CREATE, 0o600, false)
	if err != nil {
		return nil, fmt.Errorf("lock state folder: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another supervisor (pid %s) is using %s", strings.TrimSpace(string(holder)), state)
		}
		return nil, fmt.Errorf("lock state folder: %w", err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { f.Close() }, nil
}

// listenUnix listens on a socket only its owner may use. A socket file left
// by a supervisor that died is removed, but only once nothing answers on it.
func listenUnix(path string) (net.Listener, error) {
	exists, err := ownedfile.Socket(path)
	if err != nil {
		return nil, err
	}
	if exists {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := unixsock.Dial(ctx, path)
		cancel()
		if err == nil {
			conn.Close()
			return nil, fmt.Errorf("a supervisor already answers on %s", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	}
	// No moment where the socket is open to others.
	old := syscall.Umask(0o177)
	ln, err := unixsock.Listen(path) // a state folder's path may be longer than a socket address holds
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("socket mode: %w", err)
	}
	return ln, nil
}

// loadToken returns the TCP bearer token: from file when given, else from
// <state>/token, which is created with a fresh random token when missing.
// A token file others can read is refused.
func loadToken(state, file string) (string, error) {
	if file == "" {
		file = filepath.Join(state, TokenName)
		raw := make([]byte, 32)
		if _, err := rand.Read(raw); err != nil {
			return "", fmt.Errorf("token: %w", err)
		}
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
		if err == nil {
			_, err = f.WriteString(hex.EncodeToString(raw) + "\n")
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return "", fmt.Errorf("write token: %w", err)
			}
		} else if !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("create token: %w", err)
		}
	}
	return ReadToken(file)
}

// maxToken bounds a token file.
const maxToken = 4 << 10

// ReadToken reads a bearer token file, refusing one that is not the running
// user's, that anyone else may read, or that is a symbolic link.
func ReadToken(file string) (string, error) {
	raw, err := ownedfile.ReadPrivate(file, maxToken)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	token := strings.TrimSpace(string(raw))
	if token == "" {
		return "", fmt.Errorf("token file %s is empty", file)
	}
	return token, nil
}
