package worktree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/corral-dev/corral/internal/atomicfile"
	"github.com/corral-dev/corral/pkg/hunks"
)

// Store keeps file contents by git blob id, so that the version of a file
// before a command can be shown and put back after the command changed it.
// It lives in the session folder; equal contents are kept once.
type Store struct {
	dir string
}

// OpenStore opens (creating) the content store in dir.
func OpenStore(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("content store: %w", err)
	}
	return &Store{dir: dir}, nil
}

func (s *Store) path(id string) string { return filepath.Join(s.dir, id[:2], id[2:]) }

// Has reports whether the store holds id.
func (s *Store) Has(id string) bool {
	_, err := os.Stat(s.path(id))
	return err == nil
}

// Put stores data under its blob id and returns the id.
func (s *Store) Put(data []byte) (string, error) {
	id := hunks.BlobID(data)
	if s.Has(id) {
		return id, nil
	}
	p := s.path(id)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return "", fmt.Errorf("content store: %w", err)
	}
	// Not synced: a blob lost to a machine crash only makes an older
	// change unrevertible, and the store is rebuilt from the worktree.
	if err := atomicfile.WriteNoSync(p, data, 0o600); err != nil {
		return "", fmt.Errorf("content store: %w", err)
	}
	return id, nil
}

// Get returns the content stored under id.
func (s *Store) Get(id string) ([]byte, error) {
	data, err := os.ReadFile(s.path(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("content %s is not in the store: %w", id, ErrNoContent)
	}
	return data, err
}

// ErrNoContent is returned for a version whose bytes were not kept (a file
// over Options.MaxContent): its change is reported but cannot be reverted.
var ErrNoContent = errors.New("content not kept")
