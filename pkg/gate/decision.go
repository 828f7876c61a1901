package gate

import (
	"fmt"
	"strings"
)

// Decision is the gate's verdict on a request.
type Decision string

const (
	// Allow lets the tool call run without asking anyone.
	Allow Decision = "allow"
	// Ask needs a human's approval; in an unattended session it refuses
	// the call at once (see [Judgement.Action]).
	Ask Decision = "ask"
	// Deny refuses the call; no human can approve it under this policy.
	Deny Decision = "deny"
)

// severity orders decisions so that combining parts keeps the strictest.
func (d Decision) severity() int {
	switch d {
	case Allow:
		return 0
	case Ask:
		return 1
	default:
		return 2
	}
}

// Category says what kind of access a decision is about, so an approval
// UI can group and explain it.
type Category string

const (
	CategoryShell   Category = "shell"   // running a command
	CategoryEdit    Category = "edit"    // writing, creating or removing a file
	CategoryRead    Category = "read"    // reading a file
	CategoryNetwork Category = "network" // a shell command that reaches the network
	CategoryWeb     Category = "web"     // a web fetch tool call
	CategoryMCP     Category = "mcp"     // an MCP tool call
)

// Judgement is the gate's answer to one [Request].
type Judgement struct {
	Decision Decision `json:"decision"`
	Category Category `json:"category"`
	// Reason is a complete, human-readable sentence an approval UI shows
	// as is.
	Reason string `json:"reason"`
	// Parts holds, for shell requests, the judgement of each simple
	// command (and of each redirection on a compound command) in source
	// order. The top-level decision is the strictest of the parts.
	Parts []Part `json:"parts,omitempty"`
	// Unattended is copied from the policy: no human is there to answer
	// an ask. Use [Judgement.Action] rather than testing it directly.
	Unattended bool `json:"unattended,omitempty"`
}

// Part is the judgement of one simple command inside a shell request.
type Part struct {
	// Command is the source text of the simple command.
	Command  string   `json:"command"`
	Decision Decision `json:"decision"`
	Category Category `json:"category"`
	Reason   string   `json:"reason"`
}

// Action is what the caller must do with a [Judgement]. It is the one
// place that turns an ask in an unattended session into a refusal.
type Action string

const (
	// ActionRun: run the tool call.
	ActionRun Action = "run"
	// ActionAsk: ask a human and wait for the answer.
	ActionAsk Action = "ask"
	// ActionRefuse: refuse the tool call; the policy denies it.
	ActionRefuse Action = "refuse"
	// ActionUnavailable: refuse the tool call at once and report a
	// permissionUnavailable failure, because the decision was ask and the
	// session is unattended. The value is the failure event's name.
	ActionUnavailable Action = "permissionUnavailable"
)

// Action reports what the caller must do with j.
func (j Judgement) Action() Action {
	switch j.Decision {
	case Allow:
		return ActionRun
	case Ask:
		if j.Unattended {
			return ActionUnavailable
		}
		return ActionAsk
	default:
		return ActionRefuse
	}
}

// verdict is a decision with its category and reason, before it becomes a
// Part or a Judgement.
type verdict struct {
	decision Decision
	category Category
	reason   string
}

// stricter reports whether v should replace cur when combining: a
// stricter decision wins, and among equal decisions the first one found
// is kept, so checks are ordered from most to least specific.
func (v verdict) stricter(cur verdict) bool {
	return v.decision.severity() > cur.decision.severity()
}

func allowV(c Category, reason string) verdict { return verdict{Allow, c, reason} }
func askV(c Category, reason string) verdict   { return verdict{Ask, c, reason} }
func denyV(c Category, reason string) verdict  { return verdict{Deny, c, reason} }

// tally gathers the verdicts of the checks on one part and keeps those
// with the strictest decision, so the reason can name every concern at
// that level rather than only the first.
type tally struct {
	items []verdict
}

// maxReasons bounds how many concerns one reason lists.
const maxReasons = 3

func oneV(v verdict) tally { return tally{items: []verdict{v}} }

func (t *tally) add(v verdict) {
	switch {
	case len(t.items) == 0 || v.stricter(t.items[0]):
		t.items = append(t.items[:0], v)
	case v.decision == t.items[0].decision:
		for _, have := range t.items {
			if have.reason == v.reason {
				return
			}
		}
		t.items = append(t.items, v)
	}
}

// concern records v only when it is not an allow: checks that pass
// (each argument read inside the worktree) would crowd out the reason
// that matters.
func (t *tally) concern(v verdict) {
	if v.decision != Allow {
		t.add(v)
	}
}

// addIfEmpty records v when no check had anything to say.
func (t *tally) addIfEmpty(v verdict) {
	if len(t.items) == 0 {
		t.items = append(t.items, v)
	}
}

func (t tally) decision() Decision {
	if len(t.items) == 0 {
		return Allow
	}
	return t.items[0].decision
}

// verdict sums the tally up: its decision, the most specific category
// among the concerns, and their reasons joined.
func (t tally) verdict() verdict {
	if len(t.items) == 0 {
		return allowV(CategoryShell, "nothing to judge")
	}
	out := t.items[0]
	reasons := make([]string, 0, maxReasons)
	for _, v := range t.items {
		if categoryRank(v.category) > categoryRank(out.category) {
			out.category = v.category
		}
		if len(reasons) < maxReasons {
			reasons = append(reasons, strings.TrimSuffix(v.reason, "."))
		}
	}
	if extra := len(t.items) - len(reasons); extra > 0 {
		reasons = append(reasons, fmt.Sprintf("and %d more", extra))
	}
	out.reason = strings.Join(reasons, "; ")
	return out
}

// categoryRank orders categories from generic to specific: when a part
// raises several concerns, the most specific one names its category.
func categoryRank(c Category) int {
	switch c {
	case CategoryNetwork:
		return 5
	case CategoryEdit:
		return 4
	case CategoryRead:
		return 3
	case CategoryWeb, CategoryMCP:
		return 2
	}
	return 1
}
