package eventlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/corral-dev/corral/pkg/event"
)

// DamagedSuffix names the sibling file damaged lines are moved to:
// events.jsonl.damaged beside events.jsonl.
const DamagedSuffix = ".damaged"

// maxListedRanges bounds the ranges a logRepaired event lists; the damaged
// file holds every one.
const maxListedRanges = 100

// Reasons a line is not an event.
const (
	reasonTorn       = "torn tail"
	reasonBlank      = "blank line"
	reasonNotJSON    = "not JSON"
	reasonNoSeq      = "no seq"
	reasonOutOfOrder = "seq out of order"
)

// Repair is what Open moved out of a damaged log.
type Repair struct {
	// Event is the logRepaired event appended after the last valid event.
	Event event.Event
	Data  event.LogRepairedData
	// Ranges lists every damaged range, where Data lists the first
	// maxListedRanges.
	Ranges []event.DamagedRange
	line   []byte
}

// DamagedRecord is one line of the damaged file: a range of bytes moved out
// of the log, with the seq of the logRepaired event that reported it.
type DamagedRecord struct {
	RepairedAt time.Time `json:"repairedAt"`
	EventSeq   int64     `json:"eventSeq"`
	event.DamagedRange
	Bytes []byte `json:"bytes"` // base64 in JSON
}

// candidate is a complete line that parses as an event.
type candidate struct {
	off, end int64 // end includes the newline
	seq      int64
}

// scanResult is what a pass over the file found.
type scanResult struct {
	size       int64
	candidates []candidate
	damaged    []event.DamagedRange // in file order, not merged
}

// openRepaired opens the log at path for appending, repairing it first if
// it is damaged. It returns the file, its length, the last seq and the
// repair made (nil for a sound log).
func openRepaired(path string, opts Options) (file, int64, int64, *Repair, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, 0, 0, nil, openErr(path, "open", err)
	}
	res, err := scanLog(f)
	if err != nil {
		f.Close()
		return nil, 0, 0, nil, openErr(path, "read", err)
	}
	keep := longestIncreasing(res.candidates)
	damaged := damagedRanges(res, keep)
	var last int64
	if n := len(keep); n > 0 {
		last = res.candidates[keep[n-1]].seq
	}
	if len(damaged) == 0 {
		if _, err := f.Seek(res.size, io.SeekStart); err != nil {
			f.Close()
			return nil, 0, 0, nil, openErr(path, "seek", err)
		}
		return f, res.size, last, nil, nil
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	rep, err := newRepair(filepath.Base(path)+DamagedSuffix, damaged, last, now().UTC())
	if err != nil {
		f.Close()
		return nil, 0, 0, nil, err
	}
	if err := moveAside(f, path, rep); err != nil {
		f.Close()
		return nil, 0, 0, nil, openErr(path, "move damaged lines aside", err)
	}
	nf, size, err := rewrite(f, path, damaged, rep.line)
	f.Close()
	if err != nil {
		return nil, 0, 0, nil, openErr(path, "rewrite", err)
	}
	return nf, size, rep.Event.Seq, rep, nil
}

// openErr is a failure of the storage while opening: the content never
// makes Open fail.
func openErr(path, op string, err error) error {
	return &StorageError{Path: path, Op: op, Err: err}
}

// scanLog reads the whole file once, sorting its lines into candidates and
// damage.
func scanLog(f *os.File) (scanResult, error) {
	var res scanResult
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return res, err
	}
	r := bufio.NewReaderSize(f, 256<<10)
	var off int64
	var long []byte // a line longer than the reader's buffer
	for {
		chunk, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, chunk...)
			continue
		}
		line := chunk
		if long != nil {
			line = append(long, chunk...)
			long = nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return res, err
		}
		if len(line) == 0 {
			break
		}
		end := off + int64(len(line))
		if line[len(line)-1] != '\n' {
			res.damaged = append(res.damaged, event.DamagedRange{Offset: off, Length: end - off, Reason: reasonTorn})
			off = end
			break
		}
		if seq, reason := parseLine(line[:len(line)-1]); reason != "" {
			res.damaged = append(res.damaged, event.DamagedRange{Offset: off, Length: end - off, Reason: reason})
		} else {
			res.candidates = append(res.candidates, candidate{off: off, end: end, seq: seq})
		}
		off = end
		if err != nil {
			break
		}
	}
	res.size = off
	return res, nil
}

// parseLine returns the seq of an event line, or why it is not one. An
// event is a JSON object that decodes as a event.Event with a positive seq
// and a type.
func parseLine(line []byte) (int64, string) {
	if len(bytes.TrimSpace(line)) == 0 {
		return 0, reasonBlank
	}
	if !json.Valid(line) {
		return 0, reasonNotJSON
	}
	if seq, ok := fastSeq(line); ok {
		return seq, ""
	}
	var ev event.Event
	if err := json.Unmarshal(line, &ev); err != nil || ev.Seq <= 0 || ev.Type == "" || line[0] != '{' {
		return 0, reasonNoSeq
	}
	return ev.Seq, ""
}

// fastSeq reads the seq of a line as Append writes it,
// {"seq":N,"ts":"…","type":"T"…, checking what event.Event would, without
// reflection. The line is valid JSON.
func fastSeq(line []byte) (int64, bool) {
	const head = `{"seq":`
	if !bytes.HasPrefix(line, []byte(head)) {
		return 0, false
	}
	i := len(head)
	var seq int64
	for ; i < len(line) && line[i] >= '0' && line[i] <= '9'; i++ {
		if seq > (1<<62)/10 {
			return 0, false
		}
		seq = seq*10 + int64(line[i]-'0')
	}
	if seq <= 0 {
		return 0, false
	}
	rest := line[i:]
	const ts = `,"ts":"`
	if !bytes.HasPrefix(rest, []byte(ts)) {
		return 0, false
	}
	rest = rest[len(ts):]
	q := bytes.IndexByte(rest, '"')
	if q < 0 {
		return 0, false
	}
	if _, err := time.Parse(time.RFC3339Nano, string(rest[:q])); err != nil {
		return 0, false
	}
	const typ = `","type":"`
	if !bytes.HasPrefix(rest[q:], []byte(typ)) || len(rest) <= q+len(typ) || rest[q+len(typ)] == '"' {
		return 0, false
	}
	return seq, true
}

