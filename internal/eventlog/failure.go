package eventlog

import (
	"errors"
	"fmt"
	"io"
)

// ErrUnavailable matches (errors.Is) every *StorageError: the log's storage
// cannot take events (a full disk, an I/O error). Callers map it to their
// transport's "storage unavailable" (wire code storage_unavailable, HTTP
// 507).
var ErrUnavailable = errors.New("event log storage unavailable")

// StorageError is why the log is in its failed state. Every Append returns
// the same *StorageError until Probe finds the storage writable again.
type StorageError struct {
	Path string
	// Op is what failed: "write", "sync", or "probe" when a probe found
	// the storage still unwritable.
	Op string
	// LastSeq is the last event in the file; no event after it was
	// acknowledged.
	LastSeq int64
	Err     error
}

func (e *StorageError) Error() string {
	return fmt.Sprintf("event log %s: %s failed after seq %d: %v", e.Path, e.Op, e.LastSeq, e.Err)
}

func (e *StorageError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *StorageError) Is(target error) bool { return target == ErrUnavailable }

// probeSize is how much room Probe wants before it calls the storage
// writable again: enough for a few batches of ordinary events.
const probeSize = 64 << 10

// failLocked enters the failed state after op failed with err: the lines
// not yet written are dropped (none was acknowledged), and the file is cut
// back to its last whole line so that a torn batch never lingers. Failed is
// called with l.mu released.
func (l *Log) failLocked(op string, err error) {
	serr := &StorageError{Path: l.path, Op: op, LastSeq: l.durable, Err: err}
	first := l.err == nil
	if first {
		l.err = serr
	}
	l.lastErr = l.err
	l.failures++
	l.seq = l.durable // the dropped lines' seqs were never acknowledged
	l.pending, l.starts = l.pending[:0], nil
	// Best effort: shrinking a file needs no room. Probe tries again.
	_ = l.f.Truncate(l.end)
	l.done.Broadcast()
	if first && l.failed != nil {
		l.mu.Unlock()
		l.failed(serr)
		l.mu.Lock()
	}
}

// Err returns the log's *StorageError while it is in its failed state, and
// nil otherwise.
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		return nil
	}
	return l.err
}

// Probe checks whether a failed log's storage takes writes again. It cuts
// the file back to its last whole line, writes probeSize bytes past it and
// takes them back out; when that works the failed state ends, the seq
// continues from the last event in the file, and Probe returns nil. While
// the storage still fails it returns a *StorageError (Op "probe") and the
// log stays failed. On a healthy log it does nothing.
func (l *Log) Probe() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.flushing {
		l.done.Wait()
	}
	if l.err == nil {
		return nil
	}
	if l.closed {
		return ErrClosed
	}
	stillFailed := func(err error) error {
		return &StorageError{Path: l.path, Op: "probe", LastSeq: l.durable, Err: err}
	}
	if err := l.f.Truncate(l.end); err != nil {
		return stillFailed(err)
	}
	n, err := l.f.WriteAt(make([]byte, probeSize), l.end)
	if terr := l.f.Truncate(l.end); err == nil {
		err = terr
	}
	if err == nil && n < probeSize {
		err = io.ErrShortWrite
	}
	if err != nil {
		return stillFailed(err)
	}
	if err := l.f.Sync(); err != nil {
		return stillFailed(err)
	}
	if _, err := l.f.Seek(l.end, io.SeekStart); err != nil {
		return stillFailed(err)
	}
	l.err = nil
	return nil
}
