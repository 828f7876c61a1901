// Package logdamage damages event logs the ways disks and crashes do and
// checks what eventlog.Open made of them: every event whose line survived
// byte for byte is kept, every other byte is moved aside, and the log reads
// back whole. The event log's tests, its fuzz target and the reliability
// harness share it.
package logdamage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/pkg/event"
)

// Splice replaces Cut bytes at Off of the original log with Insert.
type Splice struct {
	Off, Cut int
	Insert   []byte
}

// Kind is a named way of damaging a log at an offset.
type Kind struct {
	Name string
	// At returns the splice that damages log at off, or false when this
	// kind does not apply there.
	At func(log []byte, off int) (Splice, bool)
}

// Kinds are the damages a log meets: a crash mid-write, a zeroed block
// after a machine crash, a stray editor, a duplicated write.
var Kinds = []Kind{
	{"torn tail", func(log []byte, off int) (Splice, bool) {
		return Splice{Off: off, Cut: len(log) - off}, off < len(log)
	}},
	{"blank line", insert([]byte("\n"))},
	{"garbage line", insert([]byte("garbage, not JSON\n"))},
	{"NULs then newline", insert([]byte("\x00\x00\x00\x00\x00\x00\x00\x00\n"))},
	{"zeroed bytes", func(log []byte, off int) (Splice, bool) {
		n := min(16, len(log)-off)
		return Splice{Off: off, Cut: n, Insert: make([]byte, n)}, n > 0
	}},
	{"JSON without seq", insert([]byte(`{"type":"assistantDelta"}` + "\n"))},
	{"duplicated line", func(log []byte, off int) (Splice, bool) {
		s, e := lineAround(log, off)
		return Splice{Off: off, Insert: append([]byte{}, log[s:e]...)}, e > s && log[e-1] == '\n'
	}},
	{"seq rewritten", func(log []byte, off int) (Splice, bool) {
		// The digits of a seq replaced, as a flipped bit would.
		s, e := lineAround(log, off)
		line := log[s:e]
		if !bytes.HasPrefix(line, []byte(`{"seq":`)) {
			return Splice{}, false
		}
		return Splice{Off: s + len(`{"seq":`), Cut: 1, Insert: []byte("9")}, line[len(`{"seq":`)] != '9'
	}},
}

func insert(b []byte) func([]byte, int) (Splice, bool) {
	return func(log []byte, off int) (Splice, bool) { return Splice{Off: off, Insert: b}, true }
}

// lineAround returns the bounds of the line holding offset off, its
// newline included.
func lineAround(log []byte, off int) (int, int) {
	if off >= len(log) {
		return len(log), len(log)
	}
	s := bytes.LastIndexByte(log[:off], '\n') + 1
	e := bytes.IndexByte(log[off:], '\n')
	if e < 0 {
		return s, len(log)
	}
	return s, off + e + 1
}

// Apply returns log with splices applied. Splices must not overlap; they
// are taken in order of offset.
func Apply(log []byte, splices []Splice) []byte {
	sp := sorted(splices)
	var out []byte
	at := 0
	for _, s := range sp {
		out = append(out, log[at:s.Off]...)
		out = append(out, s.Insert...)
		at = s.Off + s.Cut
	}
	return append(out, log[at:]...)
}

func sorted(splices []Splice) []Splice {
	sp := append([]Splice(nil), splices...)
	sort.SliceStable(sp, func(i, j int) bool { return sp[i].Off < sp[j].Off })
	return sp
}

// Intact returns the lines of log (each with its newline) that survive the
// splices byte for byte and still stand as lines of their own.
func Intact(log []byte, splices []Splice) [][]byte {
	sp := sorted(splices)
	damaged := Apply(log, sp)
	var out [][]byte
	for s := 0; s < len(log); {
		e := bytes.IndexByte(log[s:], '\n')
		if e < 0 {
			break // a torn last line is no event
		}
		e += s + 1
		shift, ok := 0, true
		for _, x := range sp {
			switch {
			case x.Off >= e: // after the line's newline
			case x.Off+x.Cut <= s: // before the line: it only moves
				shift += len(x.Insert) - x.Cut
			default:
				ok = false
			}
		}
		if ok {
			n := s + shift
			whole := n+(e-s) <= len(damaged) && bytes.Equal(damaged[n:n+(e-s)], log[s:e])
			if whole && (n == 0 || damaged[n-1] == '\n') {
				out = append(out, log[s:e])
			}
		}
		s = e
	}
	return out
}

