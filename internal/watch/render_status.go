package watch

import (
	"fmt"
	"strings"

	"github.com/corral-dev/corral/pkg/event"
)

func (r *renderer) turnEnded() ([]string, error) {
	var d event.TurnEndedData
	if err := decode(r.ev, &d); err != nil {
		return nil, err
	}
	st := r.st
	st.turnRunning, st.toolSummary, st.turnMessage = false, "", ""
	st.streaming.Reset()
	clear(st.tools)
	clear(st.edits)
	st.undecided, st.openAsks = 0, 0
	st.lastUserMessage = ""

	var parts []string
	if d.Files > 0 {
		parts = append(parts, plural(d.Files, "file", "files"), lineCounts(d.Added, d.Removed))
	}
	parts = append(parts, cost(d.Usage.CostUSD), tokens(d.Usage.InputTokens+d.Usage.OutputTokens)+" tokens")
	if st.context.WindowTokens > 0 {
		parts = append(parts, fmt.Sprintf("context %.0f%%", st.context.Percent))
	}
	parts = append(parts, duration(d.DurationMS))
	facts := strings.Join(parts, " · ")
	switch d.Outcome {
	case "done", "":
		return []string{indent1 + r.s.Dim.Render(facts)}, nil
	case "failed":
		return []string{indent1 + r.s.Fail.Render("✗ turn failed") + r.s.Dim.Render(" · "+facts)}, nil
	case "interrupted":
		return []string{indent1 + r.s.Warn.Render("■ turn interrupted (its runner stopped)") + r.s.Dim.Render(" · "+facts)}, nil
	}
	return []string{indent1 + r.s.Warn.Render("■ turn "+clean(d.Outcome)) + r.s.Dim.Render(" · "+facts)}, nil
}

func (r *renderer) stopped() ([]string, error) {
	var d event.StoppedData
	if err := decode(r.ev, &d); err != nil {
		return nil, err
	}
	head := "■ stopped"
	switch d.Reason {
	case "user":
		head = "■ stopped by a person"
	case "spendCap":
		head = "■ stopped: the spend cap was reached"
	case "shutdown":
		head = "■ stopped: the supervisor shut down"
	case "":
	default:
		head = "■ stopped: " + clean(d.Reason)
	}
	var what []string
	if d.InterruptedTurn {
		what = append(what, "turn interrupted")
	}
	if d.DeniedAsks > 0 {
		what = append(what, plural(d.DeniedAsks, "ask", "asks")+" denied")
	}
	if d.RejectedHunks > 0 {
		what = append(what, plural(d.RejectedHunks, "hunk", "hunks")+" rejected")
	}
	if d.ClearedQueue > 0 {
		what = append(what, plural(d.ClearedQueue, "queued message", "queued messages")+" cleared")
	}
	line := r.s.Warn.Render(head)
	if len(what) > 0 {
		line += r.s.Dim.Render(" · " + strings.Join(what, " · "))
	}
	return []string{line}, nil
}

func (r *renderer) failure() ([]string, error) {
	var d event.FailureData
	if err := decode(r.ev, &d); err != nil {
		return nil, err
	}
	head := "✗ " + clean(string(d.Code))
	if m := textLines(d.Message); len(m) > 0 {
		head += ": " + m[0]
	}
	out := []string{r.s.Fail.Render(head)}
	if a := firstLine(d.Action); a != "" {
		out = append(out, indent1+r.s.Bold.Render("→ "+a))
	}
	for _, l := range d.Stderr {
		out = append(out, indent1+r.s.Dim.Render("│ "+clean(l)))
	}
	return out, nil
}

// logRepaired says that damaged lines of the log were moved aside, and
// where to find them.
func (r *renderer) logRepaired() ([]string, error) {
	var d event.LogRepairedData
	if err := decode(r.ev, &d); err != nil {
		return nil, err
	}
	ranges := "1 damaged range"
	if d.RangeCount != 1 {
		ranges = fmt.Sprintf("%d damaged ranges", d.RangeCount)
	}
	head := fmt.Sprintf("! event log repaired: %s (%s) moved to %s", ranges, byteCount(d.Bytes), clean(d.File))
	out := []string{r.s.Fail.Render(head)}
	for _, rg := range d.Ranges[:min(len(d.Ranges), 3)] {
		out = append(out, indent1+r.s.Dim.Render(fmt.Sprintf("│ %s at byte %d, %s", clean(rg.Reason), rg.Offset, byteCount(rg.Length))))
	}
	if more := d.RangeCount - min(len(d.Ranges), 3); more > 0 {
		out = append(out, indent1+r.s.Dim.Render(fmt.Sprintf("│ and %d more", more)))
	}
	return out, nil
}

