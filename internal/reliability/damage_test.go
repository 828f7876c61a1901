package reliability

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/eventlog/logdamage"
)

// TestEveryDamageAtEveryOffsetOfTheLastLines damages a real log with every
// kind of damage at every byte offset of its last lines and reopens it:
// every log must open, and keep every event whose line survived whole.
func TestEveryDamageAtEveryOffsetOfTheLastLines(t *testing.T) {
	lines := size(1, 5)
	dir := t.TempDir()
	orig, err := logdamage.Build(filepath.Join(dir, "sample.jsonl"), 40)
	if err != nil {
		t.Fatal(err)
	}
	from := len(orig)
	for i := 0; i < lines && from > 0; i++ {
		from = bytes.LastIndexByte(orig[:from-1], '\n') + 1
	}
	cases, failedOpen, failedCheck := 0, 0, 0
	var firstErr error
	for _, kind := range logdamage.Kinds {
		for off := from; off <= len(orig); off++ {
			sp, ok := kind.At(orig, off)
			if !ok {
				continue
			}
			cases++
			splices := []logdamage.Splice{sp}
			damaged := logdamage.Apply(orig, splices)
			caseDir := filepath.Join(dir, fmt.Sprintf("c%d", cases))
			os.Mkdir(caseDir, 0o700)
			path := filepath.Join(caseDir, "events.jsonl")
			if err := os.WriteFile(path, damaged, 0o600); err != nil {
				t.Fatal(err)
			}
			l, err := eventlog.Open(path, eventlog.Options{})
			if err != nil {
				failedOpen++
				firstErr = fmt.Errorf("%s at %d: open: %w", kind.Name, off, err)
				continue
			}
			if err := logdamage.Check(orig, damaged, splices, path, l.LastSeq()); err != nil {
				failedCheck++
				firstErr = fmt.Errorf("%s at %d: %w", kind.Name, off, err)
			}
			l.Close()
			os.RemoveAll(caseDir)
		}
	}
	pass := failedOpen == 0 && failedCheck == 0
	report.Record(Figure{
		Scenario: "Event log damage",
		Done:     fmt.Sprintf("%d damaged logs: %d kinds of damage at every byte offset of the last %d lines (%d bytes)", cases, len(logdamage.Kinds), lines, len(orig)-from),
		Found:    fmt.Sprintf("%d failed to open, %d lost a valid event or a byte", failedOpen, failedCheck),
		Pass:     pass,
	})
	if !pass {
		t.Fatal(firstErr)
	}
}
