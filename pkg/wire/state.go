package wire

import (
	"bytes"
	"strconv"
)

// The state line, {"t":"state",...}, is written at every change of what a
// session is doing, several times a turn, and one of them lies between a
// send and its reply. So it has, like the mirror line, an encoder
// (AppendState) that writes it without reflection and a fast decoder
// (ParseState) that reads that exact shape back without encoding/json.
// Both produce and accept the line the generic codec writes
// (AppendMessage), and FuzzStateRoundTrip holds the two together.

// AppendState appends the line of st (with its newline) to dst: the same
// bytes AppendMessage writes for it.
func AppendState(dst []byte, st StateReport) []byte {
	if !plainWord(string(st.State)) {
		// Never for the states this package names; the generic encoder
		// escapes what needs escaping.
		escaped := st // only this branch pays for a copy on the heap
		line, err := appendJSON(dst, "", &escaped)
		if err != nil {
			// A StateReport always encodes.
			panic(err)
		}
		return line
	}
	dst = append(dst, statePrefix...)
	dst = append(dst, st.State...)
	dst = append(dst, stateTurn...)
	dst = strconv.AppendInt(dst, int64(st.Turn), 10)
	dst = append(dst, stateQueued...)
	dst = strconv.AppendInt(dst, int64(st.Queued), 10)
	dst = append(dst, stateOpenAsks...)
	dst = strconv.AppendInt(dst, int64(st.OpenAsks), 10)
	dst = append(dst, statePendingEdits...)
	dst = strconv.AppendInt(dst, int64(st.PendingEdits), 10)
	if st.Settling {
		dst = append(dst, stateSettling...)
	}
	if st.Held {
		dst = append(dst, stateHeld...)
	}
	return append(dst, "}\n"...)
}

// The fixed parts of a state line, in the order AppendState writes them.
var (
	statePrefix       = []byte(`{"t":"state","state":"`)
	stateTurn         = []byte(`","turn":`)
	stateQueued       = []byte(`,"queued":`)
	stateOpenAsks     = []byte(`,"openAsks":`)
	statePendingEdits = []byte(`,"pendingEdits":`)
	stateSettling     = []byte(`,"settling":true`)
	stateHeld         = []byte(`,"held":true`)
)

// ParseState recognises a state line (without its newline) in the exact
// shape AppendState writes and returns its report. Any other shape
// reports false: read it with Unmarshal, which takes any field order.
func ParseState(line []byte) (st StateReport, ok bool) {
	if !bytes.HasPrefix(line, statePrefix) {
		return StateReport{}, false
	}
	s := scanner{b: line, i: len(statePrefix)}
	end := bytes.IndexByte(line[s.i:], '"')
	if end < 0 || !plainWord(string(line[s.i:s.i+end])) {
		return StateReport{}, false
	}
	st.State = stateOf(line[s.i : s.i+end])
	s.i += end
	for _, f := range []struct {
		key []byte
		v   *int
	}{{stateTurn, &st.Turn}, {stateQueued, &st.Queued}, {stateOpenAsks, &st.OpenAsks}, {statePendingEdits, &st.PendingEdits}} {
		if !bytes.HasPrefix(line[s.i:], f.key) {
			return StateReport{}, false
		}
		s.i += len(f.key)
		start := s.i
		n, ok := s.uint()
		// JSON writes no leading zeros, and the count must fit an int.
		if !ok || (line[start] == '0' && s.i-start > 1) || int64(int(n)) != n {
			return StateReport{}, false
		}
		*f.v = int(n)
	}
	for _, f := range []struct {
		key []byte
		v   *bool
	}{{stateSettling, &st.Settling}, {stateHeld, &st.Held}} {
		if bytes.HasPrefix(line[s.i:], f.key) {
			*f.v = true
			s.i += len(f.key)
		}
	}
	if string(bytes.TrimRight(line[s.i:], " \t\r")) != "}" {
		return StateReport{}, false
	}
	return st, true
}

// stateOf returns the State word names, without an allocation for the
// states this package names.
func stateOf(word []byte) State {
	for _, s := range [...]State{StateIdle, StateWorking, StateWaitingForApproval, StateWaitingForReview,
		StateStarting, StateStopped, StateFailed, StateStorageFailed} {
		if string(word) == string(s) {
			return s
		}
	}
	return State(word)
}

// plainWord reports whether s is a non-empty run of ASCII letters, which
// JSON writes as they are.
func plainWord(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return s != ""
}
