package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/corral-dev/corral/pkg/wire"
)

// The statuses docs/wire.md and docs/api.md document for each code.
var documented = map[wire.Code]int{
	wire.CodeBadRequest:            400,
	wire.CodeUnauthorized:          401,
	wire.CodeNotFound:              404,
	wire.CodeConflict:              409,
	wire.CodeInternal:              500,
	wire.CodeRunnerCrashed:         502,
	wire.CodeEngineError:           502,
	wire.CodeProtocol:              502,
	wire.CodePermissionUnavailable: 503,
	wire.CodeUnavailable:           503,
	wire.CodeTimeout:               504,
}

func TestEveryCodeHasItsDocumentedStatus(t *testing.T) {
	for code, status := range documented {
		if got := StatusFor(code); got != status {
			t.Errorf("StatusFor(%s) = %d, want %d", code, got, status)
		}
	}
	if got := StatusFor("no_such_code"); got != http.StatusInternalServerError {
		t.Errorf("an unknown code answers %d, want 500", got)
	}
}

func TestCodeForInvertsTheUnambiguousStatuses(t *testing.T) {
	for code, status := range documented {
		if status == http.StatusBadGateway || status == http.StatusServiceUnavailable && code != wire.CodeUnavailable {
			continue // several codes share the status
		}
		if got := CodeFor(status); got != code {
			t.Errorf("CodeFor(%d) = %s, want %s", status, got, code)
		}
	}
	for status, want := range map[int]wire.Code{
		http.StatusTeapot:           wire.CodeInternal,
		http.StatusBadGateway:       wire.CodeInternal, // three codes answer 502
		http.StatusMethodNotAllowed: wire.CodeBadRequest,
	} {
		if got := CodeFor(status); got != want {
			t.Errorf("CodeFor(%d) = %s, want %s", status, got, want)
		}
	}
}

func TestNewErrorKeepsCodeMessageAndDetail(t *testing.T) {
	crash := wire.Errorf(wire.CodeRunnerCrashed, "runner exited with code 2")
	crash.Detail = &wire.Crash{ExitCode: 2, Stderr: []string{"boom"}}
	e := NewError(fmt.Errorf("create: %w", crash))
	if e.StatusCode != 502 || e.Code != wire.CodeRunnerCrashed || e.Message != "create: runner exited with code 2" || e.Detail.ExitCode != 2 {
		t.Fatalf("NewError = %+v", e)
	}
	raw, err := json.Marshal(ErrorReply{Error: e})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"ok":false,"error":{"message":"create: runner exited with code 2","code":"runner_crashed","statusCode":502,"detail":{"exitCode":2,"stderr":["boom"]}}}`
	if string(raw) != want {
		t.Fatalf("body\n got %s\nwant %s", raw, want)
	}
	var back ErrorReply
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if w := back.Error.Wire(); !errors.Is(w, wire.ErrRunnerCrashed) || w.Detail.Stderr[0] != "boom" {
		t.Fatalf("Wire() = %+v", w)
	}
	if NewError(errors.New("plain")).StatusCode != 500 {
		t.Fatal("an error without a code is not internal")
	}
}
