package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestMessageRoundTrip(t *testing.T) {
	code := 3
	cases := []struct {
		reqID string
		m     Message
	}{
		{"", &Hello{Proto: ProtocolVersion, TermFrames: true}},
		{"", &Ready{Proto: ProtocolVersion, Session: "s1"}},
		{"1", &LiveEnsure{Spec: Spec{ID: "s1", Engine: "script", Cwd: "/w"}, Dir: "/state/sessions/s1"}},
		{"1", &LiveReady{Error: Errorf(CodeEngineError, "no scenario")}},
		{"2", &Command{Command: []byte(`{"cmd":"send","text":"hi\nthere \"quoted\""}`)}},
		{"2", &CommandReply{Outcome: OutcomeRan, Reply: &Reply{OK: true, Result: []byte(`{"id":"m1"}`)}}},
		{"3", &TermOpen{TermID: "t", ClientID: "c", Role: "owner", Command: []string{"bash"}, Cols: 80, Rows: 24, Window: 1 << 20, Export: true}},
		{"3", &TermOpened{TermID: "t", ClientID: "c", Error: Errorf(CodeConflict, "taken")}},
		{"", &TermInput{TermID: "t", ClientID: "c", Data: []byte("ls\n")}},
		{"", &TermResize{TermID: "t", ClientID: "c", Cols: 100, Rows: 30}},
		{"", &TermAck{TermID: "t", ClientID: "c", Acked: 262144}},
		{"", &TermClose{TermID: "t", ClientID: "c", Data: []byte("scrollback")}},
		{"", &TermData{TermID: "t", ClientID: "c", Data: []byte{0, 1, 2, '\n', 0xff}}},
		{"", &TermExit{TermID: "t", ExitCode: &code}},
		{"", &TermError{TermID: "t", ClientID: "c", Error: Errorf(CodeUnavailable, "gone")}},
		{"", &Mirror{Seq: 9, Event: []byte(`{"seq":9,"type":"usage"}`)}},
		{"", &StateReport{State: StateWorking, Turn: 2, Queued: 1}},
		{"9", &Shutdown{}},
		{"9", &Bye{}},
	}
	var buf bytes.Buffer
	enc := NewEncoder(&buf)
	for _, c := range cases {
		if err := enc.EncodeID(c.reqID, c.m); err != nil {
			t.Fatalf("encode %s: %v", c.m.Type(), err)
		}
	}
	if n := strings.Count(buf.String(), "\n"); n != len(cases) {
		t.Fatalf("%d lines for %d messages: a message spans lines", n, len(cases))
	}
	if !strings.HasPrefix(buf.String(), `{"t":"hello","proto":`) {
		t.Fatalf("the first line %q does not start with its type", buf.String())
	}
	dec := NewDecoder(&buf, 0)
	for _, want := range cases {
		got, reqID, err := dec.Decode()
		if err != nil {
			t.Fatalf("decode %s: %v", want.m.Type(), err)
		}
		if reqID != want.reqID || !reflect.DeepEqual(got, want.m) {
			t.Errorf("round trip of %s:\n got %q %+v\nwant %q %+v", want.m.Type(), reqID, got, want.reqID, want.m)
		}
	}
	if _, _, err := dec.Decode(); !errors.Is(err, io.EOF) {
		t.Fatalf("after last message: %v, want EOF", err)
	}
}

// TestEveryTypeDecodes checks the decoder knows every message type, that
// each type's Type is the key it is known by, and that every term.*
// message names its terminal.
func TestEveryTypeDecodes(t *testing.T) {
	for typ, m := range Types() {
		if m.Type() != typ {
			t.Errorf("%s makes a %T, whose type is %s", typ, m, m.Type())
		}
		if _, named := m.(TermMessage); named != strings.HasPrefix(string(typ), "term.") {
			t.Errorf("%s names a terminal: %v", typ, named)
		}
		line, err := AppendMessage(nil, "", m)
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		got, _, err := Unmarshal(line)
		if err != nil || got.Type() != typ {
			t.Errorf("%s: decoded %v, %v", typ, got, err)
		}
	}
}

