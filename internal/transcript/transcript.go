// Package transcript compares an engine's protocol traffic with golden
// transcripts recorded per CLI version, and says where it drifted: the
// first differing frame, and which of its fields came or went. The engines'
// golden tests and `supervisor doctor engines` share it, so a CLI release
// that changes its frames is named the same way in both.
//
// A transcript is a list of lines, one per frame, rendered by the engine's
// own golden code: a JSON object, or "kind: field field ..." (the fields a
// received frame carried, as key paths).
package transcript

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Drift describes the first difference between want and got, or returns ""
// when they are equal.
func Drift(want, got []string) string {
	for i := 0; i < len(want) || i < len(got); i++ {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w == g {
			continue
		}
		msg := fmt.Sprintf("frame %d (of %d recorded, %d now) differs:\n  want %s\n  got  %s", i+1, len(want), len(got), orNone(w), orNone(g))
		if gone, added := fieldChanges(w, g); len(gone)+len(added) > 0 {
			msg += fmt.Sprintf("\n  fields gone: %s\n  fields new:  %s", list(gone), list(added))
		}
		return msg
	}
	return ""
}

func orNone(s string) string {
	if s == "" {
		return "(no frame)"
	}
	return s
}

func list(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, " ")
}

// fieldChanges compares two frames' fields: the key paths (and leaf values)
// of two JSON objects, or the field lists of two "kind: fields" lines of the
// same kind.
func fieldChanges(want, got string) (gone, added []string) {
	var w, g map[string]any
	if json.Unmarshal([]byte(want), &w) == nil && json.Unmarshal([]byte(got), &g) == nil {
		return diff(flatten("", w), flatten("", g))
	}
	wk, wf, wok := strings.Cut(want, ": ")
	gk, gf, gok := strings.Cut(got, ": ")
	if wok && gok && wk == gk {
		return diff(strings.Fields(wf), strings.Fields(gf))
	}
	return nil, nil
}

// flatten lists a JSON value as path=value leaves, array elements under
// "path[]" whatever their index (a sorted list that gained one entry shows
// that entry, not every entry after it).
func flatten(prefix string, v any) []string {
	switch x := v.(type) {
	case map[string]any:
		var out []string
		for k, val := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			out = append(out, flatten(p, val)...)
		}
		return out
	case []any:
		var out []string
		for _, val := range x {
			out = append(out, flatten(prefix+"[]", val)...)
		}
		if len(x) == 0 {
			out = append(out, prefix+"=[]")
		}
		return out
	default:
		raw, _ := json.Marshal(x)
		return []string{prefix + "=" + string(raw)}
	}
}

func diff(want, got []string) (gone, added []string) {
	for _, f := range want {
		if !slices.Contains(got, f) {
			gone = append(gone, f)
		}
	}
	for _, f := range got {
		if !slices.Contains(want, f) {
			added = append(added, f)
		}
	}
	sort.Strings(gone)
	sort.Strings(added)
	return gone, added
}

// KeyPaths lists the key paths of a JSON value, sorted and joined by
// spaces ("a.b c[].d"); keys in skip (an agent's own extensions) are left
// out with what is under them.
func KeyPaths(raw json.RawMessage, skip ...string) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "(not JSON)"
	}
	set := map[string]bool{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, val := range x {
				if slices.Contains(skip, k) {
					continue
				}
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				set[p] = true
				walk(p, val)
			}
		case []any:
			for _, val := range x {
				walk(prefix+"[]", val)
			}
		}
	}
	walk("", v)
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, " ")
}

// Lines splits a golden file's text into its frames.
func Lines(text string) []string {
	text = strings.TrimRight(text, "\n")
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}

// ErrNoGolden is returned by Compare when no transcript was recorded for
// the version.
var ErrNoGolden = errors.New("no golden transcript recorded for this CLI version")

// Golden is a folder of golden transcripts, one subfolder per CLI version
// (testdata/golden/2.1.332/allow-turn.ndjson).
type Golden struct {
	Dir string
	// FS, when set, holds Dir: a copy embedded in the program, for
	// `supervisor doctor engines`, which runs far from the source tree.
	// Write needs the folder on disk.
	FS fs.FS
}

func (g Golden) readFile(p string) ([]byte, error) {
	if g.FS != nil {
		return fs.ReadFile(g.FS, filepath.ToSlash(p))
	}
	return os.ReadFile(p)
}

// Versions lists the versions with recorded transcripts, oldest first.
func (g Golden) Versions() []string {
	var entries []fs.DirEntry
	if g.FS != nil {
		entries, _ = fs.ReadDir(g.FS, filepath.ToSlash(g.Dir))
	} else {
		entries, _ = os.ReadDir(g.Dir)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	slices.SortFunc(out, CompareVersions)
	return out
}

// Path is where the transcript file of version is kept.
func (g Golden) Path(version, file string) string {
	return filepath.Join(g.Dir, version, file)
}

// Write records got as version's transcript file.
func (g Golden) Write(version, file string, got []string) error {
	p := g.Path(version, file)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(strings.Join(got, "\n")+"\n"), 0o644)
}

// Compare compares got with version's transcript file. Without one it
// compares with the nearest recorded version's, so the error both says the
// version is new and names what drifted (ErrNoGolden wrapped).
func (g Golden) Compare(version, file string, got []string) error {
	raw, err := g.readFile(g.Path(version, file))
	if err == nil {
		if d := Drift(Lines(string(raw)), got); d != "" {
			return fmt.Errorf("the protocol of CLI %s drifted from %s: %s", version, g.Path(version, file), d)
		}
		return nil
	}
	near := Nearest(g.Versions(), version)
	if near == "" {
		return fmt.Errorf("%w (%s): none is recorded in %s", ErrNoGolden, version, g.Dir)
	}
	raw, err = g.readFile(g.Path(near, file))
	if err != nil {
		return fmt.Errorf("%w (%s), and the nearest, %s, has no %s: %v", ErrNoGolden, version, near, file, err)
	}
	if d := Drift(Lines(string(raw)), got); d != "" {
		return fmt.Errorf("%w (%s); against the nearest recorded, %s: %s", ErrNoGolden, version, near, d)
	}
	return fmt.Errorf("%w (%s); it matches the nearest recorded, %s", ErrNoGolden, version, near)
}

// Nearest is the recorded version closest to version: the newest not
// newer than it, else the oldest.
func Nearest(recorded []string, version string) string {
	best := ""
	for _, v := range recorded {
		if CompareVersions(v, version) <= 0 {
			best = v
		}
	}
	if best == "" && len(recorded) > 0 {
		best = recorded[0]
	}
	return best
}

// CompareVersions orders dotted version strings numerically (2.1.9 before
// 2.1.10); a part that is not a number compares as text.
func CompareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y string
		if i < len(as) {
			x = as[i]
		}
		if i < len(bs) {
			y = bs[i]
		}
		xn, xerr := strconv.Atoi(x)
		yn, yerr := strconv.Atoi(y)
		switch {
		case xerr == nil && yerr == nil && xn != yn:
			if xn < yn {
				return -1
			}
			return 1
		case (xerr != nil || yerr != nil) && x != y:
			return strings.Compare(x, y)
		}
	}
	return 0
}
