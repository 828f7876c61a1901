package runner

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/engines/script"
	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/term"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// streamThenReview streams a while, then writes a file that review mode
// holds for a person: events keep coming for a while after a supervisor
// goes away, and then the turn waits, busy, however fast the machine is.
const streamThenReview = `{"turns": [], "fallback": {"steps": [
  {"say": "a long answer, streamed in many small pieces", "chunks": 40, "delayMs": 5},
  {"tool": "write", "path": "held.txt", "content": "held for review\n"},
  {"say": "done"}]}}`

// graceLink is a link on folder dir whose session outlives its
// supervisor, and the channel Serve's end comes on, served on pipes whose
// other ends it returns.
func graceLink(t *testing.T, dir string, grace time.Duration) (link *Link, served chan error, out io.ReadCloser, in io.WriteCloser) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	link = &Link{
		Build: func(spec wire.Spec, creds map[string]string, opts Options) (*Runner, error) {
			opts.Spec, opts.Credentials = spec, creds
			return New(opts)
		},
		Options:   Options{Dir: dir, Spec: wire.Spec{ID: "s1"}, Engines: map[string]engine.Factory{"script": script.New}},
		Terminals: NewTerminals(term.NewHub(term.HubOptions{})),
		Grace:     grace,
	}
	served = make(chan error, 1)
	go func() {
		served <- link.Serve(context.Background(), inR, outW)
		outW.Close()
	}()
	return link, served, outR, inW
}

// peerOn plays one supervisor on a link connection: it decodes what the
// link writes into msgs, recording mirrored seqs in order.
func peerOn(t *testing.T, r io.Reader, w io.Writer) *linkPeer {
	p := &linkPeer{t: t, enc: wire.NewEncoder(w), msgs: make(chan received, 4096), done: make(chan error, 1)}
	go func() {
		dec := wire.NewDecoder(r, 0)
		for {
			m, reqID, err := dec.Decode()
			if err != nil {
				close(p.msgs)
				return
			}
			if mm, ok := m.(*wire.Mirror); ok {
				p.mu.Lock()
				p.mirror = append(p.mirror, mm.Seq)
				p.mu.Unlock()
			}
			p.msgs <- received{reqID, m}
		}
	}()
	return p
}

// goLive says hello and makes the session of spec live.
func (p *linkPeer) goLive(spec wire.Spec) {
	p.t.Helper()
	p.send("", &wire.Hello{Proto: wire.ProtocolVersion})
	await[*wire.Ready](p, "ready", "", nil)
	p.send("live", &wire.LiveEnsure{Spec: spec})
	if m := await[*wire.LiveReady](p, "live.ready", "live", nil); m.Error != nil {
		p.t.Fatal(m.Error)
	}
}

func (p *linkPeer) mirrored() []int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int64(nil), p.mirror...)
}

