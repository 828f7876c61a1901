package gate

import (
	"fmt"
	"strings"
)

// git judges git by subcommand. Only subcommands git ships are known: git
// never lets an alias shadow one of them, but any other name may be an
// alias, and an alias starting with "!" runs a shell command. Commands
// that change the repository write .git, which is never silently
// writable, so they are always asked (denied in readonly mode).
func (j *judge) git(c cmdLine, f *facts, t *tally) {
	i := 1
globals:
	for ; i < len(c.words); i++ {
		w := c.words[i]
		if !w.known() {
			t.add(askV(CategoryShell, fmt.Sprintf("git %s is only known when it runs", shown(c.nodes[i], j))))
			return
		}
		v := w.value
		switch {
		case v == "-C":
			if i+1 >= len(c.words) {
				t.add(askV(CategoryShell, "git -C without a directory"))
				return
			}
			f.claim(i, i+1)
			i++
			if !j.chdirForArgs(c, f, t, i) {
				return
			}
			c.cwds = *f.argCwds
		case v == "-c" || strings.HasPrefix(v, "--config-env") || strings.HasPrefix(v, "--exec-path") ||
			strings.HasPrefix(v, "--git-dir") || strings.HasPrefix(v, "--work-tree") ||
			strings.HasPrefix(v, "--namespace") || strings.HasPrefix(v, "--super-prefix"):
			f.checkArgs = false
			t.add(askV(CategoryShell, fmt.Sprintf("git %s can make git run other programs or act on another repository", v)))
			return
		case v == "--no-pager" || v == "-P" || v == "-p" || v == "--paginate" || v == "--no-replace-objects" ||
			v == "--literal-pathspecs" || v == "--glob-pathspecs" || v == "--noglob-pathspecs" ||
			v == "--icase-pathspecs" || v == "--no-optional-locks" || v == "--bare" || v == "--no-lazy-fetch":
			f.claim(i)
		case v == "--version" || v == "--help" || v == "-h" || v == "--html-path" || v == "--man-path" || v == "--info-path":
			f.claim(i)
			f.readOnly = true
			return
		case strings.HasPrefix(v, "-"):
			f.checkArgs = false
			t.add(askV(CategoryShell, fmt.Sprintf("git %s is an option the gate does not know", v)))
			return
		default:
			break globals
		}
	}
	if i >= len(c.words) {
		f.readOnly = true // git alone prints its usage
		return
	}
	f.claim(i)
	// Patterns are matched without the global options: "git status *"
	// allows "git --no-pager -C src status".
	f.matchWords = append([]word{c.words[0]}, c.words[i:]...)
	sub := c.words[i].value
	rest := i + 1
	switch gitClass(sub) {
	case gitRead:
		f.readOnly = true
		j.gitReadOptions(c, f, t, sub, rest)
		return
	case gitList:
		if j.gitListOnly(c, f, t, sub, rest) {
			f.readOnly = true
			return
		}
	case gitNetwork:
		j.gitNetwork(c, f, t, sub, rest)
		return
	case gitRuns:
		f.checkArgs = false
		t.add(askV(CategoryShell, fmt.Sprintf("git %s runs other programs", sub)))
		return
	case gitWrite:
	default:
		f.checkArgs = false
		t.add(askV(CategoryShell, fmt.Sprintf("git %s is not a command git ships, so it may be an alias, which can run any command", sub)))
		return
	}
	f.writes = fmt.Sprintf("git %s changes the repository", sub)
	if j.g.mode != ModeReadonly {
		t.add(askV(CategoryEdit, fmt.Sprintf("git %s changes git's internal state (.git), which always needs approval", sub)))
	}
}

// chdirForArgs applies a -C DIR option (word i): DIR must be readable,
// and the command's relative arguments are judged from it.
func (j *judge) chdirForArgs(c cmdLine, f *facts, t *tally, i int) bool {
	w := c.words[i]
	if !w.known() {
		t.add(askV(CategoryRead, fmt.Sprintf("%s -C %s is only known when it runs", c.name(), shown(c.nodes[i], j))))
		f.checkArgs = false
		return false
	}
	j.readArg(w, c.nodes[i], c.cwds, t)
	targets, err := j.g.resolveArg(w.value, c.cwds)
	if err != nil {
		t.add(askV(CategoryRead, err.Error()))
		f.checkArgs = false
		return false
	}
	f.argCwds = &cwdSet{}
	for _, tg := range targets {
		f.argCwds.dirs = append(f.argCwds.dirs, tg.real)
	}
	return true
}

