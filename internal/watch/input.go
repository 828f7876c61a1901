package watch

import (
	"fmt"
	"strings"

	"github.com/corral-dev/corral/pkg/command"
)

// actionKind is what a person asked this shell to do.
type actionKind int

const (
	actDecide actionKind = iota + 1 // decide the open prompt
	actSteer
	actSend
	actStop
	actQuit
	actHelp
)

// action is one thing a person asked for, from a key or a typed line.
type action struct {
	kind   actionKind
	choice Choice // actDecide
	text   string // the note of a decision; the text of a steer or message
}

// choiceFor maps a decision key to its choice; the upper-case key is the
// same choice with a note.
func choiceFor(key byte) (Choice, bool) {
	switch key | 0x20 {
	case 'y':
		return ChoiceYes, true
	case 'n':
		return ChoiceNo, true
	case 'a':
		return ChoiceAllYes, true
	case 'd':
		return ChoiceAllNo, true
	}
	return 0, false
}

// parseLine reads a typed line of the plain mode: a key, then for a
// decision an optional note and for steer and message their text.
func parseLine(line string) (action, error) {
	line = strings.TrimSpace(line)
	if line == "" {
		return action{}, fmt.Errorf("an empty line does nothing")
	}
	key, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	if len(key) == 1 {
		if c, ok := choiceFor(key[0]); ok {
			return action{kind: actDecide, choice: c, text: rest}, nil
		}
	}
	switch strings.ToLower(key) {
	case "s", "steer":
		if rest == "" {
			return action{}, fmt.Errorf("steer what? type s and the text: s keep it short")
		}
		return action{kind: actSteer, text: rest}, nil
	case "m", "message", "send":
		if rest == "" {
			return action{}, fmt.Errorf("send what? type m and the text: m now run the tests")
		}
		return action{kind: actSend, text: rest}, nil
	case "x", "stop":
		return action{kind: actStop}, nil
	case "q", "quit", "exit":
		return action{kind: actQuit}, nil
	case "?", "h", "help":
		return action{kind: actHelp}, nil
	}
	return action{}, fmt.Errorf("%q is not a key: type ? for the keys", firstLine(key))
}

// requests turns a person's action into commands, or says why it cannot.
func (c *core) requests(a action) ([]Request, error) {
	switch a.kind {
	case actDecide:
		cur := c.prompts.Current()
		if cur == nil {
			return nil, fmt.Errorf("nothing is waiting for a decision")
		}
		reqs := c.prompts.Decide(a.choice, a.text)
		if len(reqs) == 0 {
			return nil, fmt.Errorf("an ask is allowed (y) or denied (n); a and d are for hunks")
		}
		return reqs, nil
	case actSteer, actSend, actStop:
		session := c.target()
		if session == "" {
			return nil, fmt.Errorf("no session to act on yet")
		}
		var cmd command.Request = command.Stop{}
		switch a.kind {
		case actSteer:
			cmd = command.Steer{Text: a.text}
		case actSend:
			cmd = command.Send{Text: a.text}
		}
		return []Request{{Session: session, Cmd: cmd}}, nil
	}
	return nil, nil
}

// target is the session that steer, message and stop act on: the open
// prompt's, else the focus.
func (c *core) target() string {
	if cur := c.prompts.Current(); cur != nil {
		return cur.Session
	}
	return c.focus
}

// result says what became of a sent command, when there is something to
// say: the event stream shows what went through.
func (c *core) result(req Request, err error) string {
	if err == nil {
		return ""
	}
	switch req.Cmd.(type) {
	case command.Answer, command.DecideHunk:
		return c.prompts.Failed(req, err)
	}
	return fmt.Sprintf("%s: %s", req.Cmd.Cmd(), oneLine(err))
}
