package graphql

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"sync"
)

// Automatic persisted queries, Apollo's protocol: a client sends the SHA-256 of
// its query in extensions.persistedQuery; on PERSISTED_QUERY_NOT_FOUND it sends
// query and hash together, and the query, once valid, is remembered within a
// budget of bytes. Persisted-only mode is Apollo's router's safelisting
// (require_id), with its codes: a request must name an operation of the pinned
// manifest by its hash.
const (
	codePersistedQueryNotFound     = "PERSISTED_QUERY_NOT_FOUND"     // the hash is not known: send the query with it
	codePersistedQueryNotSupported = "PERSISTED_QUERY_NOT_SUPPORTED" // the handler keeps none: send whole queries
	codePersistedQueryHashMismatch = "PERSISTED_QUERY_HASH_MISMATCH" // the query sent is not what the hash stands for
	codePersistedQueryNotInList    = "PERSISTED_QUERY_NOT_IN_LIST"   // the hash is not one of the pinned operations
	codePersistedQueryIDRequired   = "PERSISTED_QUERY_ID_REQUIRED"   // a document was sent without a hash

	// Apollo's servers' messages, which its client link matches.
	msgPersistedQueryNotFound     = "PersistedQueryNotFound"
	msgPersistedQueryNotSupported = "PersistedQueryNotSupported"
	msgPersistedQueryVersion      = "Unsupported persisted query version"
	msgPersistedQueryMismatch     = "provided sha does not match query"

	msgNotInList = "The persisted operation is not in this server's list of allowed operations."

	maxManifestOperations = 10_000 // pinned ones, kept outside the budget

	// The budget holds thousands of usual queries; an entry also counts
	// persistedEntryBytes (map entry, list element, margin): 16,384 at most.
	defaultPersistedQueryBytes = 4 << 20
	persistedEntryBytes        = 256
)

// PersistedQueries remembers queries by their SHA-256 for automatic persisted
// queries. It is safe for concurrent use.
type PersistedQueries struct {
	learnt *lru[[sha256.Size]byte, string] // sent with their hash, within the budget

	mu     sync.Mutex
	pinned map[[sha256.Size]byte]string // the manifest's operations: never forgotten, not in the budget
}

func newPersistedQueries(maxBytes int64) *PersistedQueries {
	return &PersistedQueries{learnt: newLRU[[sha256.Size]byte, string](maxBytes), pinned: map[[sha256.Size]byte]string{}}
}

func persistedCost(query string) int64 { return int64(len(query)) + persistedEntryBytes }

func (c *PersistedQueries) get(hash [sha256.Size]byte) (string, bool) {
	c.mu.Lock()
	q, ok := c.pinned[hash]
	c.mu.Unlock()
	if ok {
		return q, true
	}
	return c.learnt.get(hash)
}

// put remembers query under hash, which the caller has checked is its SHA-256.
func (c *PersistedQueries) put(hash [sha256.Size]byte, query string) {
	c.learnt.put(hash, query, persistedCost(query))
}

func (c *PersistedQueries) isPinned(hash [sha256.Size]byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pinned[hash]
	return ok
}

