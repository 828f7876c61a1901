// Package eventlog is a session's append-only events.jsonl: one JSON event
// per line, seq starting at 1 and continuing across reopenings, never
// repeating and never skipping.
//
// Appends are group-committed: Append assigns the seq and encodes the line
// at once; one batch at a time is written with one write(2) and its bytes
// handed to the Written callback (the runner mirrors them to the
// supervisor). An Append that finds no write under way writes its own line
// there and then, so a lone event (a user's message) does not wait for a
// goroutine to wake; lines appended during a write are batched by a writer
// goroutine. An event therefore reaches a shell
// only after the operating system has it, so a crash of the runner loses no
// event a shell has seen. Sync flushes and fsyncs; the runner calls it at
// every turn end, stop and shutdown, so a crash of the machine loses at most
// the events since the last of those.
//
// A crash mid-write leaves a torn last line. Open cuts everything after the
// last newline, so a partial line is never read as an event and nothing
// before it is lost.
package eventlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

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
	// Written, when set, is called by the writer goroutine after each
	// batch reached the file, in seq order. The batch's memory is reused
	// afterwards: copy what must be kept.
	Written func(Batch)
	// Now stamps events; defaults to time.Now.
	Now func() time.Time
}

// Log is an open events.jsonl.
type Log struct {
	path    string
	f       *os.File
	written func(Batch)
	now     func() time.Time

	mu       sync.Mutex
	seq      int64 // last assigned
	pending  []byte
	starts   []int // line start offsets in pending
	firstSeq int64 // seq of the first pending line
	err      error // sticky write error
	closed   bool
	wake     chan struct{}
	idle     *sync.Cond // signalled when pending drains
	flushing bool
	done     chan struct{}
	spare    []byte
}

// ErrClosed is returned by Append after Close.
var ErrClosed = errors.New("event log is closed")

// Open opens or creates the log at path, repairing a torn last line.
func Open(path string, opts Options) (*Log, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open event log: %w", err)
	}
	last, end, err := repair(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open event log %s: %w", path, err)
	}
	if err := f.Truncate(end); err != nil {
		f.Close()
		return nil, fmt.Errorf("cut torn tail of %s: %w", path, err)
	}
	if _, err := f.Seek(end, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("seek event log: %w", err)
	}
	l := &Log{
		path: path, f: f, written: opts.Written, now: opts.Now,
		seq: last, wake: make(chan struct{}, 1), done: make(chan struct{}),
	}
	if l.now == nil {
		l.now = time.Now
	}
	l.idle = sync.NewCond(&l.mu)
	go l.writer()
	return l, nil
}

// repair finds the end of the last complete line and the seq it holds.
// Only newline-terminated lines are events; a line that is complete but does
// not parse (which the writer never produces) is an error, since cutting it
// would lose data silently.
func repair(f *os.File) (lastSeq, end int64, err error) {
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, 0, err
	}
	const chunk = 64 << 10
	var tail []byte
	pos := size
	for pos > 0 {
		n := int64(chunk)
		if n > pos {
			n = pos
		}
		pos -= n
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, pos); err != nil {
			return 0, 0, err
		}
		tail = append(buf, tail...)
		nl := bytes.LastIndexByte(tail, '\n')
		if nl < 0 {
			continue
		}
		end = pos + int64(nl) + 1
		prev := bytes.LastIndexByte(tail[:nl], '\n')
		if prev < 0 && pos > 0 {
			continue // the last complete line starts before this chunk
		}
		line := tail[prev+1 : nl]
		var ev struct {
			Seq int64 `json:"seq"`
		}
		if err := json.Unmarshal(line, &ev); err != nil || ev.Seq <= 0 {
			return 0, 0, fmt.Errorf("last complete line at offset %d is not an event: %q", pos+int64(prev+1), clip(line))
		}
		return ev.Seq, end, nil
	}
	return 0, 0, nil
}

func clip(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}

