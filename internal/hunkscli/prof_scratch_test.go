package hunkscli

import (
	"io"
	"testing"
)

func BenchmarkScratch200k(b *testing.B) {
	for b.Loop() {
		if Main([]string{"diff", "/tmp/integ-hb/old200k", "/tmp/integ-hb/new200k"}, io.Discard, io.Discard) != 0 {
			b.Fatal("status")
		}
	}
}
