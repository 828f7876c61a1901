package event

import "github.com/corral-dev/corral/pkg/hunks"

// HunkStagedData is the data of hunkStaged: an edit waiting for review, or
// auto-applied (auto mode's edits, captured shell changes) and revertible
// until the next turn starts.
type HunkStagedData struct {
	EditID string      `json:"editId"`
	ToolID string      `json:"toolId,omitempty"`
	Path   string      `json:"path"`
	Auto   bool        `json:"auto"`
	Edit   *hunks.Edit `json:"edit"`
}

// HunkDecidedData is the data of hunkDecided.
type HunkDecidedData struct {
	EditID   string `json:"editId"`
	HunkID   string `json:"hunkId"`
	Decision string `json:"decision"`
	Note     string `json:"note,omitempty"`
	By       string `json:"by"`
}

// EditAppliedData is the data of editApplied: bytes reached the disk (or,
// with Conflict set, did not).
type EditAppliedData struct {
	EditID string   `json:"editId"`
	Path   string   `json:"path"`
	By     string   `json:"by"` // engine, corral, command, outside
	Hunks  []string `json:"hunks"`
	// Reverted says the hunks are out of the file again: taken back by a
	// reject (by corral), or accepted but never written, the engine's
	// write having failed (by engine, with Conflict saying why).
	Reverted bool `json:"reverted,omitempty"`
	Added    int  `json:"added"`
	Removed  int  `json:"removed"`
	// Conflict says why nothing was written.
	Conflict string `json:"conflict,omitempty"`
}

// CompactedData is the data of compacted.
type CompactedData struct {
	BeforePercent float64 `json:"beforePercent"`
}
