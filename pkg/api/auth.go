package api

import "time"

// SignInRequest is the body of POST /v1/auth/session: empty (or without
// code) for a caller with the bearer token, else a one-time login code.
type SignInRequest struct {
	Code string `json:"code,omitempty"`
}

// SignInReply is the body of a successful sign-in; the session cookie comes
// in Set-Cookie.
type SignInReply struct {
	OK        bool      `json:"ok"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// TicketReply is the body of POST /v1/auth/ticket: a single-use ticket for
// one GET (?ticket=) of an event stream or a terminal WebSocket.
type TicketReply struct {
	OK        bool      `json:"ok"`
	Ticket    string    `json:"ticket"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// LoginCodeReply is the body of POST /v1/auth/code: a one-time code a page
// exchanges for a session cookie.
type LoginCodeReply struct {
	OK        bool      `json:"ok"`
	Code      string    `json:"code"`
	ExpiresAt time.Time `json:"expiresAt"`
}
