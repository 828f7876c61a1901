package runner

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/engines/script"
	"github.com/corral-dev/corral/internal/term"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/wire"
)

// linkPeer plays the supervisor against a Link over pipes.
type linkPeer struct {
	t      *testing.T
	mu     sync.Mutex
	mirror []int64
	enc    *wire.Encoder
	msgs   chan *wire.Message
	done   chan error
}

func startLink(t *testing.T, scenario string) *linkPeer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	terms := NewTerminals(term.NewHub(term.HubOptions{}))
	link := &Link{
		Build: func(spec wire.Spec, creds map[string]string, opts Options) (*Runner, error) {
			opts.Spec, opts.Credentials = spec, creds
			return New(opts)
		},
		Options: Options{
			Dir:     t.TempDir(),
			Spec:    wire.Spec{ID: "s1"},
			Engines: map[string]engine.Factory{"script": script.New},
		},
		Terminals: terms,
		OnLive:    func(r *Runner) { terms.SetCwd(r.Spec().Cwd) },
	}
	p := &linkPeer{t: t, enc: wire.NewEncoder(inW), msgs: make(chan *wire.Message, 1024), done: make(chan error, 1)}
	go func() {
		p.done <- link.Serve(context.Background(), inR, outW)
		outW.Close()
	}()
	go func() {
		dec := wire.NewDecoder(outR, 0)
		for {
			m, err := dec.Decode()
			if err != nil {
				close(p.msgs)
				return
			}
			if m.T == wire.TMirror {
				p.mu.Lock()
				p.mirror = append(p.mirror, m.Seq)
				p.mu.Unlock()
			}
			p.msgs <- m
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-p.done:
		case <-time.After(waitLimit):
			t.Error("link did not end after stdin closed")
		}
	})
	return p
}

func (p *linkPeer) send(m *wire.Message) {
	p.t.Helper()
	if err := p.enc.Encode(m); err != nil {
		p.t.Fatal(err)
	}
}

// await returns the next message matching match, skipping others.
func (p *linkPeer) await(what string, match func(*wire.Message) bool) *wire.Message {
	p.t.Helper()
	deadline := time.After(waitLimit)
	for {
		select {
		case m, ok := <-p.msgs:
			if !ok {
				p.t.Fatalf("link closed before %s", what)
			}
			if match(m) {
				return m
			}
		case <-deadline:
			p.t.Fatalf("no %s", what)
		}
	}
}

func isT(t wire.Type, reqID string) func(*wire.Message) bool {
	return func(m *wire.Message) bool { return m.T == t && (reqID == "" || m.ReqID == reqID) }
}

func TestLinkHandshakeCommandsMirrorAndShutdown(t *testing.T) {
	p := startLink(t, "")
	p.send(&wire.Message{T: wire.TInject, ReqID: "0", Command: &wire.Command{Cmd: wire.CmdSend, Text: "early"}})
	if m := p.await("injected", isT(wire.TInjected, "0")); m.Outcome != wire.OutcomeNotLive {
		t.Fatalf("inject before live: %+v", m)
	}
	p.send(&wire.Message{T: wire.THello, Proto: wire.ProtocolVersion})
	if m := p.await("ready", isT(wire.TReady, "")); m.Proto != wire.ProtocolVersion || m.Error != nil {
		t.Fatalf("ready %+v", m)
	}
	cwd := t.TempDir()
	spec := wire.Spec{ID: "s1", Engine: "script", Cwd: cwd, Scenario: scenarioFile(t, writeAndRun), Mode: "auto"}
	p.send(&wire.Message{T: wire.TLiveEnsure, ReqID: "1", Spec: &spec})
	if m := p.await("live.ready", isT(wire.TLiveReady, "1")); m.Error != nil {
		t.Fatalf("live.ready %+v", m.Error)
	}
	p.send(&wire.Message{T: wire.TInject, ReqID: "2", Command: &wire.Command{Cmd: wire.CmdSend, Text: "go"}})
	if m := p.await("injected", isT(wire.TInjected, "2")); m.Outcome != wire.OutcomeInjected || !m.Reply.OK {
		t.Fatalf("injected %+v", m)
	}
	p.await("turnEnded mirror", func(m *wire.Message) bool {
		return m.T == wire.TMirror && strings.Contains(string(m.Event), `"type":"turnEnded"`)
	})
	p.mu.Lock()
	for i, seq := range p.mirror {
		if seq != int64(i+1) {
			t.Fatalf("mirrored seqs %v: a gap or repeat", p.mirror)
		}
	}
	p.mu.Unlock()
	p.send(&wire.Message{T: wire.TCap, ReqID: "3", Cap: "setGoal", Args: []byte(`{"goal":"notes exist"}`)})
	if m := p.await("capResult", isT(wire.TCapResult, "3")); m.Error != nil || !strings.Contains(string(m.Result), "notes exist") {
		t.Fatalf("capResult %+v", m)
	}
	p.send(&wire.Message{T: wire.TShutdown, ReqID: "4"})
	p.await("bye", isT(wire.TBye, "4"))
	if err := <-p.done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	p.done <- nil // for the cleanup
}

