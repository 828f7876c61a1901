package testio

import (
	"os"
	"path/filepath"
	"testing"
)

// EveryByteFile writes size bytes holding every byte value many times over
// (what a JSON line could not carry raw) to a file in a temporary folder,
// and returns its path and content.
func EveryByteFile(t testing.TB, size int) (string, []byte) {
	t.Helper()
	content := make([]byte, size)
	for i := range content {
		content[i] = byte(i*7 + i/256)
	}
	path := filepath.Join(t.TempDir(), "content")
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, content
}
