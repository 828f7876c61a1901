package transcript

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDriftNamesTheFirstDifferingFrameAndItsFields(t *testing.T) {
	tests := []struct {
		name       string
		want, got  []string
		wantDrift  []string // substrings of the description
		wantNoDiff bool
	}{
		{name: "equal", want: []string{"a", "b"}, got: []string{"a", "b"}, wantNoDiff: true},
		{
			name:      "kind and fields",
			want:      []string{"request initialize {}", "notification session/update tool_call: sessionId update.kind update.title"},
			got:       []string{"request initialize {}", "notification session/update tool_call: sessionId update.kind update.name"},
			wantDrift: []string{"frame 2 (of 2 recorded, 2 now)", "fields gone: update.title", "fields new:  update.name"},
		},
		{
			name:      "JSON frame",
			want:      []string{`{"in":"control_response/success","response":["account","models"]}`},
			got:       []string{`{"in":"control_response/success","response":["account","models","plugins"]}`},
			wantDrift: []string{"frame 1", "fields gone: none", `fields new:  response[]="plugins"`},
		},
		{
			name:      "a frame more",
			want:      []string{"a"},
			got:       []string{"a", "b"},
			wantDrift: []string{"frame 2 (of 1 recorded, 2 now)", "want (no frame)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Drift(tt.want, tt.got)
			if tt.wantNoDiff {
				if d != "" {
					t.Fatalf("drift between equal transcripts: %s", d)
				}
				return
			}
			for _, s := range tt.wantDrift {
				if !strings.Contains(d, s) {
					t.Errorf("drift %q does not say %q", d, s)
				}
			}
		})
	}
}

func TestCompareFallsBackToTheNearestRecordedVersion(t *testing.T) {
	root := t.TempDir()
	disk := Golden{Dir: filepath.Join(root, "golden")}
	for _, v := range []string{"2.1.9", "2.1.10"} {
		if err := disk.Write(v, "turn.txt", []string{"x: a b", "y: " + v}); err != nil {
			t.Fatal(err)
		}
	}
	for name, g := range map[string]Golden{"on disk": disk, "in an FS": {Dir: "golden", FS: os.DirFS(root)}} {
		t.Run(name, func(t *testing.T) { compareNearest(t, g) })
	}
}

func compareNearest(t *testing.T, g Golden) {
	if got := g.Versions(); strings.Join(got, ",") != "2.1.9,2.1.10" {
		t.Fatalf("versions %v: want numeric order", got)
	}
	if err := g.Compare("2.1.10", "turn.txt", []string{"x: a b", "y: 2.1.10"}); err != nil {
		t.Fatal(err)
	}
	err := g.Compare("2.1.12", "turn.txt", []string{"x: a c", "y: 2.1.10"})
	if !errors.Is(err, ErrNoGolden) || !strings.Contains(err.Error(), "nearest recorded, 2.1.10") || !strings.Contains(err.Error(), "fields gone: b") {
		t.Fatalf("compare with an unrecorded version: %v", err)
	}
	if n := Nearest([]string{"0.169.0", "0.171.0"}, "0.150.0"); n != "0.169.0" {
		t.Fatalf("nearest to an older version: %s", n)
	}
}
