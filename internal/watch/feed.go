package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/client"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// Source is what watching needs of the supervisor's API.
type Source interface {
	// Sessions lists every session.
	Sessions(ctx context.Context) ([]api.Session, error)
	// Events streams a session's events from seq from; follow keeps the
	// stream open for live events.
	Events(ctx context.Context, id string, from int64, follow bool) (EventReader, error)
	// Feed streams every session's events from the start of each log,
	// then a streamLive mark, then live (GET /v1/events?from=start).
	Feed(ctx context.Context) (FeedReader, error)
}

// FeedReader is the multiplexed stream of every session.
type FeedReader interface {
	Next() (*api.FeedItem, error)
	Close() error
}

// EventReader is one stream of a session's events.
type EventReader interface {
	// Next returns the next event line; io.EOF ends a stream that does
	// not follow, and the supervisor's reason ends one that does.
	Next() ([]byte, error)
	Close() error
}

// clientSource is a Source over the supervisor's HTTP API.
type clientSource struct{ c *client.Client }

func (s clientSource) Sessions(ctx context.Context) ([]api.Session, error) {
	return s.c.Sessions(ctx)
}

func (s clientSource) Events(ctx context.Context, id string, from int64, follow bool) (EventReader, error) {
	return s.c.Events(ctx, id, client.EventsOptions{From: from, Follow: follow})
}

func (s clientSource) Feed(ctx context.Context) (FeedReader, error) {
	return s.c.Feed(ctx, client.FeedOptions{FromStart: true})
}

// item is what the feed tells a watcher: one event, or news about a stream.
type item struct {
	session string
	event   *event.Event
	// hidden is set for events before the first seq to show: they update
	// the session's state but print nothing.
	hidden bool
	// live is set once a session's backlog has been read.
	live bool
	// skipped sums up that many hidden events, before the first shown.
	skipped int
	notice  string // news about the stream ("reconnecting")
	gone    bool   // the session was deleted
	err     error  // watching cannot go on
	done    bool   // every stream ended (not following)
}

// liveOnly, as feed.from, hides every event already logged.
const liveOnly = -1

// feed reads the event streams of one session or of every session into
// out, in seq order per session. It reads each log from its start, so a
// watcher knows what is open and running, and marks the events before from
// as hidden.
type feed struct {
	src    Source
	from   int64 // first seq to show; liveOnly for new events only
	follow bool
	// retry bounds the wait between attempts to reopen a lost stream.
	retry time.Duration
	out   chan<- item
}

// send delivers it unless ctx ends first.
func (f *feed) send(ctx context.Context, it item) bool {
	select {
	case f.out <- it:
		return true
	case <-ctx.Done():
		return false
	}
}

// one watches a single session until ctx ends, the session is deleted, or
// (not following) its log has been read.
func (f *feed) one(ctx context.Context, id string) {
	last, err := f.backlog(ctx, id, f.from)
	switch {
	case ctx.Err() != nil:
		return
	case errors.Is(err, wire.ErrNotFound):
		f.send(ctx, item{err: fmt.Errorf("session %s: %w", id, err)})
		return
	case err != nil:
		f.send(ctx, item{err: err})
		return
	}
	if f.follow {
		f.followFrom(ctx, id, last+1)
	}
	f.send(ctx, item{done: true})
}

// all watches every session through the supervisor's multiplexed stream:
// every session's log from its start (least recently updated first, one
// session after another), then whatever happens live, sessions that appear
// included (shown whole), until ctx ends or (not following) every log has
// been read.
func (f *feed) all(ctx context.Context) {
	st, err := f.src.Feed(ctx)
	if err != nil {
		if ctx.Err() == nil {
			f.send(ctx, item{err: fmt.Errorf("follow every session: %w", err)})
		}
		return
	}
	defer st.Close()
	a := allState{f: f, last: map[string]int64{}, shown: map[string]bool{}}
	for {
		it, err := st.Next()
		if err != nil {
			if ctx.Err() == nil {
				f.send(ctx, item{err: fmt.Errorf("follow every session: %w", err)})
			}
			return
		}
		if !a.take(ctx, it) {
			return
		}
	}
}

// allState is where watching every session stands.
type allState struct {
	f       *feed
	live    bool             // the backlogs have been read
	current string           // the session whose backlog is being read
	skipped int              // hidden events of current not yet summed up
	last    map[string]int64 // each session's last seq sent
	shown   map[string]bool  // sessions told live
}

