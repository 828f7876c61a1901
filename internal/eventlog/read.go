package eventlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// ErrStop may be returned by a Scan callback to end the scan early without
// an error.
var ErrStop = errors.New("stop scan")

// Scan calls fn for every complete event line in r with seq >= from, in
// order. Lines that are not events (damage the next Open moves aside) and
// a torn last line (no newline) are skipped, so a damaged log never stops a
// reader. line is valid only during the call.
func Scan(r io.Reader, from int64, fn func(seq int64, line []byte) error) error {
	lr := wire.NewLineReader(r, 0)
	for {
		line, err := lr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		var le *wire.LineError
		if errors.As(err, &le) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read event log: %w", err)
		}
		if !lr.Terminated() {
			return nil
		}
		seq, reason := parseLine(line)
		if reason != "" || seq < from {
			continue
		}
		if err := fn(seq, line); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
	}
}

// ReadFile decodes every event of the log at path (a missing file has none).
func ReadFile(path string, fn func(event.Event) error) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read event log: %w", err)
	}
	defer f.Close()
	return Scan(f, 0, func(_ int64, line []byte) error {
		var ev event.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return fmt.Errorf("read event log: %w", err)
		}
		return fn(ev)
	})
}
