package supervisor

import "sync"

// termBufferBytes is the size of a recycled terminal output buffer: the
// most output one frame from the runner carries (term.MaxDataBytes).
const termBufferBytes = 256 << 10

// termBuffers recycles the buffers terminal output arrives in. A program
// writing as fast as its terminal allows sends a frame of up to 256 KiB
// every few milliseconds; allocating each afresh kept the garbage collector
// busy and made the kernel fault in fresh pages for every frame, about a
// third of the supervisor's CPU time in such a flood (docs/performance.md).
// Buffers come back through Manager.RecycleTermData from the consumer that
// knows it held the last reference; any other is left to the garbage
// collector, as before.
type termBuffers struct {
	pool sync.Pool // of *[]byte with capacity termBufferBytes
}

// get returns a buffer of length n.
func (t *termBuffers) get(n int) []byte {
	if n > termBufferBytes {
		return make([]byte, n)
	}
	if p, ok := t.pool.Get().(*[]byte); ok {
		return (*p)[:n]
	}
	return make([]byte, n, termBufferBytes)
}

// put takes back a buffer get returned.
func (t *termBuffers) put(p []byte) {
	if cap(p) != termBufferBytes {
		return
	}
	p = p[:0]
	t.pool.Put(&p)
}

// TermBuffer returns a buffer of length n for terminal output, reused when
// it fits: the supervisor's fan-out copies a batch it read from a terminal
// handed over into one, for its clients' queues to share. Give it back with
// RecycleTermData.
func (m *Manager) TermBuffer(n int) []byte { return m.termBufs.get(n) }

// RecycleTermData takes back the Data of a term.data message that a
// terminal sink (OpenTerm) received, or a buffer from TermBuffer, for the
// output that follows. The
// caller must hold the only reference left to it: nothing may read or keep
// p afterwards. A sink is the only receiver of the messages naming its
// client, which is all the output the runner sends.
func (m *Manager) RecycleTermData(p []byte) { m.termBufs.put(p) }
