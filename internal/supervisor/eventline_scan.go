package supervisor

// ScanEventLine reads the top-level "seq" and "type" of an event line of
// a session's log without decoding the rest, as the mirror does. The
// fleet's event replica (internal/fleet) reads the lines it copies with it,
// so both agree on what a line's seq is.
func ScanEventLine(line []byte) (seq int64, typ []byte, err error) {
	return scanEvent(line)
}
