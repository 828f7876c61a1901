package wire

import "encoding/json"

// Reply answers one command: {"ok":true,"result":...} or
// {"ok":false,"error":{...}}.
type Reply struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
}

// OKReply builds a successful reply; result may be nil.
func OKReply(result any) *Reply {
	if result == nil {
		return &Reply{OK: true}
	}
	raw, err := json.Marshal(result)
	if err != nil {
		return ErrReply(Errorf(CodeInternal, "encode result: %v", err))
	}
	return &Reply{OK: true, Result: raw}
}

// ErrReply builds a failed reply from any error.
func ErrReply(err error) *Reply { return &Reply{Error: ToError(err)} }

// Err returns the reply's error, or nil when it succeeded.
func (r *Reply) Err() error {
	if r.OK {
		return nil
	}
	if r.Error == nil {
		return Errorf(CodeInternal, "reply without ok or error")
	}
	return r.Error
}