func TestEachRequestHasOneReply(t *testing.T) {
	replyOf := func(r Message) Type {
		switch r.(type) {
		case Request[*LiveReady]:
			return TLiveReady
		case Request[*CommandReply]:
			return TCommandReply
		case Request[*TermOpened]:
			return TTermOpened
		case Request[*Bye]:
			return TBye
		case Request[*Prewarmed]:
			return TPrewarmed
		}
		return ""
	}
	for typ, m := range Types() {
		want, _ := ReplyType(typ)
		if got := replyOf(m); got != want {
			t.Errorf("%s is answered by %q to the compiler, %q to ReplyType", typ, got, want)
		}
	}
	for _, typ := range []Type{TLiveEnsure, TLiveReady, TCommand, TCommandReply, TTermOpen, TTermOpened, TShutdown, TBye, TPrewarm, TPrewarmed} {
		if !CarriesReqID(typ) {
			t.Errorf("%s carries no reqId", typ)
		}
	}
	for _, typ := range []Type{THello, TReady, TMirror, TState, TTermData, TTermInput, TTermError} {
		if CarriesReqID(typ) {
			t.Errorf("%s carries a reqId", typ)
		}
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
		m, _, err := dec.Decode()
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
		types = append(types, m.Type())
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
	m, _, err := NewDecoder(bytes.NewReader(out), 0).Decode()
	if err != nil {
		t.Fatal(err)
	}
	if mm, ok := m.(*Mirror); !ok || mm.Seq != 7 || !bytes.Equal(mm.Event, line) {
		t.Fatalf("mirror decoded as %+v", m)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"t":"hello","proto":2}` + "\n"))
	f.Add([]byte(`{"t":"command","reqId":"1","command":{"cmd":"send","text":"x"}}`))
	f.Add([]byte("{\"t\":\"term.data\",\"termId\":\"a\",\"data\":\"AAEC\"}\n\n{"))
	f.Add([]byte(`{"t":"state","state":"idle","turn":1,"queued":0,"openAsks":0,"pendingEdits":0}`))
	f.Add([]byte("\r\n\n\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := NewDecoder(bytes.NewReader(data), 256)
		for i := 0; i < 1000; i++ {
			m, reqID, err := dec.Decode()
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
			// What decodes must encode, decode to the same request id, and
			// encode to the same line again.
			line, err := AppendMessage(nil, reqID, m)
			if err != nil {
				t.Fatalf("re-encode: %v", err)
			}
			again, againID, err := NewDecoder(bytes.NewReader(line), 0).Decode()
			if err != nil {
				t.Fatalf("re-decode %q: %v", line, err)
			}
			if againID != reqID || again.Type() != m.Type() {
				t.Fatalf("%q re-decoded as %q %s", line, againID, again.Type())
			}
			if line2, err := AppendMessage(nil, againID, again); err != nil || !bytes.Equal(line2, line) {
				t.Fatalf("encoding is not stable:\n%q\n%q (%v)", line, line2, err)
			}
		}
	})
}

func TestStateReportBusy(t *testing.T) {
	for _, c := range []struct {
		st   StateReport
		busy bool
	}{
		{StateReport{State: StateIdle}, false},
		{StateReport{State: StateStopped, Turn: 3}, false},
		{StateReport{State: StateFailed, Turn: 3}, false},
		{StateReport{State: StateStarting}, true},
		{StateReport{State: StateWorking, Turn: 1}, true},
		{StateReport{State: StateWaitingForApproval, OpenAsks: 1}, true},
		{StateReport{State: StateWaitingForReview, PendingEdits: 1}, true},
		{StateReport{State: StateIdle, Queued: 1}, true},
		{StateReport{State: StateStopped, OpenAsks: 1}, true},
		{StateReport{State: StateIdle, PendingEdits: 2}, true},
		{StateReport{State: StateIdle, Turn: 4, Settling: true}, true},
		{StateReport{State: StateIdle, Turn: 4, Held: true}, false},
		{StateReport{State: StateIdle, Turn: 4, Queued: 1, Held: true}, true},
	} {
		if got := c.st.Busy(); got != c.busy {
			t.Errorf("%+v: busy %v, want %v", c.st, got, c.busy)
		}
	}
}

// writes records each Write as its own string.
type writes struct{ got []string }

func (w *writes) Write(b []byte) (int, error) {
	w.got = append(w.got, string(b))
	return len(b), nil
}

func TestEncoderHoldSendsHeldMessagesAheadOfTheNextWrite(t *testing.T) {
	busy := &StateReport{State: StateWorking, Turn: 1}
	idle := &StateReport{State: StateIdle, Turn: 1}
	line := func(reqID string, m Message) string {
		b, err := AppendMessage(nil, reqID, m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	reply := &CommandReply{Outcome: OutcomeRan, Reply: &Reply{OK: true}}
	mirror := string(AppendMirror(nil, 1, []byte(`{"seq":1,"type":"userMessage"}`)))

	t.Run("not held: written at once", func(t *testing.T) {
		w := &writes{}
		e := NewEncoder(w)
		if err := e.EncodeOrHold(busy); err != nil {
			t.Fatal(err)
		}
		if len(w.got) != 1 || w.got[0] != line("", busy) {
			t.Fatalf("writes %q", w.got)
		}
	})
	t.Run("held: one write with the reply, in order", func(t *testing.T) {
		w := &writes{}
		e := NewEncoder(w)
		e.Hold()
		e.EncodeOrHold(busy)
		e.EncodeOrHold(idle)
		if len(w.got) != 0 {
			t.Fatalf("written while held: %q", w.got)
		}
		if err := e.ReleaseID("7", reply); err != nil {
			t.Fatal(err)
		}
		want := line("", busy) + line("", idle) + line("7", reply)
		if len(w.got) != 1 || w.got[0] != want {
			t.Fatalf("writes %q, want one: %q", w.got, want)
		}
		// Released: the next report goes at once.
		e.EncodeOrHold(busy)
		if len(w.got) != 2 || w.got[1] != line("", busy) {
			t.Fatalf("after the release: %q", w.got)
		}
	})
	t.Run("held: another write takes the held lines first", func(t *testing.T) {
		w := &writes{}
		e := NewEncoder(w)
		e.Hold()
		e.EncodeOrHold(busy)
		e.WriteRaw([]byte(mirror))
		e.EncodeOrHold(idle)
		e.ReleaseID("7", reply)
		want := []string{line("", busy) + mirror, line("", idle) + line("7", reply)}
		if !slices.Equal(w.got, want) {
			t.Fatalf("writes %q, want %q", w.got, want)
		}
	})
	t.Run("a message that cannot be encoded still lets the held ones out", func(t *testing.T) {
		w := &writes{}
		e := NewEncoder(w)
		e.Hold()
		e.EncodeOrHold(busy)
		if err := e.ReleaseID("7", badMessage{}); err == nil {
			t.Fatal("encoded a message that is not an object")
		}
		if len(w.got) != 1 || w.got[0] != line("", busy) {
			t.Fatalf("writes %q", w.got)
		}
	})
}

// badMessage encodes as something other than a JSON object.
type badMessage struct{}

func (badMessage) Type() Type                   { return "bad" }
func (badMessage) MarshalJSON() ([]byte, error) { return []byte(`[]`), nil }

func TestLineReaderLinesOutOfItsBufferStayApart(t *testing.T) {
	lr := NewLineReader(strings.NewReader("one\ntwo\r\nthree"), 0)
	first, err := lr.Next()
	if err != nil || string(first) != "one" {
		t.Fatalf("first line %q, %v", first, err)
	}
	// An append to a line must not write over the lines read in behind it.
	_ = append(first, "XXXXXXXX"...)
	for _, want := range []string{"two", "three"} {
		line, err := lr.Next()
		if err != nil || string(line) != want {
			t.Fatalf("line %q, %v; want %q", line, err, want)
		}
	}
	if _, err := lr.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last line: %v", err)
	}
}

func TestLineReaderSaysWhenAWholeLineIsAtHand(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	lr := NewLineReader(pr, 0)
	lr.AcceptTermFrames()
	got := make(chan []byte)
	go func() {
		line, _ := lr.Next()
		got <- append([]byte(nil), line...)
	}()
	go pw.Write([]byte("a\nb\npart"))
	if line := <-got; string(line) != "a" {
		t.Fatalf("first line %q", line)
	}
	if !lr.LineBuffered() {
		t.Fatal(`"b\n" is read in, but LineBuffered says no`)
	}
	if line, err := lr.Next(); err != nil || string(line) != "b" {
		t.Fatalf("second line %q, %v", line, err)
	}
	if lr.LineBuffered() {
		t.Fatal("only part of a line is read in, but LineBuffered says a whole one is")
	}
	// A terminal frame next: its payload may still be on its way, however
	// many newlines the bytes read in hold.
	lr2 := NewLineReader(bytes.NewReader(append([]byte{TermFrameMarker}, "x\ny\n"...)), 0)
	lr2.AcceptTermFrames()
	lr2.r.Peek(1) // read in
	if lr2.LineBuffered() {
		t.Fatal("a frame leads, but LineBuffered says a line is at hand")
	}
}
