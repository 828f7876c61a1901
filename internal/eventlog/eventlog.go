// Package eventlog is a session's append-only events.jsonl: one JSON event
// per line, seq starting at 1 and continuing across reopenings, never
// repeating and never skipping while the file is sound.
//
// Appends are group-committed: Append assigns the seq and encodes the line
// at once, and returns only once the line is in the file (or with the error
// that kept it out). The first appender to find no write under way writes
// every pending line with one write(2); appenders that arrive during that
// write wait, and one of them writes their lines as the next batch. Batches
// in the file are then handed, in order, to the Written callback (the
// runner mirrors them to the supervisor) by an appender: the one that wrote
// it, unless another is already in Written, which then hands it over next
// (so Written may itself append). A lone event therefore costs one write
// and no goroutine hand-off, and an event reaches a shell only after the
// operating system has it, so a crash of the runner loses no event a shell
// has seen. Sync flushes and
// fsyncs; the runner calls it at every turn end, stop and shutdown, so a
// crash of the machine loses at most the events since the last of those.
//
// A log never refuses to open because of its content: Open moves damaged
// lines (a torn tail, garbage, NULs, blank lines, a line whose seq is out of
// order) aside to a sibling file and records a logRepaired event (see
// repair.go). A log fails loudly instead when the storage does: a write or
// sync that fails puts the log in a failed state, in which every Append
// returns the same [*StorageError] and nothing is acknowledged that is not
// in the file, until [Log.Probe] finds the storage writable again (see
// failure.go).
package eventlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// Batch is a run of encoded event lines as written to the file.
type Batch struct {
	// Lines holds each event's line without its newline, in seq order.
	Lines [][]byte
	// FirstSeq is the seq of Lines[0].
	FirstSeq int64
}

// Options configure a Log.
type Options struct {
	// Written, when set, is called after each batch reached the file, in
	// seq order, one batch at a time, by an appender (the one that wrote
	// it, unless another is already in Written). The batch's memory is
	// reused afterwards: copy what must be kept. It may append to the log
	// (the event is handed to Written after it returns); it must not call
	// Flush, Sync or Close.
	Written func(Batch)
	// Failed, when set, is called once each time the log enters its failed
	// state, with the error every Append now returns, by the goroutine
	// whose write or sync failed, without the log's lock held. It must not
	// append to the log.
	Failed func(*StorageError)
	// Now stamps events; defaults to time.Now.
	Now func() time.Time
}

// file is what the log needs of its *os.File; tests substitute one that
// fails.
type file interface {
	io.Writer
	io.WriterAt
	io.Seeker
	Truncate(size int64) error
	Sync() error
	Close() error
}

// Log is an open events.jsonl.
type Log struct {
	path    string
	f       file
	written func(Batch)
	failed  func(*StorageError)
	now     func() time.Time

	mu        sync.Mutex
	done      *sync.Cond // signalled when a batch is written or the log fails
	seq       int64      // last assigned
	durable   int64      // last seq whose line is in the file
	end       int64      // file offset just past the line of durable
	pending   []byte
	starts    []int         // line start offsets in pending
	firstSeq  int64         // seq of the first pending line
	flushing  bool          // a batch is being written
	mirror    []toMirror    // batches in the file, not yet handed to Written
	mirroring bool          // a goroutine is handing batches to Written
	err       *StorageError // the failed state: set until Probe clears it
	lastErr   *StorageError // the latest failure, kept after Probe
	failures  int           // failures so far, so a waiter knows its batch failed
	closed    bool
	spare     []byte
	repair    *Repair
}

// ErrClosed is returned by Append after Close.
var ErrClosed = errors.New("event log is closed")

// Open opens or creates the log at path. Damaged lines are moved aside to
// path+DamagedSuffix and a logRepaired event is appended (Repaired says
// what was moved); a log never fails to open for its content, only when
// the storage cannot be read or written.
func Open(path string, opts Options) (*Log, error) {
	f, end, last, rep, err := openRepaired(path, opts)
	if err != nil {
		return nil, err
	}
	l := &Log{
		path: path, f: f, written: opts.Written, failed: opts.Failed, now: opts.Now,
		seq: last, durable: last, end: end, repair: rep,
	}
	if l.now == nil {
		l.now = time.Now
	}
	l.done = sync.NewCond(&l.mu)
	if rep != nil && l.written != nil {
		l.written(Batch{Lines: [][]byte{rep.line}, FirstSeq: rep.Event.Seq})
	}
	return l, nil
}

// Path is the file the log is kept in.
func (l *Log) Path() string { return l.path }

// Repaired returns what Open moved aside, or nil when the log was sound.
func (l *Log) Repaired() *Repair { return l.repair }

// LastSeq returns the seq of the last event in the file: an event being
// appended, or one whose write failed, does not count.
func (l *Log) LastSeq() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.durable
}