// TestLinkReattachMirrorsEveryEventOnce cuts a link mid-turn, lets the turn
// go on with no supervisor, and re-attaches a second one that says which
// seq it lacks: it gets ready first, then every event from that seq on,
// each once and in order, the last state, and live events after; the two
// supervisors together saw the log exactly.
func TestLinkReattachMirrorsEveryEventOnce(t *testing.T) {
	dir := t.TempDir()
	link, served, outR, inW := graceLink(t, dir, time.Minute)
	first := peerOn(t, outR, inW)
	first.goLive(wire.Spec{ID: "s1", Engine: "script", Cwd: t.TempDir(), Scenario: scenarioFile(t, streamThenReview), Mode: "review"})
	first.command("2", command.Send{Text: "go"})
	await[*wire.CommandReply](first, "commandReply", "2", nil)
	// Gone a few events into the turn, with most of it still to come.
	await[*wire.Mirror](first, "a text delta", "", func(m *wire.Mirror) bool {
		var ev event.Event
		return json.Unmarshal(m.Event, &ev) == nil && ev.Type == event.AssistantDelta
	})
	inW.Close()
	outR.Close()
	for range first.msgs {
	}
	seen := first.mirrored()
	from := seen[len(seen)-1] + 1

	// The turn goes on alone until it waits for review.
	logPath := filepath.Join(dir, EventsFile)
	var staged *event.HunkStagedData
	deadline := time.Now().Add(waitLimit)
	for staged == nil {
		eventlog.ReadFile(logPath, func(ev event.Event) error {
			if ev.Type == event.HunkStaged {
				var h event.HunkStagedData
				json.Unmarshal(ev.Data, &h)
				staged = &h
			}
			return nil
		})
		if time.Now().After(deadline) {
			t.Fatal("the turn did not go on without a supervisor")
		}
		time.Sleep(5 * time.Millisecond)
	}

	ours, theirs := net.Pipe()
	second := peerOn(t, ours, ours)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if !link.Attach(ctx, Attachment{Conn: theirs}) {
		t.Fatal("the link did not take the second supervisor")
	}
	second.send("", &wire.Hello{Proto: wire.ProtocolVersion, MirrorFrom: from})
	r, ok := <-second.msgs
	if ready, isReady := r.m.(*wire.Ready); !ok || !isReady || ready.Session != "s1" || ready.Error != nil {
		t.Fatalf("first message after re-attaching: %+v", r.m)
	}
	// The state comes after ready; the edit's hunkStaged may reach the
	// file a moment before the runner reports the edit pending.
	st := await(second, "a state with the edit pending", "", func(st *wire.StateReport) bool { return st.PendingEdits == 1 })
	if st.State != wire.StateWaitingForReview {
		t.Fatalf("state after re-attaching: %+v", st)
	}
	second.command("3", command.DecideHunk{EditID: staged.EditID, HunkID: "h1", Decision: command.DecisionAccept})
	await[*wire.CommandReply](second, "commandReply", "3", nil)
	await[*wire.Mirror](second, "turnEnded", "", func(m *wire.Mirror) bool {
		var ev event.Event
		return json.Unmarshal(m.Event, &ev) == nil && ev.Type == event.TurnEnded
	})
	second.send("4", &wire.Shutdown{})
	await[*wire.Bye](second, "bye", "4", nil)
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	ours.Close()

	var last int64
	eventlog.ReadFile(logPath, func(ev event.Event) error { last = ev.Seq; return nil })
	got := append(seen, second.mirrored()...)
	if int64(len(got)) != last {
		t.Fatalf("the two supervisors got %d events, the log has %d: %v", len(got), last, got)
	}
	for i, seq := range got {
		if seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: %v", i+1, seq, got)
		}
	}
	if from > last-3 {
		t.Fatalf("nothing happened while detached (from %d, last %d): the test proves nothing", from, last)
	}
}

// TestLinkWithoutSupervisorStopsWhenIdle: a session with nothing under way
// does not wait for a supervisor; one whose work ends while it waits stops
// then, both as a shutdown would (Serve returns, the runner is closed).
func TestLinkWithoutSupervisorStopsWhenIdle(t *testing.T) {
	for _, busy := range []bool{false, true} {
		name := map[bool]string{false: "idle", true: "busy until its turn ends"}[busy]
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			// An hour: only the end of the work may stop it.
			_, served, outR, inW := graceLink(t, dir, time.Hour)
			p := peerOn(t, outR, inW)
			p.goLive(wire.Spec{ID: "s1", Engine: "script", Cwd: t.TempDir(), Scenario: scenarioFile(t, writeAndRun), Mode: "auto"})
			if busy {
				p.command("2", command.Send{Text: "go"})
				await[*wire.CommandReply](p, "commandReply", "2", nil)
			}
			inW.Close()
			outR.Close()
			for range p.msgs {
			}
			select {
			case err := <-served:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(waitLimit):
				t.Fatal("the runner waits for a supervisor with nothing under way")
			}
			var ended, turns int
			eventlog.ReadFile(filepath.Join(dir, EventsFile), func(ev event.Event) error {
				switch ev.Type {
				case event.TurnEnded:
					ended++
				case event.TurnStarted:
					turns++
				}
				return nil
			})
			if ended != turns {
				t.Fatalf("%d turns started, %d ended", turns, ended)
			}
		})
	}
}
