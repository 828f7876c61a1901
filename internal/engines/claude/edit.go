package claude

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/corral-dev/corral/pkg/engine"
)

// maxEditFileBytes bounds the files the adapter reads to stage an edit.
const maxEditFileBytes = 32 << 20

// errCannotStage marks edits the adapter cannot turn into a proposal; the
// call is refused with the reason, since Claude could not apply it either or
// would apply it in a way the reviewer has not seen.
var errCannotStage = errors.New("cannot stage this edit")

// editInput is the input of Claude's Edit and MultiEdit tools.
type editInput struct {
	FilePath   string   `json:"file_path"`
	OldString  string   `json:"old_string"`
	NewString  string   `json:"new_string"`
	ReplaceAll bool     `json:"replace_all"`
	Edits      []editOp `json:"edits"`
}

type editOp struct {
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

type writeInput struct {
	FilePath string `json:"file_path"`
	Content  string `json:"content"`
}

// proposeEdit computes the whole-file change an edit tool call would make,
// reading the file as it is now. path is the call's absolute path.
func proposeEdit(tool, path string, input json.RawMessage) (*engine.EditProposal, error) {
	if path == "" {
		return nil, fmt.Errorf("%w: the call names no file", errCannotStage)
	}
	before, existed, err := readForEdit(path)
	if err != nil {
		return nil, err
	}
	p := &engine.EditProposal{Path: path, Before: before, Existed: existed}
	switch tool {
	case "Write":
		if existed {
			// Claude rewrites a file in the encoding it had; Corral
			// stages UTF-8 text only.
			if _, err := decodeEditText(before); err != nil {
				return nil, err
			}
		}
		var in writeInput
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, fmt.Errorf("%w: Write input: %v", errCannotStage, err)
		}
		// Write stores content as given, line endings included; only a
		// byte order mark the file had is kept.
		p.After = []byte(keepBOM(string(before), in.Content))
	case "Edit", "MultiEdit":
		var in editInput
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, fmt.Errorf("%w: %s input: %v", errCannotStage, tool, err)
		}
		ops := in.Edits
		if tool == "Edit" {
			ops = []editOp{{OldString: in.OldString, NewString: in.NewString, ReplaceAll: in.ReplaceAll}}
		}
		after, err := applyEditTool(path, before, existed, ops)
		if err != nil {
			return nil, err
		}
		p.After = after
	case "NotebookEdit":
		after, err := applyNotebookEdit(before, existed, input)
		if err != nil {
			return nil, err
		}
		p.After = after
	default:
		return nil, fmt.Errorf("%w: %s is not an edit tool", errCannotStage, tool)
	}
	return p, nil
}

// readForEdit reads a file as it is now; a missing file is not an error.
func readForEdit(path string) (data []byte, existed bool, err error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("%w: %v", errCannotStage, err)
	}
	// A FIFO or device would block or never end; only files are staged.
	if !fi.Mode().IsRegular() {
		return nil, false, fmt.Errorf("%w: %s is not a regular file", errCannotStage, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %v", errCannotStage, err)
	}
	defer f.Close()
	data, err = io.ReadAll(io.LimitReader(f, maxEditFileBytes+1))
	if err != nil {
		return nil, false, fmt.Errorf("%w: read %s: %v", errCannotStage, path, err)
	}
	if len(data) > maxEditFileBytes {
		return nil, false, fmt.Errorf("%w: %s is larger than %d bytes", errCannotStage, path, maxEditFileBytes)
	}
	return data, true, nil
}

// editText is a file as Claude's edit tools see it: UTF-8 text with CRLF
// line breaks folded to LF, and whether to unfold them when writing.
type editText struct {
	text string
	crlf bool
}

func decodeEditText(data []byte) (editText, error) {
	if bytes.HasPrefix(data, []byte{0xFF, 0xFE}) || bytes.HasPrefix(data, []byte{0xFE, 0xFF}) {
		return editText{}, fmt.Errorf("%w: the file is UTF-16 text, which Corral does not stage", errCannotStage)
	}
	if !utf8.Valid(data) {
		return editText{}, fmt.Errorf("%w: the file is not UTF-8 text", errCannotStage)
	}
	s := string(data)
	return editText{text: strings.ReplaceAll(s, "\r\n", "\n"), crlf: mostlyCRLF(s)}, nil
}

// mostlyCRLF is Claude's choice of line ending for a file it rewrites: CRLF
// when more line breaks are CRLF than bare LF.
func mostlyCRLF(s string) bool {
	crlf, lf := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] != '\n' {
			continue
		}
		if i > 0 && s[i-1] == '\r' {
			crlf++
		} else {
			lf++
		}
	}
	return crlf > lf
}

