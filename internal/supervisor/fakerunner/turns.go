package fakerunner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

func (r *runner) command(reqID string, m *wire.Command) {
	r.mu.Lock()
	r.commands++
	notLive := r.notLive
	r.notLive = false
	r.mu.Unlock()
	if notLive {
		r.write(reqID, &wire.CommandReply{Outcome: wire.OutcomeNotLive})
		return
	}
	reply := func(rep *wire.Reply) {
		r.write(reqID, &wire.CommandReply{Outcome: wire.OutcomeRan, Reply: rep})
	}
	req, err := command.Decode(m.Command)
	if err != nil {
		reply(wire.ErrReply(err))
		return
	}
	switch req.(type) {
	case command.GetStatus, command.GetGoal:
	default:
		if r.modes[ModeIgnoreCommand] {
			return
		}
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
		busy := r.working
		if busy {
			r.queued = append(r.queued, event.Queued{ID: id, Text: c.Text})
		} else {
			r.working = true
			r.turn++
		}
		turn := r.turn
		r.mu.Unlock()
		r.emit(event.UserMessage, event.UserMessageData{ID: id, Text: c.Text, Kind: "send", Queued: busy})
		r.reportState()
		reply(wire.OKReply(event.Queued{ID: id, Text: c.Text}))
		if !busy {
			r.wg.Add(1)
			go r.runTurn(turn, id, c.Text)
		}
	case command.Stop:
		reply(r.stopTurn())
	case command.Answer:
		reply(r.answer(c.AskID, c.Decision))
	case command.GetStatus:
		reply(wire.OKReply(r.status()))
	case command.CancelQueued:
		r.mu.Lock()
		i := slices.IndexFunc(r.queued, func(q event.Queued) bool { return q.ID == c.MessageID })
		var q event.Queued
		if i >= 0 {
			q = r.queued[i]
			r.queued = slices.Delete(r.queued, i, i+1)
		}
		r.mu.Unlock()
		if i < 0 {
			reply(wire.ErrReply(wire.Errorf(wire.CodeNotFound, "no queued message %q", c.MessageID)))
			return
		}
		reply(wire.OKReply(q))
	case command.GetGoal:
		reply(wire.OKReply(command.GoalState{Clauses: []string{}, Limit: 20}))
	case command.ForkSession:
		res, err := r.fork()
		if err != nil {
			reply(wire.ErrReply(err))
			return
		}
		reply(wire.OKReply(res))
	default:
		reply(wire.ErrReply(wire.Errorf(wire.CodeBadRequest, "unknown command %q (the fake runner does not play it)", c.Cmd())))
	}
}

