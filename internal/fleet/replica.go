package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/corral-dev/corral/internal/eventstream"
	"github.com/corral-dev/corral/pkg/wire"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
)

// The event replica is one JetStream stream holding every session's
// events, copied from the owner's events.jsonl (the source of truth) as
// its runner mirrors them. A message holds a batch of consecutive event
// lines exactly as the log holds them (each with its newline), or one
// piece of a line too long for a message. Its subject is
//
//	<fleet>.ev.<session>.<first seq / 4096>
//
// and a batch never spans two of these buckets, so the message holding
// seq N is found with one lookup, the first message on N's bucket subject,
// and a reader starts there and skips at most 4095 events (a few hundred
// kilobytes, where a search of the stream would take one round trip per
// step).
//
// The owner publishes one message at a time with a compare-and-set on the
// session's last message (Nats-Expected-Last-Subject-Sequence over the
// session's subjects): the replica is always a gap-free prefix of the log,
// never holds a line twice, and a node that lost the session cannot append
// after the node that took it over. A new owner first reads where the
// replica ends and copies the rest of the log from there, so events the
// old owner wrote but never published are not lost.

const (
	eventBucketBits = 12
	// maxBatchEvents and maxBatchBytes bound one message: a batch forms
	// only from what waits while the previous message is in flight.
	maxBatchEvents = 1 << eventBucketBits
	maxBatchBytes  = 1 << 20

	hdrFirst = "Corral-First" // seq of the first event in the message
	hdrLast  = "Corral-Last"  // seq of the last event in the message
	hdrPart  = "Corral-Part"  // "k/n": piece k of n of one long line
	hdrFence = "Corral-Fence" // the lease fence of the publishing owner
)

// Event is one event line of a session, as events.jsonl holds it.
type Event = eventstream.Event

// EventStream yields a session's events in seq order. Next's slices are
// valid until the next call.
type EventStream = eventstream.Stream

// EventLog opens the event log of a session this node owns: from seq from
// on, following it live or ending with io.EOF at its end.
type EventLog interface {
	Events(ctx context.Context, session string, from int64, follow bool) (EventStream, error)
}

// publisher copies one session's log into the replica.
type publisher struct {
	f       *Fabric
	log     *zap.Logger
	session string
	fence   uint64
	src     EventLog
	maxData int // the most event bytes in one message

	lastStream uint64 // the replica's last message of the session
	lastEvent  int64  // the last event seq the replica holds
	// failed counts the tries that failed since the last message went
	// in: each waits longer for the servers (Timing.attempt).
	failed int
	msg    nats.Msg
	buf    []byte
	// atHand is a context already done: Next(atHand) returns only an
	// event that needs no waiting.
	atHand context.Context
}

func newPublisher(f *Fabric, session string, fence uint64, src EventLog, log *zap.Logger) *publisher {
	maxData := maxBatchBytes
	if mp := int(f.nc.MaxPayload()) - 4<<10; mp > 0 && mp < maxData {
		maxData = mp
	}
	atHand, cancel := context.WithCancel(context.Background())
	cancel()
	return &publisher{f: f, log: log.With(zap.String("session", session)), session: session, fence: fence, src: src, maxData: maxData, atHand: atHand}
}

// errResync means the replica holds something else than the publisher
// thought: it reads the replica's end again and goes on from there.
var errResync = errors.New("replica changed under the publisher")

// run copies the log to the replica until ctx ends. With follow false it
// stops at the log's end (a session whose runner stopped).
func (p *publisher) run(ctx context.Context, follow bool) error {
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		err := p.resync(ctx)
		if err == nil {
			err = p.copyFrom(ctx, follow)
		}
		if err == nil || ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, errResync) {
			backoff = 50 * time.Millisecond
			continue
		}
		if !follow && errors.Is(err, wire.ErrNotFound) {
			// The last copy of a session that is gone (deleted, or never
			// made): there is nothing left to copy, and waiting on it
			// would hold the session's lease for the stop's whole time.
			// A live copy waits: its session may not be made yet.
			p.log.Debug("replica publisher: the session is gone", zap.Error(err))
			return nil
		}
		p.failed++
		p.log.Debug("replica publisher retrying", zap.Error(err), zap.Duration("after", backoff))
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		backoff = min(2*backoff, 2*time.Second)
	}
	return ctx.Err()
}

// resync reads where the replica of the session ends.
func (p *publisher) resync(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, p.f.timing.attempt(p.failed))
	defer cancel()
	m, err := p.f.events.GetLastMsgForSubject(rctx, p.f.names.sessionEvents(p.session))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		p.lastStream, p.lastEvent = 0, 0
		return nil
	}
	if err != nil {
		return fmt.Errorf("find the replica's end: %w", err)
	}
	p.lastStream = m.Sequence
	first, last, part, parts, err := replicaHeaders(m.Header)
	if err != nil {
		return err
	}
	p.lastEvent = last
	if parts > 0 && part < parts {
		// A long line cut short: it is published again, whole.
		p.lastEvent = first - 1
	}
	return nil
}

