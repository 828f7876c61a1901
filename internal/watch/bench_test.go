package watch

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/hunks"
)

// BenchmarkRenderDemoSession renders the demo session's whole log (112
// events) per op, in colour: what a watcher does when it catches up.
func BenchmarkRenderDemoSession(b *testing.B) {
	events := readEventLog(b, "testdata/demo.jsonl")
	style := ANSIStyle()
	b.ReportAllocs()
	for b.Loop() {
		st := NewState(testSession)
		for _, e := range events {
			Render(e, st, style)
		}
	}
	b.ReportMetric(float64(len(events)), "events/op")
}

// BenchmarkRenderLargeEdit renders a staged edit creating a 5000-line
// file, one hunk of 5000 coloured lines.
func BenchmarkRenderLargeEdit(b *testing.B) {
	var content strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&content, "line %d\twith a tab and some text to colour\n", i)
	}
	edit, err := hunks.Diff("big.txt", hunks.Snapshot{}, hunks.Present([]byte(content.String())))
	if err != nil {
		b.Fatal(err)
	}
	data, err := json.Marshal(event.HunkStagedData{EditID: "e1", Path: "big.txt", Edit: edit})
	if err != nil {
		b.Fatal(err)
	}
	e := event.Event{Seq: 1, Type: event.HunkStaged, Data: data}
	style := ANSIStyle()
	b.ReportAllocs()
	for b.Loop() {
		Render(e, NewState(testSession), style)
	}
}
