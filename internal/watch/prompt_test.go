package watch

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// observe feeds the prompter one event of a session.
func observe(p *Prompter, session, typ, data string) []Closed {
	return p.Observe(session, event.Event{Seq: 1, Type: event.Type(typ), Data: json.RawMessage(data)})
}

const (
	askA1     = `{"askId":"a1","toolId":"t1","tool":"Bash","category":"shell","reason":"not on the allowlist","command":"uptime"}`
	askA2     = `{"askId":"a2","toolId":"t2","tool":"Bash","category":"shell","reason":"not on the allowlist","command":"make"}`
	threeHunk = `{"editId":"e3","toolId":"t3","path":"notes.txt","auto":false,"edit":{"path":"notes.txt","kind":"modify","added":3,"removed":3,"hunks":[` +
		`{"id":"h1","header":"@@ -1 +1 @@","oldStart":1,"oldLines":1,"newStart":1,"newLines":1,"added":1,"removed":1,"lines":[{"op":"delete","text":"a","eol":"\n"},{"op":"add","text":"A","eol":"\n"}]},` +
		`{"id":"h2","header":"@@ -9 +9 @@","oldStart":9,"oldLines":1,"newStart":9,"newLines":1,"added":1,"removed":1,"lines":[{"op":"delete","text":"b","eol":"\n"},{"op":"add","text":"B","eol":"\n"}]},` +
		`{"id":"h3","header":"@@ -19 +19 @@","oldStart":19,"oldLines":1,"newStart":19,"newLines":1,"added":1,"removed":1,"lines":[{"op":"delete","text":"c","eol":"\n"},{"op":"add","text":"C","eol":"\n"}]}]}}`
)

func TestAskAnsweredElsewhereDropsThePrompt(t *testing.T) {
	p := NewPrompter()
	p.Live("s1")
	observe(p, "s1", "askOpened", askA1)
	cur := p.Current()
	if cur == nil || !cur.IsAsk() || cur.Ask.AskID != "a1" {
		t.Fatalf("current prompt %+v, want ask a1", cur)
	}
	closed := observe(p, "s1", "askAnswered", `{"askId":"a1","decision":"deny","by":"user"}`)
	if len(closed) != 1 || !closed[0].Elsewhere || closed[0].Prompt != cur {
		t.Fatalf("closed %+v, want ask a1 answered elsewhere", closed)
	}
	if p.Current() != nil {
		t.Errorf("prompt %+v still open after the answer", p.Current())
	}
	if reqs := p.Decide(ChoiceYes, ""); reqs != nil {
		t.Errorf("a decision with nothing open sent %+v", reqs)
	}
}

func TestAskAnsweredHereIsNotElsewhere(t *testing.T) {
	p := NewPrompter()
	p.Live("s1")
	observe(p, "s1", "askOpened", askA1)
	reqs := p.Decide(ChoiceNo, "not now")
	want := []Request{{Session: "s1", Cmd: command.Answer{AskID: "a1", Decision: "deny", Note: "not now"}}}
	if !reflect.DeepEqual(reqs, want) {
		t.Fatalf("requests %+v, want %+v", reqs, want)
	}
	if p.Current() != nil {
		t.Errorf("a sent decision is still current")
	}
	closed := observe(p, "s1", "askAnswered", `{"askId":"a1","decision":"deny","note":"not now","by":"user"}`)
	if len(closed) != 1 || closed[0].Elsewhere {
		t.Errorf("closed %+v, want one closed here", closed)
	}
}

