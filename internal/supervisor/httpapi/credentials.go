package httpapi

import (
	"net/http"

	"github.com/corral-dev/corral/internal/creds"
	"github.com/corral-dev/corral/internal/engines/catalog"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
)

// CredentialStore is where the supervisor keeps the credentials it hands
// runners (creds.Secrets). The API sets and removes items and says which
// are set; no route returns a secret.
type CredentialStore interface {
	Kind() creds.Kind
	Location() string
	List() []creds.ItemState
	Set(item, secret string) error
	Delete(item string) error
}

func (s *server) credentialStore() (CredentialStore, error) {
	if s.creds == nil {
		return nil, wire.Errorf(wire.CodeUnavailable, "this supervisor keeps no credentials")
	}
	return s.creds, nil
}

// credentialsReply describes the items of the store, or only the one named.
func credentialsReply(st CredentialStore, only string) api.CredentialsReply {
	reply := api.CredentialsReply{OK: true, Store: api.CredentialStoreKind(st.Kind()), Location: st.Location(), Items: []api.CredentialItem{}}
	users := map[string][]string{}
	for _, e := range catalog.Engines() {
		for _, item := range e.Credentials {
			users[item] = append(users[item], e.Name)
		}
	}
	for _, is := range st.List() {
		if only != "" && is.Item != only {
			continue
		}
		item := api.CredentialItem{Item: is.Item, Set: is.Set, Engines: users[is.Item]}
		if item.Engines == nil {
			item.Engines = []string{}
		}
		if is.Err != nil {
			item.Error = is.Err.Error()
		}
		reply.Items = append(reply.Items, item)
	}
	return reply
}

func (s *server) credentialsList(w http.ResponseWriter, r *http.Request) {
	st, err := s.credentialStore()
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, credentialsReply(st, ""))
}

// credentialSet stores the body's secret. Neither the body nor the secret
// is logged; the reply says only that the item is set.
func (s *server) credentialSet(w http.ResponseWriter, r *http.Request) {
	st, err := s.credentialStore()
	if err != nil {
		writeError(w, err)
		return
	}
	item := r.PathValue("item")
	if err := creds.CheckItem(item); err != nil {
		writeError(w, err)
		return
	}
	var req api.SetCredentialRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := st.Set(item, req.Secret); err != nil {
		writeError(w, err)
		return
	}
	s.log.Info("credential item set", zap.String("item", item), zap.String("store", string(st.Kind())))
	writeJSON(w, http.StatusOK, credentialsReply(st, item))
}

func (s *server) credentialDelete(w http.ResponseWriter, r *http.Request) {
	st, err := s.credentialStore()
	if err != nil {
		writeError(w, err)
		return
	}
	item := r.PathValue("item")
	if err := st.Delete(item); err != nil {
		writeError(w, err)
		return
	}
	s.log.Info("credential item removed", zap.String("item", item), zap.String("store", string(st.Kind())))
	writeJSON(w, http.StatusOK, credentialsReply(st, item))
}
