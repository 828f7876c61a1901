package reliability

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/smallfs"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// diskFullScenario streams a long answer in many pieces: most of what a
// turn writes to the log comes in the middle of the turn.
var diskFullScenario = `{"turns": [], "fallback": {"steps": [
  {"say": "` + strings.Repeat("a long answer streamed in pieces ", 120) + `", "chunks": 40},
  {"say": "done"}]}}`

// TestDiskFullMidTurn runs a session whose state folder is a small, real
// tmpfs, through the real supervisor and runner, and fills it while turns
// stream: the failing session is storageFailed (status and session list),
// its commands are refused with 507 storage_unavailable, the supervisor
// logs it at error level; once room is made the next send is acknowledged,
// a storageFailed failure event is in the log, and after a restart too no
// acknowledged send is missing and no id, turn number or seq repeats.
func TestDiskFullMidTurn(t *testing.T) {
	onSmallFS(t, 8<<20, diskFullMidTurn)
}

func diskFullMidTurn(t *testing.T, root string) Figure {
	rounds := size(2, 20)
	d := startDaemonOn(t, diskFullScenario, filepath.Join(root, "state"))
	id := d.create(t, "auto")
	var acked []string
	refusedWhileFull, failures := 0, 0
	for round := 0; round < rounds; round++ {
		filler := smallfs.Fill(t, root, 96<<10)
		// Send until the log fails, mid-turn or on a send's own event.
		var refusal error
		for i := 0; refusal == nil; i++ {
			if i > 2000 {
				t.Fatalf("round %d: the disk never filled\n%s", round, d.Log())
			}
			text := fmt.Sprintf("round %d message %d", round, i)
			if _, err := d.c.Command(ctx(t), id, command.Send{Text: text}); err != nil {
				refusal = err
				break
			}
			acked = append(acked, text)
		}
		if !errors.Is(refusal, wire.ErrStorageUnavailable) {
			t.Fatalf("round %d: a send on the full disk got %v, want storage_unavailable\n%s", round, refusal, d.Log())
		}
		refusedWhileFull++
		s, err := d.c.Session(ctx(t), id)
		if err != nil || s.Status == nil || s.Status.State != wire.StateStorageFailed {
			t.Fatalf("round %d: session while full: %+v, %v", round, s, err)
		}
		list, err := d.c.Sessions(ctx(t))
		if err != nil || len(list) != 1 || list[0].Status == nil || list[0].Status.State != wire.StateStorageFailed {
			t.Fatalf("round %d: session list while full: %+v, %v", round, list, err)
		}
		for _, body := range []string{`{"cmd":"send","text":"refused"}`, `{"cmd":"stop"}`} {
			if status, reply := postCommand(t, d, id, body); status != http.StatusInsufficientStorage || reply.Error == nil || reply.Error.Code != wire.CodeStorageUnavailable {
				t.Fatalf("round %d: %s while full got %d %+v, want 507 storage_unavailable", round, body, status, reply.Error)
			}
			refusedWhileFull++
		}
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
		text := fmt.Sprintf("round %d after room", round)
		if _, err := d.c.Command(ctx(t), id, command.Send{Text: text}); err != nil {
			t.Fatalf("round %d: the first send with room again: %v\n%s", round, err, d.Log())
		}
		acked = append(acked, text)
		if _, err := waitQuiet(t, d, id); err != nil {
			t.Fatalf("round %d: %v\n%s", round, err, d.Log())
		}
		failures++
	}
	if !loggedAtErrorLevel(d.Log(), "session storage failed") {
		t.Fatalf("the supervisor did not log the storage failure at error level:\n%s", d.Log())
	}
	d.Restart()
	acked = append(acked, "after a restart")
	if _, err := d.c.Command(ctx(t), id, command.Send{Text: "after a restart"}); err != nil {
		t.Fatalf("send after a restart: %v\n%s", err, d.Log())
	}
	lc, err := waitQuiet(t, d, id)
	if err != nil {
		t.Fatalf("%v\n%s", err, d.Log())
	}

	missing, twice := lc.sendsRecorded(acked)
	ids, turns := lc.repeatedNumbers()
	failureEvents := lc.failures(event.FailStorage)
	pass := missing == 0 && twice == 0 && ids == 0 && turns == 0 && lc.repeated == 0 && lc.openTurns == 0 && failureEvents == failures
	fig := Figure{
		Scenario: "Disk full mid-turn",
		Done: fmt.Sprintf("%d times a session's state folder (a real tmpfs) filled while turns streamed, then had room again, then a supervisor restart: %d sends acknowledged, %d commands refused with 507 storage_unavailable while full",
			failures, len(acked), refusedWhileFull),
		Found: fmt.Sprintf("%d acknowledged commands missing, %d recorded twice; %d ids and %d turn numbers repeated, %d seqs repeated; %d turns left open (%d ended as interrupted by the failure); %d storageFailed failure events for %d failures",
			missing, twice, ids, turns, lc.repeated, lc.openTurns, lc.interrupts, failureEvents, failures),
		Pass: pass,
	}
	if !pass {
		t.Errorf("missing %d, twice %d, ids repeated %d, turns repeated %d, seqs repeated %d, open turns %d, failure events %d of %d\n%s",
			missing, twice, ids, turns, lc.repeated, lc.openTurns, failureEvents, failures, d.Log())
	}
	return fig
}

// postCommand posts a command's JSON as a shell does, and returns the
// HTTP status and the error body.
func postCommand(t *testing.T, d *daemon, id, body string) (int, api.ErrorReply) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", d.Socket)
	}}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx(t), http.MethodPost, "http://corral/v1/sessions/"+id+"/commands", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var reply api.ErrorReply
	json.NewDecoder(resp.Body).Decode(&reply)
	return resp.StatusCode, reply
}

// loggedAtErrorLevel reports whether a line of the supervisor's log holds
// msg at error level.
func loggedAtErrorLevel(log, msg string) bool {
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, msg) && strings.Contains(line, "ERROR") {
			return true
		}
	}
	return false
}

// repeatedNumbers counts the message ids recorded twice by userMessage
// events, and the turn numbers started twice.
func (lc *logCheck) repeatedNumbers() (ids, turns int) {
	seenIDs, seenTurns := map[string]bool{}, map[int]bool{}
	for _, ev := range lc.events {
		switch ev.Type {
		case event.UserMessage:
			var m event.UserMessageData
			json.Unmarshal(ev.Data, &m)
			if seenIDs[m.ID] {
				ids++
			}
			seenIDs[m.ID] = true
		case event.TurnStarted:
			var ts event.TurnStartedData
			json.Unmarshal(ev.Data, &ts)
			if seenTurns[ts.Turn] {
				turns++
			}
			seenTurns[ts.Turn] = true
		}
	}
	return ids, turns
}

// failures counts the failure events of code.
func (lc *logCheck) failures(code event.FailureCode) int {
	n := 0
	for _, ev := range lc.events {
		if ev.Type != event.Failure {
			continue
		}
		var f event.FailureData
		if json.Unmarshal(ev.Data, &f) == nil && f.Code == code {
			n++
		}
	}
	return n
}
