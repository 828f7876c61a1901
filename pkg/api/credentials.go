package api

// CredentialStoreKind says where the supervisor keeps credentials.
type CredentialStoreKind string

// Credential stores.
const (
	// StoreKeyring: the OS keyring, service dev.corral.
	StoreKeyring CredentialStoreKind = "keyring"
	// StoreFile: the credentials file serve --credentials names.
	StoreFile CredentialStoreKind = "file"
)

// CredentialItem is one credential item the supervisor knows: whether it
// is set, never its secret.
type CredentialItem struct {
	Item string `json:"item"`
	Set  bool   `json:"set"`
	// Engines are the engines that may use it.
	Engines []string `json:"engines"`
	// Error is why the store could not be read for this item.
	Error string `json:"error,omitempty"`
}

// CredentialsReply is the body of GET /v1/credentials, and of a PUT or
// DELETE of an item (then Items holds that item alone).
type CredentialsReply struct {
	OK bool `json:"ok"`
	// Store is where the items are kept, and Location its file or the
	// keyring's service.
	Store    CredentialStoreKind `json:"store"`
	Location string              `json:"location"`
	Items    []CredentialItem    `json:"items"`
}

// SetCredentialRequest is the body of PUT /v1/credentials/{item}. The
// secret is stored and never returned, printed or logged.
type SetCredentialRequest struct {
	Secret string `json:"secret"`
}
