package fakerunner

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

func (r *runner) command(reqID string, m *wire.Command) {
	reply := func(rep *wire.Reply) {
		r.write(reqID, &wire.CommandReply{Outcome: wire.OutcomeRan, Reply: rep})
	}
	req, err := command.Decode(m.Command)
	if err != nil {
		reply(wire.ErrReply(err))
		return
	}
	switch c := req.(type) {
	case command.Send:
		if r.modes[ModeCrashOnSend] {
			fmt.Fprintln(r.errw, "fake runner: panic: engine exploded")
			fmt.Fprintln(r.errw, "fake runner: goroutine 1 [running]")
			os.Exit(3)
		}
		id := fmt.Sprintf("m%d", r.seq+1)
		r.mu.Lock()
		r.turn++
		turn := r.turn
		r.mu.Unlock()
		r.emit(event.UserMessage, event.UserMessageData{ID: id, Text: c.Text, Kind: "send"})
		reply(wire.OKReply(event.Queued{ID: id, Text: c.Text}))
		r.wg.Add(1)
		go r.runTurn(turn, id, c.Text)
	case command.GetStatus:
		reply(wire.OKReply(r.status()))
	case command.GetGoal:
		reply(wire.OKReply(command.GoalState{Clauses: []string{}, Limit: 20}))
	default:
		reply(wire.ErrReply(wire.Errorf(wire.CodeBadRequest, "unknown command %q (the fake runner does not play it)", c.Cmd())))
	}
}

// runTurn plays a turn: a burst when the text asks for one, else an echo.
func (r *runner) runTurn(turn int, id, text string) {
	defer r.wg.Done()
	r.emit(event.TurnStarted, event.TurnStartedData{Turn: turn, MessageID: id, Text: text})
	if n, ok := strings.CutPrefix(text, BurstPrefix); ok {
		count, _ := strconv.Atoi(n)
		r.burst(count)
	} else {
		r.emit(event.AssistantText, event.TextData{Text: "echo: " + text})
	}
	r.emit(event.TurnEnded, event.TurnEndedData{Turn: turn, Outcome: "done"})
}

func (r *runner) burst(n int) {
	var batch []byte
	var mirrors []byte
	// The whole burst holds the lock so no other event slips in between.
	r.mu.Lock()
	defer r.mu.Unlock()
	flush := func() {
		if _, err := r.log.Write(batch); err != nil {
			fmt.Fprintln(r.errw, "fake runner:", err)
		}
		r.writeRaw(mirrors)
		batch, mirrors = batch[:0], mirrors[:0]
	}
	ts := time.Now().UTC().Format(time.RFC3339Nano)
	for i := range n {
		r.seq++
		seq := r.seq
		start := len(batch)
		batch = fmt.Appendf(batch, `{"seq":%d,"ts":%q,"type":"assistantDelta","data":{"text":"chunk %d of a burst"}}`, seq, ts, i)
		mirrors = wire.AppendMirror(mirrors, seq, batch[start:])
		batch = append(batch, '\n')
		if len(batch) > 32<<10 {
			flush()
		}
	}
	if len(batch) > 0 {
		flush()
	}
}

func (r *runner) status() command.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return command.Status{Session: r.session, Engine: r.engine, State: wire.StateIdle, Turn: r.turn,
		Queued: []event.Queued{}, OpenAsks: []string{}, PendingEdit: []string{}, LastSeq: r.seq}
}

// emit appends an event to the log and then mirrors it, in that order.
func (r *runner) emit(typ event.Type, data any) {
	raw, _ := json.Marshal(data)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	ev := event.Event{Seq: r.seq, TS: time.Now().UTC(), Type: typ, Data: raw}
	line, _ := json.Marshal(ev)
	if _, err := r.log.Write(append(line, '\n')); err != nil {
		fmt.Fprintln(r.errw, "fake runner:", err)
	}
	r.writeRaw(wire.AppendMirror(nil, ev.Seq, line))
}

func (r *runner) write(reqID string, m wire.Message) {
	r.outMu.Lock()
	frames := r.frames
	r.outMu.Unlock()
	if d, ok := m.(*wire.TermData); ok && frames {
		var raw []byte
		if r.modes[ModeBadFrames] {
			raw, _ = wire.AppendTermFrame(nil, d.TermID, d.ClientID, []byte("of a kind nobody knows"))
			raw[1] = 0x7f
		}
		raw, _ = wire.AppendTermFrame(raw, d.TermID, d.ClientID, d.Data)
		r.writeRaw(raw)
		return
	}
	line, err := wire.AppendMessage(nil, reqID, m)
	if err != nil {
		fmt.Fprintln(r.errw, "fake runner:", err)
		return
	}
	r.writeRaw(line)
}

func (r *runner) writeRaw(b []byte) {
	r.outMu.Lock()
	defer r.outMu.Unlock()
	r.out.Write(b)
	r.out.Flush()
}
