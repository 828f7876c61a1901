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
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/wire"
)

// linkPeer plays the supervisor against a Link over pipes.
type linkPeer struct {
	t      *testing.T
	mu     sync.Mutex
	mirror []int64
	enc    *wire.Encoder
	msgs   chan received
	done   chan error
	// held keeps, in order, what an await read but did not take, for the
	// awaits after it: a reply and the events its command set off may come
	// in either order.
	held []received
}

// received is a message from the link with its request id.
type received struct {
	reqID string
	m     wire.Message
}

func startLink(t *testing.T, scenario string) *linkPeer {
	t.Helper()
	terms := NewTerminals(term.NewHub(term.HubOptions{}))
	return serveLink(t, &Link{
		Build: buildRunner,
		Options: Options{
			Dir:     t.TempDir(),
			Spec:    wire.Spec{ID: "s1"},
			Engines: map[string]engine.Factory{"script": script.New},
		},
		Terminals: terms,
		OnLive:    func(r *Runner) { terms.SetCwd(r.Spec().Cwd) },
	})
}

// buildRunner is a Link's Build for tests.
func buildRunner(spec wire.Spec, creds map[string]string, opts Options) (*Runner, error) {
	opts.Spec, opts.Credentials = spec, creds
	return New(opts)
}

// serveLink serves link over pipes to a linkPeer until the test ends.
func serveLink(t *testing.T, link *Link) *linkPeer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := peerOn(t, outR, inW)
	go func() {
		p.done <- link.Serve(context.Background(), inR, outW)
		outW.Close()
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

func (p *linkPeer) send(reqID string, m wire.Message) {
	p.t.Helper()
	if err := p.enc.EncodeID(reqID, m); err != nil {
		p.t.Fatal(err)
	}
}

// command sends a control command.
func (p *linkPeer) command(reqID string, req command.Request) {
	p.t.Helper()
	raw, err := command.Marshal(req)
	if err != nil {
		p.t.Fatal(err)
	}
	p.send(reqID, &wire.Command{Command: raw})
}

// await takes the first message not taken yet that matches match; what
// it reads past stays for the awaits after it.
func await[M wire.Message](p *linkPeer, what, reqID string, match func(M) bool) M {
	p.t.Helper()
	matches := func(r received) (M, bool) {
		m, ok := r.m.(M)
		return m, ok && (reqID == "" || r.reqID == reqID) && (match == nil || match(m))
	}
	for i, r := range p.held {
		if m, ok := matches(r); ok {
			p.held = append(p.held[:i], p.held[i+1:]...)
			return m
		}
	}
	deadline := time.After(waitLimit)
	for {
		select {
		case r, ok := <-p.msgs:
			if !ok {
				p.t.Fatalf("link closed before %s", what)
			}
			if m, ok := matches(r); ok {
				return m
			}
			p.held = append(p.held, r)
		case <-deadline:
			p.t.Fatalf("no %s", what)
		}
	}
}

func TestLinkHandshakeCommandsMirrorAndShutdown(t *testing.T) {
	p := startLink(t, "")
	p.command("0", command.Send{Text: "early"})
	if m := await[*wire.CommandReply](p, "commandReply", "0", nil); m.Outcome != wire.OutcomeNotLive {
		t.Fatalf("command before live: %+v", m)
	}
	p.send("", &wire.Hello{Proto: wire.ProtocolVersion})
	if m := await[*wire.Ready](p, "ready", "", nil); m.Proto != wire.ProtocolVersion || m.Error != nil {
		t.Fatalf("ready %+v", m)
	}
	cwd := t.TempDir()
	spec := wire.Spec{ID: "s1", Engine: "script", Cwd: cwd, Scenario: scenarioFile(t, writeAndRun), Mode: "auto"}
	p.send("1", &wire.LiveEnsure{Spec: spec})
	if m := await[*wire.LiveReady](p, "live.ready", "1", nil); m.Error != nil {
		t.Fatalf("live.ready %+v", m.Error)
	}
	p.command("2", command.Send{Text: "go"})
	if m := await[*wire.CommandReply](p, "commandReply", "2", nil); m.Outcome != wire.OutcomeRan || !m.Reply.OK {
		t.Fatalf("commandReply %+v", m)
	}
	await(p, "turnEnded mirror", "", func(m *wire.Mirror) bool {
		return strings.Contains(string(m.Event), `"type":"turnEnded"`)
	})
	p.mu.Lock()
	for i, seq := range p.mirror {
		if seq != int64(i+1) {
			t.Fatalf("mirrored seqs %v: a gap or repeat", p.mirror)
		}
	}
	p.mu.Unlock()
	p.command("3", command.SetGoal{Goal: "notes exist"})
	if m := await[*wire.CommandReply](p, "commandReply", "3", nil); !m.Reply.OK || !strings.Contains(string(m.Reply.Result), "notes exist") {
		t.Fatalf("setGoal %+v", m.Reply)
	}
	p.send("4", &wire.Command{Command: []byte(`{"cmd":"send","txt":"typo"}`)})
	if m := await[*wire.CommandReply](p, "commandReply", "4", nil); m.Outcome != wire.OutcomeRan || !errors.Is(m.Reply.Err(), wire.ErrBadRequest) {
		t.Fatalf("a malformed command: %+v", m.Reply)
	}
	p.send("5", &wire.Shutdown{})
	await[*wire.Bye](p, "bye", "5", nil)
	if err := <-p.done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	p.done <- nil // for the cleanup
}

func TestLinkRefusesAnotherProtocolVersion(t *testing.T) {
	p := startLink(t, "")
	p.send("", &wire.Hello{Proto: wire.ProtocolVersion + 1})
	m := await[*wire.Ready](p, "ready", "", nil)
	if m.Error == nil || !errors.Is(m.Error, wire.ErrProtocol) {
		t.Fatalf("ready to a mismatched hello: %+v", m)
	}
}

func TestLinkTerminalOwnerAndViewer(t *testing.T) {
	p := startLink(t, "")
	p.send("", &wire.Hello{Proto: wire.ProtocolVersion})
	spec := wire.Spec{ID: "s1", Engine: "script", Cwd: t.TempDir(), Scenario: scenarioFile(t, writeAndRun)}
	p.send("1", &wire.LiveEnsure{Spec: spec})
	await[*wire.LiveReady](p, "live.ready", "1", nil)

	open := func(req, client, role string) *wire.TermOpened {
		p.send(req, &wire.TermOpen{TermID: "t1", ClientID: client, Role: role,
			Command: []string{"/bin/sh", "-c", "read line; echo got:$line; exit 3"}, Cols: 80, Rows: 24})
		return await[*wire.TermOpened](p, "term.opened", req, nil)
	}
	if g := open("o", "owner", "owner"); g.Role != "owner" || g.Error != nil {
		t.Fatalf("owner granted %+v", g)
	}
	if g := open("v", "viewer", "owner"); g.Role != "read-only" {
		t.Fatalf("second owner request granted %+v", g)
	}
	if g := open("x", "", "owner"); g.Error == nil || g.Error.Code != wire.CodeBadRequest {
		t.Fatalf("an open without a client id answered %+v", g)
	}
	p.send("", &wire.TermInput{TermID: "t1", ClientID: "viewer", Data: []byte("sneaky\n")})
	if m := await[*wire.TermError](p, "term.error", "", nil); m.Error.Code != wire.CodeConflict {
		t.Fatalf("viewer input error %+v", m.Error)
	}
	p.send("", &wire.TermInput{TermID: "t1", ClientID: "owner", Data: []byte("hello\n")})
	seen := map[string]string{}
	exits := map[string]int{}
	for len(exits) < 2 {
		m := await(p, "term output", "", func(m wire.TermMessage) bool {
			_, data := m.(*wire.TermData)
			_, exit := m.(*wire.TermExit)
			return data || exit
		})
		switch m := m.(type) {
		case *wire.TermData:
			seen[m.ClientID] += string(m.Data)
		case *wire.TermExit:
			exits[m.ClientID] = *m.ExitCode
		}
	}
	for _, c := range []string{"owner", "viewer"} {
		if !strings.Contains(seen[c], "got:hello") || strings.Contains(seen[c], "sneaky") || exits[c] != 3 {
			t.Fatalf("%s saw %q, exit %d", c, seen[c], exits[c])
		}
	}
}

// TestLinkReportsStateBeforeTheReply: the runner tells the supervisor
// what the session is doing when it becomes live and at every change, and
// the report of a change a command made comes before the command's reply.
func TestLinkReportsStateBeforeTheReply(t *testing.T) {
	p := startLink(t, "")
	p.send("", &wire.Hello{Proto: wire.ProtocolVersion})
	spec := wire.Spec{ID: "s1", Engine: "script", Cwd: t.TempDir(), Scenario: scenarioFile(t, writeAndRun)}
	p.send("1", &wire.LiveEnsure{Spec: spec})
	// upTo returns the state reports that come before the reply reqID.
	upTo := func(reqID string) []wire.StateReport {
		t.Helper()
		var reports []wire.StateReport
		for {
			select {
			case r, ok := <-p.msgs:
				if !ok {
					t.Fatalf("link closed before the reply to %s", reqID)
				}
				if st, isReport := r.m.(*wire.StateReport); isReport {
					reports = append(reports, *st)
				}
				if r.reqID == reqID {
					return reports
				}
			case <-time.After(waitLimit):
				t.Fatalf("no reply to %s", reqID)
			}
		}
	}
	if got := upTo("1"); len(got) == 0 || got[len(got)-1] != (wire.StateReport{State: wire.StateIdle}) {
		t.Fatalf("reports before live.ready: %+v, want the idle session", got)
	}
	p.command("2", command.Send{Text: "go"})
	if got := upTo("2"); len(got) == 0 || !got[len(got)-1].Busy() {
		t.Fatalf("reports before the send's reply: %+v, want a busy session", got)
	}
	// The turn writes a file, whose edit waits for review.
	review := await(p, "a report of the pending edit", "", func(st *wire.StateReport) bool { return st.PendingEdits == 1 })
	if review.State != wire.StateWaitingForReview || review.Turn != 1 || !review.Busy() {
		t.Fatalf("report with the edit pending: %+v", review)
	}
	// What the stop cancelled is reported before its reply; the turn it
	// stopped may still be settling then, and is done soon after.
	p.command("3", command.Stop{})
	got := upTo("3")
	if len(got) == 0 || got[len(got)-1].PendingEdits != 0 || got[len(got)-1].State != wire.StateStopped {
		t.Fatalf("reports before the stop's reply: %+v, want the stopped session with no edit pending", got)
	}
	if got[len(got)-1].Busy() {
		await(p, "a report of the session with nothing under way", "", func(st *wire.StateReport) bool { return !st.Busy() })
	}
}
