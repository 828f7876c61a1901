package unixsock

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A socket whose path is far past what a socket address holds is listened
// on, dialled and removed at close like any other.
func TestSocketsBeyondTheAddressLimit(t *testing.T) {
	for _, long := range []bool{false, true} {
		dir := t.TempDir()
		if long {
			dir = filepath.Join(dir, strings.Repeat("d", 100), strings.Repeat("e", 100))
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		path := filepath.Join(dir, "runner.sock")
		ln, err := Listen(path)
		if err != nil {
			t.Fatalf("listen on %d bytes of path: %v", len(path), err)
		}
		go func() {
			c, err := ln.Accept()
			if err == nil {
				c.Write([]byte("hello"))
				c.Close()
			}
		}()
		c, err := Dial(context.Background(), path)
		if err != nil {
			t.Fatalf("dial %d bytes of path: %v", len(path), err)
		}
		got, _ := io.ReadAll(c)
		c.Close()
		if string(got) != "hello" {
			t.Fatalf("read %q over %d bytes of path", got, len(path))
		}
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("socket file at %d bytes of path: %v", len(path), err)
		}
		ln.Close()
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("socket file left after close: %v", err)
		}
	}
}