// take handles one item of the multiplexed stream; false ends watching.
func (a *allState) take(ctx context.Context, it *api.FeedItem) bool {
	f := a.f
	switch {
	case it.Stream != nil:
		switch it.Stream.Type {
		case api.MarkLive:
			a.endBacklog(ctx)
			a.live = true
			if !f.follow {
				f.send(ctx, item{done: true})
				return false
			}
		case api.MarkReset:
			f.send(ctx, item{notice: "missed events while disconnected; reading them again"})
			return a.catchUp(ctx)
		}
	case it.Lifecycle != nil:
		if it.Lifecycle.Type == api.LifeDeleted {
			delete(a.last, it.Session)
			delete(a.shown, it.Session)
			return f.send(ctx, item{session: it.Session, gone: true})
		}
	case it.Event != nil:
		if !a.live && it.Session != a.current {
			a.endBacklog(ctx)
			a.current = it.Session
		}
		if a.live && !a.shown[it.Session] {
			// A session that appears while watching is shown whole.
			a.shown[it.Session] = true
			f.send(ctx, item{session: it.Session, live: true})
		}
		ev, ok := f.event(ctx, it.Session, it.Event, a.last[it.Session])
		if !ok {
			return true
		}
		a.last[it.Session] = ev.Seq
		hidden := !a.live && (f.from == liveOnly || ev.Seq < f.from)
		switch {
		case hidden:
			a.skipped++
		case a.skipped > 0:
			f.send(ctx, item{session: it.Session, skipped: a.skipped})
			a.skipped = 0
		}
		return f.send(ctx, item{session: it.Session, event: ev, hidden: hidden})
	}
	return true
}

// endBacklog closes the backlog of the session being read: the hidden
// events are summed up and the session is told live.
func (a *allState) endBacklog(ctx context.Context) {
	if a.current == "" {
		return
	}
	if a.skipped > 0 {
		a.f.send(ctx, item{session: a.current, skipped: a.skipped})
		a.skipped = 0
	}
	a.shown[a.current] = true
	a.f.send(ctx, item{session: a.current, live: true})
	a.current = ""
}

// catchUp reads what a reset stream lost from each session's own log.
func (a *allState) catchUp(ctx context.Context) bool {
	list, err := a.f.src.Sessions(ctx)
	if err != nil {
		a.f.send(ctx, item{notice: "cannot list sessions: " + oneLine(err)})
		return ctx.Err() == nil
	}
	for _, s := range list {
		st, err := a.f.src.Events(ctx, s.ID, a.last[s.ID]+1, false)
		if err != nil {
			continue // deleted meanwhile
		}
		for {
			line, err := st.Next()
			if err != nil {
				break
			}
			ev, ok := a.f.event(ctx, s.ID, line, a.last[s.ID])
			if !ok {
				continue
			}
			a.last[s.ID] = ev.Seq
			if !a.shown[s.ID] {
				a.shown[s.ID] = true
				a.f.send(ctx, item{session: s.ID, live: true})
			}
			if !a.f.send(ctx, item{session: s.ID, event: ev}) {
				st.Close()
				return false
			}
		}
		st.Close()
	}
	return true
}

// backlog reads a session's log to its current end and returns the last
// seq read.
func (f *feed) backlog(ctx context.Context, id string, from int64) (int64, error) {
	st, err := f.src.Events(ctx, id, 1, false)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	var last int64
	skipped := 0
	for {
		line, err := st.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return last, err
		}
		ev, ok := f.event(ctx, id, line, last)
		if !ok {
			continue
		}
		last = ev.Seq
		hidden := from == liveOnly || ev.Seq < from
		switch {
		case hidden:
			skipped++
		case skipped > 0:
			// What is not shown is summed up before what is.
			f.send(ctx, item{session: id, skipped: skipped})
			skipped = 0
		}
		if !f.send(ctx, item{session: id, event: ev, hidden: hidden}) {
			return last, ctx.Err()
		}
	}
	if skipped > 0 {
		f.send(ctx, item{session: id, skipped: skipped})
	}
	f.send(ctx, item{session: id, live: true})
	return last, nil
}

// followFrom follows a session's live events from seq next, reopening
// the stream when it is lost, until ctx ends or the session is deleted.
func (f *feed) followFrom(ctx context.Context, id string, next int64) {
	wait := f.retry / 16
	lost := false
	for ctx.Err() == nil {
		st, err := f.src.Events(ctx, id, next, true)
		if err == nil {
			if lost {
				f.send(ctx, item{session: id, notice: "reconnected"})
				lost = false
			}
			wait = f.retry / 16
			err = f.drain(ctx, id, st, &next)
			st.Close()
		}
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, wire.ErrNotFound):
			f.send(ctx, item{session: id, gone: true})
			return
		}
		if !lost {
			f.send(ctx, item{session: id, notice: "lost the event stream (" + oneLine(err) + "); reconnecting"})
			lost = true
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(wait*2, f.retry)
	}
}

// drain sends a followed stream's events until it ends, keeping next one
// past the last seq sent.
func (f *feed) drain(ctx context.Context, id string, st EventReader, next *int64) error {
	for {
		line, err := st.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return errors.New("the supervisor ended the stream")
			}
			return err
		}
		ev, ok := f.event(ctx, id, line, *next-1)
		if !ok {
			continue
		}
		*next = ev.Seq + 1
		if !f.send(ctx, item{session: id, event: ev}) {
			return ctx.Err()
		}
	}
}

// event decodes one line. A line that is not an event, or one already
// seen (seq not past last), is reported or skipped: ok is false.
func (f *feed) event(ctx context.Context, id string, line []byte, last int64) (*event.Event, bool) {
	var ev event.Event
	if err := json.Unmarshal(line, &ev); err != nil || ev.Seq <= 0 {
		if err == nil {
			err = errors.New("no seq")
		}
		f.send(ctx, item{session: id, notice: "skipped a line that is not an event: " + oneLine(err)})
		return nil, false
	}
	if ev.Seq <= last {
		return nil, false
	}
	return &ev, true
}
