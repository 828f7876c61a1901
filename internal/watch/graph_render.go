package watch

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/corral-dev/corral/internal/graph"
)

// GraphTab is a tab of the graph view.
type GraphTab int

// The graph view's tabs.
const (
	FlowTab  GraphTab = iota // the stage rail, now/next/blocked, subgoals, gates
	NodesTab                 // to do, doing, done
)

func (t GraphTab) String() string {
	if t == NodesTab {
		return "Nodes"
	}
	return "Flow"
}

// RenderGraph renders a graph run's status as one tab of the graph view.
// It is a pure function of the status, so the view is golden-tested.
func RenderGraph(st *graph.RunStatus, tab GraphTab, s Style) string {
	var b strings.Builder
	head := fmt.Sprintf("● graph run %s · %s", st.ID, runState(st.State, s))
	b.WriteString(head + "\n")
	if req := brief(st.Request, 100); req != "" {
		b.WriteString(s.Dim.Render("  "+req) + "\n")
	}
	tabs := []string{}
	for _, t := range []GraphTab{FlowTab, NodesTab} {
		name := fmt.Sprintf("%d %s", int(t)+1, t)
		if t == tab {
			name = s.Bold.Render("[" + name + "]")
		} else {
			name = s.Dim.Render(" " + name + " ")
		}
		tabs = append(tabs, name)
	}
	b.WriteString(strings.Join(tabs, " ") + "\n\n")
	if tab == NodesTab {
		renderNodes(&b, st, s)
	} else {
		renderFlow(&b, st, s)
	}
	return b.String()
}

func runState(rs graph.RunState, s Style) string {
	switch rs {
	case graph.RunComplete:
		return s.OK.Render("complete")
	case graph.RunBlocked:
		return s.Fail.Render("blocked")
	}
	return s.Warn.Render("open")
}

// mark is a node state's one-character sign.
func mark(state graph.NodeState, s Style) string {
	switch state {
	case graph.StatePassed:
		return s.OK.Render("✓")
	case graph.StateRunning:
		return s.Warn.Render("●")
	case graph.StateRejected, graph.StateFailed:
		return s.Fail.Render("✗")
	case graph.StateUnreachable:
		return s.Fail.Render("⊘")
	case graph.StateSkipped:
		return s.Dim.Render("–")
	}
	return s.Dim.Render("·")
}

func renderFlow(b *strings.Builder, st *graph.RunStatus, s Style) {
	// The stage rail: each stage's live nodes, done of total.
	var rail []string
	for _, c := range st.Stages {
		if c.Total == 0 {
			rail = append(rail, s.Dim.Render(string(c.Stage)))
			continue
		}
		sign := s.Dim.Render("·")
		switch {
		case c.Running > 0:
			sign = s.Warn.Render("●")
		case c.Bad > 0:
			sign = s.Fail.Render("✗")
		case c.Done == c.Total:
			sign = s.OK.Render("✓")
		}
		label := string(c.Stage)
		if c.Total > 1 {
			label += fmt.Sprintf(" %d/%d", c.Done, c.Total)
		}
		rail = append(rail, label+" "+sign)
	}
	b.WriteString(strings.Join(rail, s.Dim.Render(" → ")) + "\n\n")

	// Now / Next / Blocked.
	var now []string
	for _, r := range st.Now {
		who := clean(r.Engine)
		if r.Model != "" {
			who += "/" + clean(r.Model)
		}
		now = append(now, fmt.Sprintf("%s (%s, %s)", r.Node, who, duration(r.ElapsedMS)))
	}
	var blocked []string
	for _, bl := range st.Blocked {
		what := bl.Node + " " + string(bl.State)
		if bl.Retry != nil {
			if *bl.Retry == "" {
				what += " — retry the spec"
			} else {
				what += " — retry " + *bl.Retry
			}
		}
		blocked = append(blocked, what)
	}
	fmt.Fprintf(b, "%s %s  %s %s  %s %s\n\n",
		s.Bold.Render("Now"), orDash(now, s),
		s.Bold.Render("Next"), orDash(st.Next, s),
		s.Bold.Render("Blocked"), orDash(blocked, s))

	// One row per subgoal: impl → test → gate.
	if len(st.Subgoals) > 0 {
		idw, titlew := 2, 5
		for _, sg := range st.Subgoals {
			idw = max(idw, len([]rune(sg.ID)))
			titlew = max(titlew, utf8.RuneCountInString(brief(sg.Title, 32)))
		}
		for _, sg := range st.Subgoals {
			row := pad(sg.ID, idw) + "  " + pad(brief(sg.Title, 32), titlew) + "  "
			row += cell("impl", sg.Implement, s) + s.Dim.Render(" → ") + cell("test", sg.Test, s) + s.Dim.Render(" → ") + cell("gate", sg.Gate, s)
			if sg.Attempt > 1 {
				row += s.Dim.Render(fmt.Sprintf("  attempt %d/%d", sg.Attempt, sg.Budget))
			}
			b.WriteString(row + "\n")
		}
		b.WriteString("\n")
		// The gates bar: one cell per subgoal's gate, then the goal gate.
		var bar strings.Builder
		accepted := 0
		for _, sg := range st.Subgoals {
			switch {
			case sg.Gate == nil:
				bar.WriteString(s.Dim.Render("▯"))
			case sg.Gate.State == graph.StatePassed:
				bar.WriteString(s.OK.Render("▮"))
				accepted++
			case sg.Gate.State == graph.StateRejected || sg.Gate.State == graph.StateFailed || sg.Gate.State == graph.StateUnreachable:
				bar.WriteString(s.Fail.Render("▮"))
			case sg.Gate.State == graph.StateRunning:
				bar.WriteString(s.Warn.Render("▮"))
			default:
				bar.WriteString(s.Dim.Render("▯"))
			}
		}
		goal := "·"
		for _, n := range st.Nodes {
			if n.Stage == graph.StageGoalGate && n.Live {
				goal = mark(n.State, s)
				if n.Verdict.Verdict != "" {
					goal += " " + n.Verdict.Verdict
				}
			}
		}
		fmt.Fprintf(b, "%s %s %d/%d accepted · goal %s\n", s.Bold.Render("gates"), bar.String(), accepted, len(st.Subgoals), goal)
	}
	if st.Last != nil {
		fmt.Fprintf(b, "%s %s %s %s\n", s.Dim.Render("last:"), mark(st.Last.State, s), st.Last.NodeID, s.Dim.Render(verdictText(*st.Last)))
	}
	if o := st.Outcome; o != nil {
		fmt.Fprintf(b, "%s shipped %s", s.Bold.Render("outcome"), orDash(o.Shipped, s))
		for _, m := range o.NotShipped {
			fmt.Fprintf(b, " · %s %s", s.Fail.Render("not shipped"), m.Subgoal)
		}
		if o.Reason != "" {
			fmt.Fprintf(b, " · %s", o.Reason)
		}
		b.WriteString("\n")
	}
}

