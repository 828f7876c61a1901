package supervisor

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// answerNotLive answers, without starting a runner, the commands that need
// none when no runner holds session id: stop (nothing runs, nothing is
// queued: an empty receipt), answer and decideHunk (an ask or a hunk does
// not outlive the runner that opened it: not_found), and status (from the
// session folder). handled is false for any other command, and whenever a
// runner holds or is starting the session.
func (m *Manager) answerNotLive(id string, req command.Request) (reply *wire.Reply, handled bool, err error) {
	switch req.(type) {
	case command.Stop, command.Answer, command.DecideHunk, command.GetStatus:
	default:
		return nil, false, nil
	}
	if !validID(id) {
		return nil, true, notFound(id)
	}
	m.mu.Lock()
	held := m.entries[id] != nil && !m.closed
	m.mu.Unlock()
	if held {
		return nil, false, nil
	}
	dir := m.dir(id)
	spec, err := readSpec(dir, id)
	if err != nil {
		return nil, true, err
	}
	switch c := req.(type) {
	case command.Stop:
		return wire.OKReply(event.StoppedData{Reason: "user"}), true, nil
	case command.Answer:
		return wire.ErrReply(wire.Errorf(wire.CodeNotFound, "no open ask %q: session %s has no live runner, and an ask ends with its runner", c.AskID, id)), true, nil
	case command.DecideHunk:
		return wire.ErrReply(wire.Errorf(wire.CodeNotFound, "no pending hunk %q: session %s has no live runner, and a hunk review ends with its runner", c.HunkID, id)), true, nil
	}
	st, err := readPresence(dir)
	if err != nil {
		m.log.Warn("unreadable presence")
	}
	if st == nil {
		st = &command.Status{Session: id, Engine: spec.Engine, State: wire.StateIdle, Mode: spec.Mode,
			Queued: []event.Queued{}, OpenAsks: []string{}, PendingEdit: []string{},
			SpendCapUSD: spec.SpendCapUSD, Unattended: spec.Unattended}
	}
	st.LastSeq = max(st.LastSeq, lastLoggedSeq(filepath.Join(dir, eventsFile)))
	return wire.OKReply(st), true, nil
}

// lastLoggedSeq reads the seq of the last complete line of an event log
// from its tail, 0 when there is none.
func lastLoggedSeq(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0
	}
	// An event line is rarely longer than this; a longer last line is
	// found by reading further back.
	for size := int64(64 << 10); ; size *= 4 {
		start := max(fi.Size()-size, 0)
		buf := make([]byte, fi.Size()-start)
		if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
			return 0
		}
		end := bytes.LastIndexByte(buf, '\n')
		for end > 0 {
			begin := bytes.LastIndexByte(buf[:end], '\n')
			if begin < 0 && start > 0 {
				break // the line starts before what was read
			}
			if seq, _, err := wire.ScanEvent(buf[begin+1 : end]); err == nil {
				return seq
			}
			end = begin
		}
		if start == 0 {
			return 0
		}
	}
}