type gitKind int

const (
	gitUnknown gitKind = iota
	gitRead            // only reads the repository
	gitList            // lists by default, writes with some arguments
	gitNetwork         // talks to a remote
	gitRuns            // runs other programs (tools, scripts, editors)
	gitWrite           // changes the repository
)

func gitClass(sub string) gitKind {
	switch sub {
	case "status", "diff", "log", "show", "blame", "annotate", "grep", "shortlog", "describe",
		"rev-parse", "rev-list", "ls-files", "ls-tree", "cat-file", "merge-base", "show-ref",
		"for-each-ref", "check-ignore", "check-attr", "check-ref-format", "name-rev", "whatchanged",
		"count-objects", "var", "version", "help", "diff-tree", "diff-files", "diff-index", "cherry",
		"range-diff", "verify-commit", "verify-tag", "show-branch", "archive":
		return gitRead
	case "branch", "tag", "remote", "stash", "config", "reflog", "worktree", "notes", "submodule":
		return gitList
	case "clone", "fetch", "pull", "push", "ls-remote", "send-email", "request-pull":
		return gitNetwork
	case "bisect", "difftool", "mergetool", "filter-branch", "instaweb", "daemon", "gui", "citool",
		"web--browse", "credential", "credential-store", "credential-cache":
		return gitRuns
	case "add", "am", "apply", "checkout", "cherry-pick", "clean", "commit", "gc", "init", "merge",
		"mv", "prune", "rebase", "reset", "restore", "revert", "rm", "sparse-checkout", "switch",
		"update-index", "update-ref", "write-tree", "commit-tree", "read-tree", "hash-object",
		"symbolic-ref", "pack-refs", "repack", "replace", "format-patch", "maintenance", "fsck",
		"rerere", "mktag", "mktree", "checkout-index", "merge-file", "stage", "fast-import",
		"bundle", "pack-objects", "unpack-objects", "prune-packed", "multi-pack-index",
		"commit-graph", "index-pack", "merge-tree", "replay", "backfill":
		return gitWrite
	}
	return gitUnknown
}

// gitReadOptions catches the options of read-only subcommands that
// write a file or run a program.
func (j *judge) gitReadOptions(c cmdLine, f *facts, t *tally, sub string, rest int) {
	for i := rest; i < len(c.words); i++ {
		w := c.words[i]
		if !w.known() {
			continue
		}
		v := w.value
		switch {
		case v == "--":
			return
		case v == "--output" || strings.HasPrefix(v, "--output=") || (sub == "archive" && v == "-o"):
			f.claim(i)
			f.writes = fmt.Sprintf("git %s %s writes a file", sub, v)
			target, node := word{value: strings.TrimPrefix(strings.TrimPrefix(v, "--output"), "="), static: true}, c.nodes[i]
			if !strings.Contains(v, "=") {
				if i+1 >= len(c.words) {
					t.add(askV(CategoryShell, "git "+v+" without a file"))
					return
				}
				i++
				f.claim(i)
				target, node = c.words[i], c.nodes[i]
			}
			j.editArg(target, node, c.cwds, t)
		case v == "--ext-diff":
			t.add(askV(CategoryShell, fmt.Sprintf("git %s %s runs an external diff program", sub, v)))
		case sub == "grep" && (strings.HasPrefix(v, "-O") || strings.HasPrefix(v, "--open-files-in-pager")):
			t.add(askV(CategoryShell, "git grep -O runs a pager program on the files found"))
		case sub == "archive" && strings.HasPrefix(v, "--remote"):
			j.gitNetwork(c, f, t, sub, rest)
			return
		case sub == "archive" && strings.HasPrefix(v, "--exec"):
			t.add(askV(CategoryShell, "git archive --exec runs a program"))
		}
	}
}

