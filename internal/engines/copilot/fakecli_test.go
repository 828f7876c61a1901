package copilot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/corral-dev/corral/internal/jsonrpc"
)

// fakeCLIEnv makes the test binary act as a misbehaving Copilot CLI (see
// runFakeCLI), for failures the real CLI cannot be made to show.
const fakeCLIEnv = "CORRAL_COPILOT_FAKE_CLI"

// runFakeCLI serves the CLI's protocol on stdio the way mode says:
//
//   - idle: does nothing until killed (the process behind a replay);
//   - exit-early: prints to stderr and exits 3 before reading anything;
//   - garbage: writes a line that is not a frame;
//   - protocol-2: reports protocol version 2;
//   - no-version: reports no protocol version;
//   - old-ping: knows ping but not connect, then works;
//   - ask-first: sends the client a request before answering connect and
//     reports the client's answer as its version, with protocol 99;
//   - crash-on-send: works until session.send, then prints a panic to
//     stderr and exits 2.
func runFakeCLI(mode string) int {
	switch mode {
	case "idle":
		time.Sleep(time.Hour) // a process for a replayed CLI; killed when done
		return 0
	case "exit-early":
		fmt.Fprintln(os.Stderr, "fatal: cannot start: no runtime found")
		return 3
	case "garbage":
		os.Stdout.WriteString("Segmentation fault\r\n\r\n")
		io.Copy(io.Discard, os.Stdin)
		return 0
	}
	v3, v2 := 3, 2
	var conn *jsonrpc.Conn
	conn = jsonrpc.NewConn(os.Stdin, os.Stdout, jsonrpc.Options{
		Framing: jsonrpc.ContentLength,
		Request: func(ctx context.Context, method string, params json.RawMessage) (any, error) {
			switch {
			case method == methodConnect && mode == "protocol-2":
				return connectResult{OK: true, ProtocolVersion: &v2, Version: "0.9.0"}, nil
			case method == methodConnect && mode == "no-version":
				return connectResult{OK: true, Version: "0.0.1"}, nil
			case method == methodConnect && mode == "old-ping":
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: connect"}
			case method == methodConnect && mode == "ask-first":
				err := conn.Call(ctx, "userInput.request", map[string]string{"question": "?"}, nil)
				var rpcErr *jsonrpc.Error
				answer := "no error"
				if errors.As(err, &rpcErr) {
					answer = fmt.Sprintf("error %d %s", rpcErr.Code, rpcErr.Message)
				}
				v99 := 99
				return connectResult{OK: true, ProtocolVersion: &v99, Version: "client answered: " + answer}, nil
			case method == methodConnect:
				return connectResult{OK: true, ProtocolVersion: &v3, Version: "fake"}, nil
			case method == methodPing:
				return pingResult{ProtocolVersion: &v3}, nil
			case method == methodSessionCreate || method == methodSessionResume:
				var p sessionParams
				json.Unmarshal(params, &p)
				return sessionResult{SessionID: p.SessionID}, nil
			case method == methodSessionSend && mode == "crash-on-send":
				fmt.Fprintln(os.Stderr, "panic: runtime error: invalid memory address")
				fmt.Fprintln(os.Stderr, "goroutine 1 [running]: fake")
				os.Exit(2)
			case method == methodRuntimeShutdown:
				go func() {
					time.Sleep(10 * time.Millisecond)
					os.Exit(0)
				}()
				return nil, nil
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: " + method}
		},
	})
	if err := conn.Serve(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
