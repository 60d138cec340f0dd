package graphql

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
)

// Automatic persisted queries, Apollo's protocol (its PersistedQueryLink): a
// client first sends only the SHA-256 of its query, hex-encoded, in
// extensions.persistedQuery {"version": 1, "sha256Hash": ...}. A server that
// knows the hash runs the query it stands for; one that does not answers
// PERSISTED_QUERY_NOT_FOUND, and the client sends the query and the hash
// together, which the server checks and remembers for the next time.
//
// What is remembered is bounded in bytes, least recently used out first: a
// query forgotten costs its client one more round trip, nothing else, so the
// bound can be small. Only queries that parsed and validated are kept, so a
// client cannot fill the cache with text that was never a query.

// Persisted-only mode (Handler.PersistedOnly) is safelisting as Apollo's router
// does it with require_id: the operations a service's own clients send are known
// at build time, listed in a manifest (the persisted query manifest Apollo's
// generate-persisted-query-manifest writes) and pinned at start-up; a request
// must name one of them by its hash, and nothing else runs. The codes are the
// router's, so Apollo's client link does not resend the query in vain (it resends
// only on PERSISTED_QUERY_NOT_FOUND).
const (
	// codePersistedQueryNotInList: the hash is not one of the pinned operations.
	codePersistedQueryNotInList = "PERSISTED_QUERY_NOT_IN_LIST"
	// codePersistedQueryIDRequired: a document was sent without a hash.
	codePersistedQueryIDRequired = "PERSISTED_QUERY_ID_REQUIRED"
)

const msgNotInList = "The persisted operation is not in this server's list of allowed operations."

// maxManifestOperations bounds the operations a manifest may pin: they are
// kept for the life of the process, outside the cache's budget.
const maxManifestOperations = 10_000

// defaultPersistedQueryBytes is the memory the persisted queries of a Handler
// made by NewHandler may hold: the text of thousands of usual queries (a few
// hundred bytes to a few kilobytes each). Each entry also counts
// persistedEntryBytes, so there are at most defaultPersistedQueryBytes /
// persistedEntryBytes (16,384) of them; a query over a sixteenth of the budget
// is run but not kept, so that one request cannot empty the cache.
const defaultPersistedQueryBytes = 4 << 20

// persistedEntryBytes is what one entry holds besides its query text: the map
// entry, the list element and the entry itself, with a margin.
const persistedEntryBytes = 256

// Messages and codes of Apollo's servers, which its client link matches.
const (
	msgPersistedQueryNotFound     = "PersistedQueryNotFound"
	msgPersistedQueryNotSupported = "PersistedQueryNotSupported"
	msgPersistedQueryVersion      = "Unsupported persisted query version"
	msgPersistedQueryMismatch     = "provided sha does not match query"
)

// PersistedQueries remembers queries by their SHA-256 for automatic persisted
// queries. It is safe for concurrent use.
type PersistedQueries struct {
	learnt *lru[[sha256.Size]byte, string] // sent with their hash, within the budget

	mu     sync.Mutex
	pinned map[[sha256.Size]byte]string // the manifest's operations: never forgotten, not in the budget
}

// newPersistedQueries returns an empty cache that holds at most maxBytes.
func newPersistedQueries(maxBytes int64) *PersistedQueries {
	return &PersistedQueries{learnt: newLRU[[sha256.Size]byte, string](maxBytes)}
}

func persistedCost(query string) int64 { return int64(len(query)) + persistedEntryBytes }

// get returns the query whose hash is hash, and whether it is known.
func (c *PersistedQueries) get(hash [sha256.Size]byte) (string, bool) {
	c.mu.Lock()
	q, ok := c.pinned[hash]
	c.mu.Unlock()
	if ok {
		return q, true
	}
	return c.learnt.get(hash)
}

// put remembers query under hash, which the caller has checked is its SHA-256,
// forgetting the least recently used queries as the budget requires.
func (c *PersistedQueries) put(hash [sha256.Size]byte, query string) {
	c.learnt.put(hash, query, persistedCost(query))
}

// Len returns the number of queries held, pinned ones included.
func (c *PersistedQueries) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.learnt.len() + len(c.pinned)
}

// isPinned reports whether hash names an operation of the manifest.
func (c *PersistedQueries) isPinned(hash [sha256.Size]byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pinned[hash]
	return ok
}

// persistedManifest is Apollo's persisted query manifest
// (@apollo/generate-persisted-query-manifest).
type persistedManifest struct {
	Format     string `json:"format"`
	Version    int    `json:"version"`
	Operations []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
		Type string `json:"type"`
		Body string `json:"body"`
	} `json:"operations"`
}

// PinManifest pins the operations of an Apollo persisted query manifest
// ({"format":"apollo-persisted-query-manifest","version":1,"operations":[{"id",
// "name","type","body"}]}) so that they are always known by their hash. Each id
// must be the SHA-256 of its body, hex-encoded (the manifest generator's default),
// and each body must parse and validate against s: a manifest built for another
// schema is refused at start-up rather than failing request by request. It
// returns the number of operations pinned.
func (c *PersistedQueries) PinManifest(s *Schema, manifest []byte) (int, error) {
	var m persistedManifest
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
	if c.pinned == nil {
		c.pinned = pinned
	} else {
		for h, q := range pinned {
			c.pinned[h] = q
		}
	}
	return len(pinned), nil
}

// checkPersistedOnly returns the error that refuses a request in persisted-only mode,
// with its status (400: the request is refused before anything runs), or nil.
func (h *Handler) checkPersistedOnly(pq *persistedQuery) (*Error, int) {
	switch {
	case !h.PersistedOnly:
		return nil, 0
	case pq == nil:
		return newError(codePersistedQueryIDRequired, "This server runs only persisted operations: send the operation's SHA-256 in extensions.persistedQuery, not its document."), http.StatusBadRequest
	case !pq.valid || h.PersistedQueries == nil || !h.PersistedQueries.isPinned(pq.hash):
		// A document sent with the hash is not learnt: only the manifest says what runs.
		return newError(codePersistedQueryNotInList, msgNotInList), http.StatusBadRequest
	}
	return nil, 0
}

// persistedQuery is a request's extensions.persistedQuery.
type persistedQuery struct {
	hash  [sha256.Size]byte
	valid bool // sha256Hash was 64 hex digits; a hash that is not matches nothing
}

// readPersistedQuery reads extensions.persistedQuery from the request's
// extensions object: nil when there is none (or it is null), else the hash, or
// the message of a 400 when it is not one this server understands.
func readPersistedQuery(ext map[string]json.RawMessage) (*persistedQuery, string) {
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

// matches reports whether query is what the hash stands for.
func (pq *persistedQuery) matches(query string) bool {
	return pq.valid && sha256.Sum256([]byte(query)) == pq.hash
}
