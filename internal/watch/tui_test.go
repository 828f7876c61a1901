package watch

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/corral-dev/corral/pkg/event"
)

// tuiModel is the interactive model over a fake supervisor, driven by
// calling Update as the program would.
func tuiModel(t *testing.T, interactive bool) (*model, *fakeSender) {
	t.Helper()
	src := newFakeSource()
	snd := &fakeSender{src: src}
	ctx, cancel := context.WithCancel(context.Background())
	d := newDispatcher(ctx, snd)
	t.Cleanup(func() {
		cancel()
		d.close()
	})
	// The program would read the results; here they are drained.
	go func() {
		for {
			select {
			case <-d.results:
			case <-ctx.Done():
				return
			}
		}
	}()
	m := newModel(ctx, PlainStyle(), config{Options: Options{Session: "s1"}, interactive: interactive}, nil, d)
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	return m, snd
}

// feedItems hands the model events of session s1, as the feed does.
func feedItems(m *model, live bool, evs ...ev) {
	var batch itemsMsg
	for i, e := range evs {
		w := event.Event{Seq: int64(i + 1), TS: time.Now(), Type: event.Type(e.typ)}
		if e.data != "" {
			w.Data = []byte(e.data)
		}
		batch = append(batch, item{session: "s1", event: &w})
	}
	if live {
		batch = append(batch, item{session: "s1", live: true})
	}
	m.Update(batch)
}

func press(m *model, keys ...string) {
	for _, k := range keys {
		switch k {
		case "enter":
			m.Update(tea.KeyMsg{Type: tea.KeyEnter})
		case "esc":
			m.Update(tea.KeyMsg{Type: tea.KeyEsc})
		default:
			m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)})
		}
	}
}

func sentCommands(t *testing.T, snd *fakeSender, n int) []string {
	t.Helper()
	eventually(t, "commands to be sent", func() bool { return len(snd.sent()) >= n })
	var out []string
	for _, r := range snd.sent() {
		c := flat(r.Cmd)
		var fields []string
		for _, f := range []string{string(c.Cmd), c.AskID + c.EditID + "/" + c.HunkID, c.Decision, c.Note, c.Text} {
			if f != "" {
				fields = append(fields, f)
			}
		}
		out = append(out, strings.Join(fields, " "))
	}
	return out
}

func TestTUIPromptsAndSendsDecisionsFromKeys(t *testing.T) {
	m, snd := tuiModel(t, true)
	feedItems(m, true, reviewTurn()...)
	view := m.View()
	for _, want := range []string{"waiting for an answer", "? run `uptime` — not on the allowlist · a1", "y allow · n deny · Y N with a note"} {
		if !strings.Contains(view, want) {
			t.Errorf("view lacks %q:\n%s", want, view)
		}
	}
	press(m, "y")
	feedItems(m, false,
		ev{"askAnswered", `{"askId":"a1","decision":"allow","by":"user"}`},
		ev{"toolStarted", `{"toolId":"t3","tool":"Write","kind":"edit","summary":"Write notes.txt","path":"notes.txt"}`},
		ev{"hunkStaged", threeHunk})
	view = m.View()
	for _, want := range []string{"± review notes.txt · hunk 1 of 3 · e3/h1", "  -a", "  +A", "a accept all · d reject all"} {
		if !strings.Contains(view, want) {
			t.Errorf("view lacks %q:\n%s", want, view)
		}
	}
	press(m, "N")
	if !strings.Contains(m.View(), "note: ") {
		t.Fatalf("N did not ask for a note:\n%s", m.View())
	}
	press(m, "k", "e", "e", "p", " ", "a", "enter")
	press(m, "a")
	got := sentCommands(t, snd, 4)
	want := []string{"answer a1/ allow", "decideHunk e3/h1 reject keep a", "decideHunk e3/h2 accept", "decideHunk e3/h3 accept"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("commands %q, want %q", got, want)
	}
}

func TestTUIDropsANoteWhenThePromptIsAnsweredElsewhere(t *testing.T) {
	m, snd := tuiModel(t, true)
	feedItems(m, true, reviewTurn()...)
	press(m, "Y", "o", "k")
	if !strings.Contains(m.View(), "note: ok") {
		t.Fatalf("view lacks the note being typed:\n%s", m.View())
	}
	feedItems(m, false, ev{"askAnswered", `{"askId":"a1","decision":"deny","by":"user"}`})
	view := m.View()
	if strings.Contains(view, "note:") || strings.Contains(view, "y allow") {
		t.Errorf("the prompt answered elsewhere is still shown:\n%s", view)
	}
	press(m, "enter", "y")
	time.Sleep(20 * time.Millisecond) // room for a wrongly queued command
	if sent := snd.sent(); len(sent) != 0 {
		t.Errorf("sent %+v after the ask was answered elsewhere", sent)
	}
}

func TestTUISteersSendsAndStopsWithConfirmation(t *testing.T) {
	m, snd := tuiModel(t, true)
	feedItems(m, true, reviewTurn()[:3]...)
	press(m, "s", "s", "h", "o", "r", "t", "enter")
	press(m, "m", "t", "e", "s", "t", "s", "enter")
	press(m, "m", "x", "esc") // cancelled
	press(m, "x", "n")        // not confirmed
	press(m, "x")
	if !strings.Contains(m.View(), "stop session s1") {
		t.Errorf("x did not ask for confirmation:\n%s", m.View())
	}
	press(m, "y")
	got := sentCommands(t, snd, 3)
	if want := []string{"steer / short", "send / tests", "stop /"}; !reflect.DeepEqual(got, want) {
		t.Errorf("commands %q, want %q", got, want)
	}
}

func TestTUIWithoutInputIgnoresKeysButQuitsOnCtrlC(t *testing.T) {
	m, snd := tuiModel(t, false)
	feedItems(m, true, reviewTurn()...)
	if v := m.View(); strings.Contains(v, "y allow") || strings.Contains(v, "q quit") {
		t.Errorf("a watch without input shows a prompt or keys:\n%s", v)
	}
	press(m, "y", "x", "y", "q")
	if m.quitting {
		t.Error("q quit a watch that reads no keys")
	}
	m.Update(tea.KeyMsg{Type: tea.KeyCtrlC})
	if !m.quitting || m.View() != "" {
		t.Errorf("ctrl+c did not quit (quitting %v, view %q)", m.quitting, m.View())
	}
	time.Sleep(20 * time.Millisecond)
	if sent := snd.sent(); len(sent) != 0 {
		t.Errorf("sent %+v without input", sent)
	}
}

func TestTUIShowsStreamingTextUntilTheMessageIsComplete(t *testing.T) {
	m, _ := tuiModel(t, true)
	feedItems(m, true, reviewTurn()[:3]...)
	feedItems(m, false, ev{"assistantDelta", `{"text":"Looking "}`}, ev{"assistantDelta", `{"text":"around"}`})
	if !strings.Contains(m.View(), "Looking around") {
		t.Errorf("view lacks the streaming text:\n%s", m.View())
	}
	feedItems(m, false, ev{"assistantText", `{"text":"Looking around."}`})
	if strings.Contains(m.View(), "Looking around") {
		t.Errorf("view still shows streamed text that is now in the transcript:\n%s", m.View())
	}
}
