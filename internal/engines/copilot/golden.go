package copilot

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/corral-dev/corral/internal/creds"
	"github.com/corral-dev/corral/internal/engineprobe"
	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/internal/transcript"
	"github.com/corral-dev/corral/pkg/engine"
)

// The golden turn: create a session, send, approve a file write, shut
// down (the fake model plays engineprobe.GoldenScenario("copilot")). Its
// protocol is recorded per CLI version in testdata/golden/<version>/: what
// the adapter sends, normalised (goldenSent), and the kinds of message it
// receives (goldenReceived). The package's golden test records and checks
// it; ReplayGolden replays it on whatever CLI is installed (`supervisor
// doctor engines`).
const (
	goldenSent     = "canonical-turn.sent.jsonl"
	goldenReceived = "canonical-turn.received.txt"
	// goldenPrompt and goldenModel are in the transcript.
	goldenPrompt = "Please create hello.txt containing a greeting."
	goldenModel  = "gpt-4.1"
)

//go:embed testdata/golden
var goldenFS embed.FS

// goldenDir holds the transcripts, one folder per CLI version: on disk for
// the tests (which may rewrite them), embedded for a replay.
var (
	goldenDir      = transcript.Golden{Dir: filepath.Join("testdata", "golden")}
	embeddedGolden = transcript.Golden{Dir: "testdata/golden", FS: goldenFS}
)

// goldenTurn is a golden turn's traffic in its recorded form.
type goldenTurn struct {
	// version is the CLI's, from its answer to connect.
	version string
	// sent is what the adapter sent, in order, normalised.
	sent []string
	// received lists the kinds of message received, sorted.
	received []string
}

// renderGolden renders the traffic of a golden turn; endpoint is the model
// endpoint the session was given.
func renderGolden(msgs []jsonrpc.Traced, endpoint string) (goldenTurn, error) {
	var g goldenTurn
	methods := map[string]string{} // request id → method
	kinds := map[string]bool{}
	connectID := ""
	for _, m := range msgs {
		msg, err := jsonrpc.ParseMessage(m.Body)
		if err != nil {
			return g, fmt.Errorf("traffic: %w", err)
		}
		if m.Dir == jsonrpc.Sent {
			methods[string(msg.ID)] = msg.Method
			if msg.Method == methodConnect {
				connectID = string(msg.ID)
			}
			line, err := normalizeSent(m.Body, endpoint)
			if err != nil {
				return g, err
			}
			g.sent = append(g.sent, line)
			continue
		}
		switch {
		case msg.Method == notifySessionEvent:
			var p sessionEventParams
			if err := json.Unmarshal(msg.Params, &p); err != nil {
				return g, fmt.Errorf("session event: %w", err)
			}
			kinds["event "+p.Event.Type] = true
		case msg.Kind == jsonrpc.KindRequest:
			kinds["request "+msg.Method] = true
		case msg.Kind == jsonrpc.KindNotification:
			kinds["notification "+msg.Method] = true
		case msg.Error != nil:
			kinds["error for "+methods[string(msg.ID)]] = true
		default:
			kinds["result for "+methods[string(msg.ID)]] = true
			if connectID != "" && string(msg.ID) == connectID && g.version == "" {
				var res connectResult
				if err := json.Unmarshal(msg.Result, &res); err != nil || res.Version == "" {
					return g, fmt.Errorf("connect's answer names no CLI version: %s", m.Body)
				}
				g.version = res.Version
			}
		}
	}
	if g.version == "" {
		return g, errors.New("no answer to connect in the traffic")
	}
	for k := range kinds {
		g.received = append(g.received, k)
	}
	sort.Strings(g.received)
	return g, nil
}

// normalizeSent replaces what differs between runs (ids, paths, ports) by
// placeholders and leaves out the provider's API key (a secret, which the
// tests do not pass and a replay does); keys come out sorted.
func normalizeSent(body []byte, endpoint string) (string, error) {
	var msg map[string]any
	if err := json.Unmarshal(body, &msg); err != nil {
		return "", fmt.Errorf("sent message: %w", err)
	}
	if params, ok := msg["params"].(map[string]any); ok {
		for key, placeholder := range map[string]string{
			"sessionId": "<session>", "requestId": "<request>", "workingDirectory": "<cwd>",
		} {
			if _, ok := params[key]; ok {
				params[key] = placeholder
			}
		}
		if p, ok := params["provider"].(map[string]any); ok {
			if p["baseUrl"] == endpoint {
				p["baseUrl"] = "<endpoint>"
			}
			delete(p, "apiKey")
		}
	}
	var out strings.Builder
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(msg); err != nil {
		return "", err
	}
	return strings.TrimSuffix(out.String(), "\n"), nil
}

// ReplayGolden is the Copilot engine's engineprobe.Replay: it plays the
// golden turn on the installed Copilot CLI (o.EnginesDir; empty: PATH),
// env as its base environment, against the fake model at o.ModelEndpoint
// and compares its protocol with the transcript recorded for its version.
// It returns the CLI's version, and an error naming the first differing
// message when they differ (transcript.ErrNoGolden wrapped when no
// transcript is recorded for that version), or when the turn could not be
// played. The CLI unpacks itself into the session folder first (about
// 235 MB).
func ReplayGolden(ctx context.Context, o engineprobe.ReplayRequest, env []string) (version string, err error) {
	var rec jsonrpc.Traffic
	e := New().(*Engine)
	e.trace = rec.Record
	opts := o.StartOptions(env, creds.OpenAIAPIKey, nil)
	opts.Model = goldenModel
	if _, err := e.Start(ctx, opts); err != nil {
		e.Close()
		return "", fmt.Errorf("start the CLI: %w", err)
	}
	_, turnErr := e.Turn(ctx, engine.TurnInput{ID: "m1", Text: goldenPrompt, Kind: "send"})
	if err := e.Close(); err != nil && turnErr == nil {
		turnErr = err
	}
	g, err := renderGolden(rec.Messages(), o.ModelEndpoint)
	if err != nil {
		return g.version, err
	}
	// The protocol first: a turn that failed because a message changed is
	// named by the message.
	if err := embeddedGolden.Compare(g.version, goldenSent, g.sent); err != nil {
		return g.version, err
	}
	if err := embeddedGolden.Compare(g.version, goldenReceived, g.received); err != nil {
		return g.version, err
	}
	if turnErr != nil {
		return g.version, fmt.Errorf("the golden turn: %w", turnErr)
	}
	return g.version, nil
}
