package eventlog_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/smallfs"
	"github.com/corral-dev/corral/pkg/event"
)

// TestRealFullDisk fills a 2 MiB tmpfs under a live log: the append that
// finds no room fails with ENOSPC, so does every later one, the events
// acknowledged are exactly those in the file, and once room is made a
// probe ends the failed state and the seq goes on without a repeat.
func TestRealFullDisk(t *testing.T) {
	dir := smallfs.Dir(t, 2<<20)
	if dir == "" {
		return
	}
	path := filepath.Join(dir, "events.jsonl")
	var failures int
	l, err := eventlog.Open(path, eventlog.Options{Failed: func(*eventlog.StorageError) { failures++ }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// Leave a little room beside the log, to free later.
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	text := event.TextData{Text: strings.Repeat("a model's long answer ", 200)}
	var acked int64
	var failure error
	for i := 0; i < 10000; i++ {
		ev, err := l.Append(event.AssistantText, text)
		if err != nil {
			failure = err
			break
		}
		acked = ev.Seq
	}
	if !errors.Is(failure, syscall.ENOSPC) || !errors.Is(failure, eventlog.ErrUnavailable) {
		t.Fatalf("filling the disk ended with %v, want ENOSPC", failure)
	}
	if _, err := l.Append(event.TurnEnded, nil); err != failure {
		t.Fatalf("next append = %v, want %v", err, failure)
	}
	if failures != 1 {
		t.Fatalf("Failed called %d times", failures)
	}
	if got := lastInFile(t, path); got != acked {
		t.Fatalf("last event in the file is %d, last acknowledged %d", got, acked)
	}
	if err := l.Probe(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("probe on the full disk = %v, want ENOSPC", err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := l.Probe(); err != nil {
		t.Fatalf("probe with room again = %v", err)
	}
	ev, err := l.Append(event.Failure, event.FailureData{Code: "storageFailed", Message: "the disk was full"})
	if err != nil || ev.Seq != acked+1 {
		t.Fatalf("append after the probe: seq %d, %v; want %d", ev.Seq, err, acked+1)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	// Reopening finds a sound log.
	l2, err := eventlog.Open(path, eventlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if l2.Repaired() != nil || l2.LastSeq() != acked+1 {
		t.Fatalf("reopened: repaired %v, LastSeq %d, want a sound log ending at %d", l2.Repaired(), l2.LastSeq(), acked+1)
	}
}

func lastInFile(t *testing.T, path string) int64 {
	t.Helper()
	var last int64
	if err := eventlog.ReadFile(path, func(ev event.Event) error {
		if ev.Seq != last+1 {
			t.Fatalf("seq %d after %d", ev.Seq, last)
		}
		last = ev.Seq
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return last
}
