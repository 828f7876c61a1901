package reliability

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/client"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/hunks"
	"github.com/corral-dev/corral/pkg/wire"
)

// shellTally is what the shell-writes scenario counted.
type shellTally struct {
	turns, rejected, commands       int
	changedBytes, changedPaths      int
	edits, hunks, binaryEdits       int
	kinds                           map[hunks.Kind]int
	unreviewableBytes, unreviewable int // changes no shown edit accounts for
	leftBytes, leftPaths            int // differences left once every hunk was rejected
	refused                         int // rejects the runner refused
	afterDecision                   int // edits reported once the reviewer had rejected the turn's hunks
	foldersLeft, foldersMissing     int
	notByCommand                    int // captured edits not recorded as applied by a command (or outside one)
	late, outside                   int // writers left running past their command; edits staged as outside any tool call
	engineEdits                     int // the engine's own edit tool's edits, accepted
	unwritten                       int // accepted engine edits whose write failed, recorded as reverted
	duplicates                      int // a path's change staged twice
}

// TestShellWritesInReviewMode runs sessions in review mode and in auto mode
// on the script engine, each turn of which runs random shell commands that
// change the worktree (shellGen), in some turns the engine's own edit tool
// (a new file, accepted) and a command that leaves a writer running past
// its end (no wait: it appends a moment later, to an existing file or the
// one the edit wrote), and then asks about two more commands, so that the
// turn, and its captured changes, stay open until the test has looked.
// The test lets the first ask wait until the background writer has
// written, then denies it. After each turn it compares the worktree with
// its state before the turn: every changed byte must be accounted for by
// the hunks staged for the reviewer (explain), none twice; in half the
// turns every hunk is then rejected, newest edit first, and the worktree
// must be back to its state before the turn, byte for byte. Counted:
// unreviewable bytes (goal 0), changes staged twice (goal 0), bytes left
// changed after rejecting everything (goal 0), rejects refused, and edits
// reported after the reviewer's decisions (the command that held the turn
// never ran, so it changed nothing).
func TestShellWritesInReviewMode(t *testing.T) {
	turns := size(40, 1000)
	d := startDaemon(t, `{"turns": []}`)
	total := shellTally{kinds: map[hunks.Kind]int{}}
	for i, mode := range []string{"review", "auto"} {
		r := rand.New(rand.NewPCG(20, uint64(i)))
		runShellWrites(t, d, mode, turns, r, &total)
	}
	pass := total.unreviewableBytes == 0 && total.unreviewable == 0 && total.leftBytes == 0 && total.leftPaths == 0 &&
		total.refused == 0 && total.afterDecision == 0 && total.notByCommand == 0 && total.duplicates == 0
	fig := Figure{
		Scenario: "Shell writes in review and auto mode",
		Done: fmt.Sprintf("%d turns (half in review mode, half in auto mode) of %d random shell commands (new files, appends, sed -i, truncation, deletions, renames of files and folders, copies, binary files, symlinks, folders and files replacing each other, untracked and ignored files, nested folders, background children; %d writers left running past their command) and %d edits of the engine's own edit tool (%d more accepted whose write failed, recorded as reverted) changed %d bytes in %d paths; %d edits staged (%d create, %d modify, %d delete; %d binary; %d outside any tool call), %d hunks; every hunk of %d turns rejected",
			total.turns, total.commands, total.late, total.engineEdits, total.unwritten, total.changedBytes, total.changedPaths, total.edits,
			total.kinds[hunks.KindCreate], total.kinds[hunks.KindModify], total.kinds[hunks.KindDelete], total.binaryEdits,
			total.outside, total.hunks, total.rejected),
		Found: fmt.Sprintf("%d unreviewable bytes (%d paths whose change the staged hunks do not account for), %d changes staged twice; %d bytes in %d paths differing from the tree before the turn once every hunk was rejected, %d rejects refused; %d edits reported after the reviewer's decisions; %d empty folders left, %d missing",
			total.unreviewableBytes, total.unreviewable, total.duplicates, total.leftBytes, total.leftPaths, total.refused,
			total.afterDecision, total.foldersLeft, total.foldersMissing),
		Pass: pass,
	}
	report.Record(fig)
	t.Logf("%s: %s", fig.Done, fig.Found)
	if !pass {
		t.Fatalf("%+v", total)
	}
}

