package runner

import (
	"encoding/json"
	"sort"
	"strconv"

	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// leftovers is what a runner that ended without closing its session (a
// crash, a kill) left open in the session's log.
type leftovers struct {
	// asks are the asks with no answer, by id.
	asks []string
	// hunks are the undecided hunks of review-mode edits, by edit then
	// hunk.
	hunks []editHunk
	// openTurn is the turn started and never ended, 0 if none.
	openTurn int
	// lastTurn is the number of the last turn started.
	lastTurn int
	// maxID is the highest number of an id in the log.
	maxID int64
	// sends are the latest messages queued by a send with a requestId,
	// oldest first (at most maxRequests).
	sends []requestedSend
	// spent is what the session's usage events add up to, each turn's
	// estimates replaced by the exact figure its turnEnded gives, as the
	// meter counted them.
	spent event.UsageData
}

// requestedSend is a message a send with a requestId queued.
type requestedSend struct {
	requestID string
	msg       event.Queued
}

type editHunk struct{ edit, hunk string }

// scanLeftovers reads the event log at path for what it leaves open.
func scanLeftovers(path string) (leftovers, error) {
	var l leftovers
	openAsks := map[string]bool{}
	openHunks := map[string]map[string]bool{} // edit -> hunks
	var turnUsage event.UsageData             // the open turn's usage events
	note := func(id string) {
		if len(id) > 1 {
			if n, err := strconv.ParseInt(id[1:], 10, 64); err == nil && n > l.maxID {
				l.maxID = n
			}
		}
	}
	err := eventlog.ReadFile(path, func(ev event.Event) error {
		switch ev.Type {
		case event.AskOpened:
			var d event.AskOpenedData
			if json.Unmarshal(ev.Data, &d) == nil {
				openAsks[d.AskID] = true
				note(d.AskID)
			}
		case event.AskAnswered:
			var d event.AskAnsweredData
			if json.Unmarshal(ev.Data, &d) == nil {
				delete(openAsks, d.AskID)
			}
		case event.HunkStaged:
			var d event.HunkStagedData
			if json.Unmarshal(ev.Data, &d) == nil && !d.Auto && d.Edit != nil {
				set := map[string]bool{}
				for _, h := range d.Edit.Hunks {
					set[h.ID] = true
				}
				openHunks[d.EditID] = set
				note(d.EditID)
			}
		case event.HunkDecided:
			var d event.HunkDecidedData
			if json.Unmarshal(ev.Data, &d) == nil && openHunks[d.EditID] != nil {
				delete(openHunks[d.EditID], d.HunkID)
			}
		case event.UserMessage:
			var d event.UserMessageData
			if json.Unmarshal(ev.Data, &d) == nil {
				note(d.ID)
				if d.RequestID != "" {
					l.sends = append(l.sends, requestedSend{d.RequestID, event.Queued{ID: d.ID, Text: d.Text}})
					if len(l.sends) > 2*maxRequests {
						l.sends = append(l.sends[:0], l.sends[len(l.sends)-maxRequests:]...)
					}
				}
			}
		case event.TurnStarted:
			var d event.TurnStartedData
			if json.Unmarshal(ev.Data, &d) == nil {
				l.openTurn, l.lastTurn = d.Turn, d.Turn
			}
			turnUsage = event.UsageData{}
		case event.Usage:
			var d event.UsageData
			if json.Unmarshal(ev.Data, &d) == nil {
				l.spent.Add(d)
				turnUsage.Add(d)
			}
		case event.TurnEnded:
			var d event.TurnEndedData
			// A turn closed for a runner that died (interrupted) has no
			// figure of its own: its usage events stand.
			if l.openTurn > 0 && json.Unmarshal(ev.Data, &d) == nil && d.Outcome != outcomeInterrupted {
				l.spent.CostUSD += d.Usage.CostUSD - turnUsage.CostUSD
			}
			l.openTurn = 0
			turnUsage = event.UsageData{}
		}
		return nil
	})
	if err != nil {
		return leftovers{}, err
	}
	l.asks = sortedKeys(openAsks)
	for _, edit := range sortedKeys(openHunks) {
		for _, h := range sortedKeys(openHunks[edit]) {
			l.hunks = append(l.hunks, editHunk{edit, h})
		}
	}
	return l, nil
}

// closeLeftovers gives every ask, hunk and turn that an earlier runner left
// open in the log its terminal event, so a shell never waits on one forever
// and nothing replays on resume. It also moves the ids and turn numbers
// past every one the log holds.
func (r *Runner) closeLeftovers() error {
	l, err := scanLeftovers(r.store.eventsPath())
	if err != nil {
		return err
	}
	r.ids.skipTo(l.maxID)
	r.turns.resumeAfter(l.lastTurn)
	r.meter.resume(l.spent)
	for _, s := range l.sends {
		r.requests.remember(s.requestID, command.Send{}.Cmd(), wire.OKReply(s.msg))
	}
	return r.closeOpen(l)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
