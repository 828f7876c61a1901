package claude

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/atomicfile"
)

// What the CLI keeps of a conversation, and so how a new process continues
// one. Measured on 2.1.328 and 2.1.332 against the fake model server:
//
//   - `--resume ID` finds a conversation only when its file,
//     projects/<cwd>/<ID>.jsonl in the config folder, holds a conversation
//     entry: a line of type user, assistant or system. The file's other
//     lines (mode, last-prompt, cost-state, …) do not count: a file of
//     those alone, an empty file and no file all end the CLI with "No
//     conversation found with session ID" and status 1.
//   - `--session-id ID` refuses an id whose file exists, even empty, with
//     "Session ID … is already in use".
//   - A conversation begun with --session-id, and a fork (--fork-session),
//     write no file until they take a message. A /clear begins the new
//     conversation's file with its mode line, then appends the clear's own
//     entries.
//   - Entries are appended by a worker thread, after the main thread has
//     moved on: strace shows the /clear's entries written 1 ms before the
//     turn's result reaches stdout on an idle machine, and nothing orders
//     the two. A copy of the folder taken when the result arrives, as the
//     runner's after a /clear, can hold the new conversation's file with
//     its mode line only. The process writes what it queued before it
//     exits.
//
// So neither the CLI's system/init nor its result says a conversation is
// stored; its file does. The adapter records, beside the config folder, the
// conversations it began under ids it chose (conversationsFile), and a
// process resumes a conversation only when its file holds an entry;
// otherwise it begins the recorded conversation under the same id.

// diskState is what the config folder holds of one conversation.
type diskState int

const (
	// diskNone: no file.
	diskNone diskState = iota
	// diskNoEntry: a file without a conversation entry, which
	// neither --resume nor --session-id accepts.
	diskNoEntry
	// diskStored: a file with an entry; --resume continues it.
	diskStored
)

func (s diskState) String() string {
	switch s {
	case diskNoEntry:
		return "a file without a conversation entry"
	case diskStored:
		return "stored"
	}
	return "no file"
}

// onDisk says what configDir holds of conversation id, and the files
// without an entry (which a process beginning the id must remove). The CLI
// looks for the conversation in every project folder, so this does too.
func onDisk(configDir, id string) (diskState, []string, error) {
	files, err := filepath.Glob(filepath.Join(configDir, "projects", "*", id+".jsonl"))
	if err != nil {
		return diskNone, nil, fmt.Errorf("find conversation %s: %w", id, err)
	}
	state := diskNone
	var empty []string
	for _, file := range files {
		stored, err := holdsEntry(file)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			return diskNone, nil, err
		case stored:
			return diskStored, nil, nil
		}
		state = diskNoEntry
		empty = append(empty, file)
	}
	return state, empty, nil
}

// holdsEntry says whether a conversation file has a conversation entry. A
// last line without its newline is still being written and does not count.
func holdsEntry(file string) (bool, error) {
	f, err := os.Open(file)
	if err != nil {
		return false, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("read conversation file: %w", err)
		}
		var entry struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(line, &entry) != nil {
			continue
		}
		switch entry.Type {
		case "user", "assistant", "system":
			return true, nil
		}
	}
}

// conversationsFile, in the session's engine folder beside the CLI's config
// folder, records the conversations the adapter began under ids it chose:
// a new one, a fork (and what it forks), the one a /clear began. A later
// process, in a new runner too, or in the copy of the folder a fork or a
// /clear moves the session to, begins such a conversation again under its
// id while the CLI has stored nothing of it.
const conversationsFile = "claude-conversations.json"

// begun is the record of one conversation the adapter began.
type begun struct {
	// ForkFrom is the conversation it branches; empty for one that began
	// empty.
	ForkFrom string `json:"forkFrom,omitempty"`
}

// conversations reads and writes a session's conversationsFile. The engine
// is the file's only writer while it runs the session; mu orders its own
// writes.
type conversations struct {
	path string
	mu   sync.Mutex
}

func conversationsFor(sessionDir string) *conversations {
	return &conversations{path: filepath.Join(sessionDir, "engine", conversationsFile)}
}