func TestBacklogPromptsWaitUntilTheSessionIsLive(t *testing.T) {
	p := NewPrompter()
	observe(p, "s1", "askOpened", askA1)
	if p.Current() != nil {
		t.Fatal("a prompt showed while the backlog was read")
	}
	// Answered before this shell watched: not "elsewhere".
	if closed := observe(p, "s1", "askAnswered", `{"askId":"a1","decision":"allow","by":"user"}`); len(closed) != 1 || closed[0].Elsewhere {
		t.Errorf("closed %+v, want one not elsewhere", closed)
	}
	observe(p, "s1", "askOpened", askA2)
	p.Live("s1")
	if cur := p.Current(); cur == nil || cur.Ask.AskID != "a2" {
		t.Errorf("current %+v, want the ask still open when the session went live", cur)
	}
}

func TestHunkDecisionsCarryTheirNotes(t *testing.T) {
	p := NewPrompter()
	p.Live("s1")
	observe(p, "s1", "hunkStaged", threeHunk)
	cur := p.Current()
	if cur == nil || cur.Hunk.ID != "h1" || cur.Index != 1 || cur.Count != 3 || cur.Path != "notes.txt" {
		t.Fatalf("current %+v, want hunk h1, 1 of 3, of notes.txt", cur)
	}
	got := p.Decide(ChoiceYes, "")
	got = append(got, p.Decide(ChoiceAllNo, "keep the rest")...)
	hunk := func(id, decision, note string) Request {
		return Request{Session: "s1", Cmd: command.DecideHunk{EditID: "e3", HunkID: id, Decision: decision, Note: note}}
	}
	want := []Request{hunk("h1", "accept", ""), hunk("h2", "reject", "keep the rest"), hunk("h3", "reject", "keep the rest")}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("requests\n%+v\nwant\n%+v", got, want)
	}
	if p.Current() != nil {
		t.Errorf("current %+v after every hunk was decided", p.Current())
	}
	for _, id := range []string{"h1", "h2", "h3"} {
		if closed := observe(p, "s1", "hunkDecided", `{"editId":"e3","hunkId":"`+id+`","decision":"reject","by":"user"}`); len(closed) != 1 || closed[0].Elsewhere {
			t.Errorf("hunkDecided %s closed %+v, want one closed here", id, closed)
		}
	}
}

