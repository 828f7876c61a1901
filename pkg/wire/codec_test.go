package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestMessageRoundTrip(t *testing.T) {
	code := 3
	cases := []*Message{
		{T: THello, Proto: ProtocolVersion},
		{T: TLiveEnsure, ReqID: "1", Spec: &Spec{ID: "s1", Engine: "script", Cwd: "/w"}},
		{T: TInject, ReqID: "2", Command: &Command{Cmd: CmdSend, Text: "hi\nthere \"quoted\""}},
		{T: TInjected, ReqID: "2", Outcome: OutcomeInjected, Reply: &Reply{OK: true}},
		{T: TApprovalResolv, ReqID: "3", AskID: "a1", Decision: DecisionDeny, Note: "no"},
		{T: TCapResult, ReqID: "4", Error: Errorf(CodeNotFound, "no goal")},
		{T: TTermData, Term: &Term{TermID: "t", ClientID: "c", Data: []byte{0, 1, 2, '\n', 0xff}}},
		{T: TTermExit, Term: &Term{TermID: "t", ExitCode: &code}},
		{T: TRotate, Session: "a", NewSession: "b"},
	}
	var buf bytes.Buffer
	enc := NewEncoder(&buf)
	for _, m := range cases {
		if err := enc.Encode(m); err != nil {
			t.Fatalf("encode %s: %v", m.T, err)
		}
	}
	if n := strings.Count(buf.String(), "\n"); n != len(cases) {
		t.Fatalf("%d lines for %d messages: a message spans lines", n, len(cases))
	}
	dec := NewDecoder(&buf, 0)
	for _, want := range cases {
		got, err := dec.Decode()
		if err != nil {
			t.Fatalf("decode %s: %v", want.T, err)
		}
		wj, _ := json.Marshal(want)
		gj, _ := json.Marshal(got)
		if !bytes.Equal(wj, gj) {
			t.Errorf("round trip of %s:\n got %s\nwant %s", want.T, gj, wj)
		}
	}
	if _, err := dec.Decode(); !errors.Is(err, io.EOF) {
		t.Fatalf("after last message: %v, want EOF", err)
	}
}

func TestDecoderSkipsBadLines(t *testing.T) {
	long := `{"t":"inject","command":{"cmd":"send","text":"` + strings.Repeat("x", 200) + `"}}`
	input := strings.Join([]string{
		`{"t":"hello","proto":1}`,
		`not json`,
		``,
		`{"proto":1}`,
		long,
		`{"t":"ready","proto":1}`,
		`{"t":"bye"}`, // no trailing newline: still a message at EOF
	}, "\n")
	dec := NewDecoder(strings.NewReader(input), 100)
	var types []Type
	var lineErrs []*LineError
	for {
		m, err := dec.Decode()
		if errors.Is(err, io.EOF) {
			break
		}
		var le *LineError
		if errors.As(err, &le) {
			lineErrs = append(lineErrs, le)
			continue
		}
		if err != nil {
			t.Fatalf("fatal decode error: %v", err)
		}
		types = append(types, m.T)
	}
	if got := len(lineErrs); got != 3 {
		t.Fatalf("got %d line errors, want 3 (malformed, no t, too long): %v", got, lineErrs)
	}
	if !lineErrs[2].TooLong {
		t.Errorf("third line error should be too long: %v", lineErrs[2])
	}
	want := []Type{THello, TReady, TBye}
	if len(types) != len(want) {
		t.Fatalf("decoded %v, want %v", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("decoded %v, want %v", types, want)
		}
	}
}

func TestErrorsSurviveTheWire(t *testing.T) {
	cases := []struct {
		err  error
		want *Error
	}{
		{Errorf(CodeRunnerCrashed, "runner exited"), ErrRunnerCrashed},
		{Errorf(CodeTimeout, "slow"), ErrTimeout},
		{Errorf(CodeNotFound, "no session x"), ErrNotFound},
		{Errorf(CodeBadRequest, "bad"), ErrBadRequest},
		{Errorf(CodeEngineError, "boom"), ErrEngine},
		{Errorf(CodePermissionUnavailable, "unattended"), ErrPermissionUnavailable},
	}
	for _, c := range cases {
		t.Run(string(c.want.Code), func(t *testing.T) {
			reply := ErrReply(c.err)
			raw, err := json.Marshal(reply)
			if err != nil {
				t.Fatal(err)
			}
			var back Reply
			if err := json.Unmarshal(raw, &back); err != nil {
				t.Fatal(err)
			}
			got := back.Err()
			if !errors.Is(got, c.want) {
				t.Fatalf("errors.Is(%v, %s) is false after the wire", got, c.want.Code)
			}
			var we *Error
			if !errors.As(got, &we) || we.Code != c.want.Code || we.Message != c.err.Error() {
				t.Fatalf("rebuilt error %+v lost its code or message", we)
			}
		})
	}
}

func TestCrashDetailSurvivesTheWire(t *testing.T) {
	e := Errorf(CodeRunnerCrashed, "runner killed by signal killed")
	e.Detail = &Crash{ExitCode: -1, Signal: "killed", Stderr: []string{"a", "b"}}
	raw, _ := json.Marshal(ErrReply(e))
	var back Reply
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	var we *Error
	if !errors.As(back.Err(), &we) || we.Detail == nil || we.Detail.Signal != "killed" || len(we.Detail.Stderr) != 2 {
		t.Fatalf("crash detail lost: %+v", we)
	}
}

func TestToErrorKeepsContext(t *testing.T) {
	wrapped := errors.Join(Errorf(CodeNotFound, "no ask a9"))
	we := ToError(wrapped)
	if we.Code != CodeNotFound {
		t.Fatalf("code %s, want not_found", we.Code)
	}
	plain := ToError(io.ErrUnexpectedEOF)
	if plain.Code != CodeInternal || plain.Message != io.ErrUnexpectedEOF.Error() {
		t.Fatalf("plain error became %+v", plain)
	}
}

func TestAppendMirrorIsAValidMessage(t *testing.T) {
	line := []byte(`{"seq":7,"ts":"2026-01-01T00:00:00Z","type":"stopped"}`)
	out := AppendMirror(nil, 7, line)
	m, err := NewDecoder(bytes.NewReader(out), 0).Decode()
	if err != nil {
		t.Fatal(err)
	}
	if m.T != TMirror || m.Seq != 7 || !bytes.Equal(m.Event, line) {
		t.Fatalf("mirror decoded as %+v", m)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"t":"hello","proto":1}` + "\n"))
	f.Add([]byte(`{"t":"inject","reqId":"1","command":{"cmd":"send","text":"x"}}`))
	f.Add([]byte("{\"t\":\"term.data\",\"term\":{\"termId\":\"a\",\"data\":\"AAEC\"}}\n\n{"))
	f.Add([]byte("\r\n\n\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := NewDecoder(bytes.NewReader(data), 256)
		for i := 0; i < 1000; i++ {
			m, err := dec.Decode()
			if errors.Is(err, io.EOF) {
				return
			}
			var le *LineError
			if errors.As(err, &le) {
				continue
			}
			if err != nil {
				t.Fatalf("unexpected fatal error from a byte reader: %v", err)
			}
			if m.T == "" {
				t.Fatal("decoded a message without a type")
			}
			// What decodes must encode and decode to the same message.
			var buf bytes.Buffer
			if err := NewEncoder(&buf).Encode(m); err != nil {
				t.Fatalf("re-encode: %v", err)
			}
			if _, err := NewDecoder(&buf, 0).Decode(); err != nil {
				t.Fatalf("re-decode: %v", err)
			}
		}
	})
}