func byteCount(n int64) string {
	if n == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}

func (r *renderer) usage() ([]string, error) {
	var d event.UsageData
	if err := decode(r.ev, &d); err != nil {
		return nil, err
	}
	r.st.spent += d.CostUSD
	return nil, nil
}

func (r *renderer) retry() ([]string, error) {
	var d event.RetryData
	if err := decode(r.ev, &d); err != nil {
		return nil, err
	}
	attempt := fmt.Sprintf("retry %d", d.Attempt)
	if d.MaxRetries > 0 {
		attempt += fmt.Sprintf("/%d", d.MaxRetries)
	}
	line := indent1 + r.s.Warn.Render("↻ "+attempt+" in "+duration(d.DelayMS))
	if e := firstLine(d.Error); e != "" {
		line += r.s.Dim.Render(" · " + e)
	}
	return []string{line}, nil
}

// sessionChange renders the events that change a session's settings.
func (r *renderer) sessionChange() ([]string, error) {
	var d struct {
		Mode          string   `json:"mode"`
		SpendCapUSD   *float64 `json:"spendCapUsd"`
		From          string   `json:"from"`
		To            string   `json:"to"`
		Reason        string   `json:"reason"`
		BeforePercent float64  `json:"beforePercent"`
		Title         string   `json:"title"`
	}
	if err := decode(r.ev, &d); err != nil {
		return nil, err
	}
	var what string
	switch r.ev.Type {
	case event.ModeChanged:
		r.st.mode = d.Mode
		what = "mode: " + clean(d.Mode)
	case event.SpendCapSet:
		switch {
		case d.SpendCapUSD == nil || *d.SpendCapUSD <= 0:
			what = "spend cap removed"
		default:
			what = "spend cap: " + cost(*d.SpendCapUSD)
		}
	case event.Rotated:
		verb := "continues"
		if d.Reason == "fork" {
			verb = "forked: the conversation continues"
		}
		what = verb + " as session " + clean(d.To)
	case event.Renamed:
		what = "renamed: " + clean(d.Title)
	case event.Compacted:
		what = "context compacted"
		if d.BeforePercent > 0 {
			what += fmt.Sprintf(" (it was %.0f%% full)", d.BeforePercent)
		}
		r.st.context = event.ContextData{}
	}
	return []string{r.s.Dim.Render("● " + what)}, nil
}

func (r *renderer) goal() ([]string, error) {
	switch r.ev.Type {
	case event.GoalCleared:
		return []string{r.s.Goal.Render("◎ goal cleared")}, nil
	case event.GoalSet:
		var d event.GoalSetData
		if err := decode(r.ev, &d); err != nil {
			return nil, err
		}
		line := r.s.Goal.Render("◎ goal  " + firstLine(d.Goal))
		if len(d.Clauses) > 0 {
			line += r.s.Dim.Render(" · " + plural(len(d.Clauses), "clause", "clauses"))
		}
		return []string{line}, nil
	}
	var d event.GoalCheckData
	if err := decode(r.ev, &d); err != nil {
		return nil, err
	}
	if d.By == "user" {
		return []string{indent1 + r.s.Goal.Render("◎ goal marked done by a person")}, nil
	}
	summary := clean(d.Summary)
	if summary == "" {
		verdict := "unmet"
		if d.Holds {
			verdict = "holds"
		}
		summary = fmt.Sprintf("%s · %d/%d", verdict, d.Met, d.Total)
	}
	head := indent1 + r.s.Goal.Render("◎ goal check · "+summary)
	if d.LimitReached {
		head += r.s.Warn.Render(fmt.Sprintf(" · no more checks: %d in a row found it unmet", d.Limit))
	}
	out := []string{head}
	// A goal that holds needs no detail; an unmet one says what is missing.
	for _, c := range d.Clauses {
		if c.Met {
			continue
		}
		line := indent2 + r.s.Fail.Render("✗ "+firstLine(c.Clause))
		if e := firstLine(c.Evidence); e != "" {
			line += r.s.Dim.Render(" — " + e)
		}
		out = append(out, line)
	}
	return out, nil
}
