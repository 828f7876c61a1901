package supervisor

import (
	"bytes"
	"encoding/json"
	"sort"
	"sync/atomic"

	"github.com/corral-dev/corral/internal/proc"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// A runner writes its log to stderr as JSON lines (the supervisor starts it
// with --log-format json and its own level). The supervisor logs each line
// again, in its own format, at the level the runner gave it and with the
// session the runner is on, so that a runner's warnings reach the
// operator's log. A line that is not a JSON log entry (a panic's trace, a
// wrapper script's chatter) is logged at warn, as it is not expected.

// maxStderrLine bounds one stderr line kept for the log; the rest of a
// longer line is dropped.
const maxStderrLine = 4096

// runnerLevel is the level a runner is started with: the supervisor's own,
// so a runner does not write lines the supervisor would drop.
func runnerLevel(log *zap.Logger) string {
	lvl := log.Level()
	if lvl == zapcore.InvalidLevel {
		return zapcore.ErrorLevel.String()
	}
	return lvl.String()
}

// stderrSink keeps a runner's stderr tail and logs each of its lines.
type stderrSink struct {
	tail    *proc.Tail
	session func() string
	log     atomic.Pointer[zap.Logger] // set once the process started
	partial []byte
}

func (s *stderrSink) start(log *zap.Logger) { s.log.Store(log) }

// Write is called from exec's single copying goroutine only.
func (s *stderrSink) Write(p []byte) (int, error) {
	s.tail.Write(p)
	data := p
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			room := maxStderrLine - len(s.partial)
			s.partial = append(s.partial, data[:min(len(data), max(room, 0))]...)
			break
		}
		line := data[:i]
		if len(s.partial) > 0 {
			room := maxStderrLine - len(s.partial)
			line = append(s.partial, line[:min(len(line), max(room, 0))]...)
		}
		s.relay(line)
		s.partial = s.partial[:0]
		data = data[i+1:]
	}
	return len(p), nil
}

// relay logs one stderr line.
func (s *stderrSink) relay(line []byte) {
	log := s.log.Load()
	line = bytes.TrimSpace(line)
	if log == nil || len(line) == 0 {
		return
	}
	// The line is in the caller's buffer, which the next write reuses, and
	// a core may keep the entry's fields (a test's observer does).
	line = bytes.Clone(line)
	lvl, msg, fields, ok := parseLogLine(line)
	if !ok {
		lvl, msg, fields = zapcore.WarnLevel, "runner stderr", []zap.Field{zap.ByteString("line", line)}
	}
	ce := log.Check(lvl, msg)
	if ce == nil {
		return
	}
	ce.Write(append(fields, zap.String("session", s.session()))...)
}

// parseLogLine reads a zap JSON log entry: its level, message and other
// fields (sorted by name, values kept as the runner wrote them). The
// runner's time stamp and caller are dropped: the supervisor stamps the
// line itself.
func parseLogLine(line []byte) (zapcore.Level, string, []zap.Field, bool) {
	if line[0] != '{' {
		return 0, "", nil, false
	}
	var entry map[string]json.RawMessage
	if json.Unmarshal(line, &entry) != nil {
		return 0, "", nil, false
	}
	var level, msg string
	if json.Unmarshal(entry["level"], &level) != nil || json.Unmarshal(entry["msg"], &msg) != nil {
		return 0, "", nil, false
	}
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return 0, "", nil, false
	}
	// A runner never makes the supervisor panic or exit.
	lvl = min(lvl, zapcore.ErrorLevel)
	keys := make([]string, 0, len(entry))
	for k := range entry {
		switch k {
		case "level", "msg", "ts", "caller", "session":
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fields := make([]zap.Field, 0, len(keys)+1)
	for _, k := range keys {
		fields = append(fields, zap.Any(k, entry[k]))
	}
	return lvl, msg, fields, true
}
