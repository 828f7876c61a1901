package claude

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// notebookInput is the input of Claude's NotebookEdit tool.
type notebookInput struct {
	CellID    string `json:"cell_id"`
	NewSource string `json:"new_source"`
	CellType  string `json:"cell_type"`
	EditMode  string `json:"edit_mode"`
}

var cellIndexID = regexp.MustCompile(`^cell-(\d+)$`)

// applyNotebookEdit reproduces Claude's NotebookEdit: parse the notebook,
// replace, insert or delete one cell, and write it back the way JavaScript's
// JSON.stringify(notebook, null, 1) does, keeping a final newline.
//
// An inserted cell of an nbformat 4.5+ notebook gets a random id in Claude;
// the proposal gives it one of its own, so the written file differs from the
// proposal in that id only.
func applyNotebookEdit(before []byte, existed bool, input json.RawMessage) ([]byte, error) {
	var in notebookInput
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, fmt.Errorf("%w: NotebookEdit input: %v", errCannotStage, err)
	}
	if !existed {
		return nil, fmt.Errorf("%w: notebook file does not exist", errCannotStage)
	}
	t, err := decodeEditText(before)
	if err != nil {
		return nil, err
	}
	nb, err := parseOrdered([]byte(t.text))
	if err != nil || nb.kind != kindObject {
		return nil, fmt.Errorf("%w: notebook is not valid JSON", errCannotStage)
	}
	cellsVal := nb.obj.get("cells")
	if cellsVal == nil || cellsVal.kind != kindArray {
		return nil, fmt.Errorf("%w: the notebook has no cells array", errCannotStage)
	}
	mode := in.EditMode
	if mode == "" {
		mode = "replace"
	}
	idx, err := notebookCellIndex(cellsVal.arr, in.CellID, mode == "insert")
	if err != nil {
		return nil, err
	}
	switch mode {
	case "delete":
		if idx >= len(cellsVal.arr) {
			return nil, fmt.Errorf("%w: cell with index %d does not exist in notebook", errCannotStage, idx)
		}
		cellsVal.arr = append(cellsVal.arr[:idx], cellsVal.arr[idx+1:]...)
	case "insert":
		cell := &orderedObject{}
		newType := in.CellType
		if newType != "markdown" {
			newType = "code"
		}
		cell.set("cell_type", &jsonValue{kind: kindString, str: newType})
		if id, ok := insertedCellID(nb.obj); ok {
			cell.set("id", &jsonValue{kind: kindString, str: id})
		}
		cell.set("source", &jsonValue{kind: kindString, str: in.NewSource})
		cell.set("metadata", &jsonValue{kind: kindObject, obj: &orderedObject{}})
		if newType == "code" {
			cell.set("execution_count", &jsonValue{kind: kindNull})
			cell.set("outputs", &jsonValue{kind: kindArray})
		}
		if idx > len(cellsVal.arr) {
			idx = len(cellsVal.arr)
		}
		cellsVal.arr = append(cellsVal.arr[:idx], append([]*jsonValue{{kind: kindObject, obj: cell}}, cellsVal.arr[idx:]...)...)
	case "replace":
		if idx >= len(cellsVal.arr) || cellsVal.arr[idx].kind != kindObject {
			return nil, fmt.Errorf("%w: cell with index %d does not exist in notebook", errCannotStage, idx)
		}
		cell := cellsVal.arr[idx].obj
		cell.set("source", &jsonValue{kind: kindString, str: in.NewSource})
		if ct := cell.get("cell_type"); ct != nil && ct.kind == kindString && ct.str == "code" {
			cell.set("execution_count", &jsonValue{kind: kindNull})
			cell.set("outputs", &jsonValue{kind: kindArray})
		}
		if in.CellType != "" {
			if ct := cell.get("cell_type"); ct == nil || ct.kind != kindString || ct.str != in.CellType {
				cell.set("cell_type", &jsonValue{kind: kindString, str: in.CellType})
			}
		}
	default:
		return nil, fmt.Errorf("%w: unknown edit_mode %q", errCannotStage, in.EditMode)
	}
	var b strings.Builder
	nb.stringify(&b, "")
	if strings.HasSuffix(t.text, "\n") {
		b.WriteByte('\n')
	}
	return t.encode(b.String()), nil
}

// notebookCellIndex finds the cell a NotebookEdit names; for an insert, the
// position after it.
func notebookCellIndex(cells []*jsonValue, id string, insert bool) (int, error) {
	if id == "" {
		if insert {
			return 0, nil
		}
		return 0, fmt.Errorf("%w: cell ID must be specified when not inserting a new cell", errCannotStage)
	}
	idx := -1
	for i, c := range cells {
		if c.kind != kindObject {
			continue
		}
		if v := c.obj.get("id"); v != nil && v.kind == kindString && v.str == id {
			idx = i
			break
		}
	}
	if idx == -1 {
		m := cellIndexID.FindStringSubmatch(id)
		if m == nil {
			return 0, fmt.Errorf("%w: cell with ID %q not found in notebook", errCannotStage, id)
		}
		n, err := strconv.Atoi(m[1])
		if err != nil || n >= len(cells) {
			return 0, fmt.Errorf("%w: cell with index %s does not exist in notebook", errCannotStage, m[1])
		}
		idx = n
	}
	if insert {
		return idx + 1, nil
	}
	return idx, nil
}

// insertedCellID is the id a new cell gets: notebooks of nbformat 4.5 and
// later require one.
func insertedCellID(nb *orderedObject) (string, bool) {
	major := numberOf(nb.get("nbformat"))
	minor := numberOf(nb.get("nbformat_minor"))
	if !(major > 4 || major == 4 && minor >= 5) {
		return "", false
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:]), true
}

func numberOf(v *jsonValue) float64 {
	if v == nil || v.kind != kindNumber {
		return 0
	}
	return v.num
}