// gitListOnly reports whether a list-or-write subcommand only lists.
func (j *judge) gitListOnly(c cmdLine, f *facts, t *tally, sub string, rest int) bool {
	valueOpts := optSpec{long: []string{"contains", "no-contains", "merged", "no-merged", "points-at", "sort", "format", "column"}}
	next := ""
	for i := rest; i < len(c.words); i++ {
		if w := c.words[i]; w.known() && !strings.HasPrefix(w.value, "-") {
			next = w.value
			break
		}
	}
	switch sub {
	case "branch", "tag":
		if sub == "tag" {
			valueOpts.short = "mFu"
		}
		opts, operands, ok := scanOpts(c.words, rest, valueOpts)
		if !ok {
			return false
		}
		j.claimOptValues(f, opts)
		f.claim(operands...) // patterns and names, not files
		writes := []string{"-d", "-D", "-m", "-M", "-c", "-C", "-u", "-f", "--delete", "--move",
			"--copy", "--force", "--set-upstream-to", "--unset-upstream", "--edit-description",
			"--track", "--no-track", "--create-reflog"}
		if sub == "tag" {
			writes = []string{"-a", "-s", "-u", "-f", "-d", "-m", "-F", "-e", "--annotate", "--sign",
				"--local-user", "--force", "--delete", "--message", "--file", "--edit"}
		}
		if hasOpt(opts, writes...) {
			return false
		}
		return len(operands) == 0 || hasOpt(opts, "-l", "--list")
	case "remote":
		for i := rest; i < len(c.words); i++ {
			f.claim(i)
		}
		switch next {
		case "", "get-url":
			return true
		case "show":
			for _, w := range c.words[rest:] {
				if w.known() && w.value == "-n" {
					return true
				}
			}
			j.gitNetwork(c, f, t, "remote show", rest)
			return true
		case "update", "prune", "set-head":
			j.gitNetwork(c, f, t, "remote "+next, rest)
			return true
		}
		return false
	case "stash":
		return next == "list" || next == "show"
	case "config":
		for _, w := range c.words[rest:] {
			if !w.known() {
				continue
			}
			switch w.value {
			case "--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "--get-color", "--get-colorbool", "get", "list":
				for i := rest; i < len(c.words); i++ {
					f.claim(i)
				}
				return true
			case "--edit", "-e", "edit":
				t.add(askV(CategoryShell, "git config --edit runs an editor"))
				return true
			}
		}
		return false
	case "reflog":
		return next == "" || next == "show" || next == "exists" || next == "list"
	case "worktree", "notes":
		return next == "list" || (sub == "notes" && next == "show")
	case "submodule":
		switch next {
		case "status", "summary":
			return true
		case "foreach":
			t.add(askV(CategoryShell, "git submodule foreach runs a command in every submodule"))
			return true
		}
		j.gitNetwork(c, f, t, "submodule "+next, rest)
		return true
	}
	return false
}

// gitNetwork judges the subcommands that talk to a remote.
func (j *judge) gitNetwork(c cmdLine, f *facts, t *tally, sub string, rest int) {
	for i := rest; i < len(c.words); i++ {
		w := c.words[i]
		if !w.known() {
			continue
		}
		// -u is --upload-pack for clone and ls-remote only (push -u sets
		// the upstream).
		if (w.value == "-u" && (sub == "clone" || sub == "ls-remote")) || strings.HasPrefix(w.value, "--upload-pack") ||
			strings.HasPrefix(w.value, "--receive-pack") || strings.HasPrefix(w.value, "--exec") {
			t.add(askV(CategoryShell, fmt.Sprintf("git %s %s can run programs", sub, w.value)))
		}
		if strings.Contains(w.value, "://") || isRemoteSpec(w.value) {
			f.claim(i)
		}
	}
	switch sub {
	case "fetch", "pull", "remote update", "remote prune", "submodule update", "submodule add", "submodule sync", "submodule init", "submodule deinit", "submodule set-url", "submodule set-branch":
		f.writes = "git " + sub + " changes the repository"
		if j.g.mode != ModeReadonly {
			t.add(askV(CategoryEdit, fmt.Sprintf("git %s changes git's internal state (.git), which always needs approval", sub)))
		}
	case "clone":
		f.writes = "git clone creates a repository"
		if j.g.mode != ModeReadonly {
			t.add(askV(CategoryEdit, "git clone creates a directory with a new repository, hooks included"))
		}
	}
	if !j.g.policy.AllowNetwork {
		t.add(askV(CategoryNetwork, fmt.Sprintf("git %s talks to a remote, and the policy does not allow network access", sub)))
	}
}
