package metrics

import (
	"testing"
)

// BenchmarkEvent is what the metrics add to each mirrored event on the
// supervisor's reader goroutine: an assistantDelta (most events) costs a
// counter look-up and an add; a usage event (one a model call) is decoded.
// baseline is an empty observer call, for comparison in the same run.
func BenchmarkEvent(b *testing.B) {
	m := New(census)
	delta := []byte(`{"seq":42,"ts":"2026-12-01T00:00:00.123456Z","type":"assistantDelta","data":{"text":"some streamed words "}}`)
	usage := []byte(`{"seq":43,"ts":"2026-12-01T00:00:00.123456Z","type":"usage","data":{"inputTokens":1200,"outputTokens":80,"cacheReadTokens":0,"cacheWriteTokens":0,"costUsd":0.0048,"estimated":true,"model":"script-1"}}`)
	var sink nop
	for _, c := range []struct {
		name string
		obs  interface {
			Event(session, engine string, typ, line []byte)
		}
		typ  string
		line []byte
	}{
		{"baseline", sink, "assistantDelta", delta},
		{"assistantDelta", m, "assistantDelta", delta},
		{"usage", m, "usage", usage},
	} {
		b.Run(c.name, func(b *testing.B) {
			typ := []byte(c.typ)
			b.ReportAllocs()
			for b.Loop() {
				c.obs.Event("b59e071184b3", "script", typ, c.line)
			}
		})
	}
}

type nop struct{}

func (nop) Event(string, string, []byte, []byte) {}
