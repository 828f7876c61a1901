package api

import (
	"encoding/json"
	"time"

	"github.com/corral-dev/corral/pkg/wire"
)

// FeedItem is one item of the multiplexed stream GET /v1/events: exactly one
// of Event, Lifecycle and Stream is set.
type FeedItem struct {
	// Cursor names the item's place in the stream: send it back as from=
	// (or Last-Event-ID) to resume after it. Items of a backlog (from=start)
	// have none: a stream cut during its backlog starts over.
	Cursor string `json:"cursor,omitempty"`
	// Session is the session the event or lifecycle change is about.
	Session string `json:"session,omitempty"`
	// Event is one of the session's events, exactly its line of
	// events.jsonl (docs/events.md).
	Event json.RawMessage `json:"event,omitempty"`
	// Lifecycle is a change in the session's life, which the supervisor
	// reports (it is in no session's log).
	Lifecycle *Lifecycle `json:"lifecycle,omitempty"`
	// Stream tells the subscriber where it stands in the stream.
	Stream *StreamMark `json:"stream,omitempty"`
}

// LifecycleType names a change in a session's life.
type LifecycleType string

// Lifecycle types.
const (
	// LifeCreated: the session was created (or made by a fork); Spec is
	// its spec.
	LifeCreated LifecycleType = "sessionCreated"
	// LifeLive: a runner holds the session now.
	LifeLive LifecycleType = "sessionLive"
	// LifeReaped: the session's runner was stopped because it sat idle
	// (--idle-ttl) or to make room for another (--max-live); its next use
	// starts a new one.
	LifeReaped LifecycleType = "sessionReaped"
	// LifeFailed: the session's runner died unasked, or could not start
	// it; Error says why (runner_crashed carries its detail).
	LifeFailed LifecycleType = "sessionFailed"
	// LifeDeleted: the session and its folder were removed.
	LifeDeleted LifecycleType = "sessionDeleted"
	// LifeStorageFailed: the session's event log cannot be written (its
	// state folder's disk is full, or failing): the session is
	// storageFailed, and every command but status is refused with
	// storage_unavailable until LifeStorageRestored. Error says so. No
	// event can say it: the log takes none.
	LifeStorageFailed LifecycleType = "sessionStorageFailed"
	// LifeStorageRestored: the session's event log takes writes again; the
	// failure event is in it, and commands are taken again.
	LifeStorageRestored LifecycleType = "sessionStorageRestored"
)

// LifecycleTypes is every lifecycle type, in the order the docs list them.
func LifecycleTypes() []LifecycleType {
	return []LifecycleType{LifeCreated, LifeLive, LifeReaped, LifeFailed, LifeDeleted, LifeStorageFailed, LifeStorageRestored}
}

// Lifecycle is a change in a session's life.
type Lifecycle struct {
	Type LifecycleType `json:"type"`
	TS   time.Time     `json:"ts"`
	// Spec is the new session's spec (sessionCreated).
	Spec *wire.Spec `json:"spec,omitempty"`
	// Reason says why the runner was stopped (sessionReaped): idle or
	// room.
	Reason string `json:"reason,omitempty"`
	// Error is why the runner failed (sessionFailed), or why the session
	// takes no commands (sessionStorageFailed: storage_unavailable).
	Error *Error `json:"error,omitempty"`
}

// StreamMarkType names a stream mark.
type StreamMarkType string

// Stream marks.
const (
	// MarkLive: the backlog (from=start) has been sent; live items follow.
	MarkLive StreamMarkType = "streamLive"
	// MarkReset: items were lost to this subscriber: it resumed from a
	// cursor the supervisor no longer holds (too old, or from before a
	// restart), or it fell too far behind. Live items follow. Read what
	// was missed from each session's own stream (GET /v1/sessions, then
	// /v1/sessions/{id}/events?from=N).
	MarkReset StreamMarkType = "streamReset"
	// MarkEnded: the supervisor ended the stream; Error says why
	// (unavailable: it is stopping). Nothing follows.
	MarkEnded StreamMarkType = "streamEnded"
)

// StreamMark tells a subscriber where it stands.
type StreamMark struct {
	Type StreamMarkType `json:"type"`
	// Reason explains a streamReset.
	Reason string `json:"reason,omitempty"`
	// Error is why a streamEnded stream ended.
	Error *Error `json:"error,omitempty"`
}
