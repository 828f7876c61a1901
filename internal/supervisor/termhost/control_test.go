package termhost

import (
	"errors"
	"testing"

	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
)

func FuzzParseControl(f *testing.F) {
	for _, seed := range []string{`{"type":"resize","cols":80,"rows":24}`, `{"type":"resize"}`, `{"type":7}`, `[]`, ``, `{"type":"resize","cols":1e9}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		fr, err := parseControl(p)
		if err != nil {
			if !errors.Is(err, wire.ErrBadRequest) {
				t.Fatalf("error %v is not bad_request", err)
			}
			return
		}
		if fr.Type != api.FrameResize || fr.Cols == 0 || fr.Rows == 0 {
			t.Fatalf("accepted %+v", fr)
		}
	})
}
