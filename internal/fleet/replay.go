package fleet

import (
	"bytes"
	"context"
	"errors"
	"io"

	"github.com/corral-dev/corral/pkg/wire"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// replay reads one session's events from the replica, from any node:
// from seq from on, following new ones or ending at what the replica held
// when it was opened. It implements EventStream.
type replay struct {
	src    *follower
	follow bool
	next   int64 // lowest seq not yet delivered
	end    int64 // without follow: the last seq to deliver

	lines    []byte // what is left of the current message
	long     []byte // the pieces of a long line so far
	longPart int
	ev       Event
}

// Replay opens session's events in the replica from seq from (from <= 1:
// from the first). It waits out a leader election (transient.go).
func (f *Fabric) Replay(ctx context.Context, session string, from int64, follow bool) (EventStream, error) {
	var out EventStream
	err := f.retry(ctx, func(ctx context.Context) error {
		var err error
		out, err = f.openReplay(ctx, session, from, follow)
		return err
	})
	if err != nil {
		return nil, replicaUnavailable(err)
	}
	return out, nil
}

func (f *Fabric) openReplay(ctx context.Context, session string, from int64, follow bool) (EventStream, error) {
	from = max(from, 1)
	r := &replay{follow: follow, next: from}
	// The stream's end is read first: a message of the session published
	// after it has a higher sequence, so starting past it misses nothing.
	info, err := f.events.Info(ctx)
	if err != nil {
		return nil, err
	}
	subject := f.names.sessionEvents(session)
	last, err := f.events.GetLastMsgForSubject(ctx, subject)
	if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, err
	}
	var start uint64
	switch {
	case last == nil:
		if !follow {
			return emptyStream{}, nil
		}
		start = info.State.LastSeq + 1
	default:
		_, lastEvent, _, _, herr := replicaHeaders(last.Header)
		if herr != nil {
			return nil, herr
		}
		r.end = lastEvent
		if from > lastEvent {
			if !follow {
				return emptyStream{}, nil
			}
			start = last.Sequence + 1
			break
		}
		if start, err = f.findStart(ctx, session, from); err != nil {
			return nil, err
		}
	}
	if r.src, err = f.follow(ctx, []string{subject}, start); err != nil {
		return nil, err
	}
	return r, nil
}

// findStart returns the stream sequence of the message holding seq from,
// or of one before it in the same bucket.
func (f *Fabric) findStart(ctx context.Context, session string, from int64) (uint64, error) {
	m, err := f.events.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(f.names.eventSubject(session, from)))
	if err == nil {
		return m.Sequence, nil
	}
	if !errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, err
	}
	// No message on from's bucket although later ones exist: the oldest
	// events went when the replica reached its size limit.
	first, err := f.events.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(f.names.sessionEvents(session)))
	if err != nil {
		return 0, err
	}
	firstEvent, _, _, _, err := replicaHeaders(first.Header)
	if err != nil {
		return 0, err
	}
	if firstEvent > from {
		return 0, wire.Errorf(wire.CodeUnavailable,
			"events %d to %d of session %s are no longer in the fleet's event replica (its size limit); its owner's events.jsonl holds them",
			from, firstEvent-1, session)
	}
	return first.Sequence, nil
}

func replicaUnavailable(err error) error {
	var we *wire.Error
	if errors.As(err, &we) {
		return err
	}
	return wire.Errorf(wire.CodeUnavailable, "the fleet's event replica: %v", err)
}

func (r *replay) Next(ctx context.Context) (Event, error) {
	for {
		ev, ok, err := r.nextLine()
		if err != nil || ok {
			return ev, err
		}
		if !r.follow && r.next > r.end {
			return Event{}, io.EOF
		}
		msg, err := r.src.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return Event{}, ctx.Err()
			}
			return Event{}, replicaUnavailable(err)
		}
		if err := r.take(msg.Headers(), msg.Data()); err != nil {
			return Event{}, err
		}
	}
}

// nextLine returns the next event of the current message that is due,
// false when the message has no more.
func (r *replay) nextLine() (Event, bool, error) {
	for len(r.lines) > 0 {
		line := r.lines
		i := bytes.IndexByte(line, '\n')
		if i < 0 {
			i = len(line)
			r.lines = nil
		} else {
			r.lines = r.lines[i+1:]
		}
		line = line[:i]
		seq, typ, err := wire.ScanEvent(line)
		if err != nil {
			return Event{}, false, wire.Errorf(wire.CodeInternal, "the fleet's event replica holds an unreadable line: %v", err)
		}
		if seq < r.next {
			continue
		}
		if !r.follow && seq > r.end {
			r.lines = nil
			return Event{}, false, io.EOF
		}
		r.next = seq + 1
		r.ev = Event{Seq: seq, Type: typ, Line: line}
		return r.ev, true, nil
	}
	return Event{}, false, nil
}

// take takes in one message of the replica: a batch of lines, or a piece
// of a long line.
func (r *replay) take(h nats.Header, data []byte) error {
	_, _, part, parts, err := replicaHeaders(h)
	if err != nil {
		return replicaUnavailable(err)
	}
	if parts == 0 {
		r.lines = data
		return nil
	}
	if part == 1 {
		r.long, r.longPart = r.long[:0], 0
	}
	if part != r.longPart+1 {
		return nil // a piece of a line cut short, published again whole later
	}
	r.long = append(r.long, data...)
	r.longPart = part
	if part == parts {
		r.lines = r.long
	}
	return nil
}

func (r *replay) Buffered() bool { return len(r.lines) > 0 }

func (r *replay) Close() error {
	r.src.Stop()
	return nil
}

// emptyStream has no events.
type emptyStream struct{}

func (emptyStream) Next(context.Context) (Event, error) { return Event{}, io.EOF }
func (emptyStream) Buffered() bool                      { return false }
func (emptyStream) Close() error                        { return nil }
