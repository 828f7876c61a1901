// Package hunkscli is the command line of the hunk engine:
//
//	hunks diff OLD NEW [--format patch|json] [--path P] [--hunks h1,h3]
//	hunks apply FILE --from OLD --to NEW (--accept h1,h3 | --revert h2)
//
// diff prints the edit from OLD to NEW as a unified diff or as JSON. apply
// diffs OLD against NEW the same way and lands the chosen hunks on FILE as
// it is now, by context, replacing FILE atomically. /dev/null stands for an
// absent file, so an edit can create or delete one. See docs/hunks.md.
package hunkscli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/corral-dev/corral/pkg/hunks"
)

// Exit statuses.
const (
	exitOK       = 0
	exitConflict = 1 // a hunk could not be placed; nothing was written
	exitError    = 2 // bad usage, an unknown hunk, or a file that could not be read or written
)

// absentPath stands for an absent file, as in git.
const absentPath = "/dev/null"

// Main runs the command with args, which start with the subcommand, and
// returns its exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitError
	}
	switch args[0] {
	case "diff":
		return runDiff(args[1:], stdout, stderr)
	case "apply":
		return runApply(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	}
	fmt.Fprintf(stderr, "hunks: unknown command %q\n", args[0])
	usage(stderr)
	return exitError
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: hunks diff OLD NEW [--format patch|json] [--path P] [--hunks h1,h3]
       hunks apply FILE --from OLD --to NEW (--accept h1,h3 | --revert h2)
OLD or NEW may be /dev/null for an absent file. Exit status: 0 done,
1 conflict (nothing written), 2 bad usage or a file error.
`)
}

func runDiff(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hunks diff", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("format", "patch", "output `format`: patch or json")
	path := fs.String("path", "", "file `name` in the patch (default: NEW, or its base name when NEW is not a relative path)")
	only := fs.String("hunks", "", "comma-separated hunk `ids` to put in the patch (default: all)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: hunks diff OLD NEW [--format patch|json] [--path P] [--hunks h1,h3]")
		fs.PrintDefaults()
	}
	files, status, ok := parse(fs, args)
	if !ok {
		return status
	}
	if len(files) != 2 {
		return usageError(fs, stderr, "want OLD and NEW, got %d arguments", len(files))
	}
	if *format != "patch" && *format != "json" {
		return usageError(fs, stderr, "unknown format %q", *format)
	}
	if *only != "" && *format != "patch" {
		return usageError(fs, stderr, "--hunks needs --format patch")
	}
	name := *path
	if name == "" {
		name = patchName(files[0], files[1])
	}
	edit, err := diffFiles(name, files[0], files[1])
	if err != nil {
		fmt.Fprintf(stderr, "hunks: %v\n", err)
		return exitError
	}
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(edit); err != nil {
			fmt.Fprintf(stderr, "hunks: %v\n", err)
			return exitError
		}
		return exitOK
	}
	var patch []byte
	if *only != "" {
		patch, err = edit.PatchHunks(splitIDs(*only))
	} else {
		patch, err = edit.Patch()
	}
	if err == nil {
		_, err = stdout.Write(patch)
	}
	if err != nil {
		fmt.Fprintf(stderr, "hunks: %v\n", err)
		return exitError
	}
	return exitOK
}

func runApply(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hunks apply", flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("from", "", "the `file` the edit was made against (/dev/null: it created FILE)")
	to := fs.String("to", "", "the `file` the edit proposed (/dev/null: it deleted FILE)")
	accept := fs.String("accept", "", "comma-separated hunk `ids` to apply onto FILE")
	revert := fs.String("revert", "", "comma-separated hunk `ids` to take back out of FILE")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: hunks apply FILE --from OLD --to NEW (--accept h1,h3 | --revert h2)")
		fs.PrintDefaults()
	}
	files, status, ok := parse(fs, args)
	if !ok {
		return status
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case len(files) != 1:
		return usageError(fs, stderr, "want one FILE, got %d arguments", len(files))
	case !set["from"] || !set["to"]:
		return usageError(fs, stderr, "--from and --to are required")
	case set["accept"] == set["revert"]:
		return usageError(fs, stderr, "give exactly one of --accept and --revert")
	}
	file := files[0]
	edit, err := diffFiles(filepath.ToSlash(file), *from, *to)
	if err != nil {
		fmt.Fprintf(stderr, "hunks: %v\n", err)
		return exitError
	}
	target, current, mode, err := hunks.ReadFile(file)
	if err != nil {
		fmt.Fprintf(stderr, "hunks: %v\n", err)
		return exitError
	}

	verb, ids, apply := "applied", splitIDs(*accept), edit.Apply
	if set["revert"] {
		verb, ids, apply = "reverted", splitIDs(*revert), edit.Revert
	}
	result, err := apply(current, ids)
	switch {
	case errors.Is(err, hunks.ErrConflict):
		fmt.Fprintf(stderr, "hunks: %v; %s left as it was\n", err, file)
		return exitConflict
	case errors.Is(err, hunks.ErrUnknownHunk):
		fmt.Fprintf(stderr, "hunks: %v; the edit has hunks %s\n", err, describeIDs(edit.IDs()))
		return exitError
	case err != nil:
		fmt.Fprintf(stderr, "hunks: %v\n", err)
		return exitError
	}
	if err := hunks.WriteFile(target, current, result, mode); err != nil {
		fmt.Fprintf(stderr, "hunks: %v\n", err)
		return exitError
	}
	if len(ids) == 0 {
		fmt.Fprintf(stdout, "%s: no hunks chosen, nothing changed\n", file)
		return exitOK
	}
	fmt.Fprintf(stdout, "%s: %s %s\n", file, verb, strings.Join(ids, ", "))
	return exitOK
}

// parse parses flags wherever they appear among the arguments, as in
// "hunks diff OLD NEW --format json", and returns the other arguments.
// Everything after "--" is an argument.
func parse(fs *flag.FlagSet, args []string) (positional []string, status int, ok bool) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, exitOK, false
			}
			return nil, exitError, false
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, 0, true
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(positional, rest...), 0, true
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

func usageError(fs *flag.FlagSet, stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "%s: %s\n", fs.Name(), fmt.Sprintf(format, args...))
	fs.Usage()
	return exitError
}

func splitIDs(list string) []string {
	var ids []string
	for id := range strings.SplitSeq(list, ",") {
		if id = strings.TrimSpace(id); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

func describeIDs(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// patchName picks the name a diff of OLD and NEW shows: NEW's (OLD's when
// NEW is absent) as given when it is a relative path inside the current
// directory, as git apply expects, else its base name.
func patchName(oldPath, newPath string) string {
	name := newPath
	if name == absentPath {
		name = oldPath
	}
	if !filepath.IsLocal(name) {
		name = filepath.Base(name)
	}
	return filepath.ToSlash(name)
}

func diffFiles(name, oldPath, newPath string) (*hunks.Edit, error) {
	old, err := readVersion(oldPath)
	if err != nil {
		return nil, err
	}
	new, err := readVersion(newPath)
	if err != nil {
		return nil, err
	}
	return hunks.Diff(name, old, new)
}

// readVersion reads one side of an edit; /dev/null is an absent file.
func readVersion(path string) (hunks.Snapshot, error) {
	if path == absentPath {
		return hunks.Snapshot{}, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return hunks.Snapshot{}, err
	}
	return hunks.Present(data), nil
}