// lookup returns the record of conversation id, if there is one.
func (c *conversations) lookup(id string) (begun, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	all, err := c.readLocked()
	if err != nil {
		return begun{}, false, err
	}
	b, ok := all[id]
	return b, ok, nil
}

// record adds conversation id. It is not synced: a crash of the machine
// that loses the record leaves the conversation to --resume, which fails as
// it would have without the record.
func (c *conversations) record(id string, b begun) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	all, err := c.readLocked()
	if err != nil {
		return err
	}
	if old, ok := all[id]; ok && old == b {
		return nil
	}
	all[id] = b
	data, err := json.Marshal(all)
	if err != nil {
		return fmt.Errorf("record conversation %s: %w", id, err)
	}
	if err := os.MkdirAll(filepath.Dir(c.path), 0o700); err != nil {
		return fmt.Errorf("record conversation %s: %w", id, err)
	}
	if err := atomicfile.WriteNoSync(c.path, data, 0o600); err != nil {
		return fmt.Errorf("record conversation %s: %w", id, err)
	}
	return nil
}

func (c *conversations) readLocked() (map[string]begun, error) {
	all := map[string]begun{}
	data, err := os.ReadFile(c.path)
	if errors.Is(err, os.ErrNotExist) {
		return all, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the claude conversations record: %w", err)
	}
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, fmt.Errorf("read the claude conversations record %s: %w", c.path, err)
	}
	return all, nil
}

// continuation is how a new process takes up a conversation the session
// names.
type continuation struct {
	// resume: --resume the conversation. Otherwise the process begins it
	// under its id: with --session-id, or as a fork of forkFrom.
	resume   bool
	forkFrom string
	// removeEmpty: remove the conversation's files without an entry
	// first, which would make the CLI refuse the id.
	removeEmpty bool
	// recovered says the start recovers a conversation the adapter has no
	// record of: to be logged as a warning.
	recovered bool
}

// continueConversation decides how a process takes up a conversation from
// what the CLI stored of it and the adapter's record of it (rec, when
// recorded). A conversation the CLI stored is resumed. One it did not is
// begun again as recorded, which loses nothing: the CLI has no entry of it.
// Without a record, a file without an entry is begun again too, and
// reported; with no file either, the conversation is not one the adapter
// began here, or its file is gone: --resume lets the CLI say so rather
// than silently starting an empty conversation in its place.
func continueConversation(state diskState, rec begun, recorded bool) continuation {
	switch {
	case state == diskStored:
		return continuation{resume: true}
	case recorded:
		return continuation{forkFrom: rec.ForkFrom, removeEmpty: state == diskNoEntry}
	case state == diskNoEntry:
		return continuation{removeEmpty: true, recovered: true}
	default:
		return continuation{resume: true}
	}
}

// takeUp decides how the session's process takes up conversation id (see
// continueConversation), removes what would make the CLI refuse it, and
// returns whether to --resume it and, if it is begun as a fork, what it
// forks.
func takeUp(convs *conversations, configDir, id string, logger *zap.Logger) (resume bool, forkFrom string, err error) {
	state, empty, err := onDisk(configDir, id)
	if err != nil {
		return false, "", err
	}
	rec, recorded, err := convs.lookup(id)
	if err != nil {
		return false, "", err
	}
	c := continueConversation(state, rec, recorded)
	if c.resume {
		return true, "", nil
	}
	if c.removeEmpty {
		for _, file := range empty {
			if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
				return false, "", fmt.Errorf("remove the entry-less file of conversation %s: %w", id, err)
			}
		}
	}
	fields := []zap.Field{zap.String("conversation", id), zap.Stringer("stored", state), zap.String("forkFrom", c.forkFrom)}
	if c.recovered {
		logger.Warn("the claude CLI stored no entry of the conversation and the adapter has no record of it; beginning it again under its id", fields...)
	} else {
		logger.Info("the claude CLI has stored nothing of the conversation yet; beginning it under its id", fields...)
	}
	if !recorded {
		if err := convs.record(id, begun{ForkFrom: c.forkFrom}); err != nil {
			return false, "", err
		}
	}
	return false, c.forkFrom, nil
}
