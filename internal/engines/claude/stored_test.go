package claude

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// Lines of a conversation file as the CLI writes them (trimmed): the
// metadata a /clear's new conversation begins with, and entries.
const (
	modeLine      = `{"type":"mode","mode":"normal","sessionId":"C"}` + "\n"
	lastPrompt    = `{"type":"last-prompt","leafUuid":"u1","sessionId":"C"}` + "\n"
	costState     = `{"type":"cost-state","sessionId":"C","totalCostUSD":0}` + "\n"
	userEntry     = `{"parentUuid":null,"type":"user","message":{"role":"user","content":"hi"},"uuid":"u1","sessionId":"C"}` + "\n"
	systemEntry   = `{"parentUuid":"u0","type":"system","subtype":"local_command","content":"","uuid":"u2","sessionId":"C"}` + "\n"
	assistantLine = `{"parentUuid":"u1","type":"assistant","message":{"role":"assistant","content":[]},"uuid":"u3"}` + "\n"
)

func TestOnDisk(t *testing.T) {
	const id = "11111111-2222-4333-8444-555555555555"
	for _, tc := range []struct {
		name  string
		files map[string]string // project folder -> content of id's file
		want  diskState
	}{
		{"no file", nil, diskNone},
		{"empty file", map[string]string{"-w": ""}, diskNoEntry},
		{"mode line only", map[string]string{"-w": modeLine}, diskNoEntry},
		{"metadata only", map[string]string{"-w": modeLine + lastPrompt + costState}, diskNoEntry},
		{"a user entry", map[string]string{"-w": modeLine + userEntry}, diskStored},
		{"a system entry", map[string]string{"-w": modeLine + systemEntry}, diskStored},
		{"an assistant entry", map[string]string{"-w": assistantLine}, diskStored},
		{"an entry still being written", map[string]string{"-w": modeLine + strings.TrimSuffix(userEntry, "\n")}, diskNoEntry},
		{"a line that is not JSON, then an entry", map[string]string{"-w": "{\"type\":\n" + userEntry}, diskStored},
		{"stored under another project", map[string]string{"-a": modeLine, "-b": userEntry}, diskStored},
	} {
		t.Run(tc.name, func(t *testing.T) {
			config := t.TempDir()
			var files []string
			for project, content := range tc.files {
				dir := filepath.Join(config, "projects", project)
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				file := filepath.Join(dir, id+".jsonl")
				if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
				files = append(files, file)
			}
			// Another conversation's entries do not count.
			other := filepath.Join(config, "projects", "-w", "99999999-2222-4333-8444-555555555555.jsonl")
			os.MkdirAll(filepath.Dir(other), 0o700)
			if err := os.WriteFile(other, []byte(userEntry), 0o600); err != nil {
				t.Fatal(err)
			}
			got, empty, err := onDisk(config, id)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("onDisk = %v, want %v", got, tc.want)
			}
			if tc.want == diskNoEntry {
				slices.Sort(files)
				slices.Sort(empty)
				if !slices.Equal(empty, files) {
					t.Errorf("files without an entry = %q, want %q", empty, files)
				}
			}
		})
	}
}

func TestContinueConversation(t *testing.T) {
	for _, tc := range []struct {
		name     string
		state    diskState
		rec      begun
		recorded bool
		want     continuation
	}{
		{"stored", diskStored, begun{}, true, continuation{resume: true}},
		{"stored without a record (a session from before records)", diskStored, begun{}, false, continuation{resume: true}},
		{"stored fork", diskStored, begun{ForkFrom: "O"}, true, continuation{resume: true}},
		{"new, never took a message", diskNone, begun{}, true, continuation{}},
		{"cleared, file begun without entries", diskNoEntry, begun{}, true, continuation{removeEmpty: true}},
		{"fork, never took a message", diskNone, begun{ForkFrom: "O"}, true, continuation{forkFrom: "O"}},
		{"unrecorded, file without entries", diskNoEntry, begun{}, false, continuation{removeEmpty: true, recovered: true}},
		{"unrecorded, no file: the CLI says it is not found", diskNone, begun{}, false, continuation{resume: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := continueConversation(tc.state, tc.rec, tc.recorded); got != tc.want {
				t.Errorf("continueConversation(%v, %+v, %v) = %+v, want %+v", tc.state, tc.rec, tc.recorded, got, tc.want)
			}
		})
	}
}

func TestConversationsRecord(t *testing.T) {
	dir := t.TempDir()
	c := conversationsFor(dir)
	if _, ok, err := c.lookup("A"); ok || err != nil {
		t.Fatalf("lookup in a new folder = %v, %v", ok, err)
	}
	if err := c.record("A", begun{}); err != nil {
		t.Fatal(err)
	}
	if err := c.record("B", begun{ForkFrom: "A"}); err != nil {
		t.Fatal(err)
	}
	// A new reader (a new runner's engine) sees both.
	again := conversationsFor(dir)
	for id, want := range map[string]begun{"A": {}, "B": {ForkFrom: "A"}} {
		if got, ok, err := again.lookup(id); !ok || err != nil || got != want {
			t.Errorf("lookup(%s) = %+v, %v, %v; want %+v", id, got, ok, err, want)
		}
	}
	if err := os.WriteFile(c.path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.lookup("A"); err == nil {
		t.Error("a damaged record was read without an error")
	}
}

func TestTakeUp(t *testing.T) {
	const id = "11111111-2222-4333-8444-555555555555"
	for _, tc := range []struct {
		name       string
		content    *string // id's file; nil for none
		rec        *begun
		wantResume bool
		wantFork   string
		wantFile   bool // the file is still there after
		wantWarn   bool
	}{
		{"stored", ptr(modeLine + userEntry), &begun{}, true, "", true, false},
		{"recorded, entries not written yet", ptr(modeLine), &begun{}, false, "", false, false},
		{"recorded fork, nothing written", nil, &begun{ForkFrom: "O"}, false, "O", false, false},
		{"unrecorded, entries not written", ptr(modeLine), nil, false, "", false, true},
		{"unrecorded, nothing written", nil, nil, true, "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sessionDir := t.TempDir()
			config := configDirFor(sessionDir)
			file := filepath.Join(config, "projects", "-w", id+".jsonl")
			if tc.content != nil {
				os.MkdirAll(filepath.Dir(file), 0o700)
				if err := os.WriteFile(file, []byte(*tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			convs := conversationsFor(sessionDir)
			if tc.rec != nil {
				if err := convs.record(id, *tc.rec); err != nil {
					t.Fatal(err)
				}
			}
			core, logs := observer.New(zap.InfoLevel)
			resume, fork, err := takeUp(convs, config, id, zap.New(core))
			if err != nil {
				t.Fatal(err)
			}
			if resume != tc.wantResume || fork != tc.wantFork {
				t.Errorf("takeUp = resume %v, fork %q; want %v, %q", resume, fork, tc.wantResume, tc.wantFork)
			}
			if _, err := os.Stat(file); (err == nil) != tc.wantFile {
				t.Errorf("the conversation file is there: %v, want %v", err == nil, tc.wantFile)
			}
			if warned := logs.FilterLevelExact(zap.WarnLevel).Len() > 0; warned != tc.wantWarn {
				t.Errorf("warned %v, want %v: %v", warned, tc.wantWarn, logs.All())
			}
			// A conversation begun again is recorded, for the next
			// process.
			if !resume {
				if got, ok, _ := conversationsFor(sessionDir).lookup(id); !ok || got.ForkFrom != tc.wantFork {
					t.Errorf("record after takeUp = %+v, %v", got, ok)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
