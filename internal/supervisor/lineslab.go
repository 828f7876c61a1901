package supervisor

// slabSize is the size of the blocks mirrored lines are copied into: about
// fifty events of a streamed answer. A block stays in memory while any line
// cut from it does, so a session's reader holds at most one block more than
// the lines the rings keep.
const slabSize = 8 << 10

// lineSlab copies lines that must outlive the reader's buffer (the hubs'
// subscribers and the feed's ring keep them) into shared blocks: one
// allocation for many lines, where a copy each was most of the allocations
// of reading a runner's output. Not safe for concurrent use: each reader
// has its own.
type lineSlab struct {
	block []byte
}

// copy returns a copy of b whose capacity ends where it does, so that an
// append to it never writes over the next line.
func (s *lineSlab) copy(b []byte) []byte {
	if len(b) > slabSize/4 {
		return append(make([]byte, 0, len(b)), b...)
	}
	if cap(s.block)-len(s.block) < len(b) {
		s.block = make([]byte, 0, slabSize)
	}
	start := len(s.block)
	s.block = append(s.block, b...)
	return s.block[start:len(s.block):len(s.block)]
}

// keep returns ev with its line copied and its type the same part of the
// copy.
func (s *lineSlab) keep(ev Event) Event {
	line := s.copy(ev.Line)
	if ev.Type != nil {
		off := cap(ev.Line) - cap(ev.Type) // where Type starts in Line
		ev.Type = line[off : off+len(ev.Type) : off+len(ev.Type)]
	}
	ev.Line = line
	return ev
}