func (t editText) encode(s string) []byte {
	if !t.crlf {
		return []byte(s)
	}
	return []byte(strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n"))
}

// applyEditTool reproduces Claude's Edit tool: find each old_string as
// Claude finds it (exactly, else with curly quotes folded, else through
// \uXXXX escapes), carry the file's quote and escape style into
// new_string, and replace the first or every occurrence.
func applyEditTool(path string, before []byte, existed bool, ops []editOp) ([]byte, error) {
	if len(ops) == 0 {
		return nil, fmt.Errorf("%w: the call has no edits", errCannotStage)
	}
	t, err := decodeEditText(before)
	if err != nil {
		return nil, err
	}
	after, err := applyEdits(path, t.text, existed, ops)
	if err != nil {
		return nil, err
	}
	return t.encode(after), nil
}

// applyEdits applies edits in order, each found in the text the previous
// ones left, with the checks Claude makes.
func applyEdits(path, content string, existed bool, ops []editOp) (string, error) {
	if content == "" && len(ops) == 1 && ops[0].OldString == "" && ops[0].NewString == "" {
		return "", nil
	}
	out := content
	var written []string
	for _, op := range ops {
		if op.OldString == op.NewString {
			return "", fmt.Errorf("%w: no changes to make: old_string and new_string are exactly the same", errCannotStage)
		}
		prev := out
		if op.OldString == "" {
			if existed && jsTrim(out) != "" {
				return "", fmt.Errorf("%w: cannot create new file - file already exists", errCannotStage)
			}
			if strings.HasSuffix(path, ".ipynb") {
				return "", fmt.Errorf("%w: the file is a Jupyter notebook; use NotebookEdit", errCannotStage)
			}
			out = keepBOM(content, op.NewString)
			written = append(written, out)
			continue
		}
		if !existed {
			return "", fmt.Errorf("%w: file does not exist", errCannotStage)
		}
		actual, ok := findActualString(out, op.OldString)
		if !ok {
			return "", fmt.Errorf("%w: string to replace not found in file.\nString: %s", errCannotStage, op.OldString)
		}
		newString := escapeStyle(op.OldString, actual, quoteStyle(op.OldString, actual, op.NewString))
		if trimmed := strings.TrimRight(actual, "\n"); trimmed != "" {
			for _, w := range written {
				if strings.Contains(w, trimmed) {
					return "", fmt.Errorf("%w: old_string is a substring of a new_string from a previous edit", errCannotStage)
				}
			}
		}
		if !op.ReplaceAll {
			if n := strings.Count(out, actual); n > 1 {
				return "", fmt.Errorf("%w: found %d matches of the string to replace, but replace_all is false.\nString: %s", errCannotStage, n, op.OldString)
			}
		}
		out = replaceString(out, actual, newString, op.ReplaceAll)
		if out == prev {
			return "", fmt.Errorf("%w: string not found in file", errCannotStage)
		}
		written = append(written, newString)
	}
	if out == content {
		return "", fmt.Errorf("%w: original and edited file match exactly", errCannotStage)
	}
	return out, nil
}

// replaceString replaces the first (or every) occurrence of old. Deleting a
// string that ends a line takes the line break with it, as Claude does.
func replaceString(content, old, new string, all bool) string {
	target := old
	if new == "" && !strings.HasSuffix(old, "\n") && strings.Contains(content, old+"\n") {
		target = old + "\n"
	}
	n := 1
	if all {
		n = -1
	}
	return strings.Replace(content, target, new, n)
}

// keepBOM keeps a byte order mark that a file written from scratch over an
// empty one would otherwise lose.
func keepBOM(content, s string) string {
	const bom = "\uFEFF"
	if s != "" && strings.HasPrefix(content, bom) && !strings.HasPrefix(s, bom) {
		return bom + s
	}
	return s
}

// jsTrim trims what JavaScript's String.prototype.trim trims.
func jsTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool {
		switch r {
		case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0xFEFF, 0x2028, 0x2029:
			return true
		}
		return unicode.Is(unicode.Zs, r)
	})
}

// hex4 formats a UTF-16 code unit as four hex digits.
func hex4(u uint16, upper bool) string {
	s := strconv.FormatUint(uint64(u), 16)
	s = strings.Repeat("0", 4-len(s)) + s
	if upper {
		s = strings.ToUpper(s)
	}
	return s
}
