package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
)

// BenchmarkReaderRead reads session-event-sized frames (about 2 KB, the
// bulk of what the CLIs send) in each framing.
func BenchmarkReaderRead(b *testing.B) {
	for _, fr := range framings {
		b.Run(fr.String(), func(b *testing.B) { benchmarkRead(b, fr) })
	}
}

func benchmarkRead(b *testing.B, fr Framing) {
	body := []byte(`{"jsonrpc":"2.0","method":"session.event","params":{"event":{"type":"assistant.message_delta","data":{"deltaContent":"` +
		strings.Repeat("x", 2000) + `"}}}}`)
	var stream bytes.Buffer
	w := fr.NewWriter(&stream)
	const frames = 1024
	for range frames {
		if err := w.Write(body); err != nil {
			b.Fatal(err)
		}
	}
	data := stream.Bytes()
	b.SetBytes(int64(len(data) / frames))
	r := fr.NewReader(bytes.NewReader(data), 0)
	b.ResetTimer()
	for range b.N {
		_, err := r.Read()
		if err == io.EOF {
			r = fr.NewReader(bytes.NewReader(data), 0)
			_, err = r.Read()
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallRoundTrip is one request and its reply over OS pipes, in
// each framing.
func BenchmarkCallRoundTrip(b *testing.B) {
	for _, fr := range framings {
		b.Run(fr.String(), func(b *testing.B) { benchmarkCall(b, fr) })
	}
}

func benchmarkCall(b *testing.B, fr Framing) {
	client, server := newBenchPair(b, fr)
	go server.Serve()
	go client.Serve()
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		var res json.RawMessage
		if err := client.Call(ctx, "ping", map[string]string{"message": "hi"}, &res); err != nil {
			b.Fatal(err)
		}
	}
}

func newBenchPair(b *testing.B, fr Framing) (client, server *Conn) {
	aR, aW := benchPipe(b)
	bR, bW := benchPipe(b)
	server = NewConn(aR, bW, Options{Framing: fr, Request: func(_ context.Context, _ string, params json.RawMessage) (any, error) {
		return params, nil
	}})
	client = NewConn(bR, aW, Options{Framing: fr})
	return client, server
}

func benchPipe(b *testing.B) (*os.File, *os.File) {
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Close(); r.Close() })
	return r, w
}
