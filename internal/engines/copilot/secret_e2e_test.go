package copilot

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/fakemodel"
)

// TestProviderKeyStaysOutOfToolShells is finding 2 of issue 18 for a
// session on its own model endpoint: the provider's API key reaches the CLI
// inside the session's provider (the protocol), never in an environment, so
// a shell that prints the usual variables and its whole environment finds
// nothing, and nothing of it goes back to the model.
func TestProviderKeyStaysOutOfToolShells(t *testing.T) {
	t.Parallel()
	const key = "sk-corral-provider-secret-0123456789"
	r := newRig(t, fakemodel.Scenario{
		Auth: &fakemodel.Auth{APIKey: key},
		Steps: []fakemodel.Step{
			toolStep("bash", `{"command":"echo \"A=$OPENAI_API_KEY\" > env.txt; env >> env.txt","description":"look for the key","mode":"sync"}`),
			{Text: "Done."},
		},
	}, allow, withCredentials(map[string]string{"openai-api-key": key}))
	r.start()
	r.MustTurn("Find the key.")
	env := readFile(t, filepath.Join(r.Cwd, "env.txt"))
	if !strings.Contains(env, "A=") || !strings.Contains(env, "PATH=") {
		t.Fatalf("the probe did not run: %q", env)
	}
	if strings.Contains(env, key) {
		t.Fatal("the provider key reached the tool's shell")
	}
	for _, req := range r.Fake.Requests() {
		if strings.Contains(string(req.Body), key) {
			t.Fatalf("request %d to the model carries the key in its body", req.Seq)
		}
		if req.Status == 401 {
			t.Fatalf("request %d was refused: the CLI did not send the key", req.Seq)
		}
	}
}
