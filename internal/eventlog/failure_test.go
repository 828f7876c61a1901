package eventlog

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/corral-dev/corral/pkg/event"
)

// faultyFile accepts room more bytes, then fails every write with err, as
// a full disk does (the write that crosses the limit is partial).
type faultyFile struct {
	file
	mu      sync.Mutex
	room    int // < 0: unlimited
	err     error
	syncErr error
}

func (f *faultyFile) take(n int) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.room < 0 || n <= f.room {
		if f.room >= 0 {
			f.room -= n
		}
		return n, nil
	}
	n, f.room = f.room, 0
	return n, f.err
}

func (f *faultyFile) Write(p []byte) (int, error) {
	n, err := f.take(len(p))
	m, werr := f.file.Write(p[:n])
	if err == nil {
		err = werr
	}
	return m, err
}

func (f *faultyFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.take(len(p))
	m, werr := f.file.WriteAt(p[:n], off)
	if err == nil {
		err = werr
	}
	return m, err
}

func (f *faultyFile) Sync() error {
	f.mu.Lock()
	err := f.syncErr
	f.mu.Unlock()
	if err != nil {
		return err
	}
	return f.file.Sync()
}

func (f *faultyFile) set(room int, syncErr error) {
	f.mu.Lock()
	f.room, f.syncErr = room, syncErr
	f.mu.Unlock()
}

// openFaulty opens a log whose file fails with ENOSPC once room bytes
// more are written.
func openFaulty(t *testing.T, opts Options) (*Log, *faultyFile) {
	t.Helper()
	l, err := Open(filepath.Join(t.TempDir(), "events.jsonl"), opts)
	if err != nil {
		t.Fatal(err)
	}
	ff := &faultyFile{file: l.f, room: -1, err: syscall.ENOSPC}
	l.f = ff
	t.Cleanup(func() { l.Close() })
	return l, ff
}

func TestFailedWriteFailsEveryLaterAppend(t *testing.T) {
	var failed []*StorageError
	var mirrored []int64
	l, ff := openFaulty(t, Options{
		Failed: func(e *StorageError) { failed = append(failed, e) },
		Written: func(b Batch) {
			for i := range b.Lines {
				mirrored = append(mirrored, b.FirstSeq+int64(i))
			}
		},
	})
	appendN(t, l, 3)
	ff.set(10, nil) // the next line is torn part-way
	_, err := l.Append(event.AssistantDelta, event.TextData{Text: "lost"})
	var serr *StorageError
	if !errors.As(err, &serr) || !errors.Is(err, ErrUnavailable) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append on a full disk = %v, want a *StorageError for ENOSPC", err)
	}
	if serr.LastSeq != 3 || serr.Op != "write" {
		t.Fatalf("error %+v, want a write failure after seq 3", serr)
	}
	for i := 0; i < 3; i++ {
		if _, err2 := l.Append(event.AssistantDelta, nil); err2 != err {
			t.Fatalf("append %d in the failed state = %v, want the same error %v", i, err2, err)
		}
	}
	if err2 := l.Flush(); err2 != err {
		t.Fatalf("Flush = %v, want %v", err2, err)
	}
	if err2 := l.Err(); err2 != err {
		t.Fatalf("Err = %v, want %v", err2, err)
	}
	if got := l.LastSeq(); got != 3 {
		t.Fatalf("LastSeq %d in the failed state, want 3, the last event in the file", got)
	}
	if len(failed) != 1 || failed[0] != serr {
		t.Fatalf("Failed called %d times (%v), want once", len(failed), failed)
	}
	if len(mirrored) != 3 {
		t.Fatalf("mirrored %v: a line that failed was handed on", mirrored)
	}
	// The torn part of the failed line was cut: the file holds exactly
	// the three acknowledged events.
	wantContiguous(t, seqs(t, l.Path()), 3)
	if data, _ := os.ReadFile(l.Path()); data[len(data)-1] != '\n' {
		t.Fatal("the file ends in a torn line")
	}
}

func TestProbeWaitsForRoomThenTheSeqContinues(t *testing.T) {
	l, ff := openFaulty(t, Options{})
	appendN(t, l, 2)
	ff.set(0, nil)
	if _, err := l.Append(event.AssistantDelta, nil); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("append = %v", err)
	}
	err := l.Probe()
	var serr *StorageError
	if !errors.As(err, &serr) || serr.Op != "probe" {
		t.Fatalf("probe on a still full disk = %v, want a probe failure", err)
	}
	if l.Err() == nil {
		t.Fatal("a failed probe ended the failed state")
	}
	ff.set(-1, nil) // room again
	if err := l.Probe(); err != nil {
		t.Fatalf("probe with room = %v", err)
	}
	if l.Err() != nil {
		t.Fatalf("Err after a good probe = %v", l.Err())
	}
	ev, err := l.Append(event.Failure, event.FailureData{Code: "storageFailed", Message: "recovered"})
	if err != nil || ev.Seq != 3 {
		t.Fatalf("append after probe: seq %d, %v; want seq 3 (the failed one was never acknowledged)", ev.Seq, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	wantContiguous(t, seqs(t, l.Path()), 3)
	if err := l.Probe(); err != nil {
		t.Fatalf("probe on a healthy log = %v", err)
	}
}

func TestFailedSyncFailsTheLog(t *testing.T) {
	l, ff := openFaulty(t, Options{})
	appendN(t, l, 2)
	ff.set(-1, syscall.EIO)
	err := l.Sync()
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Sync = %v, want a storage failure", err)
	}
	if _, err := l.Append(event.TurnEnded, nil); !errors.Is(err, syscall.EIO) {
		t.Fatalf("append after a failed sync = %v", err)
	}
}

// TestConcurrentAppendersLearnOfTheFailure has many goroutines append while
// the disk fills: the events acknowledged are exactly those in the file.
func TestConcurrentAppendersLearnOfTheFailure(t *testing.T) {
	for round := 0; round < 20; round++ {
		l, ff := openFaulty(t, Options{})
		ff.set(3000+round*211, nil)
		var mu sync.Mutex
		acked := map[int64]bool{}
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 50; i++ {
					ev, err := l.Append(event.AssistantDelta, event.TextData{Text: "a streamed chunk"})
					if err != nil {
						if !errors.Is(err, ErrUnavailable) {
							t.Errorf("append: %v", err)
						}
						return
					}
					mu.Lock()
					acked[ev.Seq] = true
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		inFile := seqs(t, l.Path())
		if len(inFile) != len(acked) {
			t.Fatalf("round %d: %d events acknowledged, %d in the file", round, len(acked), len(inFile))
		}
		wantContiguous(t, inFile, len(inFile))
		for _, s := range inFile {
			if !acked[s] {
				t.Fatalf("round %d: seq %d is in the file but its append failed", round, s)
			}
		}
	}
}
