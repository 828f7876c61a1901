package codex

import (
	"bufio"
	"io"
	"testing"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/pkg/engine"
)

// Every server request gets an answer: nothing is left for the server to
// wait on.
func TestEveryServerRequestIsAnswered(t *testing.T) {
	cases := []struct {
		name, method, params, want string
	}{
		{"unknown method", "attestation/generate", `{}`, `{"id":7,"error":{"code":-32601,"message":"Corral does not handle attestation/generate"}}`},
		{"legacy approval", "execCommandApproval", `{}`, `{"id":7,"error":{"code":-32601,"message":"Corral does not handle execCommandApproval"}}`},
		{"user input", rUserInput, `{"threadId":"t"}`, `{"id":7,"error":{"code":-32601,"message":"Corral cannot put questions to the user in the middle of a turn; continue with your best judgement and ask in your reply"}}`},
		{"permissions are never granted", rPermissions, `{"threadId":"t"}`, `{"id":7,"result":{"permissions":{},"scope":"turn"}}`},
		{"elicitation declined", rElicitation, `{"threadId":"t"}`, `{"id":7,"result":{"action":"decline","content":null,"_meta":null}}`},
		{"command for no running turn", rCommandApproval, `{"threadId":"other","itemId":"c","command":"rm -rf /"}`, `{"id":7,"result":{"decision":"decline"}}`},
		{"patch for no running turn", rFileChangeApproval, `{"threadId":"other","itemId":"p"}`, `{"id":7,"result":{"decision":"decline"}}`},
		{"unreadable approval", rCommandApproval, `{"threadId":5}`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			host := enginetest.NewHost(nil)
			e := New().(*Engine)
			e.opts = engine.StartOptions{Host: host}
			e.log = zap.NewNop()
			// The server's side of the connection writes the request
			// and reads the answer.
			engRead, serverWrite := io.Pipe()
			serverRead, engWrite := io.Pipe()
			srv := &serverProc{}
			srv.conn = jsonrpc.NewConn(engRead, engWrite, connOptions(srv, spawnSpec{}, serverHooks{request: e.serveRequest}))
			served := make(chan error, 1)
			go func() { served <- srv.conn.Serve() }()
			go io.WriteString(serverWrite, `{"id":7,"method":"`+tc.method+`","params":`+tc.params+"}\n")
			sc := bufio.NewScanner(serverRead)
			if !sc.Scan() {
				t.Fatal("no answer")
			}
			got := sc.Text()
			if tc.want == "" {
				m, err := jsonrpc.ParseMessage([]byte(got))
				if err != nil || m.Error == nil || m.Error.Code != jsonrpc.CodeInvalidParams {
					t.Fatalf("answer %s, want an invalid-params error", got)
				}
			} else if got != tc.want {
				t.Fatalf("answer %s\nwant   %s", got, tc.want)
			}
			serverWrite.Close()
			serverRead.Close()
			<-served
			if len(host.Calls()) != 0 {
				t.Errorf("Permit was asked: %+v", host.Calls())
			}
		})
	}
}
