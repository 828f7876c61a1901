package watch

import (
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// View draws the live part under the transcript: each session's streaming
// line and spinner, the open prompt, and the keys or the text being typed.
func (m *model) View() string {
	if m.quitting {
		return ""
	}
	var out []string
	for _, id := range m.sessionsByID() {
		st := m.core.states[id]
		if text := lastLine(st.Streaming()); text != "" {
			out = append(out, m.core.prefixText(id, m.tail(text)))
		}
		if label, since, ok := st.Activity(); ok {
			line := m.spin.View() + clean(label) + m.style.Dim.Render(" · "+elapsed(m.now.Sub(since)))
			if spent := st.Spent(); spent > 0 {
				line += m.style.Dim.Render(" · " + cost(spent))
			}
			out = append(out, m.core.prefixText(id, line))
		}
	}
	if cur := m.core.prompts.Current(); cur != nil && m.interactive {
		out = append(out, m.promptView(cur)...)
	}
	switch {
	case !m.interactive:
	case m.mode == modeConfirmStop:
		out = append(out, m.style.Warn.Render(fmt.Sprintf("stop session %s: interrupt the turn, deny asks, reject hunks, clear the queue? y stops, any other key does not", clean(m.core.target()))))
	case m.mode != modeKeys:
		out = append(out, m.input.View())
	case m.showHelp:
		out = append(out, strings.Split(m.style.Dim.Render(keysHelp), "\n")...)
	default:
		out = append(out, m.style.Dim.Render(m.keysLine()))
	}
	return strings.Join(out, "\n")
}

func (m *model) keysLine() string {
	line := "s steer · m message · x stop · q quit · ? keys"
	if m.core.multi {
		if t := m.core.target(); t != "" {
			line += " · acting on " + clean(shortID(t))
		}
	}
	return line
}

// promptView shows the open decision in place.
func (m *model) promptView(p *Prompt) []string {
	s := m.style
	more := ""
	if n := m.core.prompts.Waiting(); n > 0 {
		more = s.Dim.Render(fmt.Sprintf(" · %d more waiting", n))
	}
	if p.IsAsk() {
		head := s.Ask.Render("? "+askWhat(*p.Ask)) + " — " + firstLine(p.Ask.Reason) + s.Dim.Render(" · "+clean(p.Ask.AskID))
		keys := s.Accent.Render("y") + " allow · " + s.Accent.Render("n") + " deny · " + s.Accent.Render("Y N") + " with a note"
		return []string{m.core.prefixText(p.Session, head), indent1 + keys + more}
	}
	head := s.Ask.Render("± review "+clean(p.Path)) + s.Dim.Render(fmt.Sprintf(" · hunk %d of %d · %s/%s", p.Index, p.Count, clean(p.EditID), clean(p.Hunk.ID)))
	out := []string{m.core.prefixText(p.Session, head)}
	diff := DiffLines(p.Hunk, s, indent1)
	if room := max(m.height-6, 4); m.height > 0 && len(diff) > room {
		cut := len(diff) - room + 1
		diff = append(diff[:room-1], indent1+s.Dim.Render(fmt.Sprintf("… %d more lines: the whole hunk is in the transcript above", cut)))
	}
	out = append(out, diff...)
	keys := s.Accent.Render("y") + " accept · " + s.Accent.Render("n") + " reject · " + s.Accent.Render("a") + " accept all · " +
		s.Accent.Render("d") + " reject all · " + s.Accent.Render("Y N A D") + " with a note"
	return append(out, indent1+keys+more)
}

// tail fits streaming text on one line, keeping its end.
func (m *model) tail(text string) string {
	w := m.width - 8
	if w <= 10 {
		return text
	}
	if over := ansi.StringWidth(text) - w; over > 0 {
		return ansi.TruncateLeft(text, over+1, "…")
	}
	return text
}

// sessionsByID lists the watched sessions in a stable order.
func (m *model) sessionsByID() []string {
	ids := make([]string, 0, len(m.core.states))
	for id := range m.core.states {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// lastLine is the last line of streamed text, safe to print.
func lastLine(s string) string {
	s = strings.TrimRight(s, "\r\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return clean(s)
}

// keysHelp is the key list the ? key shows.
const keysHelp = `y/n allow or deny the ask, accept or reject the hunk · a/d accept or reject the rest of the edit
Y N A D: the same with a note · s steer · m message · x stop · q quit · ? hide`