func TestEachHunkDecisionKey(t *testing.T) {
	tests := []struct {
		name   string
		choice Choice
		note   string
		want   []string // hunk:decision:note
	}{
		{"accept one", ChoiceYes, "", []string{"h1:accept:"}},
		{"reject one with a note", ChoiceNo, "too risky", []string{"h1:reject:too risky"}},
		{"accept all", ChoiceAllYes, "", []string{"h1:accept:", "h2:accept:", "h3:accept:"}},
		{"reject all with a note", ChoiceAllNo, "no", []string{"h1:reject:no", "h2:reject:no", "h3:reject:no"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPrompter()
			p.Live("s1")
			observe(p, "s1", "hunkStaged", threeHunk)
			var got []string
			for _, r := range p.Decide(tt.choice, tt.note) {
				c := flat(r.Cmd)
				got = append(got, c.HunkID+":"+c.Decision+":"+c.Note)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("decisions %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHunkDecidedElsewhereMovesToTheNextHunk(t *testing.T) {
	p := NewPrompter()
	p.Live("s1")
	observe(p, "s1", "hunkStaged", threeHunk)
	closed := observe(p, "s1", "hunkDecided", `{"editId":"e3","hunkId":"h1","decision":"accept","by":"user"}`)
	if len(closed) != 1 || !closed[0].Elsewhere {
		t.Fatalf("closed %+v, want h1 decided elsewhere", closed)
	}
	if cur := p.Current(); cur == nil || cur.Hunk.ID != "h2" {
		t.Fatalf("current %+v, want h2", cur)
	}
	if n := p.Waiting(); n != 1 {
		t.Errorf("waiting %d, want 1 (h3)", n)
	}
	// A stop rejects the rest: closed, but not by a person elsewhere.
	for _, id := range []string{"h2", "h3"} {
		if closed := observe(p, "s1", "hunkDecided", `{"editId":"e3","hunkId":"`+id+`","decision":"reject","by":"stopped"}`); len(closed) != 1 || closed[0].Elsewhere {
			t.Errorf("%s: closed %+v, want one, not elsewhere", id, closed)
		}
	}
}

func TestAcceptAllDoesNotApplyToAnAsk(t *testing.T) {
	p := NewPrompter()
	p.Live("s1")
	observe(p, "s1", "askOpened", askA1)
	if reqs := p.Decide(ChoiceAllYes, ""); reqs != nil {
		t.Errorf("accept-all on an ask sent %+v", reqs)
	}
	if p.Current() == nil {
		t.Error("the ask was dropped by a choice that does not apply")
	}
}

func TestAutoModeEditsAreNotPrompted(t *testing.T) {
	p := NewPrompter()
	p.Live("s1")
	observe(p, "s1", "hunkStaged", strings.Replace(threeHunk, `"auto":false`, `"auto":true`, 1))
	if cur := p.Current(); cur != nil {
		t.Errorf("auto-mode edit prompted %+v", cur)
	}
}

func TestTurnEndClosesWhatItLeftOpen(t *testing.T) {
	p := NewPrompter()
	p.Live("s1")
	p.Live("s2")
	observe(p, "s1", "askOpened", askA1)
	observe(p, "s2", "askOpened", askA2)
	closed := observe(p, "s1", "turnEnded", `{"turn":1,"outcome":"interrupted"}`)
	if len(closed) != 1 || closed[0].Prompt.Session != "s1" || closed[0].Elsewhere {
		t.Errorf("closed %+v, want s1's ask, not elsewhere", closed)
	}
	if cur := p.Current(); cur == nil || cur.Session != "s2" {
		t.Errorf("current %+v, want s2's ask", cur)
	}
}

func TestPromptsOfSeveralSessionsComeInOrder(t *testing.T) {
	p := NewPrompter()
	p.Live("s1")
	p.Live("s2")
	observe(p, "s2", "askOpened", askA2)
	observe(p, "s1", "askOpened", askA1)
	// The same ask id in two sessions are two asks.
	closed := observe(p, "s1", "askAnswered", `{"askId":"a2","decision":"allow","by":"user"}`)
	if len(closed) != 0 {
		t.Errorf("s1's answer closed %+v of another session", closed)
	}
	var order []string
	for p.Current() != nil {
		cur := p.Current()
		order = append(order, cur.Session+"/"+cur.Ask.AskID)
		p.Decide(ChoiceYes, "")
	}
	if want := []string{"s2/a2", "s1/a1"}; !reflect.DeepEqual(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
	p.Forget("s2")
	if len(p.pending) != 1 || p.pending[0].Session != "s1" {
		t.Errorf("after Forget(s2) pending %+v, want s1's ask alone", p.pending)
	}
}

func TestFailedDecisionIsOfferedAgainUnlessSomeoneWonFirst(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		wantAgain bool
		wantText  string
	}{
		{"conflict", wire.Errorf(wire.CodeConflict, "ask a1 was already answered"), false, "already decided elsewhere"},
		{"not found", wire.Errorf(wire.CodeNotFound, "no open ask \"a1\""), false, "already decided elsewhere"},
		{"runner crashed", wire.Errorf(wire.CodeRunnerCrashed, "the runner died"), true, "offered again"},
		{"transport", errors.New("connection refused"), true, "offered again"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPrompter()
			p.Live("s1")
			observe(p, "s1", "askOpened", askA1)
			reqs := p.Decide(ChoiceYes, "")
			text := p.Failed(reqs[0], tt.err)
			if !strings.Contains(text, tt.wantText) || !strings.Contains(text, "ask a1") {
				t.Errorf("message %q, want it to name ask a1 and say %q", text, tt.wantText)
			}
			if again := p.Current() != nil; again != tt.wantAgain {
				t.Errorf("offered again: %v, want %v", again, tt.wantAgain)
			}
		})
	}
}
