package runner

import (
	"strings"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// rename gives the session a title: kept in meta.json, shown by status,
// recorded by a renamed event.
func (r *Runner) rename(c command.Rename) (command.RenameResult, error) {
	title := strings.TrimSpace(c.Title)
	if title == "" {
		return command.RenameResult{}, wire.Errorf(wire.CodeBadRequest, "rename needs a title")
	}
	if err := wire.CheckTitle(title); err != nil {
		return command.RenameResult{}, err
	}
	spec := r.updateSpec(func(s *wire.Spec) { s.Title = title })
	if err := r.store.saveSpec(spec); err != nil {
		return command.RenameResult{}, err
	}
	r.emit(event.Renamed, event.RenamedData{Title: title})
	return command.RenameResult{Title: title}, nil
}
