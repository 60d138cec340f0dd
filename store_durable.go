package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"

	"quartet/internal/journal"
)

// The durable store (-data DIR): every acknowledged write survives kill -9 and a power
// cut. internal/journal keeps DIR and its guarantees; this file is what of it knows
// the store: a change as a journal record and back, the store as a snapshot and back,
// the undo of a change the journal could not store, and the events told once a change
// is stored. A write is applied under the store lock and appended in the same order;
// the journal's flusher fsyncs what is queued at once and only then releases the
// writers. When the disk fails, every change not yet on disk is rolled back before
// anyone is answered, and the store refuses writes until a restart.

// DurableOptions tune OpenDurableStore.
type DurableOptions = journal.Options

const defaultSnapshotBytes = journal.DefaultSnapshotBytes

// OpenDurableStore opens the store kept in dir: one that holds a store is recovered
// from its snapshot and journals, an empty or new one initialised from seed.
func OpenDurableStore(dir string, seed func() (*Dataset, error), log *slog.Logger, opts DurableOptions) (*Store, error) {
	h := &durableHost{s: NewStore(), seed: seed}
	j, err := journal.Open(dir, log, opts, h)
	if h.s.loading { // Restore began a bulk load, which the replay went on with
		h.s.endLoad()
	}
	if err != nil {
		return nil, err
	}
	h.s.journal = j
	return h.s, nil
}

// HasStore reports whether dir already holds a durable store.
func HasStore(dir string) (bool, error) { return journal.Has(dir) }

// durableHost is a store as its journal keeps it.
type durableHost struct {
	s    *Store
	seed func() (*Dataset, error)
}

func (h *durableHost) Seed() error {
	ds, err := h.seed()
	if err != nil {
		return err
	}
	return h.s.Load(ds)
}

// snapshotMeta is the store's part of a snapshot's header; the records are its body,
// in the dataset format.
type snapshotMeta struct {
	LastIDs map[string]int64 `json:"lastIds"`
}

func (h *durableHost) Restore(header, body []byte) error {
	var meta snapshotMeta
	if err := json.Unmarshal(header, &meta); err != nil {
		return err
	}
	ds, err := decodeDataset(body)
	if err != nil {
		return err
	}
	h.s.beginLoad()
	h.s.restore(&snapshotState{LastIDs: meta.LastIDs, records: records{
		Users: pointers(ds.Users), Posts: pointers(ds.Posts), Comments: pointers(ds.Comments),
		Products: pointers(ds.Products), Orders: pointers(ds.Orders)}})
	return nil
}

var errInvalidChange = errors.New("not a valid change")

func (h *durableHost) Replay(payload []byte) error {
	var c change
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return err
	}
	if !c.valid() {
		return errInvalidChange
	}
	h.s.apply(&c)
	return nil
}

func (h *durableHost) Capture(mark func()) func() (meta, body []byte, err error) {
	h.s.mu.RLock()
	defer h.s.mu.RUnlock()
	st := h.s.captureLocked()
	mark()
	return func() (meta, body []byte, err error) {
		if meta, err = json.Marshal(snapshotMeta{st.LastIDs}); err == nil {
			body, err = json.Marshal(st)
		}
		return meta, body, err
	}
}

func (h *durableHost) Failed(rollback func()) {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	h.s.broken = journal.ErrFailed
	rollback()
}

// journaled is a change on its way to the journal, with what undoes it.
type journaled struct {
	s *Store
	c *change
	u undo
}

func (r *journaled) Payload() ([]byte, error) { return json.Marshal(r.c) }
func (r *journaled) Stored()                  { r.s.publish(r.c) }
func (r *journaled) Undo()                    { r.s.rollback(r.c, &r.u) }

// valid reports whether c can be applied: replay must not panic on a record that
// passed its checksum but makes no sense.
func (c *change) valid() bool {
	switch c.Op {
	case opPutUsers:
		return len(c.Users) > 0 && !slices.Contains(c.Users, nil)
	case opDeleteUser:
		return c.DeleteID > 0
	case opPutPost:
		return c.Post != nil
	case opPutComment:
		return c.Comment != nil
	case opPutOrder:
		return c.Order != nil
	case opPutProduct:
		return c.Product != nil
	}
	return false
}

// snapshotState is the store at one moment: its records (a snapshot's body) and its
// last ids (in the header).
type snapshotState struct {
	LastIDs map[string]int64 `json:"-"`
	records
}

// captureLocked copies the store's current state; records are immutable, so the
// pointers are enough. The caller holds at least the read lock.
func (s *Store) captureLocked() *snapshotState {
	return &snapshotState{
		LastIDs: map[string]int64{"users": s.users.lastID, "posts": s.posts.lastID, "comments": s.comments.lastID,
			"products": s.products.lastID, "orders": s.orders.lastID},
		records: records{Users: s.users.all(), Posts: s.posts.all(), Comments: s.comments.all(),
			Products: s.products.all(), Orders: s.orders.all()},
	}
}

// restore fills an empty store from a snapshot. The caller is in a bulk load.
func (s *Store) restore(st *snapshotState) {
	s.users.reserve(len(st.Users))
	s.posts.reserve(len(st.Posts))
	s.comments.reserve(len(st.Comments))
	s.products.reserve(len(st.Products))
	s.orders.reserve(len(st.Orders))
	s.usersByName.loaded = slices.Grow(s.usersByName.loaded, len(st.Users))
	s.usersByEmail.loaded = slices.Grow(s.usersByEmail.loaded, len(st.Users))
	setKeys(st.Users)
	s.putAll(&st.records)
	s.users.lastID = max(s.users.lastID, st.LastIDs["users"])
	s.posts.lastID = max(s.posts.lastID, st.LastIDs["posts"])
	s.comments.lastID = max(s.comments.lastID, st.LastIDs["comments"])
	s.products.lastID = max(s.products.lastID, st.LastIDs["products"])
	s.orders.lastID = max(s.orders.lastID, st.LastIDs["orders"])
}

// pointers returns pointers to the elements of xs.
func pointers[T any](xs []T) []*T {
	out := make([]*T, len(xs))
	for i := range xs {
		out[i] = &xs[i]
	}
	return out
}
