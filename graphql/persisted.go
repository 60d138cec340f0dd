package graphql

import (
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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

// DefaultPersistedQueryBytes is the memory the persisted queries of a Handler
// made by NewHandler may hold: the text of thousands of usual queries (a few
// hundred bytes to a few kilobytes each). Each entry also counts
// persistedEntryBytes, so there are at most DefaultPersistedQueryBytes /
// persistedEntryBytes (16,384) of them; a query over a sixteenth of the budget
// is run but not kept, so that one request cannot empty the cache.
const DefaultPersistedQueryBytes = 4 << 20

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
	mu     sync.Mutex
	budget int64
	size   int64      // bytes the entries count together
	order  *list.List // of *persistedEntry, most recently used at the front
	byHash map[[sha256.Size]byte]*list.Element
}

type persistedEntry struct {
	hash  [sha256.Size]byte
	query string
}

// NewPersistedQueries returns an empty cache that holds at most maxBytes.
func NewPersistedQueries(maxBytes int64) *PersistedQueries {
	return &PersistedQueries{budget: maxBytes, order: list.New(), byHash: make(map[[sha256.Size]byte]*list.Element)}
}

func persistedCost(query string) int64 { return int64(len(query)) + persistedEntryBytes }

// get returns the query whose hash is hash, and whether it is known.
func (c *PersistedQueries) get(hash [sha256.Size]byte) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byHash[hash]
	if !ok {
		return "", false
	}
	c.order.MoveToFront(e)
	return e.Value.(*persistedEntry).query, true
}

// put remembers query under hash, which the caller has checked is its SHA-256,
// forgetting the least recently used queries as the budget requires.
func (c *PersistedQueries) put(hash [sha256.Size]byte, query string) {
	cost := persistedCost(query)
	if cost > c.budget/16 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byHash[hash]; ok {
		c.order.MoveToFront(e)
		return
	}
	c.byHash[hash] = c.order.PushFront(&persistedEntry{hash: hash, query: query})
	c.size += cost
	for c.size > c.budget {
		e := c.order.Remove(c.order.Back()).(*persistedEntry)
		delete(c.byHash, e.hash)
		c.size -= persistedCost(e.query)
	}
}

// Len returns the number of queries held.
func (c *PersistedQueries) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
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