// runShellWrites plays one session of the scenario on its own fresh
// repository.
func runShellWrites(t *testing.T, d *daemon, mode string, turns int, r *rand.Rand, total *shellTally) {
	repo := filepath.Join(d.cwd, "repo-"+mode)
	g := newShellGen(r, seedRepo(t, repo, r))
	fifo := filepath.Join(repo, lateFIFO)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}

	// Every turn is written ahead: which ones will be rejected decides
	// what files the next turns can expect.
	type plan struct {
		commands []string
		reject   bool
		late     bool // a writer is left running past its command
	}
	plans := make([]plan, turns)
	var sc struct {
		Turns []map[string]any `json:"turns"`
	}
	for i := range plans {
		p := &plans[i]
		p.reject = r.IntN(2) == 0
		var saved map[string]bool
		if p.reject {
			saved = g.save()
		}
		var steps []map[string]any
		for range 1 + r.IntN(4) {
			c := g.command()
			p.commands = append(p.commands, c)
			steps = append(steps, map[string]any{"tool": "shell", "command": c})
		}
		// The engine's own edits: accepted, so only where every hunk
		// can still be taken back (auto mode) or none will be.
		edited := ""
		if (mode == "auto" || !p.reject) && r.IntN(3) == 0 {
			path, content := g.engineWrite()
			steps = append(steps, map[string]any{"tool": "write", "path": path, "content": content})
			edited = path
		}
		if r.IntN(2) == 0 {
			target := ""
			if edited != "" && r.IntN(2) == 0 {
				target = edited
			}
			c := g.late(target)
			p.commands, p.late = append(p.commands, c), true
			steps = append(steps, map[string]any{"tool": "shell", "command": c})
		}
		steps = append(steps, map[string]any{"tool": "shell", "command": holdCommand},
			map[string]any{"tool": "shell", "command": holdCommand}, map[string]any{"say": "done"})
		sc.Turns = append(sc.Turns, map[string]any{"match": turnText(i), "steps": steps})
		if p.reject {
			g.restore(saved)
		}
	}
	raw, err := json.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	scenario := filepath.Join(d.cwd, "shell-"+mode+".json")
	if err := os.WriteFile(scenario, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := d.c.CreateSession(ctx(t), wire.Spec{Engine: "script", Cwd: repo, Mode: mode, Scenario: scenario, Allow: shellAllow})
	if err != nil {
		t.Fatalf("create: %v\n%s", err, d.Log())
	}
	// The stream lasts the whole run (minutes at full size on a busy
	// machine): a hang is go test's timeout to catch, not a clock's.
	st, err := d.c.Events(t.Context(), s.ID, client.EventsOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	next := func() event.Event {
		t.Helper()
		line, err := st.Next()
		if err != nil {
			t.Fatalf("session %s events: %v\n%s", s.ID, err, d.Log())
		}
		var ev event.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatal(err)
		}
		return ev
	}

	for i, p := range plans {
		before, err := snapshotTree(repo)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.c.Command(ctx(t), s.ID, command.Send{Text: turnText(i)}); err != nil {
			t.Fatalf("send: %v\n%s", err, d.Log())
		}
		firstHold := func(askID string) {
			if p.late {
				total.late++
				waitLate(t, fifo)
			}
			if _, err := d.c.Command(ctx(t), s.ID, command.Answer{AskID: askID, Decision: command.DecisionDeny}); err != nil {
				t.Fatalf("answer %s: %v\n%s", askID, err, d.Log())
			}
		}
		accept := func(h event.HunkStagedData) {
			for _, hk := range h.Edit.Hunks {
				if _, err := d.c.Command(ctx(t), s.ID, command.DecideHunk{EditID: h.EditID, HunkID: hk.ID, Decision: command.DecisionAccept}); err != nil {
					t.Fatalf("accept %s/%s: %v", h.EditID, hk.ID, err)
				}
			}
		}
		staged, by, unwritten, askID := readUntilHeld(t, next, p.commands, firstHold, accept)
		total.unwritten += unwritten
		after, err := snapshotTree(repo)
		if err != nil {
			t.Fatal(err)
		}
		total.turns++
		total.commands += len(p.commands)
		checkShown(before, after, staged, by, total)

		if p.reject {
			total.rejected++
			rejectAll(t, d, s.ID, staged, total)
			restored, err := snapshotTree(repo)
			if err != nil {
				t.Fatal(err)
			}
			for _, path := range paths(before, restored) {
				if b, a := stateOf(before, path), stateOf(restored, path); !same(b, a) {
					total.leftPaths++
					total.leftBytes += changedBytes(b, a)
					t.Logf("%s turn %d: %s differs from before the turn once every hunk was rejected (commands %q)", mode, i, path, p.commands)
				}
			}
			for f := range restored.folders {
				if !before.folders[f] {
					total.foldersLeft++
					t.Logf("%s turn %d: folder %s left once every hunk was rejected (commands %q)", mode, i, f, p.commands)
				}
			}
			for f := range before.folders {
				if !restored.folders[f] {
					total.foldersMissing++
					t.Logf("%s turn %d: folder %s missing once every hunk was rejected (commands %q)", mode, i, f, p.commands)
				}
			}
		}
		answerHold(t, d, s.ID, askID, next, total)
	}
}

func turnText(i int) string { return fmt.Sprintf("[turn %04d]", i) }