func cell(label string, n *graph.NodeRef, s Style) string {
	if n == nil {
		return s.Dim.Render(label + " ·")
	}
	out := label + " " + mark(n.State, s)
	if n.Verdict == graph.VerdictReject || n.Verdict == graph.VerdictAccept {
		out += " " + n.Verdict
	}
	return out
}

func renderNodes(b *strings.Builder, st *graph.RunStatus, s Style) {
	var todo, doing, done []graph.NodeRow
	ready := map[string]bool{}
	for _, id := range st.Next {
		ready[id] = true
	}
	for _, n := range st.Nodes {
		switch n.State {
		case graph.StatePending:
			todo = append(todo, n)
		case graph.StateRunning:
			doing = append(doing, n)
		default:
			done = append(done, n)
		}
	}
	section := func(title string, rows []graph.NodeRow, line func(graph.NodeRow) string) {
		fmt.Fprintf(b, "%s (%d)\n", s.Bold.Render(title), len(rows))
		for _, n := range rows {
			b.WriteString("  " + line(n) + "\n")
		}
		b.WriteString("\n")
	}
	section("To do", todo, func(n graph.NodeRow) string {
		if ready[n.NodeID] {
			return s.Accent.Render("▸ ") + n.NodeID + s.Dim.Render(" ready")
		}
		waits := append(append([]string{}, n.Deps...), n.After...)
		return s.Dim.Render("· ") + n.NodeID + s.Dim.Render(" waits for "+strings.Join(waits, ", "))
	})
	section("Doing", doing, func(n graph.NodeRow) string {
		who := clean(n.Engine)
		if n.Model != "" {
			who += "/" + clean(n.Model)
		}
		line := mark(n.State, s) + " " + n.NodeID + " " + s.Dim.Render(who)
		if n.Route != nil {
			line += s.Dim.Render(" · " + brief(n.Route.Reason, 160))
		}
		return line
	})
	section("Done", done, func(n graph.NodeRow) string {
		line := mark(n.State, s) + " " + n.NodeID + " " + s.Dim.Render(verdictText(n.Verdict))
		if !n.Live {
			line += s.Dim.Render(" (retired)")
		}
		return line
	})
}

// verdictText is a verdict's state, verdict, engine and reason in a line.
func verdictText(v graph.Verdict) string {
	parts := []string{string(v.State)}
	if v.Verdict != "" && v.Verdict != string(v.State) {
		parts = append(parts, v.Verdict)
	}
	if v.Engine != "" {
		parts = append(parts, clean(v.Engine))
	}
	if v.Reason != "" {
		parts = append(parts, brief(v.Reason, 80))
	}
	return strings.Join(parts, " · ")
}

// pad fills s with spaces to w runes.
func pad(s string, w int) string {
	return s + strings.Repeat(" ", max(w-utf8.RuneCountInString(s), 0))
}

func orDash(xs []string, s Style) string {
	if len(xs) == 0 {
		return s.Dim.Render("—")
	}
	return strings.Join(xs, ", ")
}
