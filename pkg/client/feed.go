package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"

	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
)

// FeedOptions select what the multiplexed stream carries (GET /v1/events).
type FeedOptions struct {
	// Sessions keeps only these sessions' items (every session when empty).
	Sessions []string
	// Types keeps only events and lifecycle changes of these types (every
	// type when empty). Stream marks always come.
	Types []string
	// FromStart sends every session's log from its first event (least
	// recently updated session first), then a streamLive mark, then live
	// items. Otherwise the stream starts with what happens next.
	FromStart bool
	// Cursor resumes after the item it names (FeedItem.Cursor).
	Cursor string
	// OnReconnect is told when the stream loses its connection (lost is
	// why) and when it has resumed (lost is nil). It is called from Next.
	OnReconnect func(lost error)
}

// Feed opens the multiplexed stream of every session's events and lifecycle
// changes. Like a followed EventStream it outlives its connection: it
// reconnects by itself and resumes after the last item it returned.
func (c *Client) Feed(ctx context.Context, opts FeedOptions) (*FeedStream, error) {
	f := &FeedStream{cursor: opts.Cursor, last: map[string]int64{}}
	err := f.lines.start(ctx, c, true, opts.OnReconnect, func() string {
		q := url.Values{}
		q.Set("format", "ndjson")
		for _, id := range opts.Sessions {
			q.Add("session", id)
		}
		for _, t := range opts.Types {
			q.Add("type", t)
		}
		switch {
		case f.cursor != "":
			q.Set("from", f.cursor)
		case opts.FromStart:
			q.Set("from", "start")
		}
		return "/events?" + q.Encode()
	}, feedEnd)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// FeedStream is the multiplexed stream, one api.FeedItem at a time. Each
// session's events come in seq order, once: an event repeated across a
// reconnection is dropped. A streamReset mark says items were lost (see
// api.MarkReset); the stream goes on with live items.
//
// Next must be called from one goroutine at a time; Close may be called
// from any.
type FeedStream struct {
	lines  lineStream
	cursor string           // the last cursor returned
	last   map[string]int64 // each session's last seq returned
}

// Next returns the next item. Its Event is valid until the next call.
func (f *FeedStream) Next() (*api.FeedItem, error) {
	for {
		line, err := f.lines.next()
		if err != nil {
			return nil, err
		}
		it := new(api.FeedItem)
		if err := json.Unmarshal(line, it); err != nil {
			return nil, wire.Errorf(wire.CodeProtocol, "feed item %.80q: %v", line, err)
		}
		if it.Cursor != "" {
			f.cursor = it.Cursor
		}
		if it.Event != nil {
			seq := lineSeq(it.Event)
			if seq <= f.last[it.Session] {
				continue
			}
			f.last[it.Session] = seq
		}
		return it, nil
	}
}

// Cursor is where the stream stands: pass it as FeedOptions.Cursor to
// resume after the last item returned.
func (f *FeedStream) Cursor() string { return f.cursor }

// Close ends the stream; a Next waiting in another goroutine returns.
func (f *FeedStream) Close() error { return f.lines.close() }

// feedEnd reads the item that ends the feed for a reason.
func feedEnd(line []byte) error {
	if !bytes.Contains(line, []byte(`"streamEnded"`)) {
		return nil
	}
	var it api.FeedItem
	if json.Unmarshal(line, &it) == nil && it.Stream != nil && it.Stream.Type == api.MarkEnded && it.Stream.Error != nil {
		return it.Stream.Error.Wire()
	}
	return nil
}
