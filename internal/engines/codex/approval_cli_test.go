package codex

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

const (
	origF    = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"
	patchedF = "a\nB\nc\nd\ne\nf\ng\nh\nI\nj\n"
	halfF    = "a\nB\nc\nd\ne\nf\ng\nh\ni\nj\n" // the reviewer's partial write: first hunk only
	newTxt   = "brand\nnew\n"
)

// approvalScenario: an escalated command, then a two-file patch (an update
// with two hunks and a new file), then a final answer.
func approvalScenario() fakemodel.Scenario {
	return script(
		fakemodel.Step{Name: "cmd", Tools: tools(shellCall("call_cmd", `printf 'hi\n' > cmd.txt`, true))},
		fakemodel.Step{Name: "patch", Tools: tools(patchCall("call_patch", "*** Begin Patch\n"+
			"*** Update File: f.txt\n@@\n a\n-b\n+B\n c\n@@\n h\n-i\n+I\n j\n"+
			"*** Add File: new.txt\n+brand\n+new\n"+
			"*** End Patch\n"))},
		fakemodel.Step{Name: "final", Text: "Done."},
	)
}

func TestApprovalsReachTheGateAndDecideWhatIsWritten(t *testing.T) {
	t.Parallel()
	deny := func(msg string) func(engine.ToolCall) engine.Verdict {
		return func(engine.ToolCall) engine.Verdict { return engine.Verdict{Message: msg} }
	}
	cases := []struct {
		name string
		// verdicts for: the command, f.txt, new.txt
		cmd, f, n func(engine.ToolCall) engine.Verdict
		// the test acts as the runner writing accepted hunks
		runnerWritesF              bool
		wantCmd, wantF, wantNew    string // "" means absent
		wantOutcomeCmd, wantOutPat string
		wantToModel                []string
	}{
		{
			name: "all allowed", cmd: allow, f: allow, n: allow,
			wantCmd: "hi\n", wantF: patchedF, wantNew: newTxt,
			wantOutcomeCmd: "ok", wantOutPat: "ok",
		},
		{
			name: "reviewer applies part",
			cmd:  deny("not now"),
			f: func(engine.ToolCall) engine.Verdict {
				return engine.Verdict{Applied: true, Message: "applied hunk 1 of 2; hunk 2 rejected: keep i lowercase"}
			},
			n:             allow,
			runnerWritesF: true,
			wantCmd:       "", wantF: halfF, wantNew: newTxt,
			wantOutcomeCmd: "denied", wantOutPat: "denied",
			wantToModel: []string{"not now", "keep i lowercase", "approved and written exactly as you proposed", "rejected by user"},
		},
		{
			name: "all denied",
			cmd:  deny("no commands today"), f: deny("wrong file"), n: deny("not wanted"),
			wantCmd: "", wantF: origF, wantNew: "",
			wantOutcomeCmd: "denied", wantOutPat: "denied",
			wantToModel: []string{"no commands today", "wrong file", "not wanted"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var q verdicts
			r := newRig(t, approvalScenario(), q.decide)
			fPath := filepath.Join(r.Cwd, "f.txt")
			writeFile(t, fPath, origF)
			q.add(tc.cmd)
			q.add(func(c engine.ToolCall) engine.Verdict {
				if tc.runnerWritesF {
					writeFile(t, fPath, halfF)
				}
				return tc.f(c)
			})
			q.add(tc.n)
			r.start("")
			res := r.MustTurn("please do the work")
			if res.Text != "Done." {
				t.Errorf("turn text %q, want Done.", res.Text)
			}

			calls := r.Host.Calls()
			if len(calls) != 3 {
				t.Fatalf("Permit calls %d, want 3: %+v", len(calls), calls)
			}
			if c := calls[0]; c.Kind != engine.KindShell || c.Command != `printf 'hi\n' > cmd.txt` {
				t.Errorf("command call %+v, want the unwrapped shell command", c)
			}
			checkEdit(t, calls[1], fPath, origF, true, patchedF)
			checkEdit(t, calls[2], filepath.Join(r.Cwd, "new.txt"), "", false, newTxt)

			checkFile(t, filepath.Join(r.Cwd, "cmd.txt"), tc.wantCmd)
			checkFile(t, fPath, tc.wantF)
			checkFile(t, filepath.Join(r.Cwd, "new.txt"), tc.wantNew)

			fins := enginetest.Events[event.ToolFinishedData](t, r.Host, event.ToolFinished)
			outcomes := map[string]string{}
			for _, f := range fins {
				outcomes[f.ToolID] = f.Outcome
			}
			if outcomes["call_cmd"] != tc.wantOutcomeCmd || outcomes["call_patch"] != tc.wantOutPat {
				t.Errorf("tool outcomes %v, want command %s and patch %s", outcomes, tc.wantOutcomeCmd, tc.wantOutPat)
			}
			final := r.Fake.Requests()
			last := final[len(final)-1]
			for _, want := range tc.wantToModel {
				if !last.ContainsText(want) {
					t.Errorf("the model was never told %q", want)
				}
			}
		})
	}
}

func checkEdit(t *testing.T, c engine.ToolCall, path, before string, existed bool, after string) {
	t.Helper()
	if c.Kind != engine.KindEdit || c.Edit == nil {
		t.Fatalf("call %+v is not an edit", c)
	}
	e := c.Edit
	if e.Path != path || string(e.Before) != before || e.Existed != existed || string(e.After) != after || e.Delete {
		t.Errorf("edit proposal %s: before %q existed %v after %q delete %v; want %s %q %v %q", c.ID, e.Before, e.Existed, e.After, e.Delete, path, before, existed, after)
	}
}

func checkFile(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	switch {
	case want == "" && os.IsNotExist(err):
	case want == "" && err == nil:
		t.Errorf("%s exists with %q, want it absent", filepath.Base(path), b)
	case err != nil:
		t.Errorf("%s: %v, want %q", filepath.Base(path), err, want)
	case string(b) != want:
		t.Errorf("%s holds %q, want %q", filepath.Base(path), b, want)
	}
}

// The gate sees the command's network access as a fetch when Codex asks
// for it; without a network proxy Codex never does, so this is a unit test
// of the mapping.
func TestNetworkURL(t *testing.T) {
	for _, tc := range []struct{ proto, want string }{
		{"https", "https://example.test"}, {"socks5Tcp", "socks5://example.test"}, {"odd", "odd://example.test"},
	} {
		if got := networkURL(networkContext{Host: "example.test", Protocol: tc.proto}); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.proto, got, tc.want)
		}
	}
	if !strings.HasPrefix(networkURL(networkContext{Host: "h", Protocol: "http"}), "http://") {
		t.Error("http")
	}
}
