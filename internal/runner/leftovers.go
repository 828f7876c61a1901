package runner

import (
	"encoding/json"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/pkg/wire"
)

// closeLeftovers gives every ask, hunk and turn that an earlier runner left
// open in the log its terminal event, so a shell never waits on one forever
// and nothing replays on resume. It also moves the id counter past every id
// the log holds.
func (r *Runner) closeLeftovers() error {
	openAsks := map[string]bool{}
	openHunks := map[string]map[string]bool{} // edit -> hunks
	openTurn, lastTurn := 0, 0
	maxID := 0
	note := func(id string) {
		if len(id) > 1 {
			if n, err := strconv.Atoi(id[1:]); err == nil && n > maxID {
				maxID = n
			}
		}
	}
	err := eventlog.ReadFile(r.eventsPath(), func(ev wire.Event) error {
		switch ev.Type {
		case wire.EvAskOpened:
			var d wire.AskOpenedData
			if json.Unmarshal(ev.Data, &d) == nil {
				openAsks[d.AskID] = true
				note(d.AskID)
			}
		case wire.EvAskAnswered:
			var d wire.AskAnsweredData
			if json.Unmarshal(ev.Data, &d) == nil {
				delete(openAsks, d.AskID)
			}
		case wire.EvHunkStaged:
			var d wire.HunkStagedData
			if json.Unmarshal(ev.Data, &d) == nil && !d.Auto && d.Edit != nil {
				set := map[string]bool{}
				for _, h := range d.Edit.Hunks {
					set[h.ID] = true
				}
				openHunks[d.EditID] = set
				note(d.EditID)
			}
		case wire.EvHunkDecided:
			var d wire.HunkDecidedData
			if json.Unmarshal(ev.Data, &d) == nil && openHunks[d.EditID] != nil {
				delete(openHunks[d.EditID], d.HunkID)
			}
		case wire.EvUserMessage:
			var d wire.UserMessageData
			if json.Unmarshal(ev.Data, &d) == nil {
				note(d.ID)
			}
		case wire.EvTurnStarted:
			var d wire.TurnStartedData
			if json.Unmarshal(ev.Data, &d) == nil {
				openTurn, lastTurn = d.Turn, d.Turn
			}
		case wire.EvTurnEnded:
			openTurn = 0
		}
		return nil
	})
	if err != nil {
		return err
	}
	r.mu.Lock()
	if maxID > r.nextID {
		r.nextID = maxID
	}
	r.turnNo = lastTurn
	r.mu.Unlock()

	for _, id := range sortedKeys(openAsks) {
		r.emit(wire.EvAskAnswered, wire.AskAnsweredData{AskID: id, Decision: wire.DecisionDeny, By: "expired"})
	}
	for _, edit := range sortedKeys(openHunks) {
		for _, h := range sortedKeys(openHunks[edit]) {
			r.emit(wire.EvHunkDecided, wire.HunkDecidedData{EditID: edit, HunkID: h, Decision: wire.DecisionReject, By: "expired"})
		}
	}
	if openTurn > 0 {
		r.emit(wire.EvTurnEnded, wire.TurnEndedData{Turn: openTurn, Outcome: "interrupted"})
	}
	return nil
}

func (r *Runner) eventsPath() string { return filepath.Join(r.Dir(), EventsFile) }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
