package cli

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/corral-dev/corral/internal/supervisor/daemon"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
)

func runGoal(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "goal", "ID set TEXT... | get | clear | done",
		"Set, show or clear a session's goal, or mark it done. A goal is checked, clause by clause, after every turn (docs/commands.md).")
	c, pos, err := simple(e, fs, args, 2, -1)
	if err != nil {
		return err
	}
	id, verb := pos[0], pos[1]
	var cmd command.Request
	switch verb {
	case "set":
		goal := strings.Join(pos[2:], " ")
		if strings.TrimSpace(goal) == "" {
			return usagef("goal set needs the goal's text")
		}
		cmd = command.SetGoal{Goal: goal}
	case "get":
		cmd = command.GetGoal{}
	case "clear":
		cmd = command.ClearGoal{}
	case "done":
		cmd = command.MarkGoalDone{}
	default:
		return usagef("goal %q: want set, get, clear or done", verb)
	}
	if verb != "set" && len(pos) > 2 {
		return usagef("goal %s takes no text", verb)
	}
	return runCommand(ctx, e, c, id, cmd)
}

func runMode(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "mode", "ID review|auto|readonly", "Change how a session treats edits and commands (docs/gate.md).")
	c, pos, err := simple(e, fs, args, 2, 2)
	if err != nil {
		return err
	}
	return runCommand(ctx, e, c, pos[0], command.SetMode{Mode: pos[1]})
}

func runSpendCap(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "spend-cap", "ID USD", "Set a session's spend cap in US dollars; 0 removes it. Raising it lets a capped session go on.")
	c, pos, err := simple(e, fs, args, 2, 2)
	if err != nil {
		return err
	}
	usd, err := strconv.ParseFloat(pos[1], 64)
	if err != nil || usd < 0 {
		return usagef("spend cap %q: want a number of dollars >= 0", pos[1])
	}
	return runCommand(ctx, e, c, pos[0], command.SetSpendCap{SpendCapUSD: &usd})
}

func runFork(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "fork", "ID", "Branch a session's conversation: it continues under a new id (printed), and the original can be resumed on its own.")
	c, pos, err := simple(e, fs, args, 1, 1)
	if err != nil {
		return err
	}
	return runCommand(ctx, e, c, pos[0], command.ForkSession{})
}

// runRun is print mode: it runs the runner binary on one prompt without a
// daemon, so scripts and CI can call an agent and read its answer.
func runRun(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "run", "-p PROMPT", "Run one prompt to its end and print the final answer; exit non-zero on failure (print mode, unattended).")
	prompt := fs.String("p", "", "the prompt")
	engine := fs.String("engine", "script", "engine")
	cwd := fs.String("cwd", "", "worktree (default: the current folder)")
	scenario := fs.String("scenario", "", "script engine scenario file")
	mode := fs.String("mode", "", "review, auto or readonly")
	model := fs.String("model", "", "model name")
	endpoint := fs.String("model-endpoint", "", "model API base URL")
	spendCap := fs.Float64("spend-cap", 0, "stop once this many US dollars are spent")
	stream := fs.Bool("stream", false, "also stream every event to stderr as NDJSON")
	runnerPath := fs.String("runner", "", "the runner binary (default: beside this one, else PATH)")
	creds := fs.String("credentials", "", "credentials file (JSON, mode 0600) instead of the OS keyring")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *prompt == "" && len(pos) > 0 {
		*prompt = strings.Join(pos, " ")
	}
	if strings.TrimSpace(*prompt) == "" {
		fs.Usage()
		return usagef("run needs a prompt (-p)")
	}
	bin, err := daemon.FindRunner(*runnerPath)
	if err != nil {
		return err
	}
	if (wire.Spec{Engine: *engine}).NeedsPlugin() {
		if bin, err = daemon.FindPluginRunner("", bin); err != nil {
			return err
		}
	}
	argv := []string{"-p", *prompt, "--engine", *engine, "--log-level", "error"}
	for _, f := range []struct{ name, value string }{
		{"--cwd", *cwd}, {"--scenario", *scenario}, {"--mode", *mode}, {"--model", *model},
		{"--model-endpoint", *endpoint}, {"--credentials", *creds},
	} {
		if f.value != "" {
			argv = append(argv, f.name, f.value)
		}
	}
	if *spendCap > 0 {
		argv = append(argv, "--spend-cap", strconv.FormatFloat(*spendCap, 'f', -1, 64))
	}
	if *stream {
		argv = append(argv, "--stream")
	}
	if e.json {
		// The runner prints the envelope itself.
		argv = append(argv, "--json")
	}
	cmd := exec.CommandContext(ctx, bin, argv...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, e.stdout, e.stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		// The runner already said why, on stderr or in its envelope.
		return exitStatus(ee.ExitCode())
	}
	return err
}
