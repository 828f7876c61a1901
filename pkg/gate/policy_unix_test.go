//go:build unix

package gate

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A repository can ship a FIFO as its settings file; reading it would
// block LoadPolicy, and with it the session, for ever.
func TestLoadPolicyRefusesFIFOSettings(t *testing.T) {
	wt := t.TempDir()
	if err := os.MkdirAll(filepath.Join(wt, ".corral"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(wt, ".corral", "settings.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := LoadPolicy(wt, nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a FIFO as settings file was accepted")
		}
	case <-time.After(30 * time.Second):
		// Unblock the reader so the goroutine ends with the test.
		if w, err := os.OpenFile(filepath.Join(wt, ".corral", "settings.json"), os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		t.Fatal("LoadPolicy blocked reading a FIFO")
	}
}
