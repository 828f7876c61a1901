package cli

import "bytes"

// The detach sequence of supervisor attach: Ctrl-] then q. Ctrl-] is rare
// in programs (telnet made it an escape key), and the second key keeps a
// stray Ctrl-] from detaching.
const (
	detachPrefix = 0x1d // Ctrl-]
	detachKey    = 'q'
	detachHelp   = "Ctrl-] then q"
)

// detachKeys finds the detach sequence in typed input, across reads.
type detachKeys struct {
	pending bool // the last byte seen was a lone Ctrl-]
}

// feed returns the bytes of p to send to the terminal, appended to out, and
// whether the detach sequence was typed; bytes after it are dropped.
// Ctrl-] followed by any other key sends both; Ctrl-] twice sends one.
func (d *detachKeys) feed(out, p []byte) ([]byte, bool) {
	for _, b := range p {
		if d.pending {
			d.pending = false
			switch b {
			case detachKey:
				return out, true
			case detachPrefix:
				out = append(out, detachPrefix)
			default:
				out = append(out, detachPrefix, b)
			}
			continue
		}
		if b == detachPrefix {
			d.pending = true
			continue
		}
		out = append(out, b)
	}
	return out, false
}

// altScreen follows whether the output left the terminal on the alternate
// screen (a full-screen program), so a detach can switch back only then:
// leaving it when it was never entered moves the cursor on some terminals.
type altScreen struct {
	on   bool
	tail []byte // the end of the last chunk, for a sequence split in two
}

var (
	altOn  = []byte("\x1b[?1049h")
	altOff = []byte("\x1b[?1049l")
)

func (a *altScreen) scan(p []byte) {
	n := len(altOn) - 1
	// A sequence split between two chunks shows in the seam; one inside p
	// comes after it.
	seam := append(a.tail, p[:min(len(p), n)]...)
	a.update(seam)
	a.update(p)
	a.tail = append(a.tail[:0], seam[max(0, len(seam)-n):]...)
	if len(p) >= n {
		a.tail = append(a.tail[:0], p[len(p)-n:]...)
	}
}

func (a *altScreen) update(p []byte) {
	if on, off := bytes.LastIndex(p, altOn), bytes.LastIndex(p, altOff); on >= 0 || off >= 0 {
		a.on = on > off
	}
}
