package codex

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// A replay stands in for "codex app-server" by playing back recorded
// traffic (testdata/transcripts, recorded from codex-cli 0.169.0 against a
// mock model). It sends the recorded server lines in order; a recorded
// response waits for the engine to send a request of the same method and
// takes its id; a recorded server request waits for the engine's answer.
// Requests the recording never answered get a JSON-RPC error.
type replay struct {
	t      testing.TB
	script []jsonrpc.Message
	// methods maps the recorded client request ids to their method and
	// params, to know what each recorded response answers.
	methods map[string]jsonrpc.Message
	// skip drops recorded exchanges the engine does not make (the
	// recorder's probes).
	skip func(req jsonrpc.Message) bool

	mu      sync.Mutex
	fromEng []jsonrpc.Message // everything the engine sent, in order
	done    chan struct{}
}

// loadReplay reads a transcript, with the recorded worktree and home
// replaced by the test's folders and the recorder's provider named as
// Corral's.
func loadReplay(t testing.TB, name, cwd, home string, renameProvider bool) *replay {
	t.Helper()
	read := func(file string) []jsonrpc.Message {
		f, err := os.Open(filepath.Join("testdata", "transcripts", name, file))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var out []jsonrpc.Message
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, maxLineBytes)
		for sc.Scan() {
			line := strings.NewReplacer("@CWD@", cwd, "@HOME@", home).Replace(sc.Text())
			if renameProvider {
				line = strings.ReplaceAll(line, `"modelProvider":"mock"`, `"modelProvider":"corral"`)
			}
			m, err := jsonrpc.ParseMessage([]byte(line))
			if err != nil {
				t.Fatalf("%s/%s: %v", name, file, err)
			}
			out = append(out, m)
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	r := &replay{t: t, script: read("from-server.ndjson"), methods: map[string]jsonrpc.Message{}, skip: func(jsonrpc.Message) bool { return false }, done: make(chan struct{})}
	for _, m := range read("to-server.ndjson") {
		if m.Kind == jsonrpc.KindRequest {
			r.methods[string(m.ID)] = m
		}
	}
	return r
}

// launcher returns a launchFunc that connects the engine to the replay.
func (r *replay) launcher() launchFunc {
	return func(spec spawnSpec, hooks serverHooks) (*serverProc, error) {
		engRead, replayWrite := io.Pipe()
		replayRead, engWrite := io.Pipe()
		gone := make(chan struct{})
		s := &serverProc{stderr: func() []string { return []string{"replayed server"} }, gone: gone}
		s.conn = jsonrpc.NewConn(engRead, engWrite, connOptions(s, spec, hooks))
		s.closeInput = func() { engWrite.Close() }
		s.kill = func() {
			engWrite.Close()
			replayWrite.Close()
			<-s.gone
		}
		go r.run(replayRead, replayWrite)
		go func() {
			err := s.conn.Serve()
			s.exit = "exited"
			if err != nil {
				s.exit += " (" + err.Error() + ")"
			}
			close(gone)
			hooks.gone(s)
		}()
		return s, nil
	}
}

// run plays the script.
func (r *replay) run(in *io.PipeReader, out *io.PipeWriter) {
	defer close(r.done)
	defer in.Close()
	defer out.Close()
	msgs := make(chan jsonrpc.Message)
	go func() {
		defer close(msgs)
		sc := bufio.NewScanner(in)
		sc.Buffer(nil, maxLineBytes)
		for sc.Scan() {
			m, err := jsonrpc.ParseMessage(sc.Bytes())
			if err != nil {
				r.t.Errorf("the engine sent an unreadable line %q: %v", sc.Text(), err)
				continue
			}
			r.mu.Lock()
			r.fromEng = append(r.fromEng, m)
			r.mu.Unlock()
			select {
			case msgs <- m:
			case <-r.done:
				return
			}
		}
	}()
	write := func(v any) bool {
		line, err := json.Marshal(v)
		if err != nil {
			r.t.Errorf("replay: %v", err)
			return false
		}
		_, err = out.Write(append(line, '\n'))
		return err == nil
	}
	refuse := func(m jsonrpc.Message) bool {
		return write(map[string]any{"id": m.ID, "error": jsonrpc.Error{Code: -32600, Message: "not in the recording: " + m.Method}})
	}
	// await reads the engine's messages until want accepts one.
	await := func(want func(jsonrpc.Message) bool) (jsonrpc.Message, bool) {
		for m := range msgs {
			if want(m) {
				return m, true
			}
			if m.Kind == jsonrpc.KindRequest && !refuse(m) {
				return jsonrpc.Message{}, false
			}
		}
		return jsonrpc.Message{}, false
	}
	for _, m := range r.script {
		switch m.Kind {
		case jsonrpc.KindReply:
			req, ok := r.methods[string(m.ID)]
			if !ok || r.skip(req) {
				continue
			}
			got, ok := await(func(x jsonrpc.Message) bool { return x.Kind == jsonrpc.KindRequest && x.Method == req.Method })
			if !ok {
				return
			}
			resp := map[string]any{"id": got.ID}
			if m.Error != nil {
				resp["error"] = m.Error
			} else {
				resp["result"] = m.Result
			}
			if !write(resp) {
				return
			}
		case jsonrpc.KindNotification:
			if !write(map[string]any{"method": m.Method, "params": m.Params}) {
				return
			}
		case jsonrpc.KindRequest:
			if !write(map[string]any{"id": m.ID, "method": m.Method, "params": m.Params}) {
				return
			}
			id := string(m.ID)
			if _, ok := await(func(x jsonrpc.Message) bool { return x.Kind == jsonrpc.KindReply && string(x.ID) == id }); !ok {
				return
			}
		}
	}
	// The recording is over: refuse whatever comes until stdin closes.
	await(func(jsonrpc.Message) bool { return false })
}

// sent returns what the engine sent, as "method" for requests and
// notifications and "reply <id> <result>" for answers.
func (r *replay) sent() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, m := range r.fromEng {
		switch m.Kind {
		case jsonrpc.KindReply:
			out = append(out, fmt.Sprintf("reply %s %s", m.ID, m.Result))
		default:
			out = append(out, m.Method)
		}
	}
	return out
}

