package watch

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/hunks"
)

// askPart is one simple command of a compound shell command in askOpened.
type askPart struct {
	Command  string `json:"command"`
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
}

func (r *renderer) askOpened() ([]string, error) {
	var d event.AskOpenedData
	if err := decode(r.ev, &d); err != nil {
		return nil, err
	}
	r.st.startWaiting(r.ev.TS)
	r.st.openAsks++
	line := indent1 + r.s.Ask.Render("? asks to "+askWhat(d))
	if reason := firstLine(d.Reason); reason != "" {
		line += " — " + reason
	}
	line += r.s.Dim.Render(" · " + clean(d.AskID))
	out := []string{line}
	var parts []askPart
	if len(d.Parts) > 0 && json.Unmarshal(d.Parts, &parts) == nil && len(parts) > 1 {
		// A compound command: name the parts that are not simply allowed.
		for _, p := range parts {
			if p.Decision == "allow" {
				continue
			}
			l := indent3 + r.s.Dim.Render(fmt.Sprintf("· `%s` %s", firstLine(p.Command), clean(p.Decision)))
			if reason := firstLine(p.Reason); reason != "" {
				l += r.s.Dim.Render(" — " + reason)
			}
			out = append(out, l)
		}
	}
	return out, nil
}

// askWhat is what an ask asks to do: "run `ls`", "edit `a.go`".
func askWhat(d event.AskOpenedData) string {
	switch {
	case d.Command != "":
		return "run `" + firstLine(d.Command) + "`"
	case d.URL != "":
		return "fetch " + firstLine(d.URL)
	case d.Path != "" && d.Category == "read":
		return "read `" + firstLine(d.Path) + "`"
	case d.Path != "":
		return "edit `" + firstLine(d.Path) + "`"
	case d.Tool != "":
		return "use " + firstLine(d.Tool)
	}
	return "go ahead"
}

func (r *renderer) askAnswered() ([]string, error) {
	var d event.AskAnsweredData
	if err := decode(r.ev, &d); err != nil {
		return nil, err
	}
	if r.st.openAsks > 0 {
		r.st.openAsks--
	}
	word, style := "denied", r.s.Fail
	if d.Decision == command.DecisionAllow {
		word, style = "allowed", r.s.OK
	}
	return []string{indent2 + style.Render(word) + r.note(d.Note) + r.by(d.By)}, nil
}

// note is " — note" when a person left one.
func (r *renderer) note(note string) string {
	if n := firstLine(note); n != "" {
		return " — " + n
	}
	return ""
}

// by says who decided, when it was not a person.
func (r *renderer) by(by string) string {
	switch by {
	case "user", "":
		return ""
	case "stopped":
		return r.s.Dim.Render(" · by a stop")
	case "shutdown":
		return r.s.Dim.Render(" · at shutdown")
	case "cancelled":
		return r.s.Dim.Render(" · the engine withdrew the call")
	case "expired":
		return r.s.Dim.Render(" · its runner died")
	}
	return r.s.Dim.Render(" · by " + clean(by))
}

func (r *renderer) hunkStaged() ([]string, error) {
	var d event.HunkStagedData
	if err := decode(r.ev, &d); err != nil {
		return nil, err
	}
	st := r.st
	se := &stagedEdit{path: d.Path, edit: d.Edit, auto: d.Auto, decided: make(map[string]bool)}
	st.edits[d.EditID] = se
	path := d.Path
	var facts []string
	if d.Edit != nil {
		if path == "" {
			path = d.Edit.Path
		}
		if d.Edit.Binary {
			facts = append(facts, "binary")
		} else {
			facts = append(facts, r.s.Add.Render(fmt.Sprintf("+%d", d.Edit.Added))+" "+r.s.Del.Render(fmt.Sprintf("−%d", d.Edit.Removed)))
		}
		switch d.Edit.Kind {
		case hunks.KindCreate:
			facts = append(facts, "new file")
		case hunks.KindDelete:
			facts = append(facts, "deleted")
		}
		if !d.Auto {
			st.startWaiting(r.ev.TS)
			st.undecided += len(d.Edit.Hunks)
		}
	}
	status := r.s.Ask.Render("awaiting review")
	if d.Auto {
		status = r.s.Dim.Render("accepted (auto mode)")
	}
	head := indent1 + r.s.Tool.Render("± "+clean(path))
	if len(facts) > 0 {
		head += " " + strings.Join(facts, " · ")
	}
	head += " · " + status + r.s.Dim.Render(" · "+clean(d.EditID))
	out := []string{head}
	if d.Edit != nil {
		for _, h := range d.Edit.Hunks {
			out = append(out, DiffLines(h, r.s, indent2)...)
		}
	}
	return out, nil
}

// DiffLines renders one hunk as a coloured diff: its header and id, then
// each line with git's + / - / space marker, each line after indent.
func DiffLines(h hunks.Hunk, style Style, indent string) []string {
	out := make([]string, 0, len(h.Lines)+2)
	out = append(out, indent+style.Hunk.Render(clean(h.Header))+" "+style.Bold.Render(clean(h.ID)))
	for _, l := range h.Lines {
		text := clean(l.Text)
		var line string
		switch l.Op {
		case hunks.OpAdd:
			line = style.Add.Render("+" + text)
		case hunks.OpDelete:
			line = style.Del.Render("-" + text)
		default:
			line = style.Dim.Render(" " + text)
		}
		if l.EOL == "\r\n" {
			// Otherwise a change of line ending alone looks like no change.
			line += style.Dim.Render("␍")
		}
		out = append(out, indent+line)
		if l.EOL == "" {
			out = append(out, indent+style.Dim.Render(`\ No newline at end of file`))
		}
	}
	return out
}

func (r *renderer) hunkDecided() ([]string, error) {
	var d event.HunkDecidedData
	if err := decode(r.ev, &d); err != nil {
		return nil, err
	}
	st := r.st
	name := clean(d.HunkID)
	if se, ok := st.edits[d.EditID]; ok {
		if !se.auto && !se.decided[d.HunkID] && st.undecided > 0 {
			st.undecided--
		}
		se.decided[d.HunkID] = true
		if len(st.edits) > 1 {
			name = clean(se.path) + " " + name
		}
	}
	word, style := "rejected", r.s.Fail
	if d.Decision == command.DecisionAccept {
		word, style = "accepted", r.s.OK
	}
	return []string{indent2 + style.Render(name+" "+word) + r.note(d.Note) + r.by(d.By)}, nil
}

func (r *renderer) editApplied() ([]string, error) {
	var d event.EditAppliedData
	if err := decode(r.ev, &d); err != nil {
		return nil, err
	}
	path := clean(d.Path)
	ids := clean(strings.Join(d.Hunks, " "))
	switch {
	case d.Conflict != "":
		return []string{indent2 + r.s.Fail.Render("✗ "+path+" not written: "+firstLine(d.Conflict))}, nil
	case d.Reverted:
		return []string{indent2 + r.s.Warn.Render("↺ "+ids+" taken back out of "+path)}, nil
	}
	what := "wrote " + path
	if ids != "" {
		what += " · " + ids
	}
	return []string{indent2 + r.s.Dim.Render("✎ "+what+" · "+lineCounts(d.Added, d.Removed))}, nil
}
