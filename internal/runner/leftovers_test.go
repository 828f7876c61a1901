package runner

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/hunks"
)

type logged struct {
	typ  event.Type
	data any
}

func TestScanLeftovers(t *testing.T) {
	twoHunks := &hunks.Edit{Hunks: []hunks.Hunk{{ID: "h1"}, {ID: "h2"}}}
	cases := []struct {
		name   string
		events []logged
		want   leftovers
	}{
		{"empty log", nil, leftovers{}},
		{"everything closed", []logged{
			{event.UserMessage, event.UserMessageData{ID: "m1"}},
			{event.TurnStarted, event.TurnStartedData{Turn: 1}},
			{event.AskOpened, event.AskOpenedData{AskID: "a2"}},
			{event.AskAnswered, event.AskAnsweredData{AskID: "a2"}},
			{event.HunkStaged, event.HunkStagedData{EditID: "e3", Edit: twoHunks}},
			{event.HunkDecided, event.HunkDecidedData{EditID: "e3", HunkID: "h1"}},
			{event.HunkDecided, event.HunkDecidedData{EditID: "e3", HunkID: "h2"}},
			{event.TurnEnded, event.TurnEndedData{Turn: 1}},
		}, leftovers{lastTurn: 1, maxID: 3}},
		{"a crash mid-turn", []logged{
			{event.UserMessage, event.UserMessageData{ID: "m1"}},
			{event.TurnStarted, event.TurnStartedData{Turn: 1}},
			{event.TurnEnded, event.TurnEndedData{Turn: 1}},
			{event.UserMessage, event.UserMessageData{ID: "g2"}},
			{event.TurnStarted, event.TurnStartedData{Turn: 2}},
			{event.AskOpened, event.AskOpenedData{AskID: "a12"}},
			{event.AskOpened, event.AskOpenedData{AskID: "a3"}},
			{event.HunkStaged, event.HunkStagedData{EditID: "e4", Edit: twoHunks}},
			{event.HunkDecided, event.HunkDecidedData{EditID: "e4", HunkID: "h1"}},
			// An auto-mode edit waits for nothing.
			{event.HunkStaged, event.HunkStagedData{EditID: "e5", Auto: true, Edit: twoHunks}},
			{event.UserMessage, event.UserMessageData{ID: "m6"}},
		}, leftovers{asks: []string{"a12", "a3"}, hunks: []editHunk{{"e4", "h2"}}, openTurn: 2, lastTurn: 2, maxID: 12}},
		{"what was spent", []logged{
			// A turn whose end gives the exact cost replaces its estimates.
			{event.TurnStarted, event.TurnStartedData{Turn: 1}},
			{event.Usage, event.UsageData{InputTokens: 10, CostUSD: 0.5, Estimated: true}},
			{event.TurnEnded, event.TurnEndedData{Turn: 1, Usage: event.UsageData{InputTokens: 10, CostUSD: 1.5}}},
			// A goal check's judge spends between turns.
			{event.Usage, event.UsageData{OutputTokens: 4, CostUSD: 0.25}},
			// A turn a dead runner left open, closed as interrupted with no
			// figure: its estimates stand.
			{event.TurnStarted, event.TurnStartedData{Turn: 2}},
			{event.Usage, event.UsageData{InputTokens: 1, CostUSD: 0.125}},
			{event.TurnEnded, event.TurnEndedData{Turn: 2, Outcome: outcomeInterrupted}},
			// A turn still open counts what it spent so far.
			{event.TurnStarted, event.TurnStartedData{Turn: 3}},
			{event.Usage, event.UsageData{InputTokens: 2, CostUSD: 0.0625}},
		}, leftovers{openTurn: 3, lastTurn: 3,
			spent: event.UsageData{InputTokens: 13, OutputTokens: 4, CostUSD: 1.9375, Estimated: true}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), EventsFile)
			log, err := eventlog.Open(path, eventlog.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range c.events {
				if _, err := log.Append(ev.typ, ev.data); err != nil {
					t.Fatal(err)
				}
			}
			if err := log.Close(); err != nil {
				t.Fatal(err)
			}
			got, err := scanLeftovers(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.asks) == 0 {
				got.asks = nil // nothing open, however it is spelt
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("leftovers %+v, want %+v", got, c.want)
			}
		})
	}
}