// LastSeq returns the seq of the last appended event.
func (l *Log) LastSeq() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}

// Append records an event and returns it. data is encoded as the event's
// data; nil leaves it out.
func (l *Log) Append(typ wire.EventType, data any) (wire.Event, error) {
	var raw json.RawMessage
	if data != nil {
		var err error
		if raw, err = json.Marshal(data); err != nil {
			return wire.Event{}, fmt.Errorf("encode %s event: %w", typ, err)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return wire.Event{}, ErrClosed
	}
	if l.err != nil {
		return wire.Event{}, l.err
	}
	l.seq++
	ev := wire.Event{Seq: l.seq, TS: l.now().UTC(), Type: typ, Data: raw}
	line, err := json.Marshal(ev)
	if err != nil {
		l.seq--
		return wire.Event{}, fmt.Errorf("encode %s event: %w", typ, err)
	}
	if len(l.starts) == 0 {
		l.firstSeq = ev.Seq
	}
	l.starts = append(l.starts, len(l.pending))
	l.pending = append(l.pending, line...)
	l.pending = append(l.pending, '\n')
	if l.flushing {
		// The batch being written is followed by one with this line.
		return ev, nil
	}
	// Nothing is being written: write this batch here rather than wake
	// the writer goroutine, whose wake-up on a busy machine takes longer
	// than the write. Lines appended meanwhile are left to the writer.
	l.flushing = true
	l.writeBatchLocked()
	l.flushing = false
	l.afterBatchLocked()
	return ev, nil
}

// afterBatchLocked hands what was appended during a write to the writer
// goroutine, or tells Flush that everything is written.
func (l *Log) afterBatchLocked() {
	if len(l.pending) > 0 {
		select {
		case l.wake <- struct{}{}:
		default:
		}
		return
	}
	l.idle.Broadcast()
}

// writeBatchLocked writes the pending lines and hands them to Written; l.mu
// is held on entry and exit but not during the write. The caller has set
// l.flushing, so batches are written one at a time and in order.
func (l *Log) writeBatchLocked() {
	buf, starts, first := l.pending, l.starts, l.firstSeq
	l.pending, l.starts = l.spare[:0], nil
	l.mu.Unlock()
	_, err := l.f.Write(buf)
	if err == nil && l.written != nil {
		lines := make([][]byte, len(starts))
		for i, s := range starts {
			e := len(buf) - 1
			if i+1 < len(starts) {
				e = starts[i+1] - 1
			}
			lines[i] = buf[s:e]
		}
		l.written(Batch{Lines: lines, FirstSeq: first})
	}
	l.mu.Lock()
	if err != nil {
		l.err = fmt.Errorf("write event log: %w", err)
	}
	l.spare = buf
}

func (l *Log) writer() {
	defer close(l.done)
	for range l.wake {
		l.mu.Lock()
		// An Append writing its own batch hands on what follows it.
		for !l.flushing && len(l.pending) > 0 {
			l.flushing = true
			l.writeBatchLocked()
			l.flushing = false
		}
		if !l.flushing {
			l.idle.Broadcast()
		}
		closed := l.closed
		l.mu.Unlock()
		if closed {
			return
		}
	}
}

// Flush waits until every appended event has been written to the file (and
// handed to Written).
func (l *Log) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for (len(l.pending) > 0 || l.flushing) && l.err == nil {
		select {
		case l.wake <- struct{}{}:
		default:
		}
		l.idle.Wait()
	}
	return l.err
}

// Sync flushes and fsyncs the file.
func (l *Log) Sync() error {
	if err := l.Flush(); err != nil {
		return err
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("sync event log: %w", err)
	}
	return nil
}

// Close syncs and closes the log. Appends after Close fail with ErrClosed.
func (l *Log) Close() error {
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return ErrClosed
	}
	err := l.Sync()
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	close(l.wake)
	<-l.done
	if cerr := l.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close event log: %w", cerr)
	}
	return err
}
