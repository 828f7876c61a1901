package client

import (
	"crypto/rand"
	"encoding/hex"
)

// NewRequestID returns a new random requestId for a command (16 random
// bytes in hex): Command sets one on every command its context does not
// name one for.
func NewRequestID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}