// readUntilHeld reads a turn's events up to the second ask of
// holdCommand and returns the hunkStaged events, in order, who each
// editApplied says wrote them, and the ask. An engine's edit whose write
// failed (recorded as reverted by the engine) is left out: it is not in
// the tree, and unwritten counts it. firstHold answers the first ask;
// accept accepts an engine's edit that waits for review.
func readUntilHeld(t *testing.T, next func() event.Event, commands []string, firstHold func(askID string), accept func(event.HunkStagedData)) (staged []event.HunkStagedData, by map[string]string, unwritten int, askID string) {
	t.Helper()
	by = map[string]string{}
	dropped := map[string]bool{}
	holds := 0
	for {
		ev := next()
		switch ev.Type {
		case event.HunkStaged:
			h := dataOf[event.HunkStagedData](ev)
			staged = append(staged, h)
			if !h.Auto {
				accept(h)
			}
		case event.EditApplied:
			switch a := dataOf[event.EditAppliedData](ev); {
			case a.Reverted && a.By == "engine":
				dropped[a.EditID] = true
			case !a.Reverted && by[a.EditID] == "":
				by[a.EditID] = a.By
			}
		case event.AskOpened:
			a := dataOf[event.AskOpenedData](ev)
			if a.Command != holdCommand {
				t.Fatalf("the gate asked about %q (%s), which the scenario expects to be allowed (commands %q)", a.Command, a.Reason, commands)
			}
			if holds++; holds == 1 {
				firstHold(a.AskID)
				continue
			}
			kept := staged[:0]
			for _, h := range staged {
				if !dropped[h.EditID] {
					kept = append(kept, h)
				}
			}
			return kept, by, len(dropped), a.AskID
		case event.TurnEnded:
			t.Fatalf("the turn ended before the command that holds it (commands %q)", commands)
		}
	}
}

// waitLate waits until the turn's background writer has written: it says
// so on the FIFO at path. The bound is a deadlock guard, not a timing
// goal.
func waitLate(t *testing.T, path string) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := os.ReadFile(path)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the background writer never wrote")
	}
}

// checkShown counts what changed between before and after and what of it
// the staged edits do not account for.
func checkShown(before, after tree, staged []event.HunkStagedData, by map[string]string, total *shellTally) {
	byPath := map[string][]*hunks.Edit{}
	type step struct{ path, old, new string }
	seen := map[step]bool{}
	for _, h := range staged {
		switch by[h.EditID] {
		case "engine":
			total.engineEdits++
		case "outside":
			total.outside++
			fallthrough
		case "command":
			if !h.Auto {
				total.notByCommand++
			}
		default:
			total.notByCommand++
		}
		if st := (step{h.Path, h.Edit.OldBlob, h.Edit.NewBlob}); seen[st] {
			total.duplicates++
		} else {
			seen[st] = true
		}
		byPath[h.Path] = append(byPath[h.Path], h.Edit)
		total.edits++
		total.hunks += len(h.Edit.Hunks)
		total.kinds[h.Edit.Kind]++
		if h.Edit.Binary {
			total.binaryEdits++
		}
	}
	all := paths(before, after)
	for p := range byPath {
		if _, ok := before.files[p]; !ok {
			if _, ok := after.files[p]; !ok {
				all = append(all, p) // made and removed within the turn
			}
		}
	}
	for _, p := range all {
		b, a := stateOf(before, p), stateOf(after, p)
		if !same(b, a) {
			total.changedPaths++
			total.changedBytes += changedBytes(b, a)
		}
		if explain(b, a, byPath[p]) != nil {
			total.unreviewable++
			total.unreviewableBytes += changedBytes(b, a)
		}
	}
}

// rejectAll rejects every hunk of the staged edits, newest edit first, as
// a reviewer undoing the turn would.
func rejectAll(t *testing.T, d *daemon, id string, staged []event.HunkStagedData, total *shellTally) {
	t.Helper()
	for i := len(staged) - 1; i >= 0; i-- {
		h := staged[i]
		for _, hk := range h.Edit.Hunks {
			_, err := d.c.Command(ctx(t), id, command.DecideHunk{EditID: h.EditID, HunkID: hk.ID, Decision: command.DecisionReject})
			if err != nil {
				total.refused++
				t.Logf("reject %s/%s of %s: %v", h.EditID, hk.ID, h.Path, err)
			}
		}
	}
}

// answerHold denies the command holding the turn and reads the turn's
// events to its end, counting edits reported after the reviewer's
// decisions.
func answerHold(t *testing.T, d *daemon, id, askID string, next func() event.Event, total *shellTally) {
	t.Helper()
	if _, err := d.c.Command(ctx(t), id, command.Answer{AskID: askID, Decision: command.DecisionDeny}); err != nil {
		t.Fatalf("answer %s: %v\n%s", askID, err, d.Log())
	}
	for {
		ev := next()
		switch ev.Type {
		case event.HunkStaged:
			h := dataOf[event.HunkStagedData](ev)
			total.afterDecision++
			t.Logf("edit %s of %s reported after the reviewer's decisions", h.EditID, h.Path)
		case event.TurnEnded:
			return
		}
	}
}

// dataOf decodes an event's data; a field it cannot decode stays zero,
// which the scenario's checks then count against.
func dataOf[T any](ev event.Event) T {
	var v T
	json.Unmarshal(ev.Data, &v)
	return v
}