func TestLinkRefusesAnotherProtocolVersion(t *testing.T) {
	p := startLink(t, "")
	p.send(&wire.Message{T: wire.THello, Proto: wire.ProtocolVersion + 1})
	m := p.await("ready", isT(wire.TReady, ""))
	if m.Error == nil || !errors.Is(m.Error, wire.ErrProtocol) {
		t.Fatalf("ready to a mismatched hello: %+v", m)
	}
}

func TestLinkTerminalOwnerAndViewer(t *testing.T) {
	p := startLink(t, "")
	p.send(&wire.Message{T: wire.THello, Proto: wire.ProtocolVersion})
	spec := wire.Spec{ID: "s1", Engine: "script", Cwd: t.TempDir(), Scenario: scenarioFile(t, writeAndRun)}
	p.send(&wire.Message{T: wire.TLiveEnsure, ReqID: "1", Spec: &spec})
	p.await("live.ready", isT(wire.TLiveReady, "1"))

	open := func(req, client, role string) *wire.Message {
		p.send(&wire.Message{T: wire.TTermOpen, ReqID: req, Term: &wire.Term{TermID: "t1", ClientID: client, Role: role,
			Command: []string{"/bin/sh", "-c", "read line; echo got:$line; exit 3"}, Cols: 80, Rows: 24}})
		return p.await("term.opened", isT(wire.TTermOpened, req))
	}
	if g := open("o", "owner", "owner"); g.Term.Role != "owner" {
		t.Fatalf("owner granted %+v", g.Term)
	}
	if g := open("v", "viewer", "owner"); g.Term.Role != "read-only" {
		t.Fatalf("second owner request granted %+v", g.Term)
	}
	p.send(&wire.Message{T: wire.TTermInput, Term: &wire.Term{TermID: "t1", ClientID: "viewer", Data: []byte("sneaky\n")}})
	if m := p.await("term.error", isT(wire.TTermError, "")); m.Error.Code != wire.CodeConflict {
		t.Fatalf("viewer input error %+v", m.Error)
	}
	p.send(&wire.Message{T: wire.TTermInput, Term: &wire.Term{TermID: "t1", ClientID: "owner", Data: []byte("hello\n")}})
	seen := map[string]string{}
	exits := map[string]int{}
	for len(exits) < 2 {
		m := p.await("term output", func(m *wire.Message) bool { return m.T == wire.TTermData || m.T == wire.TTermExit })
		if m.T == wire.TTermData {
			seen[m.Term.ClientID] += string(m.Term.Data)
			continue
		}
		exits[m.Term.ClientID] = *m.Term.ExitCode
	}
	for _, c := range []string{"owner", "viewer"} {
		if !strings.Contains(seen[c], "got:hello") || strings.Contains(seen[c], "sneaky") || exits[c] != 3 {
			t.Fatalf("%s saw %q, exit %d", c, seen[c], exits[c])
		}
	}
}
