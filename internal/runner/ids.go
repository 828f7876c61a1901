package runner

import (
	"strconv"
	"sync/atomic"
)

// idSource numbers the session's messages, asks and edits. An id is a
// letter for what it names (m, g, l and i for the kinds of message, a for
// an ask, e for an edit) and a number no other id in the session's log
// has: a resumed runner first skips past the highest number its log holds.
// It needs no lock.
type idSource struct{ last atomic.Int64 }

// next returns a new id with prefix, and its number.
func (s *idSource) next(prefix string) (id string, n int64) {
	n = s.last.Add(1)
	return prefix + strconv.FormatInt(n, 10), n
}

// skipTo makes every later id's number greater than n.
func (s *idSource) skipTo(n int64) {
	for {
		last := s.last.Load()
		if n <= last || s.last.CompareAndSwap(last, n) {
			return
		}
	}
}
