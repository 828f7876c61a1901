package fakemodelcli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/testio"
)

// run starts Main in the background and returns the first line of stdout
// and a function that stops Main and returns its exit status.
func run(t *testing.T, args ...string) (firstLine string, stop func() int, stderr *testio.Buffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	outR, outW := io.Pipe()
	stderr = &testio.Buffer{}
	status := make(chan int, 1)
	go func() {
		status <- Main(ctx, args, outW, stderr)
		outW.Close()
	}()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(outR)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, outR)
	}()
	var stopped bool
	var code int
	stop = func() int {
		if !stopped {
			cancel()
			code = <-status
			stopped = true
		}
		return code
	}
	t.Cleanup(func() { stop() })
	select {
	case line, ok := <-lines:
		if !ok {
			t.Fatalf("no stdout; exit %d; stderr:\n%s", stop(), stderr)
		}
		return line, stop, stderr
	case <-time.After(30 * time.Second):
		t.Fatalf("no URL printed; stderr:\n%s", stderr)
	}
	return "", stop, stderr
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestMainPrintsItsURLFirstAndServesTheScenario(t *testing.T) {
	scenario := writeFile(t, "s.json", `{"steps": [{"name": "hi", "text": "Hello ${who}."}]}`)
	logPath := filepath.Join(t.TempDir(), "requests.jsonl")
	url, stop, stderr := run(t, "--listen", "127.0.0.1:0", "--scenario", scenario, "--log", logPath, "--var", "who=tester")
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("first line %q is not the URL", url)
	}

	body := `{"model":"m","stream":false,"messages":[{"role":"user","content":"hi"}]}`
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if err != nil || len(got.Choices) != 1 || got.Choices[0].Message.Content != "Hello tester." {
		t.Fatalf("reply %+v, %v", got, err)
	}

	if code := stop(); code != 0 {
		t.Errorf("exit %d; stderr:\n%s", code, stderr)
	}
	logged, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(logged)), "\n"); len(lines) != 2 || !strings.Contains(lines[0], `"step":"hi"`) {
		t.Errorf("log file:\n%s", logged)
	}
	if info, err := os.Stat(logPath); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("log file mode %v, %v", info.Mode(), err)
	}
	if !strings.Contains(stderr.String(), `"step": "hi"`) {
		t.Errorf("stderr does not log the request:\n%s", stderr)
	}
	if _, err := http.Get(url + "/v1/models"); err == nil {
		t.Error("server still answers after Main returned")
	}
}

func TestMainWithoutScenarioAnswersDone(t *testing.T) {
	url, _, _ := run(t, "--quiet")
	resp, err := http.Post(url+"/v1/messages", "application/json", strings.NewReader(`{"model":"m","messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), `"text":"done"`) {
		t.Errorf("reply %s", b)
	}
}

func TestMainRefusals(t *testing.T) {
	bad := writeFile(t, "bad.json", `{"steps": [{"txt": "typo"}]}`)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"non-loopback address", []string{"--listen", "0.0.0.0:0"}, 2, "--allow-non-loopback"},
		{"malformed scenario", []string{"--scenario", bad}, 2, `unknown field "txt"`},
		{"missing scenario", []string{"--scenario", filepath.Join(t.TempDir(), "nope.json")}, 2, "no such file"},
		{"unknown flag", []string{"--bogus"}, 2, "flag provided but not defined"},
		{"stray argument", []string{"extra"}, 2, "unexpected arguments"},
		{"bad var", []string{"--var", "novalue"}, 2, "want name=value"},
		{"unwritable log", []string{"--log", filepath.Join(t.TempDir(), "missing-dir", "log.jsonl")}, 1, "open log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(t.Context(), tt.args, &stdout, &stderr)
			if code != tt.wantCode || !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr.String(), tt.wantCode, tt.wantErr)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
		})
	}
}

func TestMainHelpExitsZero(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Main(t.Context(), []string{"--help"}, &stdout, &stderr); code != 0 || !strings.Contains(stderr.String(), "usage: fakemodel") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}
