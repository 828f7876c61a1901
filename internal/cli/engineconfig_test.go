package cli

import (
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/client"
	"github.com/corral-dev/corral/pkg/wire"
)

// The engine settings given to new travel typed in the create request. What
// the supervisor does with them (check, complete, store in meta.json) is
// tested in internal/supervisor; a codex session would need the codex CLI
// to start. So the supervisor here is one handler on the state folder's
// socket that records the request.
func TestNewWithEngineConfig(t *testing.T) {
	state := t.TempDir()
	t.Setenv("CORRAL_STATE", state)
	got := recordCreate(t, state)
	id := strings.TrimSpace(mustRun(t, "new", "--engine", "codex", "--engine-config", "auth=login", "--engine-config", "requestMaxRetries=4", "--cwd", t.TempDir()))
	spec := <-got
	if id != spec.ID || spec.Engine != "codex" || len(spec.EngineConfig) != 2 ||
		spec.EngineConfig["auth"] != "login" || spec.EngineConfig["requestMaxRetries"] != 4.0 {
		t.Fatalf("new printed %q and sent %+v, want engineConfig auth=login and the number requestMaxRetries=4", id, spec)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--engine", "codex", "--engine-config", "retries=1"}, "codex.retries: the codex engine has no such setting"},
		{[]string{"--engine", "codex", "--engine-config", "requestMaxRetries=many"}, `want an integer of at least 0, not "many"`},
		{[]string{"--engine", "codex", "--engine-config", "auth"}, "want KEY=VALUE"},
	} {
		code, _, errOut := run(append([]string{"new"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("new %v: exit %d %q, want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}

// recordCreate serves the supervisor's API on state's socket as far as a
// create: it sends each created spec, with an id, to the channel it returns.
func recordCreate(t *testing.T, state string) <-chan wire.Spec {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(state, client.SocketName))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan wire.Spec, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var spec wire.Spec
		if r.Method != http.MethodPost || r.URL.Path != api.Version+"/sessions" || json.NewDecoder(r.Body).Decode(&spec) != nil {
			http.NotFound(w, r)
			return
		}
		spec.ID = "0123456789ab"
		got <- spec
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(api.SessionReply{OK: true, Session: &api.Session{ID: spec.ID, Spec: spec}})
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return got
}

func TestServeEngineConfigFlag(t *testing.T) {
	d := engineDefaults{}
	for _, v := range []string{"codex.requestMaxRetries=4", "copilot.offline=false", "codex.auth=login", "my-plugin.mode=fast"} {
		if err := d.Set(v); err != nil {
			t.Fatalf("Set(%q): %v", v, err)
		}
	}
	if got := d.String(); got != "codex.auth=login,codex.requestMaxRetries=4,copilot.offline=false,my-plugin.mode=fast" {
		t.Fatalf("String() = %q", got)
	}
	for _, v := range []string{"requestMaxRetries=4", "codex.=1", "codex.retries=1", "copilot.offline=maybe", "codex.requestMaxRetries"} {
		if err := d.Set(v); err == nil {
			t.Errorf("Set(%q) accepted", v)
		}
	}
	code, _, errOut := run("serve", "--engine-config", "codex.retries=1", "--state", t.TempDir())
	if code != 2 || !strings.Contains(errOut, "codex.retries: the codex engine has no such setting") {
		t.Fatalf("serve with a bad default: exit %d %q", code, errOut)
	}
}
