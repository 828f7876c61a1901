package watch

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/corral-dev/corral/internal/runner"
	"github.com/corral-dev/corral/pkg/hunks"
)

// The review events are decoded into this package's own types; these
// tests keep them reading everything the runner writes.

func roundTrip(t *testing.T, from, to any) {
	t.Helper()
	raw, err := json.Marshal(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, to); err != nil {
		t.Fatal(err)
	}
	back, err := json.Marshal(to)
	if err != nil {
		t.Fatal(err)
	}
	var a, b map[string]any
	json.Unmarshal(raw, &a)
	json.Unmarshal(back, &b)
	// Fields the runner leaves out when empty may come back as zero
	// values; every field the runner wrote must come back as it was.
	for k, v := range a {
		if !reflect.DeepEqual(b[k], v) {
			t.Errorf("field %q: runner wrote %v, read back %v", k, v, b[k])
		}
	}
}

func TestReviewEventDataReadsWhatTheRunnerWrites(t *testing.T) {
	edit, err := hunks.Diff("a.txt", hunks.Present([]byte("a\nb\n")), hunks.Present([]byte("a\nc\n")))
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, runner.HunkStagedData{EditID: "e1", ToolID: "t1", Path: "a.txt", Auto: true, Edit: edit}, &hunkStagedData{})
	roundTrip(t, runner.HunkDecidedData{EditID: "e1", HunkID: "h1", Decision: "reject", Note: "no", By: "user"}, &hunkDecidedData{})
	roundTrip(t, runner.EditAppliedData{EditID: "e1", Path: "a.txt", By: "corral", Hunks: []string{"h1"}, Reverted: true, Added: 1, Removed: 2, Conflict: "drifted"}, &editAppliedData{})
}
