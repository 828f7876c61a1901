package fleet

import (
	"crypto/sha256"
	"sync"
	"time"
)

// A request between nodes, or its answer, on its way through a NATS
// server that dies is lost with it. The caller cannot tell a lost request
// from a slow one, so it sends the request again under the id it gave it
// (hdrRequestID); the serving node remembers the requests it took by
// that id, and answers a copy from the first instead of running it twice.

// hdrRequestID carries the id a caller gives a request and its copies.
const hdrRequestID = "Corral-Request-Id"

// maxRecentCalls bounds the requests a node remembers: past it, the
// answered ones are forgotten at once (a copy of one of those, sent
// later, would then run again).
const maxRecentCalls = 1 << 14

// recentKeepExtra is how long past its caller's own deadline a request is
// remembered: the copies the caller sent last are still on their way.
const recentKeepExtra = time.Second

// recentCalls is what a node remembers of the requests it took.
type recentCalls struct {
	mu        sync.Mutex
	calls     map[string]*recentCall
	nextSweep time.Time
}

type recentCall struct {
	digest  [sha256.Size]byte // of the subject and body: a copy has the same
	replyTo string            // where the latest copy wants the answer
	answer  []byte            // nil while the request is under way
	expires time.Time
}

// take reports what to do with a request carrying id that arrived on
// subject with body, asking for its answer on replyTo. A request never
// seen is fresh: the caller runs it, then calls done. A copy of one
// under way is not: its answer will go to replyTo. A copy of one answered
// gets the answer back, to send again. A different request under an id
// in use is a clash.
func (r *recentCalls) take(id, subject string, body []byte, replyTo string, keep time.Duration) (fresh bool, answer []byte, clash bool) {
	digest := sha256.Sum256(append([]byte(subject+"\x00"), body...))
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls == nil {
		r.calls = map[string]*recentCall{}
	}
	if c, ok := r.calls[id]; ok && (c.answer == nil || now.Before(c.expires)) {
		if c.digest != digest {
			return false, nil, true
		}
		if c.answer != nil {
			return false, c.answer, false
		}
		c.replyTo = replyTo
		return false, nil, false
	}
	r.sweep(now)
	r.calls[id] = &recentCall{digest: digest, replyTo: replyTo, expires: now.Add(keep + recentKeepExtra)}
	return true, nil, false
}

// done records the answer of request id and says where to send it: to
// the latest copy's reply subject.
func (r *recentCalls) done(id string, answer []byte) (replyTo string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.calls[id]
	if !ok {
		return ""
	}
	c.answer = answer
	return c.replyTo
}

// sweep forgets answered requests whose callers have given up, at most
// once a second; and every answered one when too many are remembered.
func (r *recentCalls) sweep(now time.Time) {
	full := len(r.calls) >= maxRecentCalls
	if !full && now.Before(r.nextSweep) {
		return
	}
	r.nextSweep = now.Add(time.Second)
	for id, c := range r.calls {
		if c.answer != nil && (full || !now.Before(c.expires)) {
			delete(r.calls, id)
		}
	}
}

// size is how many requests are remembered (for tests).
func (r *recentCalls) size() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}