// longestIncreasing returns the indexes of the longest run of candidates
// whose seqs strictly increase: the events kept. A line whose seq damage
// changed, or a duplicated line, falls out of it rather than taking the
// events around it along. A sound log is one run, found in one pass.
func longestIncreasing(c []candidate) []int {
	sorted := true
	for i := 1; i < len(c); i++ {
		if c[i].seq <= c[i-1].seq {
			sorted = false
			break
		}
	}
	if sorted {
		keep := make([]int, len(c))
		for i := range keep {
			keep[i] = i
		}
		return keep
	}
	// Patience sorting: tails[k] is the index of the smallest last seq of
	// an increasing run of length k+1; prev links each candidate to the
	// one before it in its run. A later equal seq replaces an earlier one,
	// so of two copies the later is kept.
	tails := []int{}
	prev := make([]int, len(c))
	for i := range c {
		k := sort.Search(len(tails), func(k int) bool { return c[tails[k]].seq >= c[i].seq })
		prev[i] = -1
		if k > 0 {
			prev[i] = tails[k-1]
		}
		if k == len(tails) {
			tails = append(tails, i)
		} else {
			tails[k] = i
		}
	}
	keep := make([]int, len(tails))
	for k, i := len(tails)-1, tails[len(tails)-1]; k >= 0; k, i = k-1, prev[i] {
		keep[k] = i
	}
	return keep
}

// damagedRanges merges the lines that are not events and the candidates
// left out of the kept run into ranges in file order; adjacent lines damaged
// for the same reason make one range.
func damagedRanges(res scanResult, keep []int) []event.DamagedRange {
	all := append([]event.DamagedRange(nil), res.damaged...)
	k := 0
	for i, c := range res.candidates {
		if k < len(keep) && keep[k] == i {
			k++
			continue
		}
		all = append(all, event.DamagedRange{Offset: c.off, Length: c.end - c.off, Reason: reasonOutOfOrder})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Offset < all[j].Offset })
	var merged []event.DamagedRange
	for _, r := range all {
		if n := len(merged); n > 0 && merged[n-1].Offset+merged[n-1].Length == r.Offset && merged[n-1].Reason == r.Reason {
			merged[n-1].Length += r.Length
			continue
		}
		merged = append(merged, r)
	}
	return merged
}

// newRepair builds the logRepaired event for damaged, moved to the file
// aside, to follow seq last.
func newRepair(aside string, damaged []event.DamagedRange, last int64, now time.Time) (*Repair, error) {
	data := event.LogRepairedData{
		File:         aside,
		Ranges:       damaged[:min(len(damaged), maxListedRanges)],
		RangeCount:   len(damaged),
		LastValidSeq: last,
	}
	for _, r := range damaged {
		data.Bytes += r.Length
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("encode logRepaired: %w", err)
	}
	ev := event.Event{Seq: last + 1, TS: now, Type: event.LogRepaired, Data: raw}
	line, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("encode logRepaired: %w", err)
	}
	return &Repair{Event: ev, Data: data, Ranges: damaged, line: line}, nil
}

// moveAside appends every damaged range of f to the damaged file and syncs
// it, before the log is rewritten without them. A crash between the two
// leaves the damage in both, and the next Open moves it again: nothing is
// lost either way.
func moveAside(f *os.File, path string, rep *Repair) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, r := range rep.Ranges {
		data := make([]byte, r.Length)
		if _, err := f.ReadAt(data, r.Offset); err != nil {
			return err
		}
		rec := DamagedRecord{RepairedAt: rep.Event.TS, EventSeq: rep.Event.Seq, DamagedRange: r, Bytes: data}
		if err := enc.Encode(rec); err != nil {
			return err
		}
	}
	d, err := os.OpenFile(path+DamagedSuffix, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if _, err := d.Write(buf.Bytes()); err != nil {
		d.Close()
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}

// rewrite writes the log without its damaged ranges and with the
// logRepaired line at its end to a temporary file, syncs it and renames it
// over path, so a reader or a crash sees the old log or the repaired one.
// Readers holding the old file find it replaced (a new inode) and reopen.
// It returns the new file, positioned at its end, and its length.
func rewrite(f *os.File, path string, damaged []event.DamagedRange, line []byte) (file, int64, error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.repair")
	if err != nil {
		return nil, 0, err
	}
	fail := func(err error) (file, int64, error) {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, 0, err
	}
	w := bufio.NewWriterSize(tmp, 256<<10)
	var at, size int64
	copyTo := func(end int64) error {
		n, err := io.Copy(w, io.NewSectionReader(f, at, end-at))
		size += n
		return err
	}
	for _, r := range damaged {
		if err := copyTo(r.Offset); err != nil {
			return fail(err)
		}
		at = r.Offset + r.Length
	}
	info, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	if err := copyTo(info.Size()); err != nil {
		return fail(err)
	}
	n, err := w.Write(append(line, '\n'))
	size += int64(n)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = tmp.Chmod(0o600)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fail(err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	if _, err := tmp.Seek(size, io.SeekStart); err != nil {
		tmp.Close()
		return nil, 0, err
	}
	return tmp, size, nil
}
