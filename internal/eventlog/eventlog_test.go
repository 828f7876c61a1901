package eventlog

import (
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"

	"github.com/corral-dev/corral/pkg/event"
)

func appendN(t *testing.T, l *Log, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := l.Append(event.AssistantDelta, event.TextData{Text: "chunk"}); err != nil {
			t.Fatalf("append: %v", err)
		}
	}
}

func seqs(t *testing.T, path string) []int64 {
	t.Helper()
	var out []int64
	if err := ReadFile(path, func(ev event.Event) error {
		out = append(out, ev.Seq)
		return nil
	}); err != nil {
		t.Fatalf("read: %v", err)
	}
	return out
}

func wantContiguous(t *testing.T, got []int64, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("got %d events, want %d", len(got), n)
	}
	for i, s := range got {
		if s != int64(i+1) {
			t.Fatalf("event %d has seq %d, want %d", i, s, i+1)
		}
	}
}

func TestSeqContinuesAcrossReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	for round := 1; round <= 3; round++ {
		l, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := l.LastSeq(), int64((round-1)*5); got != want {
			t.Fatalf("round %d: LastSeq %d, want %d", round, got, want)
		}
		appendN(t, l, 5)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	wantContiguous(t, seqs(t, path), 15)
}

func TestLongLastLineAcrossChunks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 200<<10)
	for i := range big {
		big[i] = 'a'
	}
	appendN(t, l, 2)
	if _, err := l.Append(event.AssistantText, event.TextData{Text: string(big)}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.LastSeq() != 3 {
		t.Fatalf("LastSeq %d, want 3", l.LastSeq())
	}
}

func TestWrittenSeesEveryEventInOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	var mu sync.Mutex
	var got []int64
	l, err := Open(path, Options{Written: func(b Batch) {
		mu.Lock()
		defer mu.Unlock()
		for i, line := range b.Lines {
			var ev event.Event
			if err := json.Unmarshal(line, &ev); err != nil {
				t.Errorf("batch line %d: %v", i, err)
			}
			if ev.Seq != b.FirstSeq+int64(i) {
				t.Errorf("line %d of batch has seq %d, want %d", i, ev.Seq, b.FirstSeq+int64(i))
			}
			got = append(got, ev.Seq)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			appendN(t, l, 250)
		}()
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	wantContiguous(t, got, 2000)
	mu.Unlock()
	wantContiguous(t, seqs(t, path), 2000)
}

func TestAppendAfterClose(t *testing.T) {
	l, err := Open(filepath.Join(t.TempDir(), "e.jsonl"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if _, err := l.Append(event.Stopped, nil); err != ErrClosed {
		t.Fatalf("append after close: %v, want ErrClosed", err)
	}
}

func BenchmarkAppend(b *testing.B) {
	l, err := Open(filepath.Join(b.TempDir(), "e.jsonl"), Options{Written: func(Batch) {}})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	d := event.TextData{Text: "a streamed chunk of assistant text"}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := l.Append(event.AssistantDelta, d); err != nil {
			b.Fatal(err)
		}
	}
	l.Flush()
}

// TestWrittenMayAppend has the Written callback append an event, as a
// runner's mirror may when a command arrives through it: the append
// returns once its line is in the file, and Written gets it next, in order.
func TestWrittenMayAppend(t *testing.T) {
	var l *Log
	var got []int64
	var nested []int64
	l, err := Open(filepath.Join(t.TempDir(), "events.jsonl"), Options{Written: func(b Batch) {
		for i := range b.Lines {
			got = append(got, b.FirstSeq+int64(i))
		}
		if len(nested) < 3 && b.FirstSeq%2 == 1 {
			ev, err := l.Append(event.SteerDelivered, event.TextData{Text: "from the mirror"})
			if err != nil {
				t.Errorf("append from Written: %v", err)
			}
			nested = append(nested, ev.Seq)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 5)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if len(nested) != 3 {
		t.Fatalf("appends from Written: %v", nested)
	}
	wantContiguous(t, got, 8)
	wantContiguous(t, seqs(t, l.Path()), 8)
}
