package supervisor

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
)

// bus carries every session's events and lifecycle changes, in the order
// the supervisor saw them, to the subscribers of the multiplexed stream
// (GET /v1/events). It keeps the most recent items in a ring, numbered from
// 1 within the supervisor's run (its epoch): a subscriber reads the ring at
// its own pace, and one that resumes from a cursor still in the ring misses
// nothing. Publishing never blocks and never copies an event: the ring holds
// the line the runner's reader already owns.
type bus struct {
	epoch    string
	maxBytes int

	mu      sync.Mutex
	ring    []busItem // len is a power of two; item n is at ring[n&mask]
	mask    uint64
	next    uint64 // n of the next item; the first is 1
	first   uint64 // n of the oldest item held
	bytes   int    // lines held
	waiting bool   // a subscriber waits on wake
	wake    chan struct{}
	closed  error
}

// busItem is one item of the ring: a session's event, or a lifecycle
// change (life set, line its JSON).
type busItem struct {
	n       uint64
	session string
	seq     int64
	typ     []byte
	line    []byte
	life    bool
}

// newBus returns a bus holding at most items items (rounded up to a power
// of two) and maxBytes bytes of lines.
func newBus(items, maxBytes int) *bus {
	size := 1
	for size < items {
		size <<= 1
	}
	var id [4]byte
	rand.Read(id[:])
	return &bus{
		epoch:    hex.EncodeToString(id[:]),
		maxBytes: maxBytes,
		ring:     make([]busItem, size),
		mask:     uint64(size - 1),
		next:     1,
		first:    1,
		wake:     make(chan struct{}),
	}
}

func (b *bus) publish(it busItem) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed != nil {
		return
	}
	b.appendLocked(it)
	b.wakeLocked()
}

// publishEvents publishes a session's events in one go: one lock, one
// wake-up of the subscribers.
func (b *bus) publishEvents(session string, evs []Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed != nil {
		return
	}
	for _, ev := range evs {
		b.appendLocked(busItem{session: session, seq: ev.Seq, typ: ev.Type, line: ev.Line})
	}
	b.wakeLocked()
}

func (b *bus) appendLocked(it busItem) {
	it.n = b.next
	b.next++
	slot := &b.ring[it.n&b.mask]
	if slot.n != 0 && slot.n >= b.first {
		b.dropOldestLocked()
	}
	*slot = it
	b.bytes += len(it.line)
	for b.bytes > b.maxBytes && b.first < it.n {
		b.dropOldestLocked()
	}
}

// wakeLocked wakes the subscribers waiting for an item.
func (b *bus) wakeLocked() {
	if b.waiting {
		b.waiting = false
		close(b.wake)
		b.wake = make(chan struct{})
	}
}

func (b *bus) dropOldestLocked() {
	old := &b.ring[b.first&b.mask]
	b.bytes -= len(old.line)
	old.line, old.typ, old.session = nil, nil, ""
	b.first++
}

// position is the n the next item will have.
func (b *bus) position() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.next
}

// read copies the items from n on into dst (up to its capacity). With
// nothing to read it returns a channel closed at the next publish. lapped
// is set when items from n on are no longer held; err once the bus closed.
func (b *bus) read(n uint64, dst []busItem) (items []busItem, lapped bool, wait <-chan struct{}, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n < b.first {
		return dst[:0], true, nil, nil
	}
	if n >= b.next {
		if b.closed != nil {
			return dst[:0], false, nil, b.closed
		}
		b.waiting = true
		return dst[:0], false, b.wake, nil
	}
	dst = dst[:0]
	for ; n < b.next && len(dst) < cap(dst); n++ {
		dst = append(dst, b.ring[n&b.mask])
	}
	return dst, false, nil, nil
}

// close ends the bus: readers get err once they have read everything.
func (b *bus) close(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed != nil {
		return
	}
	b.closed = err
	close(b.wake)
	b.wake = make(chan struct{})
}

// cursor names item n.
func (b *bus) cursor(n uint64) string { return string(b.appendCursor(nil, n)) }

// appendCursor appends item n's cursor to dst.
func (b *bus) appendCursor(dst []byte, n uint64) []byte {
	dst = append(dst, b.epoch...)
	dst = append(dst, '-')
	return strconv.AppendUint(dst, n, 10)
}

// parseCursor returns the n a cursor names, and false for a cursor of
// another run (or none at all).
func (b *bus) parseCursor(c string) (uint64, bool) {
	epoch, num, ok := strings.Cut(c, "-")
	if !ok || epoch != b.epoch {
		return 0, false
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}
