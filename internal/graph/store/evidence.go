package store

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/corral-dev/corral/internal/atomicfile"
	"github.com/corral-dev/corral/internal/graph"
)

// Evidence of a node lives in <run>/nodes/<nodeId>/<key>/: the result a
// node left (result.json), the raw final answer (raw.txt), the briefing
// (briefing.md), the git baseline (baseline.json). key is the claim's
// nonce, so an outcome that arrives under a superseded ticket never
// overwrites the applied one's.

// Evidence file names.
const (
	ResultFile   = "result.json"
	RawFile      = "raw.txt"
	BriefingFile = "briefing.md"
	BaselineFile = "baseline.json"
)

// EvidenceDir is where a node's evidence under key is kept.
func (s *Store) EvidenceDir(run, node, key string) string {
	return filepath.Join(s.Dir(run), nodesDir, node, key)
}

// WriteEvidence writes one evidence file; sync makes it durable before a
// change that refers to it is written.
func (s *Store) WriteEvidence(run, node, key, name string, data []byte, sync bool) error {
	if key == "" {
		return fmt.Errorf("evidence of %s: no key", node)
	}
	dir := s.EvidenceDir(run, node, key)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("evidence of %s: %w", node, err)
	}
	path := filepath.Join(dir, name)
	if sync {
		return atomicfile.Write(path, data, 0o600)
	}
	return atomicfile.WriteNoSync(path, data, 0o600)
}

// ReadEvidence reads one evidence file.
func (s *Store) ReadEvidence(run, node, key, name string) ([]byte, error) {
	return os.ReadFile(filepath.Join(s.EvidenceDir(run, node, key), name))
}

// Results looks up the results finished nodes of r left.
func (s *Store) Results(r *graph.Run) graph.Results {
	return func(id string) *graph.Result {
		n := r.Node(id)
		if n == nil || n.Evidence == "" {
			return nil
		}
		raw, err := s.ReadEvidence(r.ID, id, n.Evidence, ResultFile)
		if err != nil {
			return nil
		}
		var res graph.Result
		if json.Unmarshal(raw, &res) != nil {
			return nil
		}
		return &res
	}
}
