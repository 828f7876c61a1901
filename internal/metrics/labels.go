package metrics

import (
	"sync"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
)

// Label values come from event lines, which carry what engines and model
// servers said. Every label is therefore bounded: a value from a fixed set
// or "other", and an engine or model name among the first few seen or
// "other", so that no input can make the metrics grow without end.

const (
	other   = "other"
	unknown = "unknown"
	// maxEngineLabels and maxModelLabels bound the distinct engine and
	// model names kept as label values.
	maxEngineLabels = 32
	maxModelLabels  = 64
	// maxLabelLen bounds one engine or model name.
	maxLabelLen = 64
	// maxOpenAsks bounds the asks whose category is remembered until they
	// are answered.
	maxOpenAsks = 4096
)

// eventTypes are counted under their own name in corral_events_total.
var eventTypes = []event.Type{
	event.SessionStarted, event.SessionResumed, event.UserMessage, event.TurnStarted,
	event.AssistantDelta, event.AssistantText, event.ToolStarted, event.ToolFinished,
	event.AskOpened, event.AskAnswered, event.SteerDelivered, event.SteerRequeued,
	event.TurnEnded, event.Stopped, event.Failure, event.Usage, event.Context, event.Retry,
	event.HunkStaged, event.HunkDecided, event.EditApplied, event.ModeChanged,
	event.GoalSet, event.GoalCleared, event.GoalCheck, event.SpendCapSet,
	event.Rotated, event.Compacted, event.QueueChanged,
}

var (
	gateCategories = set("shell", "edit", "read", "network", "web", "mcp", "other")
	askDecisions   = set(command.DecisionAllow, command.DecisionDeny)
	hunkDecisions  = set(command.DecisionAccept, command.DecisionReject)
	deciders       = set("user", "stopped", "shutdown", "cancelled", "expired", "unattended", "rule")
	turnOutcomes   = set("done", "stopped", "failed", "interrupted")
	failureCodes   = set(string(event.FailEngineError), string(event.FailPermissionUnavailable),
		string(event.FailSignInExpired), string(event.FailContextFull), string(event.FailSpendCap),
		string(event.FailStalled))
)

func set(values ...string) map[string]bool {
	m := make(map[string]bool, len(values))
	for _, v := range values {
		m[v] = true
	}
	return m
}

// oneOf returns v when it is in known, else "other".
func oneOf(v string, known map[string]bool) string {
	if known[v] {
		return v
	}
	return other
}

// boundedLabels keeps the first max distinct names it is given; any later
// one, and any name that is empty, too long or not plain, reads "other".
type boundedLabels struct {
	mu   sync.Mutex
	seen map[string]bool
	max  int
}

func newBoundedLabels(max int) *boundedLabels {
	return &boundedLabels{seen: map[string]bool{}, max: max}
}

func (b *boundedLabels) value(name string) string {
	if !plainName(name) {
		if name == "" {
			return unknown
		}
		return other
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seen[name] {
		return name
	}
	if len(b.seen) >= b.max {
		return other
	}
	b.seen[name] = true
	return name
}

// plainName reports whether name is a short run of letters, digits and
// . _ - / : @ (what engine and model names are made of).
func plainName(name string) bool {
	if name == "" || len(name) > maxLabelLen {
		return false
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case r == '.', r == '_', r == '-', r == '/', r == ':', r == '@':
		default:
			return false
		}
	}
	return true
}

// askCategories remembers the category of each open ask until its answer,
// which does not repeat it.
type askCategories struct {
	mu    sync.Mutex
	byAsk map[askKey]string
}

type askKey struct{ session, ask string }

func newAskCategories() *askCategories { return &askCategories{byAsk: map[askKey]string{}} }

func (a *askCategories) open(session, ask, category string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.byAsk) >= maxOpenAsks {
		// Asks whose answer never came (their session was deleted): the
		// answers of those still open will read "unknown".
		clear(a.byAsk)
	}
	a.byAsk[askKey{session, ask}] = category
}

// answer returns and forgets the category of an ask; "unknown" for one
// opened before this supervisor started.
func (a *askCategories) answer(session, ask string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := askKey{session, ask}
	c, ok := a.byAsk[k]
	if !ok {
		return unknown
	}
	delete(a.byAsk, k)
	return c
}
