package cli

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/zalando/go-keyring"

	"github.com/corral-dev/corral/internal/creds"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
)

// runIn runs the command line with stdin as its standard input.
func runIn(stdin string, args ...string) (int, string, string) {
	var out, errw bytes.Buffer
	code := mainWith(strings.NewReader(stdin), args, &out, &errw)
	return code, out.String(), errw.String()
}

func TestCredsFromTheCommandLine(t *testing.T) {
	keyring.MockInit()
	startDaemon(t)
	const secret = "sk-ant-cli-test-secret"

	code, out, errOut := runIn(secret+"\n", "creds", "set", "anthropic-api-key")
	if code != 0 || !strings.Contains(out, "anthropic-api-key set in OS keyring") {
		t.Fatalf("creds set: %d %q %q", code, out, errOut)
	}
	if v, _ := creds.NewKeyring(creds.OSKeyring{}).Get(creds.AnthropicAPIKey); v != secret {
		t.Fatalf("the keyring holds %q; the trailing newline must be dropped", v)
	}
	table := mustRun(t, "creds", "ls")
	if !strings.Contains(table, "Store: keyring") || !regexpLine(table, `anthropic-api-key\s+yes\s+claude, copilot`) || !regexpLine(table, `github-token\s+no\s+copilot`) {
		t.Fatalf("creds ls:\n%s", table)
	}
	var env wire.Reply
	if err := json.Unmarshal([]byte(mustRun(t, "creds", "ls", "--json")), &env); err != nil || !env.OK {
		t.Fatalf("creds ls --json: %v %+v", err, env)
	}
	var reply api.CredentialsReply
	if err := json.Unmarshal(env.Result, &reply); err != nil || len(reply.Items) != 3 || !reply.Items[0].Set {
		t.Fatalf("creds ls --json result %s: %v", env.Result, err)
	}
	for _, o := range []string{out, errOut, table, string(env.Result)} {
		if strings.Contains(o, secret) {
			t.Fatalf("the secret was printed: %q", o)
		}
	}

	// Refusals: an unknown item (usage), nothing on stdin, a secret the
	// supervisor refuses, removing an item that is not set.
	if code, _, errOut := runIn("x", "creds", "set", "aws-key"); code != 2 || !strings.Contains(errOut, "unknown credential item") {
		t.Fatalf("creds set aws-key: %d %q", code, errOut)
	}
	if code, _, errOut := runIn("", "creds", "set", "openai-api-key"); code != 1 || !strings.Contains(errOut, "no secret on standard input") {
		t.Fatalf("creds set with empty stdin: %d %q", code, errOut)
	}
	if code, _, errOut := runIn("sk bad\x01", "creds", "set", "openai-api-key"); code != 1 || !strings.Contains(errOut, "control character") {
		t.Fatalf("creds set with a control character: %d %q", code, errOut)
	}
	code, out, _ = runIn("", "creds", "rm", "github-token", "--json")
	if err := json.Unmarshal([]byte(out), &env); code != 1 || err != nil || env.OK || env.Error.Code != wire.CodeNotFound {
		t.Fatalf("creds rm of an unset item --json: %d %q", code, out)
	}

	if out := mustRun(t, "creds", "rm", "anthropic-api-key"); !strings.Contains(out, "anthropic-api-key removed") {
		t.Fatalf("creds rm: %q", out)
	}
	if v, _ := creds.NewKeyring(creds.OSKeyring{}).Get(creds.AnthropicAPIKey); v != "" {
		t.Fatal("creds rm left the item in the keyring")
	}
}

// regexpLine reports whether some line of text matches pattern.
func regexpLine(text, pattern string) bool {
	re := regexp.MustCompile(pattern)
	for _, line := range strings.Split(text, "\n") {
		if re.MatchString(line) {
			return true
		}
	}
	return false
}
