package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/corral-dev/corral/internal/graph"
	"github.com/corral-dev/corral/internal/graph/graphapi"
	"github.com/corral-dev/corral/pkg/wire"
)

// jsonHelp is the usage line of --json, which every command takes.
const jsonHelp = `print one JSON envelope on stdout instead of text: {"ok":true,"result":…}, or {"ok":false,"error":{"code","message"}} on failure (docs/api.md)`

// wantsJSON reports whether --json is among a command's arguments (before
// a "--"), so that even a command line that fails to parse answers in
// JSON.
func wantsJSON(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--json", "-json", "--json=true", "-json=true":
			return true
		}
	}
	return false
}

// emit prints a command's result: with --json the envelope
// {"ok":true,"result":v} on one line, else whatever human writes.
func (e *env) emit(v any, human func(w io.Writer) error) error {
	if e.json {
		return writeEnvelope(e.stdout, wire.OKReply(v))
	}
	if human == nil {
		return nil
	}
	return human(e.stdout)
}

// emitError prints a failed command's envelope (--json). A graph run's
// error keeps its graph code and node, as the API reports it.
func (e *env) emitError(err error) {
	var ge *graph.Error
	if errors.As(err, &ge) {
		if raw, jerr := json.Marshal(graphapi.ErrorReply{Error: graphapi.ToError(err)}); jerr == nil {
			fmt.Fprintf(e.stdout, "%s\n", raw)
			return
		}
	}
	writeEnvelope(e.stdout, wire.ErrReply(err))
}

func writeEnvelope(w io.Writer, r *wire.Reply) error {
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", raw)
	return err
}