// PinManifest pins the operations of an Apollo persisted query manifest, each
// id the hex SHA-256 of its body, each body valid against s (else the manifest
// is refused whole), and returns how many it pinned.
func (c *PersistedQueries) PinManifest(s *Schema, manifest []byte) (int, error) {
	var m struct {
		Format     string `json:"format"`
		Version    int    `json:"version"`
		Operations []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
			Type string `json:"type"`
			Body string `json:"body"`
		} `json:"operations"`
	}
	if err := json.Unmarshal(manifest, &m); err != nil {
		return 0, fmt.Errorf("not a persisted query manifest: %w", err)
	}
	if m.Format != "apollo-persisted-query-manifest" || m.Version != 1 {
		return 0, fmt.Errorf("format %q version %d, want apollo-persisted-query-manifest version 1", m.Format, m.Version)
	}
	if len(m.Operations) > maxManifestOperations {
		return 0, fmt.Errorf("%d operations, at most %d", len(m.Operations), maxManifestOperations)
	}
	pinned := make(map[[sha256.Size]byte]string, len(m.Operations))
	for i, op := range m.Operations {
		hash := sha256.Sum256([]byte(op.Body))
		if op.ID != hex.EncodeToString(hash[:]) {
			return 0, fmt.Errorf("operation %d (%s): id %q is not the SHA-256 of its body", i, op.Name, op.ID)
		}
		if p := s.prepare(op.Body); p.errs != nil {
			return 0, fmt.Errorf("operation %d (%s): %s", i, op.Name, ErrorList(p.errs))
		}
		pinned[hash] = op.Body
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	maps.Copy(c.pinned, pinned)
	return len(pinned), nil
}

// persistedQuery is a request's extensions.persistedQuery.
type persistedQuery struct {
	hash  [sha256.Size]byte
	valid bool // sha256Hash was 64 hex digits; a hash that is not matches nothing
}

// readPersistedQuery reads the persistedQuery of a request's extensions: nil if
// none or null, else the hash; or the message of a 400.
func readPersistedQuery(extensions json.RawMessage) (*persistedQuery, string) {
	if len(extensions) == 0 || string(extensions) == "null" {
		return nil, ""
	}
	var ext map[string]json.RawMessage
	if json.Unmarshal(extensions, &ext) != nil || ext == nil {
		return nil, "The extensions parameter must be a JSON object."
	}
	raw, ok := ext["persistedQuery"]
	if !ok || string(raw) == "null" {
		return nil, ""
	}
	var fields map[string]json.RawMessage
	var version float64
	if json.Unmarshal(raw, &fields) != nil || fields == nil ||
		json.Unmarshal(fields["version"], &version) != nil || version != 1 {
		return nil, msgPersistedQueryVersion
	}
	var hexHash string
	if json.Unmarshal(fields["sha256Hash"], &hexHash) != nil {
		return nil, "The persistedQuery extension must give sha256Hash as a string."
	}
	pq := &persistedQuery{}
	if len(hexHash) == hex.EncodedLen(sha256.Size) {
		_, err := hex.Decode(pq.hash[:], []byte(hexHash))
		pq.valid = err == nil
	}
	return pq, ""
}

// resolvePersisted completes req, whose extensions named pq (or nil): without a
// query it gets the hash's; with one it must match (and is remembered once
// valid, see serve). It returns the error to answer instead, with its status.
func (h *Handler) resolvePersisted(req *Request, pq *persistedQuery) (*Error, int) {
	switch {
	case h.PersistedOnly && pq == nil:
		return newError(codePersistedQueryIDRequired, "This server runs only persisted operations: send the operation's SHA-256 in extensions.persistedQuery, not its document."), http.StatusBadRequest
	case h.PersistedOnly && (!pq.valid || h.PersistedQueries == nil || !h.PersistedQueries.isPinned(pq.hash)):
		// A document sent with the hash is not learnt: only the manifest says what runs.
		return newError(codePersistedQueryNotInList, msgNotInList), http.StatusBadRequest
	case pq == nil:
		return nil, 0
	case h.PersistedQueries == nil:
		return newError(codePersistedQueryNotSupported, msgPersistedQueryNotSupported), http.StatusOK
	case req.Query == "":
		q, ok := h.PersistedQueries.get(pq.hash)
		if !pq.valid || !ok {
			return newError(codePersistedQueryNotFound, msgPersistedQueryNotFound), http.StatusOK
		}
		req.Query = q
	case !pq.valid || sha256.Sum256([]byte(req.Query)) != pq.hash:
		return newError(codePersistedQueryHashMismatch, msgPersistedQueryMismatch), http.StatusBadRequest
	}
	return nil, 0
}
