package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Snapshots: the whole store as of the start of one journal, written atomically
// beside the journals (see durable.go) and read back at start-up with the
// dataset decoder.

// snapshotState is the store at one moment, as written to the snapshot file.
type snapshotState struct {
	Gen      uint64           `json:"gen"`   // the first journal not contained in it
	Store    string           `json:"store"` // the store's id, made when DIR is initialised
	LastIDs  map[string]int64 `json:"lastIds"`
	Users    []*User          `json:"users"`
	Posts    []*Post          `json:"posts"`
	Comments []*Comment       `json:"comments"`
	Products []*Product       `json:"products"`
	Orders   []*Order         `json:"orders"`
}

// captureLocked copies the store's current state; records are immutable, so copying
// the pointers is enough. The caller holds at least the read lock.
func (s *Store) captureLocked(gen uint64) *snapshotState {
	return &snapshotState{
		Gen: gen,
		LastIDs: map[string]int64{"users": s.users.lastID, "posts": s.posts.lastID, "comments": s.comments.lastID,
			"products": s.products.lastID, "orders": s.orders.lastID},
		Users: s.users.all(), Posts: s.posts.all(), Comments: s.comments.all(),
		Products: s.products.all(), Orders: s.orders.all(),
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
	for _, u := range st.Users {
		s.putLoadedUser(u)
	}
	for _, p := range st.Posts {
		s.putLoadedPost(p)
	}
	for _, c := range st.Comments {
		s.putLoadedComment(c)
	}
	for _, p := range st.Products {
		s.putLoadedProduct(p)
	}
	for _, o := range st.Orders {
		s.putLoadedOrder(o)
	}
	s.users.lastID = max(s.users.lastID, st.LastIDs["users"])
	s.posts.lastID = max(s.posts.lastID, st.LastIDs["posts"])
	s.comments.lastID = max(s.comments.lastID, st.LastIDs["comments"])
	s.products.lastID = max(s.products.lastID, st.LastIDs["products"])
	s.orders.lastID = max(s.orders.lastID, st.LastIDs["orders"])
}

// A snapshot file is two records: a header (generation, last ids) and the records in
// the dataset format, so a restart reads them with the dataset decoder.
type snapshotHeader struct {
	Gen     uint64           `json:"gen"`
	LastIDs map[string]int64 `json:"lastIds"`
	Store   string           `json:"store"`
}

type snapshotBody struct {
	Users    []*User    `json:"users"`
	Posts    []*Post    `json:"posts"`
	Comments []*Comment `json:"comments"`
	Products []*Product `json:"products"`
	Orders   []*Order   `json:"orders"`
}

// writeSnapshot replaces DIR/snapshot atomically: temp file, fsync, rename, fsync DIR.
func writeSnapshot(dir string, st *snapshotState) error {
	header, err := json.Marshal(snapshotHeader{st.Gen, st.LastIDs, st.Store})
	if err != nil {
		return err
	}
	body, err := json.Marshal(snapshotBody{st.Users, st.Posts, st.Comments, st.Products, st.Orders})
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "snapshot.tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(appendRecord(appendRecord(nil, header), body)); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, "snapshot")); err != nil {
		return err
	}
	return syncDir(dir)
}

// readSnapshot decodes a snapshot file: a header record and a body record. (Files
// of the first formats, one record holding both or a header without the store's id,
// are refused: this version does not read them.)
func readSnapshot(data []byte, st *snapshotState) error {
	header, next, ok := readRecord(data, 0)
	if !ok {
		return snapshotDamage(data, 0)
	}
	if next == len(data) {
		return fmt.Errorf("is truncated: it ends at byte %d, where its records should start (or it is in the one-record format of an earlier version, which this one does not read)", len(data))
	}
	body, end, ok := readRecord(data, next)
	if !ok {
		return snapshotDamage(data, next)
	}
	if end != len(data) {
		return fmt.Errorf("is corrupt: %d unexpected bytes follow its records at byte %d", len(data)-end, end)
	}
	var h snapshotHeader
	if err := json.Unmarshal(header, &h); err != nil {
		return fmt.Errorf("is unreadable: %v", err)
	}
	if h.Store == "" {
		return errors.New("names no store: it was written in a format of an earlier version, which this one does not read")
	}
	ds, err := decodeDataset(body)
	if err != nil {
		return fmt.Errorf("is unreadable: %v", err)
	}
	st.Gen, st.LastIDs, st.Store = h.Gen, h.LastIDs, h.Store
	st.Users, st.Posts, st.Comments = pointers(ds.Users), pointers(ds.Posts), pointers(ds.Comments)
	st.Products, st.Orders = pointers(ds.Products), pointers(ds.Orders)
	return nil
}

// snapshotDamage says what is wrong with the snapshot record at data[off:], which is
// not intact: cut short (a header incomplete, or a record running past the end), or
// corrupt.
func snapshotDamage(data []byte, off int) error {
	if len(data)-off < recordHeaderSize || recordRunsPast(data[off:]) {
		return fmt.Errorf("is truncated: it ends at byte %d, inside the record that starts at byte %d", len(data), off)
	}
	return fmt.Errorf("is corrupt at byte %d (checksum mismatch)", off)
}

// pointers returns pointers to the elements of xs.
func pointers[T any](xs []T) []*T {
	out := make([]*T, len(xs))
	for i := range xs {
		out[i] = &xs[i]
	}
	return out
}