// Append records an event and returns it once its line is in the file.
// data is encoded as the event's data; nil leaves it out. In the failed
// state it returns the log's *StorageError and assigns no seq.
func (l *Log) Append(typ event.Type, data any) (event.Event, error) {
	var raw json.RawMessage
	if data != nil {
		var err error
		if raw, err = json.Marshal(data); err != nil {
			return event.Event{}, fmt.Errorf("encode %s event: %w", typ, err)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return event.Event{}, ErrClosed
	}
	if l.err != nil {
		return event.Event{}, l.err
	}
	ev := event.Event{Seq: l.seq + 1, TS: l.now().UTC(), Type: typ, Data: raw}
	line, err := json.Marshal(ev)
	if err == nil && len(line) > wire.MaxEventLine {
		// Too long for the wire: kept, truncated, rather than lost.
		ev.Data, _ = json.Marshal(truncated(raw))
		line, err = json.Marshal(ev)
	}
	if err != nil {
		return event.Event{}, fmt.Errorf("encode %s event: %w", typ, err)
	}
	l.seq = ev.Seq
	if len(l.starts) == 0 {
		l.firstSeq = ev.Seq
	}
	l.starts = append(l.starts, len(l.pending))
	l.pending = append(l.pending, line...)
	l.pending = append(l.pending, '\n')
	failures := l.failures
	for l.durable < ev.Seq {
		if l.failures != failures {
			// This line's batch failed (and the log may have been
			// probed back to health since): it is not in the file.
			return event.Event{}, l.lastErr
		}
		if l.flushing {
			l.done.Wait()
			continue
		}
		// Nothing is being written: write this batch here rather than
		// hand it to another goroutine, whose wake-up on a busy machine
		// takes longer than the write.
		l.writeBatchLocked()
	}
	l.mirrorLocked()
	return ev, nil
}

// toMirror is a batch in the file that waits to be handed to Written.
type toMirror struct {
	buf    []byte
	starts []int
	first  int64
}

// writeBatchLocked writes the pending lines and queues them for Written;
// l.mu is held on entry and exit but not during the write. Only one batch
// is written at a time (l.flushing), so batches reach the file, and the
// queue, in seq order.
func (l *Log) writeBatchLocked() {
	l.flushing = true
	buf, starts, first := l.pending, l.starts, l.firstSeq
	last := first + int64(len(starts)) - 1
	l.pending, l.starts, l.spare = l.spare[:0], nil, nil
	l.mu.Unlock()
	n, err := l.f.Write(buf)
	if err == nil && n < len(buf) {
		err = io.ErrShortWrite
	}
	l.mu.Lock()
	l.flushing = false
	switch {
	case err != nil:
		l.spare = buf
		l.failLocked("write", err)
	case l.written != nil:
		l.durable, l.end = last, l.end+int64(n)
		l.mirror = append(l.mirror, toMirror{buf: buf, starts: starts, first: first})
	default:
		l.durable, l.end = last, l.end+int64(n)
		l.spare = buf
	}
	l.done.Broadcast()
}

// mirrorLocked hands the batches in the file to Written, in order, unless
// another goroutine is doing so, in which case it takes this goroutine's
// batches too. The write and the hand-over are apart so that Written may
// append (an appender then writes its own line and returns, and the
// goroutine in Written hands it over next) without waiting for itself.
func (l *Log) mirrorLocked() {
	if l.mirroring {
		return
	}
	l.mirroring = true
	for len(l.mirror) > 0 {
		w := l.mirror[0]
		// The queue is a batch or two long: shift it rather than let it
		// creep along (and reallocate) its array.
		n := copy(l.mirror, l.mirror[1:])
		l.mirror = l.mirror[:n]
		l.mu.Unlock()
		lines := make([][]byte, len(w.starts))
		for i, s := range w.starts {
			e := len(w.buf) - 1
			if i+1 < len(w.starts) {
				e = w.starts[i+1] - 1
			}
			lines[i] = w.buf[s:e]
		}
		l.written(Batch{Lines: lines, FirstSeq: w.first})
		l.mu.Lock()
		if l.spare == nil {
			l.spare = w.buf
		}
	}
	l.mirroring = false
	l.done.Broadcast()
}

// Flush waits until every appended event has been written to the file and
// handed to Written. Written must not call it.
func (l *Log) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.flushLocked()
}

func (l *Log) flushLocked() error {
	for {
		switch {
		case l.flushing || l.mirroring:
			l.done.Wait()
		case l.err == nil && len(l.pending) > 0:
			l.writeBatchLocked()
		case len(l.mirror) > 0:
			// In the failed state too: these lines are in the file.
			l.mirrorLocked()
		case l.err != nil:
			return l.err
		default:
			return nil
		}
	}
}

// Sync flushes and fsyncs the file. A sync that fails puts the log in its
// failed state: the kernel may have dropped the pages it could not write.
func (l *Log) Sync() error {
	if err := l.Flush(); err != nil {
		return err
	}
	if err := l.f.Sync(); err != nil {
		l.mu.Lock()
		defer l.mu.Unlock()
		for l.flushing {
			l.done.Wait() // a batch written meanwhile is counted first
		}
		l.failLocked("sync", err)
		return l.err
	}
	return nil
}

// Close syncs and closes the log. Appends after Close fail with ErrClosed.
// A log in its failed state closes too, returning its error.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.mu.Unlock()
	err := l.Sync()
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	if cerr := l.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close event log: %w", cerr)
	}
	return err
}

// truncated is what an event keeps of data whose line passed
// wire.MaxEventLine: its length and its start, cut at a character boundary.
func truncated(data []byte) wire.TruncatedData {
	head := data[:min(len(data), wire.TruncatedHead)]
	for len(head) > 0 && !utf8.Valid(head) {
		head = head[:len(head)-1]
	}
	return wire.TruncatedData{Truncated: true, Bytes: len(data), Head: string(head)}
}
