package runner

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

func TestStoreWritesTheSpecInOrder(t *testing.T) {
	dir := t.TempDir()
	s, err := openStore(dir, nil, nil, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	s.saveSpecInBackground(wire.Spec{ID: "s1", Mode: "review"})
	// A later change, made while the first write may be under way, is the
	// one meta.json keeps.
	if err := s.saveSpec(wire.Spec{ID: "s1", Mode: "auto"}); err != nil {
		t.Fatal(err)
	}
	spec, ok, err := ReadSpec(dir)
	if err != nil || !ok || spec.Mode != "auto" {
		t.Fatalf("meta.json holds %+v (%v, %v)", spec, ok, err)
	}
}

func TestStoreMovesToTheForkedFolder(t *testing.T) {
	oldDir, newDir := t.TempDir(), t.TempDir()
	var mirrored []int64
	s, err := openStore(oldDir, func(b eventlog.Batch) {
		for i := range b.Lines {
			mirrored = append(mirrored, b.FirstSeq+int64(i))
		}
	}, nil, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	s.emit(event.ModeChanged, map[string]string{"mode": "auto"})
	if err := s.eventLog().Sync(); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(filepath.Join(oldDir, EventsFile), filepath.Join(newDir, EventsFile)); err != nil {
		t.Fatal(err)
	}
	if err := s.moveTo(newDir); err != nil {
		t.Fatal(err)
	}
	s.emit(event.ModeChanged, map[string]string{"mode": "review"})
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	count := func(dir string) int {
		raw, err := os.ReadFile(filepath.Join(dir, EventsFile))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, b := range raw {
			if b == '\n' {
				n++
			}
		}
		return n
	}
	if s.Dir() != newDir || count(oldDir) != 1 || count(newDir) != 2 {
		t.Fatalf("dir %s; %d events left behind, %d in the new folder", s.Dir(), count(oldDir), count(newDir))
	}
	if !slices.Equal(mirrored, []int64{1, 2}) {
		t.Fatalf("mirrored seqs %v", mirrored)
	}
}
