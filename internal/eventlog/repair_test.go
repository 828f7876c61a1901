package eventlog_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/eventlog/logdamage"
	"github.com/corral-dev/corral/pkg/event"
)

// sample builds a real log of n events once per test.
func sample(t testing.TB, n int) []byte {
	t.Helper()
	data, err := logdamage.Build(filepath.Join(t.TempDir(), "sample.jsonl"), n)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// reopen writes damaged as a log, opens it, checks it against orig, and
// appends one event to show the log goes on.
func reopen(t *testing.T, orig []byte, splices []logdamage.Splice) *eventlog.Repair {
	t.Helper()
	damaged := logdamage.Apply(orig, splices)
	path := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(path, damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	var mirrored []int64
	l, err := eventlog.Open(path, eventlog.Options{Written: func(b eventlog.Batch) { mirrored = append(mirrored, b.FirstSeq) }})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if err := logdamage.Check(orig, damaged, splices, path, l.LastSeq()); err != nil {
		t.Fatal(err)
	}
	rep := l.Repaired()
	if rep != nil && (len(mirrored) != 1 || mirrored[0] != rep.Event.Seq) {
		t.Errorf("logRepaired (seq %d) mirrored as %v", rep.Event.Seq, mirrored)
	}
	last := l.LastSeq()
	ev, err := l.Append(event.TurnEnded, nil)
	if err != nil || ev.Seq != last+1 {
		t.Fatalf("append after repair: seq %d, %v; want seq %d", ev.Seq, err, last+1)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// A repaired log is sound: reopening it changes nothing.
	l, err = eventlog.Open(path, eventlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if again := l.Repaired(); again != nil {
		t.Fatalf("second open repaired again: %+v", again.Data)
	}
	return rep
}

func TestDamageIsMovedAside(t *testing.T) {
	orig := sample(t, 12)
	lines := bytes.SplitAfter(orig, []byte("\n"))
	lineStart := func(i int) int { // offset of line i (0-based)
		n := 0
		for _, l := range lines[:i] {
			n += len(l)
		}
		return n
	}
	end := len(orig)
	tests := []struct {
		name    string
		splices []logdamage.Splice
		reasons []string
		kept    int64 // LastValidSeq
	}{
		{"blank trailing line", []logdamage.Splice{{Off: end, Insert: []byte("\n")}}, []string{"blank line"}, 12},
		{"garbage line ending in a newline", []logdamage.Splice{{Off: end, Insert: []byte("}{ not json\n")}}, []string{"not JSON"}, 12},
		{"NULs then a newline", []logdamage.Splice{{Off: end, Insert: []byte("\x00\x00\x00\x00\n")}}, []string{"not JSON"}, 12},
		{"bad line in the middle", []logdamage.Splice{{Off: lineStart(5), Insert: []byte("garbage\n")}}, []string{"not JSON"}, 12},
		{"torn tail", []logdamage.Splice{{Off: end - 10, Cut: 10}}, []string{"torn tail"}, 11},
		{"a line overwritten in the middle", []logdamage.Splice{{Off: lineStart(3) + 4, Cut: 6, Insert: []byte("\x00\x00\x00\x00\x00\x00")}}, []string{"not JSON"}, 12},
		{"JSON that is not an event", []logdamage.Splice{{Off: lineStart(2), Insert: []byte("{\"seq\":0,\"type\":\"x\"}\n[1,2]\n")}}, []string{"no seq"}, 12},
		{"a duplicated line", []logdamage.Splice{{Off: lineStart(8), Insert: lines[4]}}, []string{"seq out of order"}, 12},
		{"a seq made too big", []logdamage.Splice{{Off: lineStart(6) + len(`{"seq":`), Cut: 1, Insert: []byte("9")}}, []string{"seq out of order"}, 12},
		{"several kinds", []logdamage.Splice{
			{Off: lineStart(1), Insert: []byte("\n\n")},
			{Off: lineStart(7), Insert: []byte("xx\n")},
			{Off: end - 3, Cut: 3},
		}, []string{"blank line", "not JSON", "torn tail"}, 11},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := reopen(t, orig, tt.splices)
			if rep == nil {
				t.Fatal("no repair reported")
			}
			var reasons []string
			for _, r := range rep.Ranges {
				reasons = append(reasons, r.Reason)
			}
			if !slices.Equal(reasons, tt.reasons) {
				t.Errorf("reasons %q, want %q", reasons, tt.reasons)
			}
			if rep.Data.LastValidSeq != tt.kept || rep.Event.Seq != tt.kept+1 || rep.Event.Type != event.LogRepaired {
				t.Errorf("logRepaired seq %d after %d, want after %d", rep.Event.Seq, rep.Data.LastValidSeq, tt.kept)
			}
			var data event.LogRepairedData
			if err := json.Unmarshal(rep.Event.Data, &data); err != nil || data.File != "events.jsonl.damaged" || data.RangeCount != len(tt.reasons) {
				t.Errorf("event data %s (%v)", rep.Event.Data, err)
			}
		})
	}
}

func TestSoundLogIsLeftAlone(t *testing.T) {
	orig := sample(t, 20)
	if rep := reopen(t, orig, nil); rep != nil {
		t.Fatalf("a sound log was repaired: %+v", rep.Data)
	}
}

func TestEmptyAndAllDamagedLogs(t *testing.T) {
	for _, content := range []string{"", "\n", "garbage", "\x00\x00\x00\n\x00"} {
		path := filepath.Join(t.TempDir(), "events.jsonl")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := eventlog.Open(path, eventlog.Options{})
		if err != nil {
			t.Fatalf("%q: %v", content, err)
		}
		want := int64(0)
		if content != "" {
			want = 1 // the logRepaired event
		}
		if l.LastSeq() != want {
			t.Errorf("%q: LastSeq %d, want %d", content, l.LastSeq(), want)
		}
		l.Close()
	}
}

// TestEveryDamageAtEveryOffsetOfTheLastLine applies each kind of damage at
// each byte offset of a log's last line and at its end. The reliability
// harness (make reliability) does the same over the last lines.
func TestEveryDamageAtEveryOffsetOfTheLastLine(t *testing.T) {
	orig := sample(t, 8) // its last line is a short one
	from := bytes.LastIndexByte(orig[:len(orig)-1], '\n') + 1
	for _, kind := range logdamage.Kinds {
		t.Run(kind.Name, func(t *testing.T) {
			for off := from; off <= len(orig); off++ {
				sp, ok := kind.At(orig, off)
				if !ok {
					continue
				}
				reopen(t, orig, []logdamage.Splice{sp})
				if t.Failed() {
					t.Fatalf("at offset %d", off)
				}
			}
		})
	}
}

func TestLogReplacedUnderAReaderIsANewFile(t *testing.T) {
	orig := sample(t, 5)
	path := filepath.Join(t.TempDir(), "events.jsonl")
	os.WriteFile(path, append(append([]byte{}, orig...), "junk\n"...), 0o600)
	before, _ := os.Stat(path)
	l, err := eventlog.Open(path, eventlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	after, _ := os.Stat(path)
	if os.SameFile(before, after) {
		t.Fatal("a repaired log kept its inode: readers holding it would not see the repair")
	}
}

// FuzzRepair damages a real log at offsets and with bytes the fuzzer
// chooses: every damaged log opens, keeps every event whose line survived
// whole, and accounts for every byte.
func FuzzRepair(f *testing.F) {
	orig := sample(f, 30)
	f.Add(uint32(len(orig)), uint16(0), []byte("\n"))
	f.Add(uint32(len(orig)-7), uint16(7), []byte{})
	f.Add(uint32(100), uint16(0), []byte("garbage\n"))
	f.Add(uint32(200), uint16(3), []byte("\x00\x00\x00\n"))
	f.Add(uint32(7), uint16(1), []byte("9"))
	f.Add(uint32(0), uint16(40), []byte(`{"seq":5,"ts":"2026-01-01T00:00:00Z","type":"x"}`+"\n"))
	f.Fuzz(func(t *testing.T, off uint32, cut uint16, insert []byte) {
		o := int(off % uint32(len(orig)+1))
		c := min(int(cut), len(orig)-o)
		// A second splice from the same bytes, further on, so that damage
		// in two places is covered too.
		splices := []logdamage.Splice{{Off: o, Cut: c, Insert: insert}}
		if o2 := o + c + int(cut)*7; len(insert) > 0 && o2 < len(orig) {
			splices = append(splices, logdamage.Splice{Off: o2, Cut: min(len(insert), len(orig)-o2), Insert: insert[:len(insert)/2]})
		}
		reopen(t, orig, splices)
	})
}

// BenchmarkOpen opens a sound log of 10,000 events (about 1.6 MB), which
// Open reads whole to find damage.
func BenchmarkOpen(b *testing.B) {
	path := filepath.Join(b.TempDir(), "events.jsonl")
	data, err := logdamage.Build(path, 10000)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		l, err := eventlog.Open(path, eventlog.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if l.Repaired() != nil {
			b.Fatal("repaired a sound log")
		}
		l.Close()
	}
}
