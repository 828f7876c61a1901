package eventlog

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// TestOverlongEventIsKeptTruncated is the storage half of finding 6 of
// issue 18: an event whose line would pass wire.MaxEventLine (which the
// supervisor's reader would drop, leaving a gap in every stream) is stored
// with its data truncated and marked, keeping its seq and type.
func TestOverlongEventIsKeptTruncated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 1)
	// Two-byte characters where the head is cut (after the 9 bytes of
	// {"goal":"), then '<', six bytes once JSON escapes it.
	huge := strings.Repeat("é", wire.TruncatedHead) + strings.Repeat("<", wire.MaxEventLine/6+1)
	ev, err := l.Append(event.GoalSet, event.GoalSetData{Goal: huge})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Seq != 2 {
		t.Fatalf("seq %d", ev.Seq)
	}
	appendN(t, l, 1)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	wantContiguous(t, seqs(t, path), 3)

	raw, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if len(lines[1]) > wire.MaxEventLine {
		t.Fatalf("stored line is %d bytes, over %d", len(lines[1]), wire.MaxEventLine)
	}
	var got struct {
		Seq  int64
		Type event.Type
		Data wire.TruncatedData
	}
	if err := json.Unmarshal([]byte(lines[1]), &got); err != nil {
		t.Fatal(err)
	}
	if got.Seq != 2 || got.Type != event.GoalSet || !got.Data.Truncated || got.Data.Bytes <= wire.MaxEventLine ||
		!strings.HasPrefix(got.Data.Head, `{"goal":"éé`) || !utf8.ValidString(got.Data.Head) || len(got.Data.Head) > wire.TruncatedHead {
		t.Fatalf("truncated event: seq %d type %s data %+.200v", got.Seq, got.Type, got.Data)
	}
}