func (r *runner) runTurn(turn int, id, text string) {
	defer r.wg.Done()
	for {
		r.emit(event.TurnStarted, event.TurnStartedData{Turn: turn, MessageID: id, Text: text})
		outcome := "done"
		switch {
		case strings.HasPrefix(text, BurstPrefix):
			n, _ := strconv.Atoi(strings.TrimPrefix(text, BurstPrefix))
			r.burst(n)
		case r.modes[ModeSlowTurn]:
			<-r.stop
			outcome = "stopped"
		case r.modes[ModeAsk]:
			ask := fmt.Sprintf("a%d", turn)
			r.mu.Lock()
			r.asks = append(r.asks, ask)
			r.mu.Unlock()
			r.emit(event.AskOpened, event.AskOpenedData{AskID: ask, Tool: "shell", Category: "shell", Reason: "runs a command", Command: "make"})
			r.reportState()
			select {
			case d := <-r.ans:
				r.emit(event.AskAnswered, event.AskAnsweredData{AskID: ask, Decision: d, By: "user"})
			case <-r.stop:
				r.dropAsk(ask)
				r.emit(event.AskAnswered, event.AskAnsweredData{AskID: ask, Decision: command.DecisionDeny, By: "stop"})
				outcome = "stopped"
			}
		default:
			r.emit(event.AssistantText, event.TextData{Text: "echo: " + text})
		}
		// As the real runner does, the turn is over (the status says so)
		// before turnEnded is seen.
		r.mu.Lock()
		last := len(r.queued) == 0 || outcome == "stopped"
		if last {
			r.working = false
			r.queued = nil
		}
		r.mu.Unlock()
		r.emit(event.TurnEnded, event.TurnEndedData{Turn: turn, Outcome: outcome})
		r.reportState()
		if last {
			r.writePresence()
			return
		}
		r.mu.Lock()
		next := r.queued[0]
		r.queued = r.queued[1:]
		r.turn++
		turn, id, text = r.turn, next.ID, next.Text
		r.mu.Unlock()
	}
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

func (r *runner) stopTurn() *wire.Reply {
	r.mu.Lock()
	working := r.working
	cleared := len(r.queued)
	r.queued = nil
	r.mu.Unlock()
	r.reportState()
	if working {
		r.interruptTurn()
	}
	r.emit(event.Stopped, event.StoppedData{Reason: "user", InterruptedTurn: working, ClearedQueue: cleared})
	return wire.OKReply(event.StoppedData{Reason: "user", InterruptedTurn: working, ClearedQueue: cleared})
}

func (r *runner) interruptTurn() {
	select {
	case r.stop <- struct{}{}:
	default:
	}
}

func (r *runner) answer(askID, decision string) *wire.Reply {
	if decision != command.DecisionAllow && decision != command.DecisionDeny {
		return wire.ErrReply(wire.Errorf(wire.CodeBadRequest, "answer needs decision allow or deny, not %q", decision))
	}
	if !r.dropAsk(askID) {
		return wire.ErrReply(wire.Errorf(wire.CodeNotFound, "no open ask %q", askID))
	}
	r.reportState()
	r.ans <- decision
	return wire.OKReply(command.AnswerResult{AskID: askID, Decision: decision})
}

// dropAsk closes an open ask and reports whether it was open.
func (r *runner) dropAsk(askID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, a := range r.asks {
		if a == askID {
			r.asks = append(r.asks[:i], r.asks[i+1:]...)
			return true
		}
	}
	return false
}

func (r *runner) status() command.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return command.Status{Session: r.session, Engine: r.engine, State: r.stateLocked(), Turn: r.turn,
		Queued: append([]event.Queued{}, r.queued...), OpenAsks: append([]string{}, r.asks...), PendingEdit: []string{}, LastSeq: r.seq}
}

func (r *runner) stateLocked() wire.State {
	switch {
	case len(r.asks) > 0:
		return wire.StateWaitingForApproval
	case r.working:
		return wire.StateWorking
	}
	return wire.StateIdle
}

// reportState tells the supervisor what the fake's session is doing, when
// that changed, as the real runner does: before the reply to a command
// that changed it.
func (r *runner) reportState() {
	r.reportMu.Lock()
	defer r.reportMu.Unlock()
	r.mu.Lock()
	st := wire.StateReport{State: r.stateLocked(), Turn: r.turn, Queued: len(r.queued), OpenAsks: len(r.asks)}
	r.mu.Unlock()
	if r.reported && st == r.lastReport {
		return
	}
	r.lastReport, r.reported = st, true
	r.write("", &st)
}

func (r *runner) writePresence() {
	raw, _ := json.Marshal(r.status())
	r.mu.Lock()
	dir := r.dir
	r.mu.Unlock()
	tmp := filepath.Join(dir, ".presence.tmp")
	if os.WriteFile(tmp, raw, 0o600) == nil {
		_ = os.Rename(tmp, filepath.Join(dir, "presence.json"))
	}
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

// fork continues the conversation under a new session id in a sibling
// folder, as the real runner does for forkSession: the rotated event ends
// the old log, and the new log starts as its copy.
func (r *runner) fork() (command.ForkResult, error) {
	r.mu.Lock()
	from, cur := r.session, r.dir
	r.mu.Unlock()
	to := fmt.Sprintf("%s-f%d", from, time.Now().UnixNano()%1e6)
	dir := filepath.Join(filepath.Dir(cur), to)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return command.ForkResult{}, err
	}
	meta, _ := json.Marshal(wire.Spec{ID: to, Engine: r.engine, Parent: from})
	if err := os.WriteFile(filepath.Join(dir, "meta.json"), meta, 0o600); err != nil {
		return command.ForkResult{}, err
	}
	r.emit(event.Rotated, event.RotatedData{From: from, To: to, Reason: "fork"})
	r.mu.Lock()
	old, err := os.ReadFile(filepath.Join(cur, "events.jsonl"))
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "events.jsonl"), old, 0o600)
	}
	if err == nil {
		err = r.openLog(dir)
	}
	if err == nil {
		r.session, r.dir = to, dir
	}
	r.mu.Unlock()
	if err != nil {
		return command.ForkResult{}, err
	}
	r.emit(event.SessionResumed, event.SessionStartedData{Engine: r.engine, Parent: from})
	return command.ForkResult{From: from, To: to}, nil
}
