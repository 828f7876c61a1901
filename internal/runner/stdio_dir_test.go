package runner

import (
	"errors"
	"testing"

	"github.com/corral-dev/corral/pkg/wire"
)

// A runner started on a folder keeps it; a spare takes the one live.ensure
// names, which must be absolute.
func TestEnsureDir(t *testing.T) {
	for _, tc := range []struct {
		name        string
		held, named string
		want        string
		code        wire.Code
	}{
		{"started on a folder, none named", "/s/a", "", "/s/a", ""},
		{"started on a folder, the same named", "/s/a", "/s/a/", "/s/a", ""},
		{"started on a folder, another named", "/s/a", "/s/b", "", wire.CodeConflict},
		{"spare, folder named", "", "/s/b", "/s/b", ""},
		{"spare, none named", "", "", "", wire.CodeBadRequest},
		{"spare, relative folder", "", "s/b", "", wire.CodeBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{Dir: tc.held}
			err := ensureDir(&opts, tc.named)
			if tc.code != "" {
				var we *wire.Error
				if !errors.As(err, &we) || we.Code != tc.code {
					t.Fatalf("err %v, want code %s", err, tc.code)
				}
				return
			}
			if err != nil || opts.Dir != tc.want {
				t.Fatalf("dir %q, err %v; want %q", opts.Dir, err, tc.want)
			}
		})
	}
}
