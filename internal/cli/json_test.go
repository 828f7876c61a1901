package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/zalando/go-keyring"

	"github.com/corral-dev/corral/internal/testrunner"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// envelope decodes out as exactly one JSON envelope line.
func envelope(t *testing.T, args []string, out string) wire.Reply {
	t.Helper()
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
		t.Fatalf("%v --json printed %q, want one line", args, out)
	}
	var r wire.Reply
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("%v --json printed %q: %v", args, out, err)
	}
	if r.OK == (r.Error != nil) {
		t.Fatalf("%v --json: ok %v with error %v", args, r.OK, r.Error)
	}
	return r
}

// Every command answers --json with one envelope on stdout, {ok, result}
// or {ok:false, error} with a code, and nothing of its own on stderr;
// streaming commands print NDJSON and end a failure with an envelope line.
func TestJSONEnvelopeOnEveryCommand(t *testing.T) {
	keyring.MockInit()
	startDaemon(t)
	out := mustRun(t, "new", "--engine", "script", "--scenario", testrunner.Scenario(t, echoScenario), "--json")
	var created struct {
		ID string `json:"id"`
	}
	if r := envelope(t, []string{"new"}, out); json.Unmarshal(r.Result, &created) != nil || created.ID == "" {
		t.Fatalf("new --json result %s", r.Result)
	}
	id := created.ID
	mustRun(t, "send", id, "hello")
	mustRun(t, "wait", id, "--for", "idle")

	type tc struct {
		args []string
		code int       // exit status
		err  wire.Code // "" when ok
	}
	cases := []tc{
		{[]string{"new", "--engine", "script"}, 0, ""},
		{[]string{"new"}, 2, wire.CodeBadRequest}, // no --engine
		{[]string{"ls"}, 0, ""},
		{[]string{"send", id, "again"}, 0, ""},
		{[]string{"steer", id, "left"}, 0, ""},
		{[]string{"stop", id}, 0, ""},
		{[]string{"cancel", id, "m999"}, 1, wire.CodeNotFound},
		{[]string{"wait", id, "--for", "idle"}, 0, ""},
		{[]string{"answer", id, "a9", "allow"}, 1, wire.CodeNotFound},
		// The runner's refusal: still an envelope.
		{[]string{"hunk", id, "e1/h1", "accept"}, 1, wire.CodeNotFound},
		{[]string{"status", id}, 0, ""},
		{[]string{"goal", id, "get"}, 0, ""},
		{[]string{"mode", id, "auto"}, 0, ""},
		{[]string{"mode", id, "sideways"}, 1, wire.CodeBadRequest},
		{[]string{"spend-cap", id, "2"}, 0, ""},
		{[]string{"spend-cap", id, "lots"}, 2, wire.CodeBadRequest},
		{[]string{"fork", "nosuchsession"}, 1, wire.CodeNotFound},
		{[]string{"workspace", id}, 1, wire.CodeNotFound},
		{[]string{"schema"}, 0, ""},
		{[]string{"schema", "--format", "typescript"}, 0, ""},
		{[]string{"creds", "ls"}, 0, ""},
		{[]string{"version"}, 0, ""},
		{[]string{"completion", "bash"}, 0, ""},
		{[]string{"run"}, 2, wire.CodeBadRequest}, // no prompt
		{[]string{"attach", id}, 1, ""},           // stdin is no terminal
		{[]string{"serve", "--max-live", "0"}, 2, wire.CodeBadRequest},
		{[]string{"console", "nosuchsession"}, 1, wire.CodeNotFound},
		{[]string{"engines"}, 0, ""},
		{[]string{"health"}, 0, ""},
		{[]string{"health", "--client-version"}, 0, ""},
		{[]string{"graph", "status"}, 0, ""},
		{[]string{"graph", "next", "nosuchrun"}, 1, wire.CodeNotFound},
		{[]string{"doctor", "--runner", "/nonexistent/runner", "--engines", ""}, 1, wire.CodeUnavailable},
		{[]string{"rm", id}, 0, ""},
		{[]string{"status", id}, 1, wire.CodeNotFound},
	}
	// events and watch stream (below); mcp's stdout is the MCP protocol.
	covered := map[string]bool{"events": true, "watch": true, "mcp": true}
	for _, c := range cases {
		covered[c.args[0]] = true
		args := append(slices.Clone(c.args), "--json")
		code, out, errOut := run(args...)
		if code != c.code {
			t.Errorf("%v: exit %d, want %d (stdout %q, stderr %q)", args, code, c.code, out, errOut)
			continue
		}
		if errOut != "" {
			t.Errorf("%v: stderr %q, want nothing", args, errOut)
		}
		r := envelope(t, args, out)
		switch {
		case c.code == 0 && !r.OK:
			t.Errorf("%v: %+v, want ok", args, r.Error)
		case c.code != 0 && r.OK:
			t.Errorf("%v: ok, want a failure", args)
		case c.err != "" && (r.Error == nil || r.Error.Code != c.err):
			t.Errorf("%v: %+v, want code %s", args, r.Error, c.err)
		}
	}
	for _, c := range commands() {
		if !covered[c.name] {
			t.Errorf("command %s has no --json case here", c.name)
		}
	}
}

// events and watch --json print NDJSON, and a failure as a last envelope
// line.
func TestJSONStreams(t *testing.T) {
	startDaemon(t)
	id := newScript(t, echoScenario)
	mustRun(t, "send", id, "hello")
	mustRun(t, "wait", id, "--for", "idle")
	for _, args := range [][]string{
		{"events", id, "--json"},
		{"watch", id, "--follow=false", "--json"},
	} {
		out := mustRun(t, args...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) < 3 {
			t.Fatalf("%v: %q", args, out)
		}
		for _, l := range lines {
			var ev event.Event
			if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.Seq == 0 {
				t.Fatalf("%v: line %q is no event: %v", args, l, err)
			}
		}
	}
	code, out, errOut := run("events", "nosuchsession", "--json")
	if code != 1 || errOut != "" {
		t.Fatalf("events of an unknown session: exit %d, stderr %q", code, errOut)
	}
	if r := envelope(t, []string{"events"}, out); r.OK || r.Error.Code != wire.CodeNotFound {
		t.Fatalf("events of an unknown session: %q", out)
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, _ := run(args...)
		if code != 0 || !strings.HasPrefix(out, "supervisor ") || !strings.Contains(out, "go1.") {
			t.Fatalf("%v: %d %q", args, code, out)
		}
	}
	r := envelope(t, []string{"version"}, mustRun(t, "version", "--json"))
	var v struct {
		Version, Go, Platform string
	}
	if err := json.Unmarshal(r.Result, &v); err != nil || v.Version == "" || !strings.HasPrefix(v.Go, "go1.") || !strings.Contains(v.Platform, "/") {
		t.Fatalf("version --json: %s %v", r.Result, err)
	}
}
