package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/smallfs"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// streamingEngine's turns stream text until they are interrupted: on a
// small disk, the log fills in the middle of one.
func streamingEngine() engine.Engine {
	stop := make(chan struct{}, 1)
	chunk := event.TextData{Text: strings.Repeat("a long streamed answer ", 180)}
	return &fakeEngine{
		turn: func(ctx context.Context, in engine.TurnInput, host engine.Host) (engine.TurnResult, error) {
			if strings.HasPrefix(in.Text, "short") {
				host.Emit(event.AssistantText, event.TextData{Text: "ok"})
				return engine.TurnResult{}, nil
			}
			for {
				select {
				case <-stop:
					return engine.TurnResult{Stopped: true}, nil
				case <-ctx.Done():
					return engine.TurnResult{Stopped: true}, nil
				default:
				}
				host.Emit(event.AssistantDelta, chunk)
			}
		},
		interrupt: func(context.Context) error {
			select {
			case stop <- struct{}{}:
			default:
			}
			return nil
		},
	}
}

// TestRealDiskFullMidTurnStopsAndRecovers fills a real 2 MiB tmpfs during
// a turn: the turn ends (the engine is interrupted), the session is
// storageFailed in status, every command but status is refused with
// storage_unavailable, every event a shell saw is in the file and no more;
// once room is made the runner's probe recovers the session, a storageFailed
// failure event and the interrupted turn's end are written, and neither ids
// nor turn numbers repeat, also across a new runner.
func TestRealDiskFullMidTurnStopsAndRecovers(t *testing.T) {
	root := smallfs.Dir(t, 2<<20)
	if root == "" {
		return
	}
	filler := filepath.Join(root, "filler")
	if err := os.WriteFile(filler, make([]byte, 256<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &session{t: t, dir: filepath.Join(root, "s1"), cwd: t.TempDir()}
	s.startFake(wire.Spec{ID: "s1", Cwd: s.cwd}, streamingEngine)

	first := decodeResult[event.Queued](t, s.do(command.Send{Text: "write a lot"}))
	s.waitType(0, event.TurnStarted)
	// The turn streams until the disk is full; the runner ends it.
	waitStatus(t, s.r, func(st command.Status) bool {
		return st.State == wire.StateStorageFailed && st.Turn == 1 && !s.r.turns.inTurn()
	})
	for _, cmd := range []command.Request{command.Send{Text: "short one"}, command.Stop{}, command.SetMode{Mode: "auto"}} {
		reply := s.r.Do(context.Background(), cmd)
		if reply.OK || reply.Error.Code != wire.CodeStorageUnavailable {
			t.Fatalf("%s while storageFailed = %+v, want storage_unavailable", cmd.Cmd(), reply)
		}
	}
	// Nothing a shell saw is missing from the file, nor the reverse.
	s.r.Flush()
	inFile := fileSeqs(t, s.r.store.eventsPath())
	seen := s.rec.Events()
	if len(seen) != len(inFile) || seen[len(seen)-1].Seq != inFile[len(inFile)-1] {
		t.Fatalf("a shell saw %d events up to seq %d, the file holds %d up to %d",
			len(seen), seen[len(seen)-1].Seq, len(inFile), inFile[len(inFile)-1])
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	// No command comes: the runner's own probe finds the room.
	waitStatus(t, s.r, func(st command.Status) bool { return st.State != wire.StateStorageFailed })
	second := decodeResult[event.Queued](t, s.do(command.Send{Text: "short two"}))
	if second.ID == first.ID || idNumber(second.ID) <= idNumber(first.ID) {
		t.Fatalf("ids %s then %s", first.ID, second.ID)
	}
	failure, _ := s.waitFor(0, "the storage failure event", func(ev event.Event) bool {
		return ev.Type == event.Failure && decode[event.FailureData](t, ev).Code == event.FailStorage
	})
	ended, _ := s.waitFor(0, "turn 1's end", func(ev event.Event) bool {
		return ev.Type == event.TurnEnded && decode[event.TurnEndedData](t, ev).Turn == 1
	})
	if ended.Seq < failure.Seq || decode[event.TurnEndedData](t, ended).Outcome != "interrupted" {
		t.Fatalf("turn 1 ended %s at seq %d, the failure at %d", ended.Data, ended.Seq, failure.Seq)
	}
	s.waitFor(0, "turn 2", func(ev event.Event) bool {
		return ev.Type == event.TurnEnded && decode[event.TurnEndedData](t, ev).Turn == 2
	})
	if st := s.r.status(); st.State == wire.StateStorageFailed {
		t.Fatalf("still storageFailed after recovery: %+v", st)
	}

	// A new runner on the same folder goes on from the log.
	if err := s.r.Close(); err != nil {
		t.Fatal(err)
	}
	s.start(wire.Spec{ID: "s1", Cwd: s.cwd, Engine: "fake"})
	third := decodeResult[event.Queued](t, s.do(command.Send{Text: "short three"}))
	if idNumber(third.ID) <= idNumber(second.ID) {
		t.Fatalf("after a restart: id %s after %s", third.ID, second.ID)
	}
	s.waitFor(0, "turn 3", func(ev event.Event) bool {
		return ev.Type == event.TurnStarted && decode[event.TurnStartedData](t, ev).Turn == 3
	})
	if n := len(s.rec.All(event.Failure)); n != 1 {
		t.Fatalf("%d failure events, want 1:\n%s", n, s.dump())
	}
}

// waitStatus waits until the session's status satisfies ok; the bound is a
// deadlock guard, not a timing goal.
func waitStatus(t *testing.T, r *Runner, ok func(command.Status) bool) command.Status {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		st := r.status()
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never came: last %+v", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func decodeResult[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return v
}

func idNumber(id string) int64 {
	var n int64
	for _, c := range id[1:] {
		n = n*10 + int64(c-'0')
	}
	return n
}

// fileSeqs lists the seqs of the events in the log file at path, checking
// they never repeat.
func fileSeqs(t *testing.T, path string) []int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var seqs []int64
	if err := scanEvents(f, func(ev event.Event) {
		if len(seqs) > 0 && ev.Seq <= seqs[len(seqs)-1] {
			t.Fatalf("seq %d after %d", ev.Seq, seqs[len(seqs)-1])
		}
		seqs = append(seqs, ev.Seq)
	}); err != nil {
		t.Fatal(err)
	}
	return seqs
}
