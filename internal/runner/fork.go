package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/corral-dev/corral/internal/sessiondir"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// fork branches the conversation: this runner continues as a new session
// (a new id and folder, a copy of the log and the engine's state, the
// engine's branched conversation), and the original session's folder is
// left closed at the branch point, to be resumed on its own later. The
// supervisor learns of it through a rotate message.
func (r *Runner) fork(ctx context.Context) (command.ForkResult, error) {
	if settled := r.turns.settled(); settled != nil {
		// The last turn is being wrapped up; fork right after it.
		select {
		case <-settled:
		case <-ctx.Done():
			return command.ForkResult{}, ctx.Err()
		}
	}
	res, err := r.branch(ctx)
	if err != nil {
		return command.ForkResult{}, err
	}
	// Commands are let in again before anyone hears of the new session.
	if r.opts.Rotate != nil {
		r.opts.Rotate(res.From, res.To)
	}
	r.presence.touch()
	return res, nil
}

// branch moves the session to a branch of its conversation in a new
// folder. No other command runs meanwhile: a message would start a turn
// on the engine being replaced, and a spec change would be written to the
// folder being left.
func (r *Runner) branch(ctx context.Context) (command.ForkResult, error) {
	r.cmds.Lock()
	defer r.cmds.Unlock()
	r.mu.Lock()
	closed, eng, engineName := r.closed, r.eng, r.spec.Engine
	r.mu.Unlock()
	if closed {
		return command.ForkResult{}, wire.Errorf(wire.CodeUnavailable, "session is shutting down")
	}
	if !r.turns.quiet() {
		return command.ForkResult{}, wire.Errorf(wire.CodeConflict, "cannot fork while a turn runs or messages wait; stop or wait first")
	}
	forker, ok := eng.(engine.Forker)
	if !ok {
		return command.ForkResult{}, wire.Errorf(wire.CodeBadRequest, "the %s engine cannot fork a conversation", engineName)
	}
	branch, err := forker.Fork(ctx)
	if err != nil {
		return command.ForkResult{}, engineErr(err)
	}
	return r.moveToNewSession(ctx, "fork", branch)
}

// moveToNewSession continues the session under a new id, in a new folder
// beside this one that starts with a copy of the log and of the engine's
// state, on the engine conversation conv (a fork's branch, or the new
// conversation a clear began). The old folder is left closed, to be resumed
// on its own later. The engine is restarted in the new folder, since it
// keeps its state there. The caller holds cmds for writing, so no command
// writes to the folder being left.
func (r *Runner) moveToNewSession(ctx context.Context, reason, conv string) (command.ForkResult, error) {
	r.mu.Lock()
	eng, old := r.eng, r.spec
	r.mu.Unlock()
	newID, err := sessiondir.NewID()
	if err != nil {
		return command.ForkResult{}, err
	}
	oldDir := r.Dir()
	newDir := filepath.Join(filepath.Dir(oldDir), newID)
	if err := os.Mkdir(newDir, 0o700); err != nil {
		return command.ForkResult{}, fmt.Errorf("%s: %w", reason, err)
	}
	// The rotated event closes the old log and opens the new one: both
	// hold it at the same seq.
	r.emit(event.Rotated, event.RotatedData{From: old.ID, To: newID, Reason: reason})
	if err := r.store.eventLog().Sync(); err != nil {
		return command.ForkResult{}, err
	}
	if err := branchFolder(oldDir, newDir); err != nil {
		return command.ForkResult{}, err
	}
	next := old
	next.ID, next.Parent, next.EngineSession = newID, old.ID, conv
	if err := WriteSpec(newDir, next); err != nil {
		return command.ForkResult{}, err
	}
	if err := r.store.moveTo(newDir); err != nil {
		return command.ForkResult{}, err
	}

	r.mu.Lock()
	r.spec = next
	r.mu.Unlock()
	eng.Close()
	eng, conv, err = r.startEngine(ctx, next)
	if err != nil {
		r.fail(err)
		return command.ForkResult{}, engineErr(err)
	}
	next = r.updateSpec(func(s *wire.Spec) { s.EngineSession = conv })
	r.mu.Lock()
	r.eng = eng
	r.mu.Unlock()
	if err := r.store.saveSpec(next); err != nil {
		return command.ForkResult{}, err
	}
	r.emit(event.SessionResumed, event.SessionStartedData{Engine: next.Engine, Cwd: next.Cwd, Mode: next.Mode,
		Model: next.Model, EngineSession: conv, Parent: old.ID, Unattended: next.Unattended})
	return command.ForkResult{From: old.ID, To: newID}, nil
}

// branchFolder copies what a fork takes into the new session's folder:
// the event log and the engine's state.
func branchFolder(oldDir, newDir string) error {
	if err := copyFile(filepath.Join(oldDir, EventsFile), filepath.Join(newDir, EventsFile)); err != nil {
		return fmt.Errorf("fork: copy event log: %w", err)
	}
	if err := copyTree(filepath.Join(oldDir, sessiondir.EngineDir), filepath.Join(newDir, sessiondir.EngineDir)); err != nil {
		return fmt.Errorf("fork: copy engine state: %w", err)
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// copyTree copies a folder of regular files and folders (a missing source
// is an empty tree). Sockets and other special files are skipped. So is an
// entry that vanishes while the tree is copied: the engine may still be
// running, and renames or removes its temporary files (Claude Code's
// .claude.json.lock and .claude.json.tmp.*) between the listing of their
// folder and their copy. Such an error used to end the walk as if the whole
// source were missing, leaving a copy without the rest of the tree, the
// engine's conversations included.
func copyTree(src, dst string) error { return copyTreeBy(filepath.WalkDir, src, dst) }

// copyTreeBy is copyTree walking with walk (filepath.WalkDir; a test's
// wrapper removes entries while the tree is walked).
func copyTreeBy(walk func(string, fs.WalkDirFunc) error, src, dst string) error {
	if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return walk(src, func(path string, d fs.DirEntry, err error) error {
		rel, rerr := filepath.Rel(src, path)
		if rerr != nil {
			return rerr
		}
		target := filepath.Join(dst, rel)
		if err != nil {
			if path != src && errors.Is(err, fs.ErrNotExist) {
				// A folder removed after it was listed: its copy,
				// made before its entries were read, goes too.
				os.Remove(target)
				return nil
			}
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o700)
		case d.Type().IsRegular():
			err = copyFile(path, target)
		case d.Type()&fs.ModeSymlink != 0:
			var link string
			if link, err = os.Readlink(path); err == nil {
				err = os.Symlink(link, target)
			}
		default:
			return nil
		}
		if err != nil && vanished(path) {
			return nil
		}
		return err
	})
}

// vanished says whether path no longer exists.
func vanished(path string) bool {
	_, err := os.Lstat(path)
	return errors.Is(err, fs.ErrNotExist)
}