// copyFrom publishes the log from the replica's end on.
func (p *publisher) copyFrom(ctx context.Context, follow bool) error {
	src, err := p.src.Events(ctx, p.session, p.lastEvent+1, follow)
	if err != nil {
		return fmt.Errorf("open the event log: %w", err)
	}
	defer src.Close()
	var carry *Event
	var carryLine []byte
	for {
		var ev Event
		if carry != nil {
			ev, carry = *carry, nil
			ev.Line = carryLine
		} else {
			ev, err = src.Next(ctx)
			if err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
		}
		if ev.Seq <= p.lastEvent {
			continue
		}
		if len(ev.Line)+1 > p.maxData {
			if err := p.publishLong(ctx, ev); err != nil {
				return err
			}
			continue
		}
		first, last, n := ev.Seq, ev.Seq, 1
		p.buf = append(append(p.buf[:0], ev.Line...), '\n')
		// The batch takes what the log has at hand: Next with a context
		// already done returns an event it need not wait for (one in its
		// buffer or in the file), else the context's error.
		for n < maxBatchEvents {
			next, err := src.Next(p.atHand)
			if err != nil {
				break // an error other than the context's is met again
			}
			if next.Seq <= last {
				continue
			}
			if next.Seq>>eventBucketBits != first>>eventBucketBits || len(p.buf)+len(next.Line)+1 > p.maxData {
				carryLine = append(carryLine[:0], next.Line...)
				c := next
				carry = &c
				break
			}
			p.buf = append(append(p.buf, next.Line...), '\n')
			last = next.Seq
			n++
		}
		if err := p.publish(ctx, first, last, 0, 0, p.buf); err != nil {
			return err
		}
	}
}

// publishLong publishes one line too long for a message in pieces.
func (p *publisher) publishLong(ctx context.Context, ev Event) error {
	line := append(append([]byte(nil), ev.Line...), '\n')
	parts := (len(line) + p.maxData - 1) / p.maxData
	for k := range parts {
		piece := line[k*p.maxData : min(len(line), (k+1)*p.maxData)]
		if err := p.publish(ctx, ev.Seq, ev.Seq, k+1, parts, piece); err != nil {
			return err
		}
	}
	return nil
}

// publish appends one message after the replica's last one for the
// session, or fails with errResync when it is not the last any more.
func (p *publisher) publish(ctx context.Context, first, last int64, part, parts int, data []byte) error {
	id := p.session + "." + strconv.FormatInt(first, 10) + "." + strconv.FormatInt(last, 10)
	h := nats.Header{}
	h.Set(hdrFirst, strconv.FormatInt(first, 10))
	h.Set(hdrLast, strconv.FormatInt(last, 10))
	h.Set(hdrFence, strconv.FormatUint(p.fence, 10))
	if parts > 0 {
		h.Set(hdrPart, strconv.Itoa(part)+"/"+strconv.Itoa(parts))
		id += "." + strconv.Itoa(part)
	}
	p.msg = nats.Msg{Subject: p.f.names.eventSubject(p.session, first), Header: h, Data: data}
	pctx, cancel := context.WithTimeout(ctx, p.f.timing.attempt(p.failed))
	defer cancel()
	ack, err := p.f.js.PublishMsg(pctx, &p.msg,
		jetstream.WithMsgID(id),
		jetstream.WithExpectLastSequenceForSubject(p.lastStream, p.f.names.sessionEvents(p.session)))
	if err != nil {
		if isWrongLastSeq(err) {
			return errResync
		}
		return fmt.Errorf("publish events %d-%d: %w", first, last, err)
	}
	p.lastStream, p.failed = ack.Sequence, 0
	if parts == 0 || part == parts {
		p.lastEvent = last
	}
	return nil
}

// replicaHeaders reads a replica message's headers.
func replicaHeaders(h nats.Header) (first, last int64, part, parts int, err error) {
	first, err1 := strconv.ParseInt(h.Get(hdrFirst), 10, 64)
	last, err2 := strconv.ParseInt(h.Get(hdrLast), 10, 64)
	if err1 != nil || err2 != nil || first < 1 || last < first {
		return 0, 0, 0, 0, fmt.Errorf("replica message without a readable %s/%s", hdrFirst, hdrLast)
	}
	if s := h.Get(hdrPart); s != "" {
		if _, err := fmt.Sscanf(s, "%d/%d", &part, &parts); err != nil || part < 1 || part > parts {
			return 0, 0, 0, 0, fmt.Errorf("replica message with a bad %s %q", hdrPart, s)
		}
	}
	return first, last, part, parts, nil
}
