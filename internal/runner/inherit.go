package runner

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// maxBriefMessages bounds how many of the parent's messages a handoff
// quotes.
const maxBriefMessages = 10

// inherit starts a session that names a parent with a handoff turn: a brief
// of the parent session (its goal, what was asked, what was answered, which
// files changed). Only a session's first start inherits, and only when its
// conversation is not a fork of the parent's (inherit_fork.go).
func (r *Runner) inherit() error {
	parent := r.Spec().Parent
	turnNo, _ := r.turns.snapshot()
	if parent == "" || turnNo != 0 || hasInherited(r.store.eventsPath()) {
		return nil
	}
	brief, err := Brief(filepath.Join(filepath.Dir(r.Dir()), parent))
	if err != nil {
		return err
	}
	r.enqueueOwn(brief, kindInherit, false)
	return nil
}

// hasInherited reports whether the log at path holds a handoff message, or
// says the session's conversation is a fork of the parent's.
func hasInherited(path string) bool {
	found := false
	eventlog.ReadFile(path, func(ev event.Event) error {
		if ev.Type == event.UserMessage && strings.Contains(string(ev.Data), `"kind":"inherit"`) ||
			ev.Type == event.SessionStarted && strings.Contains(string(ev.Data), `"forkedFrom":`) {
			found = true
			return eventlog.ErrStop
		}
		return nil
	})
	return found
}

// Brief summarises a session folder's log as a handoff message.
func Brief(dir string) (string, error) {
	spec, ok, err := ReadSpec(dir)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", wire.Errorf(wire.CodeNotFound, "no parent session at %s", dir)
	}
	var asked, answers []string
	files := map[string]bool{}
	err = eventlog.ReadFile(filepath.Join(dir, EventsFile), func(ev event.Event) error {
		switch ev.Type {
		case event.UserMessage:
			var d event.UserMessageData
			if json.Unmarshal(ev.Data, &d) == nil && d.Kind == kindSend {
				asked = append(asked, d.Text)
			}
		case event.AssistantText:
			var d event.TextData
			if json.Unmarshal(ev.Data, &d) == nil {
				answers = append(answers, d.Text)
			}
		case event.EditApplied:
			var d event.EditAppliedData
			if json.Unmarshal(ev.Data, &d) == nil && d.Conflict == "" {
				files[d.Path] = true
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Handoff: you continue the work of session %s (%s engine, worktree %s).\n", spec.ID, spec.Engine, spec.Cwd)
	if spec.Goal != nil {
		fmt.Fprintf(&b, "\nIts goal: %s\n", spec.Goal.Text)
	}
	if len(asked) > 0 {
		b.WriteString("\nWhat the user asked there:\n")
		for _, a := range tail(asked, maxBriefMessages) {
			fmt.Fprintf(&b, "- %s\n", clip(oneLine(a), 300))
		}
	}
	if len(files) > 0 {
		b.WriteString("\nFiles it changed: " + strings.Join(sortedKeys(files), ", ") + "\n")
	}
	if len(answers) > 0 {
		fmt.Fprintf(&b, "\nIts last answer:\n%s\n", clip(answers[len(answers)-1], 2000))
	}
	b.WriteString("\nRead what you need from the worktree and carry on from there.")
	return b.String(), nil
}

func tail[T any](xs []T, n int) []T {
	if len(xs) > n {
		return xs[len(xs)-n:]
	}
	return xs
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
