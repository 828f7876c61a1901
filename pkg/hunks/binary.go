package hunks

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// binaryInvalidPercent is the share of bytes in invalid UTF-8 sequences
// above which a file without NUL bytes still counts as binary. It is high
// enough that Latin-1 or Windows-1252 prose, with an accented letter here
// and there, stays reviewable line by line.
const binaryInvalidPercent = 10

// IsBinary reports whether data is handled as a binary file: it holds a NUL
// byte anywhere, or more than 10% of its bytes are not valid UTF-8. Git
// looks only for a NUL in the first 8000 bytes; this test is stricter, which
// only ever turns a line review into a whole-file one.
func IsBinary(data []byte) bool {
	if bytes.IndexByte(data, 0) >= 0 {
		return true
	}
	if utf8.Valid(data) {
		return false
	}
	invalid := 0
	for i := 0; i < len(data); {
		if data[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			invalid++
		}
		i += size
	}
	return invalid*100 > len(data)*binaryInvalidPercent
}

// BlobID returns git's object id for a blob holding data: the hex SHA-1 of
// "blob <size>\x00" followed by data.
func BlobID(data []byte) string {
	h := sha1.New()
	h.Write([]byte("blob " + strconv.Itoa(len(data)) + "\x00"))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// zeroID stands for an absent version on a git "index" line.
const zeroID = "0000000000000000000000000000000000000000"

// writeBinaryPatch writes a "GIT binary patch" body: the new contents as a
// literal, then the old contents as the reverse literal, so git apply can
// apply the patch in either direction.
func writeBinaryPatch(buf *bytes.Buffer, oldData, newData []byte) error {
	buf.WriteString("GIT binary patch\n")
	if err := writeLiteral(buf, newData); err != nil {
		return err
	}
	return writeLiteral(buf, oldData)
}

// writeLiteral writes one "literal <size>" block: data deflated with zlib,
// in lines of up to 52 bytes, each prefixed with its length ('A'..'Z' for
// 1..26, 'a'..'z' for 27..52) and encoded in git's base85, then a blank line.
func writeLiteral(buf *bytes.Buffer, data []byte) error {
	var z bytes.Buffer
	zw, err := zlib.NewWriterLevel(&z, zlib.BestCompression)
	if err != nil {
		return fmt.Errorf("binary patch: %w", err)
	}
	if _, err := zw.Write(data); err != nil {
		return fmt.Errorf("binary patch: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("binary patch: %w", err)
	}
	fmt.Fprintf(buf, "literal %d\n", len(data))
	deflated := z.Bytes()
	for len(deflated) > 0 {
		n := min(len(deflated), 52)
		if n <= 26 {
			buf.WriteByte(byte('A' + n - 1))
		} else {
			buf.WriteByte(byte('a' + n - 27))
		}
		encodeBase85(buf, deflated[:n])
		buf.WriteByte('\n')
		deflated = deflated[n:]
	}
	buf.WriteByte('\n')
	return nil
}

// base85Alphabet is git's base85 alphabet (RFC 1924 order).
const base85Alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"

// encodeBase85 writes five characters for every four bytes of data, the
// last group zero-padded, most significant digit first.
func encodeBase85(buf *bytes.Buffer, data []byte) {
	for len(data) > 0 {
		var group [4]byte
		n := copy(group[:], data)
		data = data[n:]
		v := uint32(group[0])<<24 | uint32(group[1])<<16 | uint32(group[2])<<8 | uint32(group[3])
		var out [5]byte
		for i := 4; i >= 0; i-- {
			out[i] = base85Alphabet[v%85]
			v /= 85
		}
		buf.Write(out[:])
	}
}
