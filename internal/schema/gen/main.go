// Command gen regenerates what internal/schema generates: with no
// argument, comments_gen.go from the module's source, then (run again as a
// fresh build, so the new comments are in it) every artefact of
// schema.Artefacts. `go generate ./internal/schema` runs it.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/corral-dev/corral/internal/schema"
	"github.com/corral-dev/corral/internal/testenv"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "schema gen:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	root, err := testenv.ModuleRoot()
	if err != nil {
		return err
	}
	if len(args) == 1 && args[0] == "artefacts" {
		for _, a := range schema.Artefacts {
			b, err := schema.Render(a.Format)
			if err != nil {
				return err
			}
			path := filepath.Join(root, filepath.FromSlash(a.Path))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				return err
			}
		}
		return nil
	}
	comments, err := schema.HarvestComments(root)
	if err != nil {
		return err
	}
	src, err := schema.CommentsSource(comments)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, "internal", "schema", "comments_gen.go"), src, 0o644); err != nil {
		return err
	}
	// The artefacts need the comments compiled in: a new build does.
	cmd := exec.Command("go", "run", "./internal/schema/gen", "artefacts")
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stdout, os.Stderr
	return cmd.Run()
}
