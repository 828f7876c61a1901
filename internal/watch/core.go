package watch

import "fmt"

// core is what both ways of watching share: the sessions' states, the
// prompts, and the transcript lines of what the feed delivers.
type core struct {
	style   Style
	multi   bool // several sessions: lines carry their session's short id
	states  map[string]*State
	prompts *Prompter
	// focus is the session that steer, message and stop act on: the only
	// one, or the one whose event came last.
	focus string
}

func newCore(style Style, single string) *core {
	return &core{style: style, multi: single == "", states: make(map[string]*State), prompts: NewPrompter(), focus: single}
}

// state returns a session's state, making it on first sight.
func (c *core) state(session string) *State {
	st, ok := c.states[session]
	if !ok {
		st = NewState(session)
		c.states[session] = st
	}
	return st
}

// apply takes one item of the feed and returns the transcript lines it
// adds.
func (c *core) apply(it item) []string {
	switch {
	case it.event != nil:
		return c.event(it)
	case it.skipped > 0:
		return c.prefix(it.session, []string{c.summary(it.session, it.skipped)})
	case it.live:
		c.prompts.Live(it.session)
	case it.gone:
		c.prompts.Forget(it.session)
		delete(c.states, it.session)
		return c.prefix(it.session, []string{c.style.Warn.Render("● session " + clean(it.session) + " was deleted")})
	case it.notice != "":
		return c.prefix(it.session, []string{c.style.Dim.Render("… " + clean(it.notice))})
	}
	return nil
}

func (c *core) event(it item) []string {
	st := c.state(it.session)
	lines := Render(*it.event, st, c.style)
	closed := c.prompts.Observe(it.session, *it.event)
	if it.hidden {
		return nil
	}
	if c.multi {
		c.focus = it.session
	}
	for _, cl := range closed {
		if cl.Elsewhere {
			lines = append(lines, indent2+c.style.Dim.Render("(answered in another shell first)"))
		}
	}
	return c.prefix(it.session, lines)
}

// summary stands for a session whose logged events were not shown.
func (c *core) summary(session string, skipped int) string {
	st := c.state(session)
	line := c.style.Bold.Render("● session " + clean(session))
	if st.engine != "" {
		line += " · " + clean(st.engine) + " engine"
	}
	if st.mode != "" {
		line += " · " + clean(st.mode) + " mode"
	}
	return line + c.style.Dim.Render(fmt.Sprintf(" · %s not shown (--from 1 shows them)", plural(skipped, "earlier event", "earlier events")))
}

// prefix marks lines with their session when several are watched.
func (c *core) prefix(session string, lines []string) []string {
	if !c.multi || session == "" || len(lines) == 0 {
		return lines
	}
	p := c.style.Dim.Render(clean(shortID(session)) + " │ ")
	for i, l := range lines {
		lines[i] = p + l
	}
	return lines
}

// prefixText is prefix for a line the watcher writes itself.
func (c *core) prefixText(session, text string) string {
	return c.prefix(session, []string{text})[0]
}