// Check verifies what eventlog.Open made of damaged, a damaged copy of
// orig, at path: the log reads back as events with strictly increasing
// seqs, every event line of orig that survived the damage whole is still
// there, and every byte of damaged is either in the log or in the damaged
// file. lastSeq is the opened log's LastSeq.
func Check(orig, damaged []byte, splices []Splice, path string, lastSeq int64) error {
	repaired, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := map[string]bool{}
	var prev int64
	var logRepaired []byte
	for n, line := range bytes.SplitAfter(repaired, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var ev event.Event
		if line[len(line)-1] != '\n' {
			return fmt.Errorf("repaired log ends in a torn line %q", clip(line))
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			return fmt.Errorf("repaired log line %d is not an event: %v: %q", n+1, err, clip(line))
		}
		if ev.Seq <= prev {
			return fmt.Errorf("repaired log line %d has seq %d after %d", n+1, ev.Seq, prev)
		}
		prev = ev.Seq
		if ev.Type == event.LogRepaired && !bytes.Contains(orig, line) {
			logRepaired = line
		}
		lines[string(line)] = true
	}
	if prev != lastSeq {
		return fmt.Errorf("LastSeq %d, but the log's last event is %d", lastSeq, prev)
	}
	for _, line := range Intact(orig, splices) {
		if !lines[string(line)] {
			return fmt.Errorf("intact event lost: %q", clip(line))
		}
	}
	aside, err := readAside(path + eventlog.DamagedSuffix)
	if err != nil {
		return err
	}
	if logRepaired == nil {
		if !bytes.Equal(repaired, damaged) {
			return fmt.Errorf("the log changed (%d → %d bytes) without a logRepaired event", len(damaged), len(repaired))
		}
		return nil
	}
	if kept := len(repaired) - len(logRepaired); kept+aside != len(damaged) {
		return fmt.Errorf("%d bytes kept + %d moved aside ≠ %d bytes of the damaged log", kept, aside, len(damaged))
	}
	return nil
}

// readAside counts the bytes the damaged file holds.
func readAside(path string) (int, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	total := 0
	for _, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		var rec eventlog.DamagedRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			return 0, fmt.Errorf("damaged file line %q: %w", clip(line), err)
		}
		if int64(len(rec.Bytes)) != rec.Length {
			return 0, fmt.Errorf("damaged record at %d says %d bytes, holds %d", rec.Offset, rec.Length, len(rec.Bytes))
		}
		total += len(rec.Bytes)
	}
	return total, nil
}

func clip(b []byte) []byte {
	if len(b) > 100 {
		return b[:100]
	}
	return b
}

// Build writes a real log of n events at path through eventlog.Append, a
// mix of the shapes a turn writes (short deltas, long texts with escapes
// and non-ASCII text, tool calls), and returns its bytes.
func Build(path string, n int) ([]byte, error) {
	l, err := eventlog.Open(path, eventlog.Options{})
	if err != nil {
		return nil, err
	}
	for i := 0; i < n; i++ {
		var err error
		switch i % 4 {
		case 0:
			_, err = l.Append(event.AssistantDelta, event.TextData{Text: fmt.Sprintf("chunk %d", i)})
		case 1:
			_, err = l.Append(event.AssistantText, event.TextData{Text: "naïve \"quoted\" text\twith <tags> & a\nnewline, " + string(bytes.Repeat([]byte("x"), i%97))})
		case 2:
			_, err = l.Append(event.ToolStarted, event.ToolStartedData{ToolID: fmt.Sprintf("tool-%d", i), Tool: "Bash", Kind: "shell", Summary: "ls -la", Command: "ls -la"})
		default:
			_, err = l.Append(event.TurnEnded, nil)
		}
		if err != nil {
			l.Close()
			return nil, err
		}
	}
	if err := l.Close(); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}
