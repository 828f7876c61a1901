package watch

import (
	"fmt"
	"strings"

	"github.com/corral-dev/corral/pkg/event"
)

func (r *renderer) toolStarted() ([]string, error) {
	var d event.ToolStartedData
	if err := decode(r.ev, &d); err != nil {
		return nil, err
	}
	st := r.st
	st.tools[d.ToolID] = d
	st.toolSummary, st.toolStart = toolSummary(d), r.ev.TS
	st.streaming.Reset()
	st.lastUserMessage = ""
	return []string{indent1 + r.s.Tool.Render("▸ "+toolSummary(d))}, nil
}

// toolSummary is the one line that names a tool call.
func toolSummary(d event.ToolStartedData) string {
	for _, s := range []string{d.Summary, d.Command, d.Path, d.URL, d.Tool} {
		if l := firstLine(s); l != "" {
			return l
		}
	}
	return "tool call"
}

func (r *renderer) toolFinished() ([]string, error) {
	var d event.ToolFinishedData
	if err := decode(r.ev, &d); err != nil {
		return nil, err
	}
	st := r.st
	started, known := st.tools[d.ToolID]
	delete(st.tools, d.ToolID)
	st.toolSummary = ""
	name := clean(d.Tool)
	if name == "" && known {
		name = clean(started.Tool)
	}
	took := duration(d.DurationMS)
	var out []string
	switch d.Outcome {
	case "ok":
		what := name + " succeeded"
		if d.ExitCode != nil {
			what = fmt.Sprintf("exit %d", *d.ExitCode)
		}
		out = append(out, indent2+r.s.OK.Render("✓ "+what)+r.s.Dim.Render(" · "+took))
	case "error":
		what := name + " failed"
		if d.ExitCode != nil {
			what = fmt.Sprintf("exit %d", *d.ExitCode)
		}
		line := indent2 + r.s.Fail.Render("✗ "+what) + r.s.Dim.Render(" · "+took)
		if m := firstLine(d.Message); m != "" {
			line += r.s.Fail.Render(" · " + m)
		}
		out = append(out, line)
		out = append(out, r.outputTail(d.Output, 3)...)
	case "denied":
		out = append(out, indent2+r.s.Fail.Render("✗ denied")+r.detail(d.Message))
	case "partial":
		out = append(out, indent2+r.s.Warn.Render("◐ partly applied")+r.detail(d.Message))
	case "stopped":
		out = append(out, indent2+r.s.Warn.Render("■ stopped")+r.s.Dim.Render(" · "+took))
	default:
		out = append(out, indent2+clean(d.Outcome)+r.s.Dim.Render(" · "+took)+r.detail(d.Message))
	}
	return out, nil
}

// detail is " · the gist of msg", dimmed, or nothing.
func (r *renderer) detail(msg string) string {
	if m := brief(msg, 100); m != "" {
		return r.s.Dim.Render(" · " + m)
	}
	return ""
}

// outputTail shows the last n non-blank lines of a failed command's output.
func (r *renderer) outputTail(output string, n int) []string {
	lines := textLines(output)
	var kept []string
	for i := len(lines) - 1; i >= 0 && len(kept) < n; i-- {
		if strings.TrimSpace(lines[i]) != "" {
			kept = append([]string{lines[i]}, kept...)
		}
	}
	out := make([]string, len(kept))
	for i, l := range kept {
		out[i] = indent3 + r.s.Dim.Render("│ "+l)
	}
	return out
}