// replayRig is an engine connected to a replay.
type replayRig struct {
	t    testing.TB
	r    *replay
	host *enginetest.Host
	eng  *Engine
	cwd  string
	opts engine.StartOptions
}

func newReplayRig(t testing.TB, name string, decide func(context.Context, engine.ToolCall) engine.Verdict) *replayRig {
	return newReplayRigProvider(t, name, decide, true)
}

// newReplayRigProvider is newReplayRig; renameProvider false keeps the
// recorder's own provider name in the server's answers.
func newReplayRigProvider(t testing.TB, name string, decide func(context.Context, engine.ToolCall) engine.Verdict, renameProvider bool) *replayRig {
	t.Helper()
	dir, cwd := t.TempDir(), t.TempDir()
	rr := &replayRig{t: t, cwd: cwd, host: enginetest.NewHost(decide)}
	rr.r = loadReplay(t, name, cwd, filepath.Join(dir, "engine", "codex"), renameProvider)
	eng := New().(*Engine)
	eng.launch = rr.r.launcher()
	eng.locate = func(map[string]string) (string, error) { return "codex", nil }
	eng.version = func(context.Context, string, []string) (string, error) { return "0.169.0", nil }
	rr.eng = eng
	rr.opts = engine.StartOptions{
		SessionID: "s-replay", Dir: dir, Cwd: cwd, Model: testModel, ModelEndpoint: "http://127.0.0.1:9/v1",
		Credentials: map[string]string{CredentialItem: testKey}, Env: []string{"PATH=/usr/bin"},
		Host: rr.host, Logger: zaptest.NewLogger(t),
	}
	t.Cleanup(func() {
		eng.Close()
		<-rr.r.done
	})
	return rr
}

func (rr *replayRig) start(resume string) string {
	rr.t.Helper()
	opts := rr.opts
	opts.Resume = resume
	id, err := rr.eng.Start(context.Background(), opts)
	if err != nil {
		rr.t.Fatalf("Start: %v", describe(err))
	}
	return id
}

func (rr *replayRig) turn(text string) (engine.TurnResult, error) {
	return rr.eng.Turn(context.Background(), engine.TurnInput{ID: "m", Text: text, Kind: "send"})
}

func hasEvent(evs []enginetest.Event, typ event.Type) bool {
	for _, e := range evs {
		if e.Type == typ {
			return true
		}
	}
	return false
}
